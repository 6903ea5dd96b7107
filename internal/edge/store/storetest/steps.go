package storetest

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/store"
)

var stepTests = []test{
	{"intent, triggered, synced", func(t *testing.T, e *env) {
		_, steps := mustCreate(t, e, sample("org/fleet", "m1"))
		st := steps["web-eu"]
		e.clock.Advance(time.Second)
		intentAt := e.now()
		st, err := e.s.RecordIntent(e.ctx, store.Intent{StepID: st.ID, Version: st.Version, PreviousRevision: "live-eu"})
		if err != nil {
			t.Fatal(err)
		}
		if st.State != store.StepIntent || st.Op != store.OpSync || st.Attempts != 1 || !st.IntentAt.Equal(intentAt) ||
			st.PreviousRevision != "live-eu" || st.Version != 2 || !st.TriggeredAt.IsZero() || st.OpRevision() != "m1" {
			t.Fatalf("after RecordIntent: %+v", st)
		}
		e.clock.Advance(time.Second)
		st, err = e.s.MarkTriggered(e.ctx, st.ID, st.Version)
		if err != nil {
			t.Fatal(err)
		}
		if st.State != store.StepTriggered || !st.TriggeredAt.Equal(e.now()) || !st.IntentAt.Equal(intentAt) {
			t.Fatalf("after MarkTriggered: %+v", st)
		}
		opStart, opEnd := intentAt.Add(2*time.Second).Truncate(time.Second), intentAt.Add(9*time.Second).Truncate(time.Second)
		st, err = e.s.RecordOutcome(e.ctx, store.Outcome{StepID: st.ID, Version: st.Version, State: store.StepSynced,
			OpStartedAt: opStart, OpFinishedAt: opEnd, Health: "Healthy", Message: "synced to m1"})
		if err != nil {
			t.Fatal(err)
		}
		if st.State != store.StepSynced || !st.OpStartedAt.Equal(opStart) || !st.OpFinishedAt.Equal(opEnd) ||
			st.Health != "Healthy" || st.Message != "synced to m1" || st.Version != 4 {
			t.Fatalf("after RecordOutcome: %+v", st)
		}
		got, err := e.s.GetStep(e.ctx, st.ID)
		if err != nil || got != st {
			t.Fatalf("GetStep = %+v, %v; want %+v", got, err, st)
		}
	}},
	{"intent to triggered only once", func(t *testing.T, e *env) {
		_, steps := mustCreate(t, e, sample("org/fleet", "m1"))
		st, err := e.s.RecordIntent(e.ctx, store.Intent{StepID: steps["web-us"].ID, Version: steps["web-us"].Version})
		if err != nil {
			t.Fatal(err)
		}
		other := e.open()
		var wins, conflicts atomic.Int32
		var wg sync.WaitGroup
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				s := e.s
				if i%2 == 1 {
					s = other
				}
				_, err := s.MarkTriggered(e.ctx, st.ID, st.Version)
				switch {
				case err == nil:
					wins.Add(1)
				case errors.Is(err, store.ErrConflict):
					conflicts.Add(1)
				default:
					t.Errorf("MarkTriggered: %v", err)
				}
			}(i)
		}
		wg.Wait()
		if wins.Load() != 1 || conflicts.Load() != 19 {
			t.Fatalf("%d MarkTriggered won, %d conflicted; want 1 and 19", wins.Load(), conflicts.Load())
		}
		cur, err := e.s.GetStep(e.ctx, st.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.s.MarkTriggered(e.ctx, cur.ID, cur.Version); !errors.Is(err, store.ErrInvalidTransition) {
			t.Fatalf("MarkTriggered of a triggered step: %s; want ErrInvalidTransition", fmtErr(err))
		}
		if _, err := e.s.RecordIntent(e.ctx, store.Intent{StepID: cur.ID, Version: cur.Version}); !errors.Is(err, store.ErrInvalidTransition) {
			t.Fatalf("RecordIntent on a triggered step (not reconciled): %s; want ErrInvalidTransition", fmtErr(err))
		}
		if _, err := e.s.MarkTriggered(e.ctx, steps["web-eu"].ID, steps["web-eu"].Version); !errors.Is(err, store.ErrInvalidTransition) {
			t.Fatalf("MarkTriggered of a pending step: %s; want ErrInvalidTransition", fmtErr(err))
		}
	}},
	{"reconciled not started: back to pending, or intent again", func(t *testing.T, e *env) {
		_, steps := mustCreate(t, e, sample("org/fleet", "m1"))
		st := steps["web-eu"]
		st, err := e.s.RecordIntent(e.ctx, store.Intent{StepID: st.ID, Version: st.Version, PreviousRevision: "live-1"})
		if err != nil {
			t.Fatal(err)
		}
		st, err = e.s.RecordOutcome(e.ctx, store.Outcome{StepID: st.ID, Version: st.Version, State: store.StepPending, Message: "sync never started"})
		if err != nil || st.State != store.StepPending || st.Attempts != 1 {
			t.Fatalf("intent → pending = %+v, %v", st, err)
		}
		st, err = e.s.RecordIntent(e.ctx, store.Intent{StepID: st.ID, Version: st.Version, PreviousRevision: "m1"})
		if err != nil || st.Attempts != 2 || st.PreviousRevision != "live-1" {
			t.Fatalf("second intent = %+v, %v; want attempts 2 and the first previous revision kept", st, err)
		}
		st, err = e.s.RecordIntent(e.ctx, store.Intent{StepID: st.ID, Version: st.Version})
		if err != nil || st.Attempts != 3 || st.State != store.StepIntent {
			t.Fatalf("intent → intent = %+v, %v", st, err)
		}
		st, err = e.s.RecordOutcome(e.ctx, store.Outcome{StepID: st.ID, Version: st.Version, State: store.StepFailed, Message: "ComparisonError"})
		if err != nil || st.State != store.StepFailed {
			t.Fatalf("intent → failed = %+v, %v", st, err)
		}
		st, err = e.s.RecordIntent(e.ctx, store.Intent{StepID: st.ID, Version: st.Version})
		if err != nil || st.Attempts != 4 || st.Message != "" {
			t.Fatalf("retry after failure = %+v, %v; want attempts 4 and the message cleared", st, err)
		}
	}},
	{"stale version refused even where the state allows the move", func(t *testing.T, e *env) {
		// Replica A recorded an intent, stalled; replica B reconciled and recorded a new intent. A's
		// MarkTriggered finds the step in intent, as it expects, but not at A's version.
		_, steps := mustCreate(t, e, sample("org/fleet", "m1"))
		a, err := e.s.RecordIntent(e.ctx, store.Intent{StepID: steps["web-eu"].ID, Version: 1})
		if err != nil {
			t.Fatal(err)
		}
		b, err := e.s.RecordIntent(e.ctx, store.Intent{StepID: a.ID, Version: a.Version})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.s.MarkTriggered(e.ctx, a.ID, a.Version); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("MarkTriggered with A's stale version: %s; want ErrConflict", fmtErr(err))
		}
		if _, err := e.s.RecordOutcome(e.ctx, store.Outcome{StepID: a.ID, Version: a.Version, State: store.StepFailed}); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("RecordOutcome with A's stale version: %s; want ErrConflict", fmtErr(err))
		}
		if _, err := e.s.RecordIntent(e.ctx, store.Intent{StepID: a.ID, Version: a.Version}); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("RecordIntent with A's stale version: %s; want ErrConflict", fmtErr(err))
		}
		if got, _ := e.s.GetStep(e.ctx, a.ID); got != b {
			t.Fatalf("refused writes changed the step: %+v; want %+v", got, b)
		}
	}},
	{"skip", func(t *testing.T, e *env) {
		_, steps := mustCreate(t, e, sample("org/fleet", "m1"))
		st, err := e.s.RecordOutcome(e.ctx, store.Outcome{StepID: steps["web-eu"].ID, Version: 1, State: store.StepSkipped, Health: "Healthy", Message: "already synced at m1"})
		if err != nil || st.State != store.StepSkipped || st.Attempts != 0 {
			t.Fatalf("pending → skipped = %+v, %v", st, err)
		}
		if _, err := e.s.RecordIntent(e.ctx, store.Intent{StepID: st.ID, Version: st.Version}); !errors.Is(err, store.ErrInvalidTransition) {
			t.Fatalf("intent on a skipped step: %s; want ErrInvalidTransition", fmtErr(err))
		}
		if _, err := e.s.RecordIntent(e.ctx, store.Intent{StepID: st.ID, Version: st.Version, Op: store.OpRollback}); !errors.Is(err, store.ErrInvalidTransition) {
			t.Fatalf("rollback of a skipped step: %s; want ErrInvalidTransition", fmtErr(err))
		}
		if _, err := e.s.RecordOutcome(e.ctx, store.Outcome{StepID: st.ID, Version: st.Version, State: store.StepTriggered}); err == nil {
			t.Fatal("RecordOutcome to triggered succeeded")
		}
	}},
	{"rollback to the previous revision", func(t *testing.T, e *env) {
		_, steps := mustCreate(t, e, sample("org/fleet", "m1"))
		st := steps["web-test"] // previous revision given at creation
		st, err := e.s.RecordIntent(e.ctx, store.Intent{StepID: st.ID, Version: st.Version, PreviousRevision: "ignored"})
		if err != nil {
			t.Fatal(err)
		}
		if st, err = e.s.MarkTriggered(e.ctx, st.ID, st.Version); err != nil {
			t.Fatal(err)
		}
		if st, err = e.s.RecordOutcome(e.ctx, store.Outcome{StepID: st.ID, Version: st.Version, State: store.StepSynced}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.s.RecordOutcome(e.ctx, store.Outcome{StepID: st.ID, Version: st.Version, State: store.StepRolledBack}); !errors.Is(err, store.ErrInvalidTransition) {
			t.Fatalf("synced → rolled-back without an intent: %s; want ErrInvalidTransition", fmtErr(err))
		}
		st, err = e.s.RecordIntent(e.ctx, store.Intent{StepID: st.ID, Version: st.Version, Op: store.OpRollback})
		if err != nil || st.Op != store.OpRollback || st.OpRevision() != "old-web-test" || st.Attempts != 2 || !st.OpStartedAt.IsZero() {
			t.Fatalf("rollback intent = %+v, %v", st, err)
		}
		if _, err := e.s.RecordOutcome(e.ctx, store.Outcome{StepID: st.ID, Version: st.Version, State: store.StepSynced}); !errors.Is(err, store.ErrInvalidTransition) {
			t.Fatalf("rollback intent → synced: %s; want ErrInvalidTransition", fmtErr(err))
		}
		if st, err = e.s.MarkTriggered(e.ctx, st.ID, st.Version); err != nil {
			t.Fatal(err)
		}
		st, err = e.s.RecordOutcome(e.ctx, store.Outcome{StepID: st.ID, Version: st.Version, State: store.StepRolledBack, Health: "Healthy"})
		if err != nil || st.State != store.StepRolledBack {
			t.Fatalf("rolled back = %+v, %v", st, err)
		}
		if _, err := e.s.RecordIntent(e.ctx, store.Intent{StepID: st.ID, Version: st.Version, Op: store.OpRollback}); !errors.Is(err, store.ErrInvalidTransition) {
			t.Fatalf("rollback of a rolled-back step: %s; want ErrInvalidTransition", fmtErr(err))
		}

		noPrev := steps["web-ap"] // no previous revision anywhere
		noPrev, err = e.s.RecordIntent(e.ctx, store.Intent{StepID: noPrev.ID, Version: noPrev.Version})
		if err != nil {
			t.Fatal(err)
		}
		if noPrev, err = e.s.RecordOutcome(e.ctx, store.Outcome{StepID: noPrev.ID, Version: noPrev.Version, State: store.StepFailed}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.s.RecordIntent(e.ctx, store.Intent{StepID: noPrev.ID, Version: noPrev.Version, Op: store.OpRollback}); !errors.Is(err, store.ErrInvalidTransition) {
			t.Fatalf("rollback without a previous revision: %s; want ErrInvalidTransition", fmtErr(err))
		}
		if _, err := e.s.RecordIntent(e.ctx, store.Intent{StepID: noPrev.ID, Version: noPrev.Version, Op: "explode"}); err == nil {
			t.Fatal("RecordIntent with an unknown op succeeded")
		}
	}},
	{"intent fenced by the lease", func(t *testing.T, e *env) {
		r, steps := mustCreate(t, e, sample("org/fleet", "m1"))
		st := steps["web-eu"]
		if _, err := e.s.RecordIntent(e.ctx, store.Intent{StepID: st.ID, Version: st.Version, Owner: "replica-a"}); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("fenced intent without a lease: %s; want ErrLeaseLost", fmtErr(err))
		}
		if ok, err := e.s.AcquireLease(e.ctx, r.ID, "replica-a", 30*time.Second); err != nil || !ok {
			t.Fatalf("AcquireLease = %v, %v", ok, err)
		}
		st, err := e.s.RecordIntent(e.ctx, store.Intent{StepID: st.ID, Version: st.Version, Owner: "replica-a"})
		if err != nil {
			t.Fatalf("fenced intent with the lease: %v", err)
		}
		if st, err = e.s.RecordOutcome(e.ctx, store.Outcome{StepID: st.ID, Version: st.Version, State: store.StepPending}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.s.RecordIntent(e.ctx, store.Intent{StepID: st.ID, Version: st.Version, Owner: "replica-b"}); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("fenced intent by a replica without the lease: %s; want ErrLeaseLost", fmtErr(err))
		}
		e.clock.Advance(31 * time.Second)
		if _, err := e.s.RecordIntent(e.ctx, store.Intent{StepID: st.ID, Version: st.Version, Owner: "replica-a"}); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("fenced intent after the lease expired: %s; want ErrLeaseLost", fmtErr(err))
		}
		if got, _ := e.s.GetStep(e.ctx, st.ID); got.Version != st.Version || got.State != store.StepPending {
			t.Fatalf("a refused intent changed the step: %+v", got)
		}
	}},
	{"filter steps by wave and state", func(t *testing.T, e *env) {
		r, steps := mustCreate(t, e, sample("org/fleet", "m1"))
		for _, name := range []string{"web-test", "web-us"} {
			if _, err := e.s.RecordIntent(e.ctx, store.Intent{StepID: steps[name].ID, Version: 1}); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			f    store.StepFilter
			want []string
		}{
			{store.StepFilter{Waves: []int{1}}, []string{"web-eu", "web-us", "web-ap"}},
			{store.StepFilter{States: []store.StepState{store.StepIntent, store.StepTriggered}}, []string{"web-test", "web-us"}},
			{store.StepFilter{Waves: []int{1}, States: []store.StepState{store.StepIntent}}, []string{"web-us"}},
			{store.StepFilter{Waves: []int{7}}, nil},
		} {
			got, err := e.s.ListSteps(e.ctx, r.ID, c.f)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, st := range got {
				names = append(names, st.App.Name)
			}
			if len(names) != len(c.want) {
				t.Fatalf("ListSteps(%+v) = %v; want %v", c.f, names, c.want)
			}
			for i := range names {
				if names[i] != c.want[i] {
					t.Fatalf("ListSteps(%+v) = %v; want %v", c.f, names, c.want)
				}
			}
		}
	}},
}
