package rollout

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/argocd"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/store"
)

// AnnotationAutomatedSync is set on an Application whose automated sync fleetwave switched off, holding the
// original spec.syncPolicy.automated (JSON). It is written in the same patch that switches automated sync off,
// so Argo CD itself remembers what to restore whichever rollout (or replica, or restart) restores it.
const AnnotationAutomatedSync = "fleetwave.io/automated-sync"

// LabelAutomatedSyncOff marks, in the same patch, the apps carrying AnnotationAutomatedSync, so the end of a
// rollout finds the apps to restore with one list filtered by Argo CD (a label selector), not a list of every
// app the Argo CD instance has. The annotation stays the record of what to restore.
const LabelAutomatedSyncOff = "fleetwave.io/automated-sync-off"

// prepareAutomated switches automated sync off, before anything else of the rollout, for the plan's apps that
// have it when the policy allows it (automatedSync: disable-during-rollout). Otherwise Argo CD would sync them
// to the merge by itself, bypassing the waves, and would refuse the bot's syncs to a pinned revision.
// Idempotent: apps already switched off are left alone.
func (d *driver) prepareAutomated(ctx context.Context, r store.Rollout, sp *storedPlan) error {
	if sp.Execution.AutomatedSync != plan.AutomatedSyncDisableDuringRollout {
		return nil
	}
	for _, w := range sp.Waves {
		for _, b := range w.Batches {
			for _, a := range b.Apps {
				if !a.AutomatedSync {
					continue
				}
				app, err := d.getApp(ctx, d.e.appKey(a), "")
				if err != nil {
					return fmt.Errorf("reading app %s before switching its automated sync off: %w", a.Name, err)
				}
				if automatedOn(app) {
					if err := d.disableAutomated(ctx, r, app, "rollout"); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// disableAutomated switches an app's automated sync off, recording the intent first (an event holding the
// original setting) and keeping the original in AnnotationAutomatedSync.
func (d *driver) disableAutomated(ctx context.Context, r store.Rollout, app *v1alpha1.Application, why string) error {
	orig, err := json.Marshal(app.Spec.SyncPolicy.Automated)
	if err != nil {
		return fmt.Errorf("switching automated sync off for app %s: %w", app.Name, err)
	}
	if prev, ok := app.Annotations[AnnotationAutomatedSync]; ok && prev != "" {
		orig = []byte(prev) // keep the first original
	}
	d.e.event(ctx, r.ID, "", "automated-sync-off", app.Name, "intent", why+": "+string(orig))
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{AnnotationAutomatedSync: string(orig)},
			"labels": map[string]string{LabelAutomatedSyncOff: "true"}},
		"spec": map[string]any{"syncPolicy": map[string]any{"automated": nil}},
	})
	if err != nil {
		return fmt.Errorf("switching automated sync off for app %s: %w", app.Name, err)
	}
	upd, err := d.e.argo.Patch(ctx, qualified(d.keyOf(app)), string(patch), argocd.PatchMerge)
	if err != nil {
		d.e.event(ctx, r.ID, "", "automated-sync-off", app.Name, "failed", err.Error())
		return fmt.Errorf("switching automated sync off for app %s: %w", app.Name, err)
	}
	if upd != nil {
		*app = *upd
	}
	d.e.event(ctx, r.ID, "", "automated-sync-off", app.Name, "ok", why)
	return nil
}

// restoreAutomated switches automated sync back on, as it was, for the rollout's apps carrying
// AnnotationAutomatedSync — after the rollout succeeded, never after an abort, a failure or a rollback (Argo CD
// would then sync the apps to the merge by itself). Apps an unfinished newer rollout touches are left off: that
// rollout restores them when it succeeds. Idempotent.
func (d *driver) restoreAutomated(ctx context.Context, r store.Rollout, sp *storedPlan) error {
	keys := d.e.planKeys(sp)
	mine := make(map[store.AppKey]bool, len(keys))
	for _, k := range keys {
		mine[k] = true
	}
	if len(keys) == 0 {
		return nil
	}
	l, err := d.e.argo.ListApplications(ctx, argocd.ListQuery{Selector: LabelAutomatedSyncOff})
	if err != nil {
		return fmt.Errorf("listing apps to restore their automated sync: %w", err)
	}
	var todo []*v1alpha1.Application
	for i := range l.Items {
		a := &l.Items[i]
		if _, ok := a.Annotations[AnnotationAutomatedSync]; ok && mine[d.keyOf(a)] {
			todo = append(todo, a)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	others, err := d.e.st.ActiveRolloutsTouching(ctx, "", keys)
	if err != nil {
		return fmt.Errorf("restoring automated sync: %w", err)
	}
	busy := map[store.AppKey]bool{}
	for _, o := range others {
		if o.ID == r.ID {
			continue
		}
		os, err := d.e.st.ListSteps(ctx, o.ID, store.StepFilter{})
		if err != nil {
			return fmt.Errorf("restoring automated sync: %w", err)
		}
		for _, s := range os {
			busy[s.App] = true
		}
	}
	for _, a := range todo {
		k := d.keyOf(a)
		if busy[k] {
			d.e.event(ctx, r.ID, "", "automated-sync-restore", a.Name, "deferred", "a newer rollout touches the app")
			continue
		}
		orig := a.Annotations[AnnotationAutomatedSync]
		var automated *v1alpha1.SyncPolicyAutomated
		if err := json.Unmarshal([]byte(orig), &automated); err != nil || automated == nil {
			automated = &v1alpha1.SyncPolicyAutomated{}
		}
		d.e.event(ctx, r.ID, "", "automated-sync-restore", a.Name, "intent", orig)
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{AnnotationAutomatedSync: nil},
				"labels": map[string]any{LabelAutomatedSyncOff: nil}},
			"spec": map[string]any{"syncPolicy": map[string]any{"automated": automated}},
		})
		if err != nil {
			return fmt.Errorf("restoring automated sync of app %s: %w", a.Name, err)
		}
		if _, err := d.e.argo.Patch(ctx, qualified(k), string(patch), argocd.PatchMerge); err != nil {
			return fmt.Errorf("restoring automated sync of app %s: %w", a.Name, err)
		}
		d.e.event(ctx, r.ID, "", "automated-sync-restore", a.Name, "ok", "")
	}
	return nil
}
