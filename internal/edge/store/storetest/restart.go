package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/store"
)

var restartTests = []test{
	{"intent without outcome survives a restart", func(t *testing.T, e *env) {
		r, steps := mustCreate(t, e, sample("org/fleet", "m1"))
		acquire(t, e, e.s, r.ID, "replica-1", 30*time.Second, true)
		r.State = store.RolloutRunning
		if _, err := e.s.UpdateRollout(e.ctx, r); err != nil {
			t.Fatal(err)
		}
		intentAt := e.now()
		st, err := e.s.RecordIntent(e.ctx, store.Intent{StepID: steps["web-test"].ID, Version: 1, Owner: "replica-1", PreviousRevision: "live"})
		if err != nil {
			t.Fatal(err)
		}
		// The process dies here: no outcome, no lease release.
		if err := e.s.Close(); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Minute)

		s := e.open() // the restarted bot, or another replica
		if ids := claimable(t, e, s); len(ids) != 1 || ids[0] != r.ID {
			t.Fatalf("claimable after the crash = %v; want [%d]", ids, r.ID)
		}
		acquire(t, e, s, r.ID, "replica-2", 30*time.Second, true)
		inFlight, err := s.ListSteps(e.ctx, r.ID, store.StepFilter{States: []store.StepState{store.StepIntent, store.StepTriggered}})
		if err != nil {
			t.Fatal(err)
		}
		if len(inFlight) != 1 {
			t.Fatalf("in-flight steps after restart = %+v; want web-test only", inFlight)
		}
		got := inFlight[0]
		if got.App.Name != "web-test" || got.State != store.StepIntent || !got.State.InFlight() || got.Attempts != 1 ||
			!got.IntentAt.Equal(intentAt) || got.Version != st.Version || got.OpRevision() != "m1" {
			t.Fatalf("step after restart = %+v; want the intent as written (%+v)", got, st)
		}
		// Reconciliation: Argo CD shows an operation that started after the intent; record it.
		got, err = s.RecordOutcome(e.ctx, store.Outcome{StepID: got.ID, Version: got.Version, State: store.StepSynced,
			OpStartedAt: intentAt.Add(time.Second), OpFinishedAt: intentAt.Add(5 * time.Second), Health: "Healthy"})
		if err != nil {
			t.Fatal(err)
		}
		// The dead replica's view is stale: nothing it might still write gets through.
		if _, err := s.MarkTriggered(e.ctx, st.ID, st.Version); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("MarkTriggered with the pre-crash version: %s; want ErrConflict", fmtErr(err))
		}
		if _, err := s.RecordIntent(e.ctx, store.Intent{StepID: steps["web-eu"].ID, Version: 1, Owner: "replica-1"}); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("intent by the replica that lost the lease: %s; want ErrLeaseLost", fmtErr(err))
		}
		rr, err := s.GetRollout(e.ctx, r.ID)
		if err != nil || rr.State != store.RolloutRunning {
			t.Fatalf("rollout after restart = %+v, %v", rr, err)
		}
	}},
	{"deliveries stay duplicates after a restart", func(t *testing.T, e *env) {
		if first, err := e.s.MarkDelivery(e.ctx, "redelivered"); err != nil || !first {
			t.Fatalf("MarkDelivery = %v, %v", first, err)
		}
		e.s.Close()
		s := e.open()
		if first, err := s.MarkDelivery(e.ctx, "redelivered"); err != nil || first {
			t.Fatalf("MarkDelivery after restart = %v, %v; want false", first, err)
		}
	}},
}
