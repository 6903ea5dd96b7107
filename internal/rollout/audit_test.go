package rollout_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/rollout"
)

// TestAuditLogHoldsMergerAndAppResults: the rollout's audit log starts with who merged and holds every app's
// result (its sync, then its rollback) with the app's full key, as the audit trail export needs.
func TestAuditLogHoldsMergerAndAppResults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: time.Minute}})
		r := e.submit(basePolicy("", "", ""), newRev, func(req *rollout.Request) { req.MergedBy = "alice" })
		r = e.wait(r.ID, store.RolloutSucceeded, store.RolloutFailed)
		if r.State != store.RolloutSucceeded {
			t.Fatalf("rollout %s: %s", r.State, r.Message)
		}
		if _, err := e.ex.Rollback(context.Background(), r.ID, "all", "bob"); err != nil {
			t.Fatal(err)
		}
		e.wait(r.ID, store.RolloutRolledBack)
		evs := e.events(r.ID)
		if len(evs) == 0 || evs[0].Action != "merged" || evs[0].Actor != "alice" || evs[0].Message != "pull request #7" {
			t.Fatalf("first event %+v, want merged by alice", evs[0])
		}
		got := map[string]int{}
		for _, ev := range evs {
			if ev.Action == "app-sync" || ev.Action == "app-rollback" {
				got[fmt.Sprintf("%s %s %s", ev.Action, ev.Target, ev.Result)]++
			}
		}
		for _, fa := range e.apps {
			for _, want := range []string{"app-sync argocd/" + fa.name + " synced", "app-rollback argocd/" + fa.name + " rolled-back"} {
				if got[want] != 1 {
					t.Errorf("%q logged %d times, want once (all: %v)", want, got[want], got)
				}
			}
		}
	})
}
