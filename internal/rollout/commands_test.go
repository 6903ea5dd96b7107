package rollout_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fleetwave/fleetwave/internal/checkrun"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/edge/github"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/rollout"
)

func failing(apps []fleetApp, which ...string) []fleetApp {
	for i := range apps {
		for _, w := range which {
			if apps[i].name == w {
				apps[i].behavior = argocdsim.Behavior{Fail: true, FailMessage: "admission webhook denied the request"}
			}
		}
	}
	return apps
}

func TestFailureThreshold(t *testing.T) {
	t.Run("within the threshold the rollout goes on", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: 10 * time.Second}, apps: failing(defaultFleet(), "web-prd-1")})
			r := e.submit(basePolicy("", "", "failureThreshold: 1"), newRev)
			r = e.wait(r.ID, store.RolloutSucceeded, store.RolloutPaused, store.RolloutFailed)
			if r.State != store.RolloutSucceeded {
				t.Fatalf("rollout %s: %s", r.State, r.Message)
			}
			if s := e.stepOf(r.ID, "web-prd-1"); s.State != store.StepFailed || !strings.Contains(s.Message, "admission webhook denied") {
				t.Errorf("failing app: %s %q", s.State, s.Message)
			}
			e.expectSyncs(counts(names(e.apps, ""), 1))
		})
	})
	t.Run("crossed, the wave fails and the rollout pauses; resume retries the failed apps", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: 10 * time.Second}, apps: failing(defaultFleet(), "web-prd-1", "web-prd-2")})
			r := e.submit(basePolicy("", "", "failureThreshold: 25%"), newRev) // 25% of 4 tolerates 1
			r = e.wait(r.ID, store.RolloutSucceeded, store.RolloutPaused, store.RolloutFailed)
			if r.State != store.RolloutPaused || !strings.Contains(r.Message, "wave production failed: 2 of 4 apps failed (the wave tolerates 1)") {
				t.Fatalf("rollout %s: %q", r.State, r.Message)
			}
			// The second batch never started.
			e.expectSyncs(merge(counts(names(e.apps, ""), 1), map[string]int{"web-prd-3": 0, "web-prd-4": 0}))
			time.Sleep(20 * time.Minute)
			e.expectSyncs(merge(counts(names(e.apps, ""), 1), map[string]int{"web-prd-3": 0, "web-prd-4": 0}))

			// Fixed; /resume retries the two failed apps once each, then the rest.
			for _, a := range []string{"web-prd-1", "web-prd-2"} {
				if err := e.sim.SetBehavior(a, argocdsim.Behavior{}); err != nil {
					t.Fatal(err)
				}
			}
			msg, err := e.ex.Resume(context.Background(), r.ID, "alice")
			if err != nil || !strings.Contains(msg, "retries its 2 failed apps") {
				t.Fatalf("resume: %q %v", msg, err)
			}
			r = e.wait(r.ID, store.RolloutSucceeded, store.RolloutPaused, store.RolloutFailed)
			if r.State != store.RolloutSucceeded {
				t.Fatalf("rollout %s: %s", r.State, r.Message)
			}
			e.expectSyncs(merge(counts(names(e.apps, ""), 1), map[string]int{"web-prd-1": 2, "web-prd-2": 2}))
			e.expectLive(newRev, names(e.apps, "")...)
		})
	})
}

