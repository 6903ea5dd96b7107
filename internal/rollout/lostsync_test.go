package rollout_test

import (
	"sort"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/rollout"
)

// TestLostSyncsAreRequestedAgainOnce: an argocd-agent principal drops the first sync of several apps (accepted,
// then cleared before it starts: argocd-agent #841). With WithLostSyncRetries the executor requests each again
// once it has the evidence that nothing ran, records it as an event, and every app's operation runs exactly once.
func TestLostSyncsAreRequestedAgainOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: 20 * time.Second, OperationStartDelay: time.Second},
			opts: []rollout.Option{rollout.WithLostSyncRetries("", rollout.DefaultLostSyncRetries)}})
		dropped := []string{"web-test-1", "web-stg-2", "web-prd-1", "web-prd-4"}
		for _, a := range dropped {
			e.sim.DropSyncs(a, 1)
		}
		r := e.submit(basePolicy("", "", ""), newRev)
		r = e.wait(r.ID, store.RolloutSucceeded, store.RolloutFailed, store.RolloutPaused)
		if r.State != store.RolloutSucceeded {
			t.Fatalf("rollout %s: %s", r.State, r.Message)
		}
		all := names(e.apps, "")
		for _, a := range all {
			c := e.sim.Counts(a)
			t.Logf("%-10s %d sync requests, %d dropped, %d operations run", a, c.Syncs, c.SyncsDropped, c.SyncsAccepted)
		}
		e.expectSyncs(counts(all, 1)) // operations run: exactly one per app
		for _, a := range dropped {
			if c := e.sim.Counts(a); c.SyncsDropped != 1 || c.Syncs != 2 {
				t.Errorf("%s: %d requests, %d dropped; want 2, 1", a, c.Syncs, c.SyncsDropped)
			}
		}
		e.expectLive(newRev, all...)
		var again []string
		for _, ev := range e.events(r.ID) {
			if ev.Action == "sync-requested-again" {
				again = append(again, strings.TrimPrefix(ev.Target, "argocd/"))
				if !strings.Contains(ev.Message, "requested again (request 2): accepted, then cleared") {
					t.Errorf("event message %q", ev.Message)
				}
			}
		}
		sort.Strings(again)
		sort.Strings(dropped)
		if strings.Join(again, " ") != strings.Join(dropped, " ") {
			t.Errorf("sync-requested-again events for %v, want %v", again, dropped)
		}
		for _, s := range e.steps(r.ID) {
			if s.State != store.StepSynced || s.Attempts != 1 {
				t.Errorf("step %s: %s, %d attempts; want synced, 1", s.App.Name, s.State, s.Attempts)
			}
		}
	})
}

// TestEverySyncLostFailsTheApp: a principal that drops every sync of the canary: after the bounded re-requests the
// app fails with one line naming the fault, the wave fails, and nothing ran.
func TestEverySyncLostFailsTheApp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: 20 * time.Second},
			opts: []rollout.Option{rollout.WithLostSyncRetries("", rollout.DefaultLostSyncRetries)}})
		e.sim.DropSyncs("web-test-1", argocdsim.DropAll)
		r := e.submit(basePolicy("", "", ""), newRev)
		r = e.wait(r.ID, store.RolloutSucceeded, store.RolloutFailed, store.RolloutPaused)
		if r.State == store.RolloutSucceeded {
			t.Fatalf("rollout succeeded with a canary that never synced")
		}
		s := e.stepOf(r.ID, "web-test-1")
		want := "the sync of web-test-1 to 1b1b1b1b1b was requested 4 times and never started: an argocd-agent principal may be dropping it (argocd-agent #841)"
		if s.State != store.StepFailed || s.Message != want {
			t.Errorf("step: %s %q, want failed %q", s.State, s.Message, want)
		}
		c := e.sim.Counts("web-test-1")
		t.Logf("web-test-1: %d sync requests, %d dropped, %d operations run; rollout %s: %s", c.Syncs, c.SyncsDropped, c.SyncsAccepted, r.State, r.Message)
		if c.Syncs != 4 || c.SyncsDropped != 4 || c.SyncsAccepted != 0 {
			t.Errorf("%d requests, %d dropped, %d run; want 4, 4, 0", c.Syncs, c.SyncsDropped, c.SyncsAccepted)
		}
		e.expectSyncs(map[string]int{}) // no other wave started
		n := 0
		for _, ev := range e.events(r.ID) {
			if ev.Action == "sync-requested-again" {
				n++
			}
		}
		if n != 3 {
			t.Errorf("%d sync-requested-again events, want 3", n)
		}
	})
}

// TestLostSyncRetriesAreOffByDefault: an instance not configured for it (a plain Argo CD) never gets a sync
// twice: the dropped request is waited for until the sync timeout, and the app fails.
func TestLostSyncRetriesAreOffByDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, envConfig{opts: []rollout.Option{rollout.WithSyncTimeouts(5*time.Minute, 30*time.Second, 2*time.Second),
			rollout.WithLostSyncRetries("eu", 3)}}) // another instance's setting does not apply
		e.sim.DropSyncs("web-test-1", 1)
		r := e.submit(basePolicy("", "", ""), newRev)
		r = e.wait(r.ID, store.RolloutSucceeded, store.RolloutFailed, store.RolloutPaused)
		if c := e.sim.Counts("web-test-1"); r.State == store.RolloutSucceeded || c.Syncs != 1 {
			t.Errorf("rollout %s, %d sync requests; want not succeeded, 1", r.State, c.Syncs)
		}
	})
}
