package rollout_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fleetwave/fleetwave/internal/autosync"
	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/rollout"
)

// automatedFleet is the default fleet with automated sync (and self-heal) on for the canary app and two
// production apps.
func automatedFleet() []fleetApp {
	apps := defaultFleet()
	for i := range apps {
		switch apps[i].name {
		case "web-test-1", "web-prd-1", "web-prd-2":
			apps[i].automated = true
		}
	}
	return apps
}

// approvalPolicy holds production for an approval before it starts.
const approvalPolicy = "automatedSync: disable-during-rollout\n"

func approvalBeforeProduction() string {
	return approvalPolicy + basePolicy("", "", "approval: {teams: [org/sre]}")
}

// automatedOn lists the apps of the sim whose automated sync is on, sorted.
func (e *env) automatedOn() []string {
	var out []string
	for _, fa := range e.apps {
		a, _ := e.sim.App(fa.name)
		if autosync.On(&a) {
			out = append(out, fa.name)
			if autosync.Switched(&a) {
				e.t.Errorf("%s: on but still carrying %s", fa.name, autosync.Annotation)
			}
		}
	}
	slices.Sort(out)
	return out
}

var allAutomated = []string{"web-prd-1", "web-prd-2", "web-test-1"}

// awaitingProduction submits the rollout and waits for production's approval (canary and staging done).
func awaitingProduction(t *testing.T, e *env, mod ...func(*rollout.Request)) store.Rollout {
	t.Helper()
	r := e.submit(approvalBeforeProduction(), newRev, mod...)
	r = e.wait(r.ID, store.RolloutAwaitingApproval, store.RolloutFailed, store.RolloutPaused)
	if r.State != store.RolloutAwaitingApproval {
		t.Fatalf("rollout %s: %s", r.State, r.Message)
	}
	if got := e.automatedOn(); len(got) != 0 {
		t.Fatalf("automated sync on during the rollout for %v", got)
	}
	return r
}

