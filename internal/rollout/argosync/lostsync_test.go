package argosync_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/rollout/argosync"
)

// lostSyncs records OnLostSync calls.
type lostSyncs struct {
	mu    sync.Mutex
	calls []string
}

func (l *lostSyncs) hook(_ context.Context, app, _ string, requests int, reason string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, fmt.Sprintf("%s after %d: %s", app, requests, reason))
	return nil
}

// TestLostSyncIsRequestedAgain: a principal that accepts a sync and clears it before it starts (argocd-agent
// #841) gets the sync again after the grace period, once per lost request; each app's operation runs once.
func TestLostSyncIsRequestedAgain(t *testing.T) {
	for _, drops := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("%d dropped", drops), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, argocdsim.Config{OperationStartDelay: time.Second}, fleetApp{name: "web"}, fleetApp{name: "api"})
				e.sim.DropSyncs("web", drops)
				var l lostSyncs
				start := time.Now()
				res := e.run(t, argosync.Options{LostSyncRetries: 3, OnLostSync: l.hook})
				if fmt.Sprint(outcomes(res)) != "[synced synced]" {
					t.Fatalf("outcomes %v: %q", outcomes(res), res[0].Message)
				}
				for _, app := range []string{"web", "api"} {
					c := e.sim.Counts(app)
					t.Logf("%s: %d sync requests, %d dropped, %d operations run", app, c.Syncs, c.SyncsDropped, c.SyncsAccepted)
					if c.SyncsAccepted != 1 {
						t.Errorf("%s: %d operations run, want exactly 1", app, c.SyncsAccepted)
					}
				}
				if c := e.sim.Counts("web"); c.SyncsDropped != drops || c.Syncs != drops+1 {
					t.Errorf("web: %d requests, %d dropped; want %d, %d", c.Syncs, c.SyncsDropped, drops+1, drops)
				}
				if len(l.calls) != drops || !strings.HasPrefix(l.calls[0], "web after 1: accepted, then cleared") {
					t.Errorf("OnLostSync calls %q, want %d for web", l.calls, drops)
				}
				// Back-off: 30s, then 60s, then 120s before each re-request.
				want := time.Duration(0)
				for i := range drops {
					want += 30 * time.Second << i
				}
				if took := time.Since(start); took < want {
					t.Errorf("took %s, want at least the graces %s", took, want)
				}
			})
		})
	}
}

// TestLostSyncFailsAfterRetries: a principal that loses every sync fails the app after the bounded re-requests,
// with one line that says so.
func TestLostSyncFailsAfterRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, argocdsim.Config{}, fleetApp{name: "web"})
		e.sim.DropSyncs("web", argocdsim.DropAll)
		var l lostSyncs
		res := e.run(t, argosync.Options{LostSyncRetries: 3, OnLostSync: l.hook})
		want := "the sync of web to 1b1b1b1b1b was requested 4 times and never started: an argocd-agent principal may be dropping it (argocd-agent #841)"
		if res[0].Outcome != argosync.OutcomeFailed || res[0].Message != want {
			t.Fatalf("%s: %q, want failed: %q", res[0].Outcome, res[0].Message, want)
		}
		c := e.sim.Counts("web")
		t.Logf("web: %d sync requests, %d dropped, %d operations run", c.Syncs, c.SyncsDropped, c.SyncsAccepted)
		if c.Syncs != 4 || c.SyncsDropped != 4 || c.SyncsAccepted != 0 || len(l.calls) != 3 {
			t.Errorf("%d requests, %d dropped, %d run, %d re-requests; want 4, 4, 0, 3", c.Syncs, c.SyncsDropped, c.SyncsAccepted, len(l.calls))
		}
	})
}

// TestSlowStartIsNotRequestedAgain: an operation the controller picks up later than the grace (the request still
// shows on the app) is never requested twice: only a vanished request is.
func TestSlowStartIsNotRequestedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, argocdsim.Config{OperationStartDelay: 100 * time.Second}, fleetApp{name: "web"})
		var l lostSyncs
		res := e.run(t, argosync.Options{LostSyncRetries: 3, OnLostSync: l.hook})
		if res[0].Outcome != argosync.OutcomeSynced {
			t.Fatalf("%s: %q", res[0].Outcome, res[0].Message)
		}
		if c := e.sim.Counts("web"); c.Syncs != 1 || c.SyncsAccepted != 1 || len(l.calls) != 0 {
			t.Errorf("%d requests, %d run, re-requests %q; want 1, 1, none", c.Syncs, c.SyncsAccepted, l.calls)
		}
	})
}

// TestLostSyncHookRefuses: an error of OnLostSync (the rollout paused meanwhile) sends nothing more.
func TestLostSyncHookRefuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, argocdsim.Config{}, fleetApp{name: "web"})
		e.sim.DropSyncs("web", 1)
		res := e.run(t, argosync.Options{LostSyncRetries: 3, OnLostSync: func(context.Context, string, string, int, string) error {
			return errors.New("paused")
		}})
		if res[0].Outcome != argosync.OutcomeFailed || !strings.Contains(res[0].Message, "before requesting the sync again: paused") {
			t.Fatalf("%s: %q", res[0].Outcome, res[0].Message)
		}
		if c := e.sim.Counts("web"); c.Syncs != 1 {
			t.Errorf("%d requests, want 1", c.Syncs)
		}
	})
}

// TestLostSyncOffByDefault: without LostSyncRetries a vanished request is waited for until the timeout, as
// before (a plain Argo CD does not lose syncs this way).
func TestLostSyncOffByDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, argocdsim.Config{}, fleetApp{name: "web"})
		e.sim.DropSyncs("web", 1)
		res := e.run(t, argosync.Options{Timeout: 5 * time.Minute})
		if res[0].Outcome != argosync.OutcomeFailed || !strings.Contains(res[0].Message, "timed out waiting for the sync operation to finish") {
			t.Fatalf("%s: %q", res[0].Outcome, res[0].Message)
		}
		if c := e.sim.Counts("web"); c.Syncs != 1 {
			t.Errorf("%d requests, want 1", c.Syncs)
		}
	})
}
