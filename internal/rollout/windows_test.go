package rollout_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/edge/github"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/rollout"
)

// TestSyncWindowHoldsTheWave: an AppProject sync window that blocks a wave's apps holds the wave — its check-run
// in progress, saying which window and until when — instead of failing them; the wave starts when the window
// opens, no app of it synced before. The simulator evaluates the windows as Argo CD does, on the bubble's
// virtual clock (which starts at 2000-01-01 00:00 UTC).
func TestSyncWindowHoldsTheWave(t *testing.T) {
	at := func(h, m, s int) time.Time { return time.Date(2000, 1, 1, h, m, s, 0, time.UTC) }
	win := func(kind, schedule, duration string, manual bool, apps string) *v1alpha1.InlineSyncWindow {
		return &v1alpha1.InlineSyncWindow{Kind: kind, Schedule: schedule, Duration: duration, ManualSync: manual, Applications: []string{apps}}
	}
	tests := []struct {
		name    string
		windows v1alpha1.SyncWindows
		blocked string    // an app the simulator refuses outside of any window the bot can read (SetSyncWindowBlocked)
		unblock time.Time // when they are unblocked
		wave    int       // the held wave (-1: none)
		title   string    // its check-run title while held
		opens   time.Time // no app of the wave syncs before
		// noProject: the token may not read projects: the executor asks Argo CD per app (GET .../syncwindows).
		noProject bool
	}{
		// The windows open an hour into the bubble's day: the rollout reaches the held wave within minutes, and every
		// virtual second held costs a poll of the store in real time (four hours took 6 min with -race).
		{name: "deny window over staging", wave: 1, opens: at(1, 0, 0),
			windows: v1alpha1.SyncWindows{win("deny", "0 23 * * *", "2h", false, "web-stg-*")},
			title:   "Held by deny window '0 23 * * *' (2h) until 2000-01-01 01:00 UTC: 0/2 apps done"},
		{name: "deny window over staging, project unreadable", wave: 1, opens: at(1, 0, 0), noProject: true,
			windows: v1alpha1.SyncWindows{win("deny", "0 23 * * *", "2h", false, "web-stg-*")},
			title:   "Held by deny window '0 23 * * *' (2h) until 2000-01-01 01:00 UTC: 0/2 apps done"},
		{name: "production outside its allow window", wave: 2, opens: at(1, 0, 1),
			windows: v1alpha1.SyncWindows{win("allow", "0 1 * * *", "2h", false, "web-prd-*")},
			title:   "Held by outside allow window '0 1 * * *' (2h) until 2000-01-01 01:00 UTC: 0/4 apps done"},
		{name: "deny window with manualSync lets fleetwave through", wave: -1,
			windows: v1alpha1.SyncWindows{win("deny", "0 23 * * *", "4h", true, "web-stg-*")}},
		{name: "allow window with manualSync lets fleetwave through", wave: -1,
			windows: v1alpha1.SyncWindows{win("allow", "0 4 * * *", "2h", true, "web-*")}},
		{name: "a refusal the windows did not predict holds the app, retried each minute", wave: 1,
			blocked: "web-stg-2", unblock: at(0, 20, 0), opens: at(0, 20, 0),
			title: "Held by Argo CD refusing the sync (cannot sync: blocked by sync window) until"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := envConfig{sim: argocdsim.Config{SyncDuration: 20 * time.Second}, noRun: true}
				if tc.noProject {
					cfg.wrap = func(a rollout.ArgoCD) rollout.ArgoCD { return noProjects{a.(*argocd.Client)} }
				}
				e := start(t, cfg)
				p := v1alpha1.AppProject{}
				p.Name = "default"
				p.Spec.SyncWindows = tc.windows
				e.sim.SetProject(p)
				if tc.blocked != "" {
					e.sim.SetSyncWindowBlocked(tc.blocked, true)
				}
				e.run(e.ex)
				r := e.submit(basePolicy("", "", ""), newRev)
				if tc.wave >= 0 {
					w := waitHeld(t, e, r.ID, tc.wave)
					if w.State != store.WaveRunning {
						t.Fatalf("wave %s is %s while held", w.Name, w.State)
					}
					cr, _ := e.rep.Latest("fleetwave/wave: " + w.Name)
					if cr.Status != github.StatusInProgress || !strings.HasPrefix(cr.Output.Title, tc.title) || !strings.Contains(cr.Output.Summary, "held by") {
						t.Errorf("check-run of the held wave: %s %q\n%s", cr.Status, cr.Output.Title, cr.Output.Summary)
					}
					if rs, _ := e.st.GetRollout(t.Context(), r.ID); rs.State != store.RolloutRunning {
						t.Errorf("rollout %s while a wave is held", rs.State)
					}
					if tc.blocked != "" {
						time.Sleep(time.Until(tc.unblock))
						e.sim.SetSyncWindowBlocked(tc.blocked, false)
					}
				}
				r = e.wait(r.ID, store.RolloutSucceeded, store.RolloutFailed, store.RolloutPaused)
				if r.State != store.RolloutSucceeded {
					dumpSteps(t, e, r.ID)
					t.Fatalf("rollout %s: %s", r.State, r.Message)
				}
				e.expectSyncs(counts(names(e.apps, ""), 1))
				held := 0
				for _, ev := range e.events(r.ID) {
					if ev.Action == "window-held" {
						held++
					}
				}
				if tc.wave < 0 {
					if held != 0 {
						t.Errorf("%d window-held events for windows with manualSync", held)
					}
					return
				}
				if held == 0 {
					t.Errorf("no window-held event")
				}
				steps := e.steps(r.ID)
				if first := firstStart(steps, tc.wave); tc.blocked == "" && first.Before(tc.opens) {
					t.Errorf("an app of the held wave synced at %s, before the window opened at %s", first, tc.opens)
				}
				if tc.blocked != "" {
					if s := e.stepOf(r.ID, tc.blocked); s.OpStartedAt.Before(tc.opens) {
						t.Errorf("the refused app synced at %s, before it was unblocked at %s", s.OpStartedAt, tc.opens)
					}
				}
				for _, s := range steps {
					if s.State != store.StepSynced {
						t.Errorf("app %s: %s (%s)", s.App.Name, s.State, s.Message)
					}
				}
				if tc.blocked != "" {
					// Refused each minute while blocked, then synced once.
					if c := e.sim.Counts(tc.blocked); c.Syncs < 5 || c.Syncs > 25 || c.SyncsAccepted != 1 {
						t.Errorf("%s: %d sync requests, %d accepted; want one a minute while blocked, then one accepted", tc.blocked, c.Syncs, c.SyncsAccepted)
					}
				}
			})
		})
	}
}

// noProjects is a client whose token may not read AppProjects.
type noProjects struct{ *argocd.Client }

func (noProjects) ProjectSyncWindows(context.Context, string) (v1alpha1.SyncWindows, error) {
	return nil, errors.New("argo cd answered 403 PermissionDenied: permission denied: projects, get, default")
}

// waitHeld waits until wave wi of the rollout records a sync window hold.
func waitHeld(t *testing.T, e *env, id int64, wi int) store.Wave {
	t.Helper()
	for range 3600 {
		ws, err := e.st.ListWaves(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if w := ws[wi]; strings.Contains(string(w.GateState), `"window"`) {
			synctest.Wait()
			return w
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("wave %d never held", wi)
	return store.Wave{}
}