func TestAutomatedSyncAtEveryEnd(t *testing.T) {
	t.Run("aborted: restored by default", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: 10 * time.Second}, apps: automatedFleet()})
			r := awaitingProduction(t, e)
			reply, err := e.ex.Abort(context.Background(), r.ID, "alice")
			if err != nil || !strings.Contains(reply, "Automated sync is restored") {
				t.Fatalf("Abort = %q, %v", reply, err)
			}
			r = e.wait(r.ID, store.RolloutAborted)
			if got := e.automatedOn(); !slices.Equal(got, allAutomated) {
				t.Errorf("after the abort, automated sync on for %v; want %v", got, allAutomated)
			}
			// The production apps the rollout had not started are Argo CD's to sync now, and status says so.
			r, _ = e.st.GetRollout(context.Background(), r.ID)
			if note, want := rollout.AutomatedSyncNote(r), "automated sync restored: Argo CD syncs the 2 apps the rollout had not started "+
				"(web-prd-1, web-prd-2) to the revision they track by itself"; note != want {
				t.Errorf("note %q after an abort that restored everything, want %q", note, want)
			}
		})
	})
	t.Run("aborted keeping automated sync off, then released", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: 10 * time.Second}, apps: automatedFleet()})
			r := awaitingProduction(t, e)
			reply, err := e.ex.AbortWith(context.Background(), r.ID, "alice", rollout.AbortOptions{KeepAutomatedOff: true})
			if err != nil || !strings.Contains(reply, "Automated sync stays off") || !strings.Contains(reply, "fleetwave rollout release --id") {
				t.Fatalf("AbortWith = %q, %v", reply, err)
			}
			r = e.wait(r.ID, store.RolloutAborted)
			if got := e.automatedOn(); len(got) != 0 {
				t.Errorf("automated sync on for %v after an abort that keeps it off", got)
			}
			note := rollout.AutomatedSyncNote(r)
			if !strings.Contains(note, "automated sync stays off for 3 apps (") || !strings.Contains(note, "the abort kept it off") ||
				!strings.Contains(note, "`fleetwave rollout release --id 1` restores it") || strings.Contains(note, "\n") {
				t.Errorf("note %q", note)
			}
			restored, kept, err := e.ex.ReleaseAutomated(context.Background(), r.ID)
			if err != nil || len(restored) != 3 || len(kept) != 0 {
				t.Fatalf("ReleaseAutomated = %v, %v, %v", restored, kept, err)
			}
			if got := e.automatedOn(); !slices.Equal(got, allAutomated) {
				t.Errorf("after release, on: %v", got)
			}
		})
	})
	t.Run("process killed, then aborted from elsewhere: restored", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: 10 * time.Second}, apps: automatedFleet(),
				opts: []rollout.Option{rollout.WithLeaseTTL(time.Minute)}})
			r := awaitingProduction(t, e)
			e.cancel() // the process dies: no drain, its lease stays until it expires
			<-e.runDone
			other := e.newExecutor(rollout.WithOwner("cli-2")) // not running: a terminal's `rollout abort --argocd`
			if _, err := other.Abort(context.Background(), r.ID, "bob"); err != nil {
				t.Fatal(err)
			}
			if got := e.automatedOn(); !slices.Equal(got, allAutomated) {
				t.Errorf("after the abort, on: %v; want %v", got, allAutomated)
			}
		})
	})
	t.Run("rolled back: kept off, one line says which and how to restore", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: 10 * time.Second}, apps: failing(automatedFleet(), "web-stg-1")})
			r := e.submit("automatedSync: disable-during-rollout\nonFailure: rollback\n"+basePolicy("", "", ""), newRev)
			r = e.wait(r.ID, store.RolloutRolledBack, store.RolloutFailed, store.RolloutSucceeded)
			if r.State != store.RolloutRolledBack {
				t.Fatalf("rollout %s: %s", r.State, r.Message)
			}
			if got := e.automatedOn(); len(got) != 0 {
				t.Errorf("automated sync on for %v after a rollback: Argo CD would sync the merge again", got)
			}
			r, _ = e.st.GetRollout(context.Background(), r.ID)
			note := rollout.AutomatedSyncNote(r)
			for _, want := range []string{"automated sync stays off for 3 apps (", "web-test-1", "web-prd-1", "web-prd-2",
				"restoring it would make Argo CD sync the merge again", "`fleetwave rollout release --id 1` restores it"} {
				if !strings.Contains(note, want) {
					t.Errorf("note %q lacks %q", note, want)
				}
			}
			if cr, _ := e.rep.Check("fleetwave:1"); !strings.Contains(cr.Output.Title+cr.Output.Summary, "automated sync stays off for 3 apps") {
				t.Errorf("the rollout check-run does not say which apps remain off: %q\n%s", cr.Output.Title, cr.Output.Summary)
			}
		})
	})
	t.Run("superseded: the newer rollout inherits and restores", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: 10 * time.Second}, apps: automatedFleet()})
			r1 := awaitingProduction(t, e)
			// The newer merge touches the canary app only, and supersedes the older rollout.
			canary := []fleetApp{e.apps[0]}
			r2 := e.submit(approvalPolicy+basePolicy("", "", ""), newRev2, func(req *rollout.Request) {
				req.Plan = e.plan(e.policy(approvalPolicy+basePolicy("", "", "")), canary)
				req.PRNumber = 8
				req.OnConflict = rollout.ConflictSupersede
			})
			e.wait(r1.ID, store.RolloutSuperseded)
			r2 = e.wait(r2.ID, store.RolloutSucceeded, store.RolloutFailed, store.RolloutPaused)
			if r2.State != store.RolloutSucceeded {
				t.Fatalf("newer rollout %s: %s", r2.State, r2.Message)
			}
			time.Sleep(time.Minute)
			synctest.Wait()
			if got := e.automatedOn(); !slices.Equal(got, allAutomated) {
				t.Errorf("after the newer rollout, on: %v; want %v (production's apps inherited from the superseded one)", got, allAutomated)
			}
		})
	})
}

func TestRolloutTakesTheHoldsOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: 10 * time.Second}, apps: automatedFleet()})
		ctx := context.Background()
		h := &autosync.Holder{Argo: e.argo, Store: e.st}
		// PR 7 (the merged one, e.submit's) held all three before its merge; PR 9, still open, holds web-prd-2.
		if res, err := h.Hold(ctx, autosync.Owner{Repo: repo, PR: 7, Head: "pr7head"}, []store.AppKey{
			{Namespace: "argocd", Name: "web-test-1"}, {Namespace: "argocd", Name: "web-prd-1"}, {Namespace: "argocd", Name: "web-prd-2"}}); err != nil || len(res.Switched) != 3 {
			t.Fatalf("Hold = %+v, %v", res, err)
		}
		if _, err := h.Hold(ctx, autosync.Owner{Repo: repo, PR: 9, Head: "pr9head"}, []store.AppKey{{Namespace: "argocd", Name: "web-prd-2"}}); err != nil {
			t.Fatal(err)
		}
		r := e.submit(approvalPolicy+basePolicy("", "", ""), newRev)
		r = e.wait(r.ID, store.RolloutSucceeded, store.RolloutFailed, store.RolloutPaused)
		if r.State != store.RolloutSucceeded {
			t.Fatalf("rollout %s: %s", r.State, r.Message)
		}
		var taken, late int
		for _, ev := range e.events(r.ID) {
			switch ev.Action {
			case "automated-sync-hold-taken":
				taken++
			case "automated-sync-late":
				late++
			}
		}
		if taken != 3 || late != 0 {
			t.Errorf("%d holds taken over, %d late warnings; want 3, 0", taken, late)
		}
		hs, err := e.st.ListHolds(ctx, store.HoldFilter{})
		if err != nil || len(hs) != 1 || hs[0].PR != 9 {
			t.Fatalf("holds left: %v, %v; want PR 9's", hs, err)
		}
		// web-prd-2 stays off: PR 9 still holds it.
		if got := e.automatedOn(); !slices.Equal(got, []string{"web-prd-1", "web-test-1"}) {
			t.Errorf("on after the rollout: %v; want web-prd-1 web-test-1 (PR 9 holds web-prd-2)", got)
		}
		if res, err := h.Release(ctx, repo, 9, ""); err != nil || len(res.Restored) != 1 {
			t.Fatalf("Release(PR 9) = %+v, %v", res, err)
		}
		if got := e.automatedOn(); !slices.Equal(got, allAutomated) {
			t.Errorf("on after PR 9 closed: %v", got)
		}
	})
}

func TestLateSwitchIsWarned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: 10 * time.Second}, apps: automatedFleet()})
		r := e.submit(approvalPolicy+basePolicy("", "", ""), newRev)
		e.wait(r.ID, store.RolloutSucceeded, store.RolloutFailed, store.RolloutPaused)
		var msgs []string
		for _, ev := range e.events(r.ID) {
			if ev.Action == "automated-sync-late" {
				msgs = append(msgs, ev.Message)
			}
		}
		if len(msgs) != 1 || msgs[0] != "automated sync was still on for 3 apps: Argo CD may already have synced them" {
			t.Errorf("late warnings: %q", msgs)
		}
	})
}

func TestSwitchRevertedBeforeAWavePausesTheRollout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: 10 * time.Second}, apps: automatedFleet()})
		r := awaitingProduction(t, e)
		// An app-of-apps parent with self-heal writes the child's spec back.
		if _, err := e.argo.Patch(context.Background(), "argocd/web-prd-1",
			`{"spec":{"syncPolicy":{"automated":{"selfHeal":true}}}}`, argocd.PatchMerge); err != nil {
			t.Fatal(err)
		}
		if _, err := e.ex.Approve(context.Background(), r.ID, "production", "alice"); err != nil {
			t.Fatal(err)
		}
		r = e.wait(r.ID, store.RolloutPaused, store.RolloutSucceeded)
		if r.State != store.RolloutPaused || !strings.Contains(r.Message, "automated sync of 1 app (web-prd-1) was on again before wave production") ||
			!strings.Contains(r.Message, "docs/policy.md") {
			t.Fatalf("rollout %s: %q", r.State, r.Message)
		}
		if s := e.stepOf(r.ID, "web-prd-1"); s.State != store.StepPending {
			t.Errorf("web-prd-1 %s: the wave started", s.State)
		}
		if got := e.automatedOn(); len(got) != 0 {
			t.Errorf("on: %v; the reverted app must be switched off again", got)
		}
		if _, err := e.ex.Resume(context.Background(), r.ID, "alice"); err != nil {
			t.Fatal(err)
		}
		r = e.wait(r.ID, store.RolloutSucceeded, store.RolloutFailed)
		if r.State != store.RolloutSucceeded {
			t.Fatalf("after /resume: %s %s", r.State, r.Message)
		}
	})
}
