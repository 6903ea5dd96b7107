package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/autosync"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/plan"
)

// AnnotationAutomatedSync is set on an Application whose automated sync fleetwave switched off, holding the
// original spec.syncPolicy.automated (JSON): autosync.Annotation.
const AnnotationAutomatedSync = autosync.Annotation

// LabelAutomatedSyncOff marks the apps carrying AnnotationAutomatedSync: autosync.Label.
const LabelAutomatedSyncOff = autosync.Label

// KeepAutomatedOffNote ends the message of a rollout aborted with its apps' automated sync kept off
// (AbortOptions.KeepAutomatedOff): the end of the rollout then restores nothing.
const KeepAutomatedOffNote = "automated sync kept off"

// automatedOffMarker starts the one line a rollout's message gets when it ends with apps still switched off.
const automatedOffMarker = "automated sync stays off for "

// automatedOnMarker starts the note of an aborted rollout whose restored automated sync now syncs the apps the
// rollout had not started: they are not "not started" for long, Argo CD takes them to their revision itself.
const automatedOnMarker = "automated sync restored: "

// AutomatedSyncNote is the line of a finished rollout's message that says which apps remain with automated sync
// switched off and the command that restores them ("" when none): the terminal summary, `rollout status` and
// the check-runs show it.
func AutomatedSyncNote(r store.Rollout) string {
	for _, m := range []string{automatedOffMarker, automatedOnMarker} {
		if i := strings.Index(r.Message, m); i >= 0 {
			return r.Message[i:]
		}
	}
	return ""
}

// noteRestoredNotStarted adds to an aborted rollout's message which of the apps whose automated sync it restored
// it had not started: Argo CD syncs those to the revision they track by itself (the merge, when they track the
// branch), so `rollout status` does not leave them as merely "not started".
func (e *Executor) noteRestoredNotStarted(ctx context.Context, r store.Rollout, restored []store.AppKey) error {
	if len(restored) == 0 || AutomatedSyncNote(r) != "" {
		return nil
	}
	pending, err := e.st.ListSteps(ctx, r.ID, store.StepFilter{States: []store.StepState{store.StepPending}})
	if err != nil {
		return err
	}
	on := make(map[store.AppKey]bool, len(restored))
	for _, k := range restored {
		on[k] = true
	}
	var names []string
	for _, s := range pending {
		if on[s.App] && s.Op != store.OpRollback {
			on[s.App] = false // one name per app, whatever its steps
			names = append(names, s.App.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	note := fmt.Sprintf("%sArgo CD syncs the %s the rollout had not started (%s) to the revision they track by itself",
		automatedOnMarker, text.Plural(len(names), "app"), text.FirstOf(names, 10))
	_, err = e.updateRollout(ctx, r.ID, func(x *store.Rollout) (bool, error) {
		if x.State != store.RolloutAborted || AutomatedSyncNote(*x) != "" {
			return false, nil
		}
		x.Message += "; " + note
		return true, nil
	})
	return err
}

// ReleaseCommand is the terminal command that switches a finished rollout's apps' automated sync back on.
func ReleaseCommand(id int64) string {
	return fmt.Sprintf("fleetwave rollout release --id %d", id)
}

// prepareAutomated takes over the holds of the merged change (its pull request's, or a terminal prepare's of the
// merge commit: autosync.TakeOver) — the rollout's steps keep those apps off from here on — then switches
// automated sync off for the plan's apps that still have it when the policy allows it (automatedSync:
// disable-during-rollout). An app still on was not held before the merge: Argo CD may already have synced it;
// the event automated-sync-late says how many. Idempotent: apps already switched off are left alone.
func (d *driver) prepareAutomated(ctx context.Context, r store.Rollout, sp *storedPlan) error {
	if sp.Execution.AutomatedSync != plan.AutomatedSyncDisableDuringRollout {
		return nil
	}
	taken, err := autosync.TakeOver(ctx, d.e.st, r.Repo, r.PRNumber, r.MergeSHA)
	if err != nil {
		return fmt.Errorf("taking over the automated sync holds of the merged change: %w", err)
	}
	for _, h := range taken {
		d.e.event(ctx, r.ID, "", "automated-sync-hold-taken", h.App.Name, "ok", fmt.Sprintf("held since %s by %s#%d at %s",
			h.At.UTC().Format("2006-01-02 15:04:05Z"), h.Repo, h.PR, text.ShortRev(h.Head)))
	}
	late := 0
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
					if err := d.disableAutomated(ctx, r, a.Instance, app, "rollout"); err != nil {
						return err
					}
					late++
				}
			}
		}
	}
	if late > 0 {
		d.e.event(ctx, r.ID, "", "automated-sync-late", fmt.Sprint(late), "warning",
			fmt.Sprintf("automated sync was still on for %s: Argo CD may already have synced them", text.Plural(late, "app")))
	}
	return nil
}

