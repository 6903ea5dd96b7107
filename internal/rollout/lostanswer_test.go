package rollout_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/rollout"
)

// TestLostSyncAnswerIsNotSentAgain: Argo CD starts a sync, the connection drops before its answer, and Argo CD
// stays unreachable while the operation runs to its end (or comes back while it still runs). The executor must
// find that operation when Argo CD answers again, not start a second one: exactly one operation per app, every
// app at the revision, the rollout succeeded (argocdsim LoseSyncAnswers; the duplicate of c682311, which
// TestRolloutArgoCDUnreachable caught once by timing). On the client before c682311 the cases where Argo CD comes
// back within the client's retries sync twice; before argosync read the app until Argo CD answered, those where it
// stays away past the grace failed the app, skipped it, or synced it twice.
func TestLostSyncAnswerIsNotSentAgain(t *testing.T) {
	for _, tc := range []struct {
		name        string
		sim         argocdsim.Config
		lose        []string // apps whose first sync's answer is lost
		unreachable time.Duration
		// rollback: apps whose rollback's sync loses its answer, the same way; with it, the rollout is rolled back
		// once it succeeded (the executor's rollback is a sync to the previous revision, through argosync).
		rollback []string
	}{
		{name: "unreachable until the operations finished", sim: argocdsim.Config{SyncDuration: 20 * time.Second},
			lose: []string{"web-test-1", "web-stg-2", "web-prd-3"}, unreachable: 2 * time.Minute},
		{name: "unreachable until the operations finished, slow to start and to settle",
			sim:  argocdsim.Config{SyncDuration: 20 * time.Second, OperationStartDelay: 2 * time.Second, ProgressingFor: 30 * time.Second},
			lose: []string{"web-test-1", "web-prd-1"}, unreachable: 3 * time.Minute},
		// The client's own retries (100ms doubling, four) outlast the outage: a client that re-sent the request
		// would reach Argo CD after the operation had finished (c682311's duplicate, every time).
		{name: "back before the client would have given up", sim: argocdsim.Config{SyncDuration: 100 * time.Millisecond},
			lose: []string{"web-test-1", "web-stg-2", "web-prd-3"}, unreachable: 500 * time.Millisecond},
		{name: "back after the grace, before the app's next request", sim: argocdsim.Config{SyncDuration: 20 * time.Second},
			lose: []string{"web-test-1", "web-prd-4"}, unreachable: 40 * time.Second},
		{name: "back after the grace, before the app's next request, health still Progressing",
			sim:  argocdsim.Config{SyncDuration: 20 * time.Second, ProgressingFor: 30 * time.Second},
			lose: []string{"web-test-1", "web-prd-4"}, unreachable: 40 * time.Second},
		{name: "back while the operation runs", sim: argocdsim.Config{SyncDuration: 90 * time.Second},
			lose: []string{"web-test-1", "web-prd-2"}, unreachable: 30 * time.Second},
		{name: "only the answer lost", sim: argocdsim.Config{SyncDuration: 20 * time.Second},
			lose: []string{"web-test-1", "web-stg-1"}},
		{name: "rollback: unreachable until the operations finished", sim: argocdsim.Config{SyncDuration: 20 * time.Second},
			lose: []string{"web-stg-1"}, unreachable: 2 * time.Minute, rollback: []string{"web-prd-2", "web-stg-1", "web-test-1"}},
		{name: "rollback: back before the client would have given up", sim: argocdsim.Config{SyncDuration: 100 * time.Millisecond},
			unreachable: 500 * time.Millisecond, rollback: []string{"web-test-1", "web-prd-2"}},
		{name: "rollback: back after the grace, before the app's next request, health still Progressing",
			sim:         argocdsim.Config{SyncDuration: 20 * time.Second, ProgressingFor: 30 * time.Second},
			unreachable: 40 * time.Second, rollback: []string{"web-prd-1", "web-stg-2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := start(t, envConfig{sim: tc.sim})
				for _, a := range tc.lose {
					e.sim.LoseSyncAnswers(a, 1, tc.unreachable)
				}
				r := e.submit(basePolicy("", "", ""), newRev)
				r = e.wait(r.ID, store.RolloutSucceeded, store.RolloutFailed, store.RolloutPaused)
				all := names(e.apps, "")
				for _, a := range all {
					c := e.sim.Counts(a)
					t.Logf("%-10s %d sync requests, %d answers lost, %d operations run", a, c.Syncs, c.SyncAnswersLost, c.SyncsAccepted)
				}
				for _, ev := range e.events(r.ID) {
					t.Logf("event %s %s %s: %s", ev.Action, ev.Target, ev.Result, ev.Message)
				}
				if r.State != store.RolloutSucceeded {
					t.Errorf("rollout %s: %s", r.State, r.Message)
				}
				e.expectSyncs(counts(all, 1)) // exactly one operation per app: none started twice
				for _, a := range tc.lose {
					if c := e.sim.Counts(a); c.SyncAnswersLost != 1 {
						t.Errorf("%s: %d answers lost, want 1 (the fault did not hit it)", a, c.SyncAnswersLost)
					}
				}
				e.expectLive(newRev, all...)
				e.expectLostAnswerEvents(r.ID, "app-sync", tc.lose)
				for _, s := range e.steps(r.ID) {
					t.Logf("step %-10s %s, %d attempts: %s", s.App.Name, s.State, s.Attempts, s.Message)
					if s.State != store.StepSynced {
						t.Errorf("step %s: %s (%s), want synced", s.App.Name, s.State, s.Message)
					}
				}
				if len(tc.rollback) == 0 || t.Failed() {
					return
				}

				for _, a := range tc.rollback {
					e.sim.LoseSyncAnswers(a, 1, tc.unreachable)
				}
				if _, err := e.ex.Rollback(context.Background(), r.ID, "all", "alice"); err != nil {
					t.Fatal(err)
				}
				r = e.wait(r.ID, store.RolloutRolledBack, store.RolloutFailed, store.RolloutAborted)
				for _, ev := range e.events(r.ID) {
					if ev.Action == "app-rollback" || strings.HasPrefix(ev.Action, "rollback") {
						t.Logf("event %s %s %s: %s", ev.Action, ev.Target, ev.Result, ev.Message)
					}
				}
				for _, a := range all {
					c := e.sim.Counts(a)
					t.Logf("%-10s %d sync requests, %d answers lost, %d operations run", a, c.Syncs, c.SyncAnswersLost, c.SyncsAccepted)
				}
				if r.State != store.RolloutRolledBack {
					t.Errorf("rollback: rollout %s: %s", r.State, r.Message)
				}
				e.expectSyncs(counts(all, 2)) // one operation forward, one back: none twice
				for _, a := range tc.rollback {
					want := 1
					if slices.Contains(tc.lose, a) {
						want++
					}
					if c := e.sim.Counts(a); c.SyncAnswersLost != want {
						t.Errorf("%s: %d answers lost, want %d (the fault did not hit its rollback)", a, c.SyncAnswersLost, want)
					}
				}
				e.expectLive(oldRev, all...)
				e.expectLostAnswerEvents(r.ID, "app-rollback", tc.rollback)
				for _, s := range e.steps(r.ID) {
					if s.State != store.StepRolledBack {
						t.Errorf("step %s after the rollback: %s (%s), want rolled-back", s.App.Name, s.State, s.Message)
					}
				}
			})
		})
	}
}

