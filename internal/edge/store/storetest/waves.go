package storetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/store"
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
	{"rollout and waves update together or not at all", func(t *testing.T, e *env) {
		r, _ := mustCreate(t, e, sample("org/fleet", "m1"))
		r, err := e.s.UpdateRollout(e.ctx, withState(r, store.RolloutRunning))
		if err != nil {
			t.Fatal(err)
		}
		ws, err := e.s.ListWaves(e.ctx, r.ID)
		if err != nil || len(ws) < 2 {
			t.Fatalf("ListWaves = %d waves, %v", len(ws), err)
		}
		// A stale second wave: the first wave's write must be undone and the rollout left as it was.
		stale := ws[1]
		if _, err := e.s.UpdateWave(e.ctx, ws[1]); err != nil {
			t.Fatal(err)
		}
		mark := func(w store.Wave) store.Wave { w.State, w.Message = store.WaveRollingBack, "rollback"; return w }
		if _, _, err := e.s.UpdateRolloutWaves(e.ctx, withState(r, store.RolloutRollingBack), []store.Wave{mark(ws[0]), mark(stale)}); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("UpdateRolloutWaves with a stale wave: %s; want ErrConflict", fmtErr(err))
		}
		if got, _ := e.s.GetWave(e.ctx, r.ID, 0); got.State != ws[0].State || got.Version != ws[0].Version {
			t.Fatalf("wave 0 after a failed UpdateRolloutWaves = %s v%d; want %s v%d", got.State, got.Version, ws[0].State, ws[0].Version)
		}
		if got, _ := e.s.GetRollout(e.ctx, r.ID); got.State != store.RolloutRunning || got.Version != r.Version {
			t.Fatalf("rollout after a failed UpdateRolloutWaves = %s v%d; want running v%d", got.State, got.Version, r.Version)
		}
		// A transition the rollout may not make also undoes the waves.
		done, _ := mustCreate(t, e, sample("org/fleet", "m2"))
		if done, err = e.s.UpdateRollout(e.ctx, withState(done, store.RolloutRolledBack)); err != nil {
			t.Fatal(err)
		}
		dws, _ := e.s.ListWaves(e.ctx, done.ID)
		if _, _, err := e.s.UpdateRolloutWaves(e.ctx, withState(done, store.RolloutRunning), []store.Wave{mark(dws[0])}); !errors.Is(err, store.ErrInvalidTransition) {
			t.Fatalf("UpdateRolloutWaves rolled-back->running: %s; want ErrInvalidTransition", fmtErr(err))
		}
		if got, _ := e.s.GetWave(e.ctx, done.ID, 0); got.Version != dws[0].Version {
			t.Fatalf("wave 0 written by a refused UpdateRolloutWaves: v%d, want v%d", got.Version, dws[0].Version)
		}
		ws, _ = e.s.ListWaves(e.ctx, r.ID)
		nr, nws, err := e.s.UpdateRolloutWaves(e.ctx, withState(r, store.RolloutRollingBack), []store.Wave{mark(ws[0]), mark(ws[1])})
		if err != nil {
			t.Fatal(err)
		}
		if nr.State != store.RolloutRollingBack || nr.Version != r.Version+1 || len(nws) != 2 ||
			nws[0].State != store.WaveRollingBack || nws[1].Version != ws[1].Version+1 {
			t.Fatalf("UpdateRolloutWaves = %+v, %+v", nr, nws)
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
