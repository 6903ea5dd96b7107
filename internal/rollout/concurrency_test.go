package rollout_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/edge/github"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/rollout"
)

func titles(crs []github.CheckRun) string {
	var out []string
	for _, cr := range crs {
		if len(out) == 0 || out[len(out)-1] != cr.Output.Title {
			out = append(out, cr.Output.Title)
		}
	}
	return strings.Join(out, " | ")
}

// noInterleaving checks that no operation of the later rollout started before every operation of the earlier
// one on the same app had finished.
func noInterleaving(t *testing.T, e *env, first, second int64) {
	t.Helper()
	end := map[string]time.Time{}
	for _, s := range e.steps(first) {
		end[s.App.Name] = s.OpFinishedAt
	}
	for _, s := range e.steps(second) {
		if !s.OpStartedAt.IsZero() && s.OpStartedAt.Before(end[s.App.Name]) {
			t.Errorf("app %s: rollout %d started at %s, before rollout %d finished with it at %s", s.App.Name, second, s.OpStartedAt, first, end[s.App.Name])
		}
	}
}

func TestNewerRolloutWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: time.Minute}})
		r1 := e.submit(basePolicy("", "", ""), newRev)
		e.waitWave(r1.ID, 1, store.WaveRunning)
		e.sim.SetRef("HEAD", newRev2) // a second merge
		r2 := e.submit(basePolicy("", "", ""), newRev2)
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if r, _ := e.st.GetRollout(context.Background(), r2.ID); r.State != store.RolloutPending {
			t.Fatalf("newer rollout is %s while the older runs", r.State)
		}
		if cr, _ := e.rep.Check("fleetwave:2"); cr.Status != github.StatusQueued || cr.Output.Title != "Queued behind rollout #1 (merge 1b1b1b1b1b)" ||
			!strings.Contains(cr.Output.Summary, "Waiting for rollout #1") {
			t.Errorf("newer check-run: %s %q\n%s", cr.Status, cr.Output.Title, cr.Output.Summary)
		}
		e.waitWave(r1.ID, 2, store.WaveRunning)
		if cr, _ := e.rep.Check("fleetwave:1"); !strings.Contains(cr.Output.Summary, "Rollout #2 (merge 2c2c2c2c2c) waits for this one") {
			t.Errorf("older check-run does not say who waits:\n%s", cr.Output.Summary)
		}
		e.wait(r1.ID, store.RolloutSucceeded)
		r2 = e.wait(r2.ID, store.RolloutSucceeded, store.RolloutFailed, store.RolloutPaused)
		if r2.State != store.RolloutSucceeded {
			t.Fatalf("newer rollout %s: %s", r2.State, r2.Message)
		}
		noInterleaving(t, e, r1.ID, r2.ID)
		e.expectSyncs(counts(names(e.apps, ""), 2))
		e.expectLive(newRev2, names(e.apps, "")...)
	})
}

func TestNewerRolloutSupersedes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: time.Minute}})
		r1 := e.submit(basePolicy("", "", ""), newRev)
		e.waitWave(r1.ID, 1, store.WaveRunning)
		time.Sleep(10 * time.Second) // staging syncs in flight
		synctest.Wait()
		e.sim.SetRef("HEAD", newRev2)
		r2 := e.submit(basePolicy("", "", ""), newRev2, func(r *rollout.Request) { r.OnConflict = rollout.ConflictSupersede })
		r1 = e.wait(r1.ID, store.RolloutSuperseded)
		if r1.SupersededBy != r2.ID {
			t.Errorf("superseded by %d", r1.SupersededBy)
		}
		// The older rollout's syncs in flight finished; it started nothing after.
		for _, s := range e.steps(r1.ID) {
			if (s.Wave < 2) != (s.State == store.StepSynced) {
				t.Errorf("older rollout, %s: %s", s.App.Name, s.State)
			}
		}
		r2 = e.wait(r2.ID, store.RolloutSucceeded, store.RolloutFailed, store.RolloutPaused)
		if r2.State != store.RolloutSucceeded {
			t.Fatalf("newer rollout %s: %s", r2.State, r2.Message)
		}
		noInterleaving(t, e, r1.ID, r2.ID)
		e.expectSyncs(merge(counts(names(e.apps, ""), 2), counts(names(e.apps, "prd"), 1)))
		e.expectLive(newRev2, names(e.apps, "")...)
		if cr, _ := e.rep.Check("fleetwave:1"); cr.Conclusion != github.ConclusionNeutral || cr.Output.Title != "Superseded by rollout #2" {
			t.Errorf("older check-run: %s %q", cr.Conclusion, cr.Output.Title)
		}
		if got := titles(e.rep.History("fleetwave:2")); !strings.HasPrefix(got, "Queued behind rollout #1 (merge 1b1b1b1b1b)") {
			t.Errorf("newer check-run titles: %s", got)
		}
		if cr, _ := e.rep.Check("fleetwave:1:wave:production"); cr.Conclusion != github.ConclusionCancelled {
			t.Errorf("older production wave: %s %s", cr.Status, cr.Conclusion)
		}
	})
}

