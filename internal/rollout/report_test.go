package rollout_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fleetwave/fleetwave/internal/checkrun"
	"github.com/fleetwave/fleetwave/internal/edge/github"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/rollout"
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

// The App installation a merge came through is stored with its rollout, and its check-runs are written with it
// (after a restart too: it is read from the store, not remembered).
func TestCheckRunsUseTheMergesInstallation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, envConfig{})
		r := e.submit(basePolicy("", "", ""), newRev, func(req *rollout.Request) { req.InstallationID = 42 })
		e.wait(r.ID, store.RolloutSucceeded)
		stored, err := e.st.GetRollout(context.Background(), r.ID)
		if err != nil || stored.InstallationID != 42 {
			t.Fatalf("stored rollout's installation = %d, %v; want 42", stored.InstallationID, err)
		}
		for _, ext := range []string{fmt.Sprintf("fleetwave:%d", r.ID), fmt.Sprintf("fleetwave:%d:wave:production", r.ID)} {
			if got := e.rep.Installation(ext); got != 42 {
				t.Errorf("check-run %s written with installation %d; want 42", ext, got)
			}
		}
	})
}