// disableAutomated switches an app's automated sync off (autosync.Off), recording the intent first (an event
// holding the original setting).
func (d *driver) disableAutomated(ctx context.Context, r store.Rollout, inst string, app *v1alpha1.Application, why string) error {
	argo, err := d.e.argoFor(inst)
	if err != nil {
		return err
	}
	var cur *v1alpha1.SyncPolicyAutomated
	if app.Spec.SyncPolicy != nil {
		cur = app.Spec.SyncPolicy.Automated
	}
	orig, _ := json.Marshal(cur)
	if prev, ok := app.Annotations[AnnotationAutomatedSync]; ok && prev != "" {
		orig = []byte(prev) // the first original is the one kept
	}
	d.e.event(ctx, r.ID, "", "automated-sync-off", app.Name, "intent", why+": "+string(orig))
	upd, err := autosync.Off(ctx, argo, autosync.Name(d.keyOn(inst, app)), app)
	if err != nil {
		d.e.event(ctx, r.ID, "", "automated-sync-off", app.Name, "failed", err.Error())
		return err
	}
	if upd != nil {
		*app = *upd
	}
	d.e.event(ctx, r.ID, "", "automated-sync-off", app.Name, "ok", why)
	return nil
}

// rolloutApps are the apps whose automated sync a rollout answers for: its plan's, and those of the rollouts it
// superseded (the newer rollout inherits them).
func (e *Executor) rolloutApps(ctx context.Context, r store.Rollout, sp *storedPlan) ([]store.AppKey, error) {
	keys := e.planKeys(sp)
	olds, err := e.st.ListRollouts(ctx, store.RolloutFilter{States: []store.RolloutState{store.RolloutSuperseded}})
	if err != nil {
		return nil, err
	}
	for _, o := range olds {
		if o.SupersededBy != r.ID {
			continue
		}
		steps, err := e.st.ListSteps(ctx, o.ID, store.StepFilter{})
		if err != nil {
			return nil, err
		}
		for _, s := range steps {
			if !containsKey(keys, s.App) {
				keys = append(keys, s.App)
			}
		}
	}
	return keys, nil
}

func containsKey(keys []store.AppKey, k store.AppKey) bool {
	for _, x := range keys {
		if x == k {
			return true
		}
	}
	return false
}

// restoreAutomated switches automated sync back on, as it was, for the rollout's apps (rolloutApps) that
// fleetwave switched off and nothing else needs off: an open pull request's hold, or another unfinished rollout
// touching the app (that one, or the pull request's end, restores it). Idempotent.
func (e *Executor) restoreAutomated(ctx context.Context, r store.Rollout, sp *storedPlan) ([]store.AppKey, error) {
	keys, err := e.rolloutApps(ctx, r, sp)
	if err != nil {
		return nil, fmt.Errorf("restoring automated sync: %w", err)
	}
	if len(keys) == 0 {
		return nil, nil
	}
	res, err := e.restoreUnheld(ctx, keys, func(o store.Rollout) bool { return o.ID == r.ID },
		func(k store.AppKey, orig string) {
			e.event(ctx, r.ID, "", "automated-sync-restore", k.Name, "intent", orig)
		})
	if err != nil {
		return nil, fmt.Errorf("restoring automated sync: %w", err)
	}
	for _, k := range res.Restored {
		e.event(ctx, r.ID, "", "automated-sync-restore", k.Name, "ok", "")
	}
	for _, k := range res.Kept {
		e.event(ctx, r.ID, "", "automated-sync-restore", k.Name, "deferred", "a pull request's hold or another unfinished rollout needs it off")
	}
	var errs []error
	for _, f := range res.Failed {
		e.event(ctx, r.ID, "", "automated-sync-restore", f.App.Name, "failed", f.Err.Error())
		errs = append(errs, f)
	}
	return res.Restored, errors.Join(errs...)
}