func TestAutomatedSyncSwitchedOffAndRestored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		apps := defaultFleet()
		apps[0].automated = true // web-test-1
		e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: 10 * time.Second}, apps: apps})
		r := e.submit("automatedSync: disable-during-rollout\n"+basePolicy("", "", ""), newRev)
		r = e.wait(r.ID, store.RolloutSucceeded, store.RolloutFailed, store.RolloutPaused)
		if r.State != store.RolloutSucceeded {
			dumpSteps(t, e, r.ID)
			t.Fatalf("rollout %s: %s", r.State, r.Message)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		e.expectSyncs(counts(names(e.apps, ""), 1))
		if ops := e.sim.Totals().Operations; ops != len(apps) {
			t.Errorf("%d operations: Argo CD synced something by itself", ops)
		}
		a, _ := e.sim.App("web-test-1")
		if a.Spec.SyncPolicy == nil || a.Spec.SyncPolicy.Automated == nil || !a.Spec.SyncPolicy.Automated.GetPrune() || !a.Spec.SyncPolicy.Automated.GetSelfHeal() {
			t.Errorf("automated sync not restored as it was: %+v", a.Spec.SyncPolicy)
		}
		if _, ok := a.Annotations[rollout.AnnotationAutomatedSync]; ok {
			t.Error("annotation left behind")
		}
		if _, ok := a.Labels[rollout.LabelAutomatedSyncOff]; ok {
			t.Error("label left behind")
		}
		var seq []string
		for _, ev := range e.events(r.ID) {
			if strings.HasPrefix(ev.Action, "automated-sync") {
				seq = append(seq, ev.Action+":"+ev.Result)
			}
		}
		if got := strings.Join(seq, " "); got != "automated-sync-off:intent automated-sync-off:ok automated-sync-late:warning automated-sync-restore:intent automated-sync-restore:ok" {
			t.Errorf("automated sync events: %s", got)
		}
	})
}

func TestAutomatedSyncStaysOffAfterRollback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		apps := failing(defaultFleet(), "web-stg-1")
		apps[0].automated = true
		e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: 10 * time.Second}, apps: apps})
		r := e.submit("automatedSync: disable-during-rollout\nonFailure: rollback\n"+basePolicy("", "", ""), newRev)
		r = e.wait(r.ID, store.RolloutRolledBack, store.RolloutFailed, store.RolloutSucceeded)
		if r.State != store.RolloutRolledBack {
			t.Fatalf("rollout %s: %s", r.State, r.Message)
		}
		a, _ := e.sim.App("web-test-1")
		if a.Spec.SyncPolicy != nil && a.Spec.SyncPolicy.IsAutomatedSyncEnabled() {
			t.Error("automated sync switched back on after a rollback: Argo CD would sync the merge again")
		}
		if a.Annotations[rollout.AnnotationAutomatedSync] == "" || a.Labels[rollout.LabelAutomatedSyncOff] != "true" {
			t.Error("the original automated sync setting is not kept, or not labelled")
		}
		e.expectLive(oldRev, "web-test-1")
		r, _ = e.st.GetRollout(context.Background(), r.ID)
		if note := rollout.AutomatedSyncNote(r); !strings.Contains(note, "automated sync stays off for 1 app (web-test-1;") {
			t.Errorf("the rolled-back rollout does not say which apps remain off: %q", r.Message)
		}
	})
}

func TestPlanBreakingPolicyNeverRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		apps := defaultFleet()
		apps[0].automated = true
		e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: 10 * time.Second}, apps: apps})
		p := e.policy(basePolicy("", "", "")) // automatedSync: forbid
		var in []plan.App
		for _, fa := range apps {
			in = append(in, plan.App{Name: fa.name, Namespace: "argocd", Cluster: fa.cluster,
				ClusterLabels: map[string]string{"env": fa.env, "region": fa.region}, AutomatedSync: fa.automated})
		}
		r, err := e.ex.Submit(context.Background(), rollout.Request{Repo: repo, MergeSHA: newRev, Plan: plan.Build(p, in)})
		if err != nil {
			t.Fatal(err)
		}
		r = e.wait(r.ID, store.RolloutFailed)
		if !strings.Contains(r.Message, "breaks the release policy: web-test-1") {
			t.Errorf("message %q", r.Message)
		}
		time.Sleep(time.Minute)
		e.expectSyncs(counts(names(apps, ""), 0))
		if cr, _ := e.rep.Check(fmt.Sprintf("fleetwave:%d", r.ID)); cr.Conclusion != github.ConclusionFailure {
			t.Errorf("check-run %s %s", cr.Status, cr.Conclusion)
		}
	})
}