func TestOnFailureRollback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: 10 * time.Second}, apps: failing(defaultFleet(), "web-prd-2")})
		r := e.submit("onFailure: rollback\n"+basePolicy("", "", ""), newRev)
		r = e.wait(r.ID, store.RolloutRolledBack, store.RolloutSucceeded, store.RolloutPaused, store.RolloutFailed, store.RolloutAborted)
		if r.State != store.RolloutRolledBack {
			dumpSteps(t, e, r.ID)
			t.Fatalf("rollout %s: %s", r.State, r.Message)
		}
		// Touched apps were synced forward once and back once; the failed one never applied anything (its
		// rollback is a no-op); the second production batch never started.
		e.expectSyncs(map[string]int{"web-test-1": 2, "web-stg-1": 2, "web-stg-2": 2, "web-prd-1": 2, "web-prd-2": 1})
		e.expectLive(oldRev, names(e.apps, "")...)
		for _, s := range e.steps(r.ID) {
			want := store.StepRolledBack
			if s.Wave == 2 && s.Batch == 1 {
				want = store.StepPending
			}
			if s.State != want {
				t.Errorf("%s: %s, want %s", s.App.Name, s.State, want)
			}
		}
		// Rolled back last wave first.
		var order []string
		for _, ev := range e.events(r.ID) {
			if ev.Action == "wave-rolled-back" {
				order = append(order, ev.Target)
			}
		}
		if strings.Join(order, ",") != "production,staging,canary" {
			t.Errorf("rollback order %v", order)
		}
		cr, ok := e.rep.Latest(checkrun.CheckRollback)
		if !ok || cr.Conclusion != github.ConclusionSuccess || cr.Output.Title != "Rolled back 5 apps" {
			t.Errorf("rollback check-run: %v %s %q", ok, cr.Conclusion, cr.Output.Title)
		}
		var got []string
		for _, tr := range e.rep.Transitions(checkrun.CheckRollback) {
			got = append(got, tr.String())
		}
		if strings.Join(got, ", ") != "fleetwave/rollback: in_progress, fleetwave/rollback: completed/success" {
			t.Errorf("rollback transitions %v", got)
		}
		if cr, _ := e.rep.Latest(checkrun.CheckRollout); cr.Conclusion != github.ConclusionFailure {
			t.Errorf("rollout check-run conclusion %s", cr.Conclusion)
		}
	})
}

func TestPauseResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: time.Minute}})
		r := e.submit(basePolicy("", "", ""), newRev)
		ctx := context.Background()
		e.waitWave(r.ID, 1, store.WaveRunning)
		time.Sleep(10 * time.Second) // staging's syncs are in flight
		synctest.Wait()
		msg, err := e.ex.Pause(ctx, r.ID, "alice")
		if err != nil || !strings.Contains(msg, "the syncs in flight finish") {
			t.Fatalf("pause: %q %v", msg, err)
		}
		if _, err := e.ex.Pause(ctx, r.ID, "bob"); !errors.Is(err, rollout.ErrRefused) || !strings.Contains(err.Error(), "already paused") {
			t.Errorf("second pause: %v", err)
		}
		time.Sleep(20 * time.Minute)
		// The staging syncs in flight finished and were recorded; production never started.
		for _, s := range e.steps(r.ID) {
			switch {
			case s.Wave < 2 && s.State != store.StepSynced:
				t.Errorf("%s: %s", s.App.Name, s.State)
			case s.Wave == 2 && s.State != store.StepPending:
				t.Errorf("%s: %s while paused", s.App.Name, s.State)
			}
		}
		e.expectSyncs(merge(counts(names(e.apps, "test"), 1), counts(names(e.apps, "stg"), 1)))
		if cr, _ := e.rep.Latest(checkrun.CheckRollout); !strings.HasPrefix(cr.Output.Title, "Paused: paused by @alice") || cr.Actions[0].Identifier != "resume" {
			t.Errorf("paused check-run %q %+v", cr.Output.Title, cr.Actions)
		}
		if _, err := e.ex.Resume(ctx, r.ID, "alice"); err != nil {
			t.Fatal(err)
		}
		r = e.wait(r.ID, store.RolloutSucceeded, store.RolloutFailed)
		if r.State != store.RolloutSucceeded {
			t.Fatalf("rollout %s: %s", r.State, r.Message)
		}
		e.expectSyncs(counts(names(e.apps, ""), 1))
		if _, err := e.ex.Resume(ctx, r.ID, "alice"); !errors.Is(err, rollout.ErrRefused) {
			t.Errorf("resume of a finished rollout: %v", err)
		}
	})
}

