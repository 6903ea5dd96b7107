package preview

import (
	"fmt"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/discover"
	"github.com/fleetwave/fleetwave/internal/report"
)

// removal says what Argo CD does when the change removes app a (found at base, where lookup finds its parent):
// who deletes the Application,
// and whether its resources go with it.
//   - An ApplicationSet deletes the apps it no longer generates unless its applicationsSync policy is
//     create-only or create-update (applicationset/controllers/applicationset_controller.go deleteInCluster,
//     applicationset/utils/policy.go DefaultPolicy: the ApplicationSet's own policy counts when the controller
//     allows policy overrides; the controller's default is sync, which deletes).
//   - A parent app (app-of-apps) deletes it when it syncs with prune: at once with automated prune, else at the
//     next manual sync with prune.
//   - Anything else was applied by hand: nothing deletes it and Argo CD keeps syncing it.
//
// Its resources are deleted with it only when the Application carries the resources finalizer
// (v1alpha1.Application.CascadedDeletion); otherwise they stay in the cluster, unmanaged.
func removal(a *discover.App, lookup func(key string) (*discover.App, bool)) *report.Removal {
	resources := func(r *report.Removal) *report.Removal {
		if a.App.CascadedDeletion() {
			r.Effect = report.RemovalDelete
			r.Detail += "; its resources finalizer makes Argo CD delete all its resources from the cluster"
		} else {
			r.Effect = report.RemovalOrphan
			r.Detail += "; it has no resources finalizer, so its resources stay in the cluster, no longer managed (orphaned)"
		}
		return r
	}
	if a.AppSet != "" {
		by := "ApplicationSet " + a.AppSet
		if sp := a.AppSetSyncPolicy; sp != nil && sp.ApplicationsSync != nil {
			switch *sp.ApplicationsSync {
			case v1alpha1.ApplicationsSyncPolicyCreateOnly, v1alpha1.ApplicationsSyncPolicyCreateUpdate:
				return &report.Removal{Effect: report.RemovalKept, By: by,
					Detail: fmt.Sprintf("%s no longer generates it, but its applicationsSync policy is %s: the ApplicationSet controller keeps the Application (when policy overrides are enabled)", by, *sp.ApplicationsSync)}
			}
		}
		return resources(&report.Removal{By: by, Detail: by + " no longer generates it and deletes the Application"})
	}
	if a.Parent != "" {
		by := "app " + a.Parent
		if parent, ok := lookup(a.Parent); ok {
			sp := parent.App.Spec.SyncPolicy
			if sp != nil && sp.IsAutomatedSyncEnabled() && sp.Automated.GetPrune() {
				return resources(&report.Removal{By: by, Detail: by + " syncs automatically with prune and deletes the Application"})
			}
		}
		r := resources(&report.Removal{By: by, Detail: by + " does not prune automatically: it goes OutOfSync, and the Application is deleted at its next sync with prune"})
		r.Effect = report.RemovalPending
		return r
	}
	return &report.Removal{Effect: report.RemovalKept,
		Detail: "no Application or ApplicationSet of this repository manages it, so removing its file deletes nothing: Argo CD keeps the Application and keeps syncing it (delete it with `argocd app delete`)"}
}

// deletesResources reports whether removing the app deletes its resources from the cluster: Argo CD deletes the
// Application (now, or at its parent's next sync with prune) with its resources finalizer. Kept and orphaned
// apps leave them in place.
func deletesResources(r *report.Removal, a *discover.App) bool {
	switch r.Effect {
	case report.RemovalDelete:
		return true
	case report.RemovalPending:
		return a.App.CascadedDeletion()
	}
	return false
}
