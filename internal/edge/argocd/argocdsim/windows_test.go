package argocdsim_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
)

// TestSyncWindows: the simulator evaluates AppProject sync windows as Argo CD's API server and controller do.
// Virtual time starts at 2000-01-01 00:00 UTC; every case looks at 00:30.
func TestSyncWindows(t *testing.T) {
	win := func(kind, schedule, duration string, manual bool, apps ...string) *v1alpha1.InlineSyncWindow {
		return &v1alpha1.InlineSyncWindow{Kind: kind, Schedule: schedule, Duration: duration, ManualSync: manual, Applications: apps}
	}
	tests := []struct {
		name     string
		windows  v1alpha1.SyncWindows
		project  string // the apps' project (default "default")
		manualOK bool   // a manual sync of web is accepted
		msg      string // else the refusal's message
		autoOK   bool   // the automated app syncs by itself
		active   int    // active windows in GET .../syncwindows
		assigned int
	}{
		{name: "no window", manualOK: true, autoOK: true},
		{name: "active deny window", windows: v1alpha1.SyncWindows{win("deny", "0 0 * * *", "2h", false, "*")},
			msg: "cannot sync: blocked by sync window", active: 1, assigned: 1},
		{name: "active deny window in another project", project: "other", windows: v1alpha1.SyncWindows{win("deny", "0 0 * * *", "2h", false, "*")},
			msg: "cannot sync: blocked by sync window", active: 1, assigned: 1},
		{name: "deny window over other apps", windows: v1alpha1.SyncWindows{win("deny", "0 0 * * *", "2h", false, "db-*")},
			manualOK: true, autoOK: true},
		{name: "deny window with manualSync: manual syncs only", windows: v1alpha1.SyncWindows{win("deny", "0 0 * * *", "2h", true, "*")},
			manualOK: true, active: 1, assigned: 1},
		{name: "deny window not active yet", windows: v1alpha1.SyncWindows{win("deny", "0 1 * * *", "2h", false, "*")},
			manualOK: true, autoOK: true, assigned: 1},
		{name: "no allow window open", windows: v1alpha1.SyncWindows{win("allow", "0 22 * * *", "2h", false, "*")},
			msg: "cannot sync: blocked by sync window", assigned: 1},
		{name: "no allow window open, manualSync", windows: v1alpha1.SyncWindows{win("allow", "0 22 * * *", "2h", true, "*")},
			manualOK: true, assigned: 1},
		{name: "allow window open", windows: v1alpha1.SyncWindows{win("allow", "0 0 * * *", "1h", false, "*")},
			manualOK: true, autoOK: true, active: 1, assigned: 1},
		{name: "unparsable schedule", windows: v1alpha1.SyncWindows{win("deny", "sometimes", "1h", false, "*")},
			msg: "cannot sync: invalid sync window: invalid sync windows: cannot parse schedule 'sometimes': expected exactly 5 fields, found 1: [sometimes]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				project := func(a *v1alpha1.Application) { a.Spec.Project = tt.project }
				// The project first: the automated app would sync as soon as it is added.
				sim := argocdsim.New(argocdsim.Config{})
				t.Cleanup(sim.Close)
				p := v1alpha1.AppProject{}
				p.Name = tt.project
				if p.Name == "" {
					p.Name = "default"
				}
				p.Spec.SyncWindows = tt.windows
				sim.SetProject(p)
				settle(30 * time.Minute)
				sim.SetRef("HEAD", newRev)
				for _, a := range []*v1alpha1.Application{appSpec("web", project), appSpec("auto", autoSync, project)} {
					if err := sim.AddApp(a, argocdsim.AppOptions{LiveRevisions: []string{oldRev}}); err != nil {
						t.Fatal(err)
					}
				}
				c, err := argocd.New(argocd.Options{BaseURL: "http://argocd.sim", HTTPClient: sim.HTTPClient(), MaxRetries: -1})
				if err != nil {
					t.Fatal(err)
				}
				e := &env{sim: sim, c: c}
				settle(5 * time.Second)
				ctx := context.Background()

				got, err := e.c.GetProject(ctx, p.Name)
				if err != nil || len(got.Spec.SyncWindows) != len(tt.windows) {
					t.Fatalf("GET project: %v, %d windows", err, len(got.Spec.SyncWindows))
				}
				sw, err := e.c.SyncWindows(ctx, "web")
				if tt.msg != "" && tt.active == 0 && tt.assigned == 0 {
					if err == nil {
						t.Fatalf("GET syncwindows with invalid windows: no error")
					}
				} else if err != nil || sw.CanSync != tt.manualOK || len(sw.ActiveWindows) != tt.active || len(sw.AssignedWindows) != tt.assigned {
					t.Fatalf("GET syncwindows: %+v, %v; want canSync %v, %d active, %d assigned", sw, err, tt.manualOK, tt.active, tt.assigned)
				}

				_, err = e.c.Sync(ctx, "web", argocd.SyncRequest{})
				if tt.manualOK != (err == nil) {
					t.Fatalf("manual sync: %v, want accepted %v", err, tt.manualOK)
				}
				if err != nil {
					var ae *argocd.APIError
					if !errors.As(err, &ae) || ae.Message != tt.msg || !errors.Is(err, argocd.ErrPermissionDenied) || !argocd.IsSyncWindowRefusal(err) {
						t.Fatalf("refusal %v, want PermissionDenied %q", err, tt.msg)
					}
				}
				e.sim.RefreshAll()
				settle(5 * time.Second)
				auto := e.app(t, "auto")
				synced := auto.Status.OperationState != nil && auto.Status.OperationState.Operation.InitiatedBy.Automated
				if synced != tt.autoOK {
					t.Fatalf("automated sync ran: %v, want %v", synced, tt.autoOK)
				}
			})
		})
	}
}

// TestSyncWindowOpens: a sync refused inside a deny window is accepted once the window has passed.
func TestSyncWindowOpens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, argocdsim.Config{}, appSpec("web"))
		p := v1alpha1.AppProject{}
		p.Name = "default"
		p.Spec.SyncWindows = v1alpha1.SyncWindows{{Kind: "deny", Schedule: "0 0 * * *", Duration: "2h", Applications: []string{"web"}}}
		e.sim.SetProject(p)
		settle(30 * time.Minute)
		if _, err := e.c.Sync(context.Background(), "web", argocd.SyncRequest{}); !argocd.IsSyncWindowRefusal(err) {
			t.Fatalf("sync at 00:30: %v, want a sync window refusal", err)
		}
		h := argocd.EvaluateWindows(p.Spec.SyncWindows, time.Now())
		if want := time.Date(2000, 1, 1, 2, 0, 0, 0, time.UTC); !h.Blocked || !h.Until.Equal(want) {
			t.Fatalf("evaluation %+v, want blocked until %v", h, want)
		}
		settle(time.Until(h.Until))
		if _, err := e.c.Sync(context.Background(), "web", argocd.SyncRequest{}); err != nil {
			t.Fatalf("sync at %v, when the window has ended: %v", time.Now().UTC(), err)
		}
	})
}