func TestAbort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: time.Minute}})
		r := e.submit(basePolicy("", "", ""), newRev)
		ctx := context.Background()
		e.waitWave(r.ID, 1, store.WaveRunning)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if _, err := e.ex.Abort(ctx, r.ID, "alice"); err != nil {
			t.Fatal(err)
		}
		r = e.wait(r.ID, store.RolloutAborted)
		time.Sleep(time.Hour)
		// In-flight syncs were not terminated: they finished and were recorded.
		e.expectSyncs(merge(counts(names(e.apps, "test"), 1), counts(names(e.apps, "stg"), 1)))
		for _, s := range e.steps(r.ID) {
			if s.Wave == 1 && s.State != store.StepSynced {
				t.Errorf("%s: %s", s.App.Name, s.State)
			}
		}
		for _, name := range []string{"fleetwave/wave: production", checkrun.CheckRollout} {
			if cr, _ := e.rep.Latest(name); cr.Conclusion != github.ConclusionCancelled {
				t.Errorf("%s: %s %s", name, cr.Status, cr.Conclusion)
			}
		}
		if _, err := e.ex.Abort(ctx, r.ID, "alice"); !errors.Is(err, rollout.ErrRefused) {
			t.Errorf("second abort: %v", err)
		}
		// A rollback after an abort takes back what was synced.
		if _, err := e.ex.Rollback(ctx, r.ID, "", "alice"); err != nil {
			t.Fatal(err)
		}
		r = e.wait(r.ID, store.RolloutRolledBack, store.RolloutFailed)
		if r.State != store.RolloutRolledBack {
			t.Fatalf("rollback after abort: %s %s", r.State, r.Message)
		}
		e.expectLive(oldRev, names(e.apps, "")...)
	})
}

func TestRollbackFromAWave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: 10 * time.Second}})
		r := e.submit(basePolicy("", "", ""), newRev)
		ctx := context.Background()
		r = e.wait(r.ID, store.RolloutSucceeded)
		msg, err := e.ex.Rollback(ctx, r.ID, "Production", "alice")
		if err != nil || !strings.Contains(msg, "4 apps in waves production") {
			t.Fatalf("rollback: %q %v", msg, err)
		}
		r = e.wait(r.ID, store.RolloutAborted, store.RolloutRolledBack, store.RolloutFailed)
		if r.State != store.RolloutAborted || !strings.Contains(r.Message, "partially rolled back: 3 apps of earlier waves stay") {
			t.Fatalf("after /rollback production: %s %q", r.State, r.Message)
		}
		e.expectLive(oldRev, names(e.apps, "prd")...)
		e.expectLive(newRev, names(e.apps, "stg")...)
		if _, err := e.ex.Rollback(ctx, r.ID, "nope", "alice"); err == nil || !strings.Contains(err.Error(), `no wave "nope"`) {
			t.Errorf("unknown wave: %v", err)
		}
		if _, err := e.ex.Rollback(ctx, r.ID, "all", "alice"); err != nil {
			t.Fatal(err)
		}
		r = e.wait(r.ID, store.RolloutRolledBack, store.RolloutFailed)
		if r.State != store.RolloutRolledBack {
			t.Fatalf("after /rollback all: %s %q", r.State, r.Message)
		}
		e.expectLive(oldRev, names(e.apps, "")...)
		e.expectSyncs(counts(names(e.apps, ""), 2))
		if _, err := e.ex.Rollback(ctx, r.ID, "all", "alice"); !errors.Is(err, rollout.ErrRefused) {
			t.Errorf("rollback of a rolled-back rollout: %v", err)
		}
	})
}

func TestRollbackRefusedWhenANewerRolloutChangedTheApps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: 10 * time.Second}})
		r1 := e.wait(e.submit(basePolicy("", "", ""), newRev).ID, store.RolloutSucceeded)
		e.sim.SetRef("HEAD", newRev2)
		r2 := e.wait(e.submit(basePolicy("", "", ""), newRev2).ID, store.RolloutSucceeded)
		_, err := e.ex.Rollback(context.Background(), r1.ID, "all", "alice")
		if !errors.Is(err, rollout.ErrRefused) || !strings.Contains(err.Error(), "rollout #2") {
			t.Fatalf("rollback of the older rollout: %v", err)
		}
		if _, err := e.ex.Rollback(context.Background(), r2.ID, "all", "alice"); err != nil {
			t.Fatal(err)
		}
		e.wait(r2.ID, store.RolloutRolledBack)
		e.expectLive(newRev, names(e.apps, "")...) // back to what rollout 1 deployed
	})
}
