package preview

import (
	"context"
	"slices"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/discover"
	"github.com/fleetwave/fleetwave/internal/plan"
)

// SyncWindowReader reads an AppProject's sync windows (ArgoCD.Windows). When Argo CD is configured,
// the plan says which of its waves Argo CD's sync windows would hold now, and until when
// (plan.Wave.HeldBySyncWindow); the rollout waits for them the same way (internal/rollout windows.go).
type SyncWindowReader interface {
	ProjectSyncWindows(ctx context.Context, project string) (ProjectWindows, error)
}

// ProjectWindows are one AppProject's sync windows, evaluated for one of its apps at a time as Argo CD does
// (internal/edge/argocd/livediff: argocd.EvaluateWindows over v1alpha1.SyncWindows.Matches of the app).
type ProjectWindows interface {
	HoldAt(app *v1alpha1.Application, now time.Time) WindowHold
}

// WindowHold says whether an app's sync windows refuse a manual sync at an instant, why, and until when (zero:
// no opening found).
type WindowHold struct {
	Blocked bool
	Reason  string
	Until   time.Time
}

// holdWaves marks the waves of pl whose apps Argo CD's sync windows refuse a manual sync of at now, evaluated as
// Argo CD does for the app as the head revision declares it (ProjectWindows). A project whose windows cannot be
// read is left out: the plan says nothing rather than guess.
//
// Each app's windows are its own instance's (readerOf; nil: that instance reads none): two instances may both have
// a project "default", with different windows.
func holdWaves(ctx context.Context, readerOf func(instance string) SyncWindowReader, pl *plan.Plan, inv *discover.Inventory, now time.Time) {
	projects := map[string]ProjectWindows{}
	for wi := range pl.Waves {
		wv := &pl.Waves[wi]
		var hold *plan.WindowHold
		for _, b := range wv.Batches {
			for _, pa := range b.Apps {
				a, ok := inv.Get(pa.Namespace + "/" + pa.Name)
				if !ok {
					continue
				}
				proj := a.App.Spec.Project
				if proj == "" {
					proj = "default"
				}
				pk := a.Instance + "\x00" + proj
				ws, seen := projects[pk]
				if !seen {
					if wr := readerOf(a.Instance); wr != nil {
						var err error
						if ws, err = wr.ProjectSyncWindows(ctx, proj); err != nil {
							ws = nil
						}
					}
					projects[pk] = ws
				}
				if ws == nil {
					continue
				}
				h := ws.HoldAt(a.App, now)
				if !h.Blocked {
					continue
				}
				if hold == nil {
					hold = &plan.WindowHold{At: now.UTC(), Reason: h.Reason}
				}
				hold.Apps = append(hold.Apps, pa.Name)
				if !h.Until.IsZero() && (hold.Until == nil || h.Until.Before(*hold.Until)) {
					u := h.Until.UTC()
					hold.Until, hold.Reason = &u, h.Reason
				}
			}
		}
		if hold != nil {
			slices.Sort(hold.Apps)
			wv.HeldBySyncWindow = hold
		}
	}
}