// expectLostAnswerEvents: the result event (action) of each app says that its request's answer was lost and
// what was found instead, and no other app's does.
func (e *env) expectLostAnswerEvents(id int64, action string, apps []string) {
	e.t.Helper()
	said := map[string]bool{}
	for _, ev := range e.events(id) {
		if ev.Action == action && strings.Contains(ev.Message, "the sync request's answer was lost; ") {
			said[strings.TrimPrefix(ev.Target, "argocd/")] = true
		}
	}
	for _, fa := range e.apps {
		if want := slices.Contains(apps, fa.name); said[fa.name] != want {
			e.t.Errorf("%s event of %s says the answer was lost: %t, want %t", action, fa.name, said[fa.name], want)
		}
	}
}

// TestLostSyncAnswerAcrossInstances: in a fleet of instances, the instance that lost a sync's answer and then
// stops answering holds its apps (unreachable.go) while the other instance's go on; once it answers again, the
// operation of the lost answer is found, not started again: one operation per app on every instance.
func TestLostSyncAnswerAcrossInstances(t *testing.T) {
	for _, tc := range []struct {
		name        string
		sim         argocdsim.Config
		unreachable time.Duration
	}{
		{"unreachable until the operation finished", argocdsim.Config{SyncDuration: 20 * time.Second}, 2 * time.Minute},
		{"back before the client would have given up", argocdsim.Config{SyncDuration: 100 * time.Millisecond}, 500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := startMulti(t, tc.sim, map[string][]fleetApp{"": instanceFleet("web", 4), "eu": instanceFleet("eu-web", 4)}, nil,
					rollout.WithInstanceBudgets(map[string]int{"": 2, "eu": 2}))
				m.sims["eu"].LoseSyncAnswers("eu-web-1", 1, tc.unreachable)
				r := m.submitAll(onePolicy)
				r = m.wait(r.ID, store.RolloutSucceeded, store.RolloutFailed, store.RolloutPaused)
				for _, ev := range m.events(r.ID) {
					t.Logf("event %s %s %s: %s", ev.Action, ev.Target, ev.Result, ev.Message)
				}
				if r.State != store.RolloutSucceeded {
					t.Errorf("rollout %s: %s", r.State, r.Message)
				}
				m.expectOnce()
				if c := m.sims["eu"].Counts("eu-web-1"); c.SyncAnswersLost != 1 {
					t.Errorf("eu-web-1: %d answers lost, want 1", c.SyncAnswersLost)
				}
				lost := false
				for _, ev := range m.events(r.ID) {
					if ev.Action == "app-sync" && strings.Contains(ev.Message, "the sync request's answer was lost; ") {
						lost = lost || strings.HasSuffix(ev.Target, "/eu-web-1")
						if !strings.HasSuffix(ev.Target, "/eu-web-1") {
							t.Errorf("event of %s says an answer was lost: %s", ev.Target, ev.Message)
						}
					}
				}
				if !lost {
					t.Error("no app-sync event of eu-web-1 says its answer was lost")
				}
			})
		})
	}
}
