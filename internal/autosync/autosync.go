// Package autosync switches Argo CD automated sync off for apps fleetwave is about to roll out, and back on as
// it was: the one home of that patch, used by the rollout executor (internal/rollout), the App's plan check
// (internal/app, before the merge can land) and the terminal (`fleetwave rollout prepare` / `release`).
//
// The switch lives on the Application itself: one merge patch removes spec.syncPolicy.automated, keeps the
// original in the Annotation and sets the Label, so Argo CD remembers what to restore whichever process (or
// replica, or restart) restores it, and the apps switched off are found with one label-filtered list.
//
// Who needs an app switched off is recorded apart, in the store: a Hold per open pull request (or terminal
// prepare) and app, and the unfinished rollouts' steps. An app is switched back on only when its last holder
// lets go (Holder.Release; the rollout executor when a rollout ends).
//
// Why before the merge: with a Git webhook, Argo CD refreshes the apps within milliseconds of the push and
// decides an automated sync on the copy of the Application it read when the comparison began
// (argo-cd v3.6.1 controller/appcontroller.go autoSync); measured here, automated syncs start 0.2–0.4 s after
// the push, before any rollout could switch them off.
package autosync

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/plan"
)

// DefaultNamespace is the Applications' namespace when the plan names none: Argo CD's own.
const DefaultNamespace = "argocd"

// PlannedApps are the plan's apps whose automated sync is on, as Argo CD names them, each with its instance: what
// a hold switches off (the App's plan check and the terminal's rollout prepare alike).
func PlannedApps(pl *plan.Plan) []store.AppKey {
	var out []store.AppKey
	for _, w := range pl.Waves {
		for _, b := range w.Batches {
			for _, a := range b.Apps {
				if !a.AutomatedSync {
					continue
				}
				k := store.AppKey{Instance: a.Instance, Namespace: a.Namespace, Name: a.Name}
				if k.Namespace == "" {
					k.Namespace = DefaultNamespace
				}
				out = append(out, k)
			}
		}
	}
	return out
}

// Annotation is set on an Application whose automated sync fleetwave switched off, holding the original
// spec.syncPolicy.automated (JSON). It is written in the same patch that switches automated sync off.
const Annotation = "fleetwave.io/automated-sync"

// Label marks, in the same patch, the apps carrying Annotation, so the apps to restore are found with one list
// filtered by Argo CD (a label selector). The annotation stays the record of what to restore.
const Label = "fleetwave.io/automated-sync-off"

// Patcher is the Argo CD call that switches: *argocd.Client.
type Patcher interface {
	Patch(ctx context.Context, name, patch string, patchType argocd.PatchType) (*v1alpha1.Application, error)
}

// ArgoCD is what the Holder reads and patches: *argocd.Client.
type ArgoCD interface {
	Patcher
	GetApplication(ctx context.Context, name string, refresh v1alpha1.RefreshType) (*v1alpha1.Application, error)
	ListApplications(ctx context.Context, q argocd.ListQuery) (*v1alpha1.ApplicationList, error)
}

// On reports whether the app's automated sync is enabled.
func On(app *v1alpha1.Application) bool {
	return app != nil && app.Spec.SyncPolicy != nil && app.Spec.SyncPolicy.IsAutomatedSyncEnabled()
}

// Switched reports whether fleetwave switched the app's automated sync off (it carries Annotation).
func Switched(app *v1alpha1.Application) bool {
	if app == nil {
		return false
	}
	_, ok := app.Annotations[Annotation]
	return ok
}

// Name is the name Argo CD's API takes for an app: namespace/name, or the name alone without a namespace.
func Name(k store.AppKey) string {
	if k.Namespace == "" {
		return k.Name
	}
	return k.Namespace + "/" + k.Name
}

// Off switches the app's automated sync off: spec.syncPolicy.automated removed, the original kept in
// Annotation (the first original, when the app was switched off before), Label set. It returns the app as Argo
// CD answered. Switching an app already off but not marked is the caller's choice (Off marks it then, keeping
// "null" as the original, which restores nothing).
func Off(ctx context.Context, p Patcher, name string, app *v1alpha1.Application) (*v1alpha1.Application, error) {
	var cur *v1alpha1.SyncPolicyAutomated
	if app.Spec.SyncPolicy != nil {
		cur = app.Spec.SyncPolicy.Automated
	}
	orig, err := json.Marshal(cur)
	if err != nil {
		return nil, fmt.Errorf("switching automated sync off for app %s: %w", app.Name, err)
	}
	if prev, ok := app.Annotations[Annotation]; ok && prev != "" {
		orig = []byte(prev) // keep the first original
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{Annotation: string(orig)},
			"labels": map[string]string{Label: "true"}},
		"spec": map[string]any{"syncPolicy": map[string]any{"automated": nil}},
	})
	if err != nil {
		return nil, fmt.Errorf("switching automated sync off for app %s: %w", app.Name, err)
	}
	upd, err := p.Patch(ctx, name, string(patch), argocd.PatchMerge)
	if err != nil {
		return nil, fmt.Errorf("switching automated sync off for app %s: %w", app.Name, err)
	}
	return upd, nil
}

// Original is the automated sync setting Off kept for the app; nil when it had none (or the record is unreadable:
// then automated sync is restored with Argo CD's defaults, prune and self-heal off).
func Original(app *v1alpha1.Application) *v1alpha1.SyncPolicyAutomated {
	var automated *v1alpha1.SyncPolicyAutomated
	if err := json.Unmarshal([]byte(app.Annotations[Annotation]), &automated); err != nil {
		return &v1alpha1.SyncPolicyAutomated{}
	}
	return automated
}

// Restore switches the app's automated sync back on as Off found it, and removes Annotation and Label. An app
// without Annotation is left alone (nil, nil).
func Restore(ctx context.Context, p Patcher, name string, app *v1alpha1.Application) (*v1alpha1.Application, error) {
	if !Switched(app) {
		return nil, nil
	}
	var automated any
	if o := Original(app); o != nil {
		automated = o
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{Annotation: nil},
			"labels": map[string]any{Label: nil}},
		"spec": map[string]any{"syncPolicy": map[string]any{"automated": automated}},
	})
	if err != nil {
		return nil, fmt.Errorf("restoring automated sync of app %s: %w", app.Name, err)
	}
	upd, err := p.Patch(ctx, name, string(patch), argocd.PatchMerge)
	if err != nil {
		return nil, fmt.Errorf("restoring automated sync of app %s: %w", app.Name, err)
	}
	return upd, nil
}

// ListSwitched lists the apps fleetwave switched off (Label, and Annotation present).
func ListSwitched(ctx context.Context, a ArgoCD) ([]v1alpha1.Application, error) {
	l, err := a.ListApplications(ctx, argocd.ListQuery{Selector: Label})
	if err != nil {
		return nil, fmt.Errorf("listing the apps whose automated sync fleetwave switched off: %w", err)
	}
	var out []v1alpha1.Application
	for _, app := range l.Items {
		if Switched(&app) {
			out = append(out, app)
		}
	}
	return out, nil
}