func TestPlanDifferentFromThePR(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: 10 * time.Second}})
		pol := basePolicy("", "", "")
		prPlan := e.plan(e.policy(pol), e.apps[:6]) // the PR did not affect web-prd-4
		r := e.submit(pol, newRev, func(r *rollout.Request) { r.PRPlan = prPlan })
		r = e.wait(r.ID, store.RolloutSucceeded)
		cr, _ := e.rep.Check(fmt.Sprintf("fleetwave:%d", r.ID))
		for _, want := range []string{"differs from the plan shown on the PR", "app web-prd-4 added (wave production)"} {
			if !strings.Contains(cr.Output.Summary, want) {
				t.Errorf("summary lacks %q:\n%s", want, cr.Output.Summary)
			}
		}
		// Same plan: no warning.
		e.sim.SetRef("HEAD", newRev2)
		same := e.plan(e.policy(pol), e.apps)
		r2 := e.submit(pol, newRev2, func(r *rollout.Request) { r.PRPlanDigest = same.Digest() })
		r2 = e.wait(r2.ID, store.RolloutSucceeded)
		if cr, _ := e.rep.Check(fmt.Sprintf("fleetwave:%d", r2.ID)); strings.Contains(cr.Output.Summary, "differs") {
			t.Errorf("warning for an identical plan:\n%s", cr.Output.Summary)
		}
	})
}

func TestSubmitIsIdempotent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: 10 * time.Second}})
		r1 := e.submit(basePolicy("", "", ""), newRev)
		r2 := e.submit(basePolicy("", "", ""), newRev) // the push event of the same merge
		if r1.ID != r2.ID {
			t.Fatalf("two rollouts for one merge: %d, %d", r1.ID, r2.ID)
		}
		e.wait(r1.ID, store.RolloutSucceeded)
		e.expectSyncs(counts(names(e.apps, ""), 1))
	})
}

func TestDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: time.Minute}})
		r := e.submit(basePolicy("", "", ""), newRev)
		e.waitWave(r.ID, 1, store.WaveRunning)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		began := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		if err := e.ex.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(began); took < 40*time.Second {
			t.Errorf("Stop returned after %s, before the syncs in flight finished", took)
		}
		for _, s := range e.steps(r.ID) {
			if s.Wave == 1 && s.State != store.StepSynced || s.Wave == 2 && s.State != store.StepPending {
				t.Errorf("after drain, %s: %s", s.App.Name, s.State)
			}
		}
		if _, err := e.st.GetLease(context.Background(), r.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("lease after drain: %v", err)
		}
		time.Sleep(10 * time.Minute)
		e.expectSyncs(merge(counts(names(e.apps, "test"), 1), counts(names(e.apps, "stg"), 1)))
		// The next start (another replica) resumes at once.
		e.run(e.newExecutor(rollout.WithOwner("bot-2")))
		r = e.wait(r.ID, store.RolloutSucceeded, store.RolloutFailed)
		if r.State != store.RolloutSucceeded {
			t.Fatalf("rollout %s: %s", r.State, r.Message)
		}
		e.expectSyncs(counts(names(e.apps, ""), 1))
	})
}