// stillOff lists the rollout's apps (rolloutApps) that fleetwave switched off and that no hold or other unfinished
// rollout needs off: what a rollout that ended failed or rolled back leaves switched off on purpose.
func (e *Executor) stillOff(ctx context.Context, r store.Rollout, sp *storedPlan) ([]store.AppKey, error) {
	keys, err := e.rolloutApps(ctx, r, sp)
	if err != nil || len(keys) == 0 {
		return nil, err
	}
	busy, err := autosync.Busy(ctx, e.st, keys, func(o store.Rollout) bool { return o.ID == r.ID })
	if err != nil {
		return nil, err
	}
	var out []store.AppKey
	for _, inst := range e.inst.names() { // each instance's switched apps, on that instance
		switched, err := autosync.ListSwitched(ctx, e.inst.argos[inst])
		if err != nil {
			return nil, err
		}
		for _, a := range switched {
			k := e.keyOn(inst, &a)
			if containsKey(keys, k) && !busy[k] {
				out = append(out, k)
			}
		}
	}
	return out, nil
}

// restoreUnheld is autosync.RestoreUnheld through each app's own instance (the apps of an instance not configured
// are left: their steps failed with instanceError, and nothing was switched off there).
func (e *Executor) restoreUnheld(ctx context.Context, keys []store.AppKey, ignore func(store.Rollout) bool,
	intent func(store.AppKey, string)) (autosync.Result, error) {
	if !e.inst.multi {
		return autosync.RestoreUnheld(ctx, e.argo, e.st, keys, ignore, intent)
	}
	var res autosync.Result
	by := map[string][]store.AppKey{}
	for _, k := range keys {
		by[k.Instance] = append(by[k.Instance], k)
	}
	for _, inst := range slices.Sorted(maps.Keys(by)) {
		argo, err := e.argoFor(inst)
		if err != nil {
			continue // an instance the executor does not know: it switched nothing off there to restore
		}
		r, err := autosync.RestoreUnheld(ctx, argo, e.st, by[inst], ignore, intent)
		res.Restored, res.Kept = append(res.Restored, r.Restored...), append(res.Kept, r.Kept...)
		res.Failed = append(res.Failed, r.Failed...)
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// keyOn names an app of instance inst as the store does (an app without a namespace lives in the control-plane
// namespace).
func (e *Executor) keyOn(inst string, a *v1alpha1.Application) store.AppKey {
	ns := a.Namespace
	if ns == "" {
		ns = e.o.namespace
	}
	return store.AppKey{Instance: inst, Namespace: ns, Name: a.Name}
}

// hasArgoCD reports whether the executor talks to any Argo CD (instance "" or named ones).
func (e *Executor) hasArgoCD() bool { return len(e.inst.argos) > 0 }

// endAutomated leaves automated sync as the way the rollout ended wants it, once it is finished:
//   - succeeded: restored (stepForward did it before the rollout succeeded; again here, idempotent);
//   - aborted: restored, unless the abort kept it off (KeepAutomatedOffNote);
//   - failed, rolled back: kept off — restoring would make Argo CD sync the merge again — and the rollout's
//     message says in one line which apps and the command that restores them (AutomatedSyncNote);
//   - superseded: nothing; the newer rollout inherits the apps (rolloutApps).
func (e *Executor) endAutomated(ctx context.Context, r store.Rollout, sp *storedPlan) error {
	if !e.hasArgoCD() || sp.Execution.AutomatedSync != plan.AutomatedSyncDisableDuringRollout {
		return nil
	}
	switch r.State {
	case store.RolloutSucceeded:
		_, err := e.restoreAutomated(ctx, r, sp)
		return err
	case store.RolloutAborted:
		if !strings.Contains(r.Message, KeepAutomatedOffNote) {
			restored, err := e.restoreAutomated(ctx, r, sp)
			if err != nil {
				return err
			}
			return e.noteRestoredNotStarted(ctx, r, restored)
		}
	case store.RolloutFailed, store.RolloutRolledBack:
	default:
		return nil
	}
	if AutomatedSyncNote(r) != "" {
		return nil
	}
	off, err := e.stillOff(ctx, r, sp)
	if err != nil || len(off) == 0 {
		return err
	}
	names := make([]string, 0, len(off))
	for _, k := range off {
		names = append(names, k.Name)
	}
	why := "restoring it would make Argo CD sync the merge again"
	if r.State == store.RolloutAborted {
		why = "the abort kept it off"
	}
	note := fmt.Sprintf("%s%s (%s; %s): `%s` restores it", automatedOffMarker, text.Plural(len(off), "app"),
		strings.Join(names, ", "), why, ReleaseCommand(r.ID))
	_, err = e.updateRollout(ctx, r.ID, func(x *store.Rollout) (bool, error) {
		if !x.State.Terminal() || AutomatedSyncNote(*x) != "" {
			return false, nil
		}
		if x.Message == "" {
			x.Message = note
		} else {
			x.Message += "; " + note
		}
		return true, nil
	})
	if err == nil {
		e.event(ctx, r.ID, "", "automated-sync-kept-off", fmt.Sprint(len(off)), "ok", note)
	}
	return err
}

// ReleaseAutomated switches automated sync back on, as it was, for a finished rollout's apps that nothing else
// needs off (`fleetwave rollout release --id`): after a failure or a rollback, once the operator decided Argo CD
// may sync the apps by itself again. It returns the apps restored and those still needed off.
func (e *Executor) ReleaseAutomated(ctx context.Context, id int64) (restored, kept []store.AppKey, err error) {
	r, err := e.st.GetRollout(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if !r.State.Terminal() {
		return nil, nil, refusef("rollout #%d is %s: it restores automated sync itself when it ends", id, r.State)
	}
	if !e.hasArgoCD() {
		return nil, nil, errors.New("restoring automated sync needs Argo CD")
	}
	sp, err := parseStoredPlan(r.Plan)
	if err != nil {
		return nil, nil, err
	}
	keys, err := e.rolloutApps(ctx, r, sp)
	if err != nil {
		return nil, nil, err
	}
	res, err := e.restoreUnheld(ctx, keys, nil,
		func(k store.AppKey, orig string) {
			e.event(ctx, r.ID, "", "automated-sync-restore", k.Name, "intent", orig)
		})
	if err != nil {
		return nil, nil, err
	}
	for _, k := range res.Restored {
		e.event(ctx, r.ID, "", "automated-sync-restore", k.Name, "ok", "released")
	}
	var errs []error
	for _, f := range res.Failed {
		errs = append(errs, f)
	}
	return res.Restored, res.Kept, errors.Join(errs...)
}

// checkStillOff re-reads, before wave wi starts, its apps whose automated sync the rollout switched off: one that
// is on again — an app-of-apps parent with self-heal that manages the Application's spec reverts the switch
// (docs/policy.md: ignoreDifferences on spec.syncPolicy.automated) — would let Argo CD sync the merge by itself.
// Such apps are switched off again and the rollout is paused with one line naming them; /resume checks again.
func (d *driver) checkStillOff(ctx context.Context, r store.Rollout, sp *storedPlan, wi int) (paused bool, err error) {
	if !d.e.hasArgoCD() || sp.Execution.AutomatedSync != plan.AutomatedSyncDisableDuringRollout || wi >= len(sp.Waves) {
		return false, nil
	}
	var on []string
	for _, b := range sp.Waves[wi].Batches {
		for _, a := range b.Apps {
			if !a.AutomatedSync {
				continue
			}
			app, err := d.getApp(ctx, d.e.appKey(a), "")
			if err != nil {
				return false, fmt.Errorf("reading app %s before its wave: %w", a.Name, err)
			}
			if automatedOn(app) {
				on = append(on, a.Name)
				if err := d.disableAutomated(ctx, r, a.Instance, app, "switched back on before its wave"); err != nil {
					return false, err
				}
			}
		}
	}
	if len(on) == 0 {
		return false, nil
	}
	msg := fmt.Sprintf("automated sync of %s (%s) was on again before wave %s (an app-of-apps parent with self-heal reverts "+
		"fleetwave's switch unless it ignores spec.syncPolicy.automated: docs/policy.md); switched off again, paused: /resume continues",
		text.Plural(len(on), "app"), strings.Join(on, ", "), sp.Waves[wi].Name)
	nr, err := d.e.updateRollout(ctx, r.ID, func(x *store.Rollout) (bool, error) {
		if x.State != store.RolloutRunning && x.State != store.RolloutAwaitingApproval {
			return false, nil
		}
		x.State, x.Message = store.RolloutPaused, msg
		return true, nil
	})
	if err != nil {
		return false, err
	}
	if nr.State == store.RolloutPaused {
		d.e.event(ctx, r.ID, "", "automated-sync-reverted", sp.Waves[wi].Name, "paused", msg)
		d.publish(ctx, r.ID)
	}
	return true, nil
}
