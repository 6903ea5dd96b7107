package storetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/store"
)

var waveTests = []test{
	{"update is compare-and-set", func(t *testing.T, e *env) {
		r, _ := mustCreate(t, e, sample("org/fleet", "m1"))
		w, err := e.s.GetWave(e.ctx, r.ID, 1)
		if err != nil {
			t.Fatal(err)
		}
		stale := w
		start := e.now()
		e.clock.Advance(time.Minute)
		w.State, w.CheckRunID, w.StartedAt = store.WaveGating, 77, start
		w.GateState = json.RawMessage(`{"soakStartedAt":"2026-03-14T15:10:26Z","samples":[0.001,0.002]}`)
		w2, err := e.s.UpdateWave(e.ctx, w)
		if err != nil {
			t.Fatal(err)
		}
		if w2.Version != 2 || w2.State != store.WaveGating || w2.CheckRunID != 77 || !w2.StartedAt.Equal(start) ||
			!w2.FinishedAt.IsZero() || string(w2.GateState) != string(w.GateState) || !w2.UpdatedAt.Equal(e.now()) {
			t.Fatalf("updated wave = %+v", w2)
		}
		stale.State = store.WaveCancelled
		if _, err := e.s.UpdateWave(e.ctx, stale); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("stale UpdateWave: %s; want ErrConflict", fmtErr(err))
		}
		w2.State = "bogus"
		if _, err := e.s.UpdateWave(e.ctx, w2); err == nil {
			t.Fatal("UpdateWave to an unknown state succeeded")
		}
		if _, err := e.s.GetWave(e.ctx, r.ID, 5); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetWave(5): %s; want ErrNotFound", fmtErr(err))
		}
	}},
	{"approve once; the executor's stale write cannot erase it", func(t *testing.T, e *env) {
		r, _ := mustCreate(t, e, sample("org/fleet", "m1"))
		executorCopy, err := e.s.GetWave(e.ctx, r.ID, 1)
		if err != nil {
			t.Fatal(err)
		}
		w, approved, err := e.s.ApproveWave(e.ctx, r.ID, 1, "alice")
		if err != nil || !approved || w.ApprovedBy != "alice" || !w.ApprovedAt.Equal(e.now()) || w.Version != 2 {
			t.Fatalf("ApproveWave(alice) = %+v, %v, %v", w, approved, err)
		}
		e.clock.Advance(time.Second)
		w, approved, err = e.s.ApproveWave(e.ctx, r.ID, 1, "bob")
		if err != nil || approved || w.ApprovedBy != "alice" {
			t.Fatalf("ApproveWave(bob) after alice = %+v, %v, %v; want not approved, by alice", w, approved, err)
		}
		executorCopy.State = store.WaveAwaitingApproval
		if _, err := e.s.UpdateWave(e.ctx, executorCopy); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("UpdateWave from before the approval: %s; want ErrConflict", fmtErr(err))
		}
		w.State = store.WaveSucceeded
		w, err = e.s.UpdateWave(e.ctx, w)
		if err != nil || w.ApprovedBy != "alice" {
			t.Fatalf("UpdateWave after approval = %+v, %v; want the approval kept", w, err)
		}
		if _, _, err := e.s.ApproveWave(e.ctx, r.ID, 9, "alice"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("ApproveWave of a missing wave: %s; want ErrNotFound", fmtErr(err))
		}
		if _, _, err := e.s.ApproveWave(e.ctx, r.ID, 0, ""); err == nil {
			t.Fatal("ApproveWave without approver succeeded")
		}
	}},
}
