package argosync_test

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/rollout/argosync"
)

// TestLostAnswerIsNotSentAgain: Argo CD starts the sync, its answer is lost, and Argo CD does not answer for a
// while (argocdsim LoseSyncAnswers). An Argo CD that does not answer proves nothing: the app is read until it
// answers, and the operation found then is the request's, judged as such, never requested twice — whether it
// finished meanwhile, health still settling, or it is still running. Before, the app was judged on what the
// stream had shown before the request once the grace period passed: sent again (a second operation when the
// app was not yet Healthy), "already Synced and Healthy" (skipped, though the bot synced it), or failed with the
// connection error.
func TestLostAnswerIsNotSentAgain(t *testing.T) {
	for _, tc := range []struct {
		name        string
		cfg         argocdsim.Config
		unreachable time.Duration
		note        string
	}{
		{"finished long before Argo CD answers", argocdsim.Config{SyncDuration: 20 * time.Second}, 2 * time.Minute, "its operation was found"},
		{"finished, health still Progressing", argocdsim.Config{SyncDuration: 20 * time.Second, ProgressingFor: 30 * time.Second},
			40 * time.Second, "its operation was found"},
		{"finished just before Argo CD answers", argocdsim.Config{SyncDuration: 20 * time.Second}, 40 * time.Second, "its operation was found"},
		{"back within the client's retries", argocdsim.Config{SyncDuration: 100 * time.Millisecond}, 500 * time.Millisecond, "its operation was found"},
		{"still running", argocdsim.Config{SyncDuration: 90 * time.Second}, 30 * time.Second, "its operation was found"},
		// Argo CD answers at once: whether the operation it shows then has already recorded the revision it
		// applies (its own) or is only running (in progress) depends on the order of the simulator's writes and
		// the stream's events, which -race under load changes; either is the request's operation, followed once.
		{"only the answer lost", argocdsim.Config{SyncDuration: 20 * time.Second}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, tc.cfg, fleetApp{name: "web"}, fleetApp{name: "api"})
				e.sim.LoseSyncAnswers("web", 1, tc.unreachable)
				res := e.run(t, argosync.Options{})
				for _, r := range res {
					c := e.sim.Counts(r.App)
					t.Logf("%s: %s %q; %d sync requests, %d operations run", r.App, r.Outcome, r.Message, c.Syncs, c.SyncsAccepted)
					if r.Outcome != argosync.OutcomeSynced {
						t.Errorf("%s: %s %q, want synced", r.App, r.Outcome, r.Message)
					}
					if c.SyncsAccepted != 1 {
						t.Errorf("%s: %d operations run, want exactly 1", r.App, c.SyncsAccepted)
					}
				}
				for _, r := range res {
					if said := strings.HasPrefix(r.Message, "the sync request's answer was lost; "+tc.note); said != (r.App == "web") {
						t.Errorf("%s: message %q; want only web's to say the answer was lost and %s", r.App, r.Message, tc.note)
					}
				}
				if c := e.sim.Counts("web"); c.SyncAnswersLost != 1 {
					t.Errorf("web: %d answers lost, want 1", c.SyncAnswersLost)
				}
			})
		})
	}
}