// TestResumeReconcilesInFlightSteps sets up what a killed process leaves behind, deterministically: intents
// with and without the request sent, a triggered step, an operation still running.
func TestResumeReconcilesInFlightSteps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: 2 * time.Minute}, noRun: true})
		r := e.submit(basePolicy("", "", ""), newRev)
		ctx := context.Background()
		intent := func(app string) store.AppStep {
			s := e.stepOf(r.ID, app)
			s, err := e.st.RecordIntent(ctx, store.Intent{StepID: s.ID, Version: s.Version, PreviousRevision: oldRev})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		sync := func(app string) {
			if _, err := e.argo.Sync(ctx, "argocd/"+app, argocd.SyncRequest{Revision: newRev}); err != nil {
				t.Fatal(err)
			}
		}
		// Mark the canary started, as a run that got that far would have.
		r.State = store.RolloutRunning
		if _, err := e.st.UpdateRollout(ctx, r); err != nil {
			t.Fatal(err)
		}
		intent("web-test-1") // killed before the request
		time.Sleep(3 * time.Second)
		intent("web-stg-1") // killed after the request: the operation runs
		sync("web-stg-1")
		s := intent("web-stg-2") // killed after Argo CD accepted and the triggered mark
		sync("web-stg-2")
		if _, err := e.st.MarkTriggered(ctx, s.ID, s.Version); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		e.run(e.ex)
		r = e.wait(r.ID, store.RolloutSucceeded, store.RolloutFailed, store.RolloutPaused)
		if r.State != store.RolloutSucceeded {
			dumpSteps(t, e, r.ID)
			t.Fatalf("rollout %s: %s", r.State, r.Message)
		}
		e.expectSyncs(counts(names(e.apps, ""), 1))
		for _, a := range []string{"web-stg-1", "web-stg-2"} {
			if c := e.sim.Counts(a); c.Syncs != 1 {
				t.Errorf("%s: %d sync requests after the restart (%d accepted): the operation found was not recognised", a, c.Syncs, c.SyncsAccepted)
			}
			if s := e.stepOf(r.ID, a); s.State != store.StepSynced || !strings.Contains(s.Message, "observed after a restart") {
				t.Errorf("%s: %s %q", a, s.State, s.Message)
			}
		}
		if s := e.stepOf(r.ID, "web-test-1"); s.Attempts != 2 || s.State != store.StepSynced {
			t.Errorf("never-sent intent: %s after %d attempts", s.State, s.Attempts)
		}
		var reconciled []string
		for _, ev := range e.events(r.ID) {
			if ev.Action == "reconcile" {
				reconciled = append(reconciled, ev.Target+"="+ev.Result)
			}
		}
		if got := strings.Join(reconciled, " "); !strings.Contains(got, "argocd/web-test-1=not-started") ||
			!strings.Contains(got, "argocd/web-stg-1=synced") || !strings.Contains(got, "argocd/web-stg-2=synced") {
			t.Errorf("reconcile events: %s", got)
		}
	})
}

// TestLeaseTakeover: a replica killed mid-wave (its context cancelled, its lease not released) is replaced by
// another once the lease expires; nothing is synced twice.
func TestLeaseTakeover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: time.Minute}, opts: []rollout.Option{rollout.WithLeaseTTL(30 * time.Second)}})
		r := e.submit(basePolicy("", "", ""), newRev)
		e.waitWave(r.ID, 1, store.WaveRunning)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		killed := time.Now()
		e.cancel() // crash: nothing released
		<-e.runDone
		b := e.newExecutor(rollout.WithOwner("bot-2"), rollout.WithLeaseTTL(30*time.Second))
		e.run(b)
		r = e.wait(r.ID, store.RolloutSucceeded, store.RolloutFailed, store.RolloutPaused)
		if r.State != store.RolloutSucceeded {
			dumpSteps(t, e, r.ID)
			t.Fatalf("rollout %s: %s", r.State, r.Message)
		}
		e.expectSyncs(counts(names(e.apps, ""), 1))
		// bot-2 waited for the lease to expire before touching the rollout.
		for _, s := range e.steps(r.ID) {
			if s.Wave == 2 && s.IntentAt.Before(killed.Add(30*time.Second)) {
				t.Errorf("%s started at %s, before the lease expired", s.App.Name, s.IntentAt)
			}
		}
	})
}

// TestLeaseLostStopsTheDriver: when another replica holds the lease, the old holder starts nothing more.
func TestLeaseLostStopsTheDriver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: time.Minute}, opts: []rollout.Option{rollout.WithLeaseTTL(30 * time.Second)}})
		r := e.submit(basePolicy("", "", ""), newRev)
		e.waitWave(r.ID, 1, store.WaveRunning)
		ctx := context.Background()
		// An operator (or a bug) hands the rollout to bot-2 while bot-1 runs.
		if err := e.st.ReleaseLease(ctx, r.ID, "bot-1"); err != nil {
			t.Fatal(err)
		}
		if ok, err := e.st.AcquireLease(ctx, r.ID, "bot-2", time.Hour); err != nil || !ok {
			t.Fatal(ok, err)
		}
		time.Sleep(30 * time.Minute)
		synctest.Wait()
		// bot-1 noticed at its next renewal and stopped: production never started.
		for _, s := range e.steps(r.ID) {
			if s.Wave == 2 && s.State != store.StepPending {
				t.Errorf("%s: %s after the lease was lost", s.App.Name, s.State)
			}
		}
		if got, _ := e.st.GetRollout(ctx, r.ID); got.State != store.RolloutRunning {
			t.Errorf("rollout %s", got.State)
		}
	})
}
