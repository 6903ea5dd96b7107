package rollout_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fleetwave/fleetwave/internal/checkrun"
	"github.com/fleetwave/fleetwave/internal/github"
	"github.com/fleetwave/fleetwave/internal/rollout"
	"github.com/fleetwave/fleetwave/internal/store"
)

// A rollout that finished while GitHub refused its check-runs keeps its lease and is claimed again until the
// final state is published; then the lease is released. (The same path serves a replica killed between
// finishing a rollout and publishing it: the finished rollout still has its lease.)
func TestFinalCheckRunsArePublishedEventually(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var down atomic.Bool
		var refused atomic.Int64
		down.Store(true)
		e := start(t, envConfig{noRun: true, opts: []rollout.Option{rollout.WithPollIntervals(time.Second, 5*time.Second, time.Second)}})
		e.rep.Fail = func(cr github.CheckRun) bool {
			if down.Load() && cr.Name == checkrun.CheckRollout {
				refused.Add(1)
			}
			return down.Load()
		}
		e.run(e.ex)
		r := e.submit(basePolicy("", "", ""), newRev)
		e.wait(r.ID, store.RolloutSucceeded)
		refusedAtEnd := refused.Load()
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if _, ok := e.rep.Latest(checkrun.CheckRollout); ok {
			t.Fatal("a check-run was published while GitHub refused them")
		}
		// Retried with a doubling wait (5 s, 10 s, … up to 30 min): a handful of attempts in 10 minutes, not 120.
		if n := refused.Load() - refusedAtEnd; n < 3 || n > 10 {
			t.Errorf("the final rollout check-run was retried %d times in 10 minutes; want a few, backing off", n)
		}
		if _, err := e.st.GetLease(context.Background(), r.ID); err != nil {
			t.Fatalf("lease of a finished rollout whose end is not published: %v; want it kept", err)
		}
		down.Store(false)
		time.Sleep(15 * time.Minute)
		synctest.Wait()
		cr, ok := e.rep.Latest(checkrun.CheckRollout)
		if !ok || cr.Status != github.StatusCompleted || cr.Conclusion != github.ConclusionSuccess {
			t.Fatalf("rollout check-run after GitHub came back = %+v, %v; want completed success", cr, ok)
		}
		if _, err := e.st.GetLease(context.Background(), r.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("lease after publishing: %v; want released", err)
		}
	})
}
