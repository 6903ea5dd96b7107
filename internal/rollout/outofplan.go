package rollout

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/plan"
)

// This file finds the apps of a rollout that someone else synced to the merge outside the plan — Argo CD's
// automated sync (a webhook refresh starts it in the same reconciliation, controller/appcontroller.go autoSync)
// or a person — before the rollout got to them. Such an app runs the merge, but not because the plan said so:
// it is recorded as out-of-plan (never "not started", never "skipped"), reported on the wave's check-run, in the
// terminal and the fleet view, and the rollout pauses unless the policy says outOfPlanSync: continue.
//
// Who started an operation is in Argo CD's own record: operation.initiatedBy (automated, or the username of the
// account that asked) on the requested operation, status.operationState.operation and each history entry. An
// app whose step is pending has no request of the executor's (it records an intent before every request), so
// any operation applying the merge is someone else's. For a step whose intent is recorded, only an automated
// operation, or one by a user other than the executor's own account (learned from Argo CD's answer to its
// first sync request), is someone else's.

// OutOfPlanPrefix starts the message of an out-of-plan step: "synced outside the plan by automated sync" or
// "synced outside the plan by user alice".
const OutOfPlanPrefix = "synced outside the plan by "

// foreignOp is an operation someone else started that applies the step's revision.
type foreignOp struct {
	by      string // "automated sync" or "user <name>"
	phase   string // Argo CD's phase, "" when only requested
	started time.Time
	prev    string // the revision the app ran before it (from its history)
}

func (f foreignOp) message() string {
	msg := OutOfPlanPrefix + f.by
	switch {
	case f.phase == "":
		msg += " (operation requested"
	default:
		msg += " (operation " + strings.ToLower(f.phase)
	}
	if !f.started.IsZero() {
		msg += ", started " + f.started.UTC().Format("15:04:05")
	}
	return msg + ")"
}

func initiator(i v1alpha1.OperationInitiator) (string, bool) {
	switch {
	case i.Automated:
		return "automated sync", true
	case i.Username != "":
		return "user " + i.Username, true
	}
	return "", false
}

// outOfPlanLookback is how long before a rollout was recorded an operation applying its merge still counts as
// outside the plan: a merge reaches the executor only once the plan at the merge commit is computed (seconds to
// minutes), while Argo CD's automated sync starts within a second of the push webhook. An app that ran the merge
// before that (a fast-forward merge of a head someone had synced) is simply already there: skipped.
const outOfPlanLookback = 15 * time.Minute

// foreignOperation finds the operation that applies rev (requested, current, or in the history) and says
// whether someone other than the executor started it, at or after the lookback before created (the rollout's
// creation; zero: any time). own is the executor's Argo CD username ("" unknown); anyone says that any initiator
// is foreign (the step has no request of the executor's).
func foreignOperation(app *v1alpha1.Application, rev, repoURL, own string, anyone bool, created time.Time) (foreignOp, bool) {
	if app == nil || rev == "" {
		return foreignOp{}, false
	}
	since := time.Time{}
	if !created.IsZero() {
		since = created.Add(-outOfPlanLookback)
	}
	foreign := func(i v1alpha1.OperationInitiator) (string, bool) {
		by, ok := initiator(i)
		if !ok {
			return "", false
		}
		if i.Automated || anyone {
			return by, true
		}
		return by, own != "" && i.Username != own
	}
	prev := func(before int) string {
		// The revision of the last successful sync before the history entry at index before (len: before any).
		for i := before - 1; i >= 0; i-- {
			h := app.Status.History[i]
			if !historyHas(h, rev) {
				if h.Revision != "" || len(h.Revisions) == 0 {
					return h.Revision
				}
				tmp := &v1alpha1.Application{Status: v1alpha1.ApplicationStatus{History: v1alpha1.RevisionHistories{h}}}
				return liveRevision(tmp, repoURL)
			}
		}
		return ""
	}
	if op := app.Operation; op != nil && operationTargets(op.Sync, rev) {
		if by, ok := foreign(op.InitiatedBy); ok {
			return foreignOp{by: by, prev: prev(len(app.Status.History))}, true
		}
		return foreignOp{}, false
	}
	if os := app.Status.OperationState; os != nil && appliedRevision(os) == rev {
		if os.Phase.Failed() && !created.IsZero() && os.StartedAt.Time.Before(created) {
			// It failed before this rollout existed (an earlier rollout of the same merge, an automated sync
			// right after the push): the app does not run the merge, nothing is in flight, its wave syncs it.
			return foreignOp{}, false
		}
		if by, ok := foreign(os.Operation.InitiatedBy); ok && !os.StartedAt.Time.Before(since) {
			n := len(app.Status.History)
			if n > 0 && historyHas(app.Status.History[n-1], rev) {
				n-- // the operation's own entry (written on success)
			}
			return foreignOp{by: by, phase: string(os.Phase), started: os.StartedAt.Time, prev: prev(n)}, true
		}
		return foreignOp{}, false
	}
	// Only the last entry is what the app runs: an older entry applying the merge was undone since (a rollback
	// of an earlier rollout of the same merge, a person's sync elsewhere), and an app that no longer runs the merge
	// is not "already there": its wave syncs it (an out-of-plan step is never synced again).
	if i := len(app.Status.History) - 1; i >= 0 && historyHas(app.Status.History[i], rev) {
		h := app.Status.History[i]
		if by, ok := foreign(h.InitiatedBy); ok && (h.DeployStartedAt == nil || !h.DeployStartedAt.Time.Before(since)) {
			f := foreignOp{by: by, phase: "Succeeded", prev: prev(i)}
			if h.DeployStartedAt != nil {
				f.started = h.DeployStartedAt.Time
			}
			return f, true
		}
	}
	return foreignOp{}, false
}

// noteOwnUser learns the executor's Argo CD username on instance from Argo CD's answer to one of its sync
// requests there.
func (d *driver) noteOwnUser(instance string, app *v1alpha1.Application) {
	if app == nil || app.Operation == nil || app.Operation.InitiatedBy.Username == "" {
		return
	}
	d.e.ownUsers.LoadOrStore(instance, app.Operation.InitiatedBy.Username)
}

// ownUser is the executor's Argo CD username on instance, "" until learned.
func (d *driver) ownUser(instance string) string {
	if u, ok := d.e.ownUsers.Load(instance); ok {
		return u.(string)
	}
	return ""
}

// detectOutOfPlan looks, at every step of a running rollout, at the apps of its pending steps (through the
// application stream's cache: no request) for an operation applying the merge that someone else started. Each
// one found is recorded out-of-plan; then the rollout pauses unless the policy says continue.
func (d *driver) detectOutOfPlan(ctx context.Context, r store.Rollout, sp *storedPlan) (bool, error) {
	steps, err := d.e.st.ListSteps(ctx, r.ID, store.StepFilter{States: []store.StepState{store.StepPending}})
	if err != nil {
		return false, err
	}
	if len(steps) == 0 {
		return false, nil
	}
	d.openForward(ctx, sp)
	c := d.appCache()
	if c == nil {
		return false, nil
	}
	bySKey := make(map[store.AppKey]store.AppStep, len(steps))
	keys := make([]store.AppKey, 0, len(steps))
	for _, s := range steps {
		if s.Op == store.OpRollback || s.Attempts > 0 {
			continue // the executor has sent requests for it before: judged when it syncs (record)
		}
		bySKey[s.App] = s
		keys = append(keys, s.App)
	}
	var found []string
	c.scanChanged(keys, func(k store.AppKey, app *v1alpha1.Application) {
		s := bySKey[k]
		f, ok := foreignOperation(app, s.TargetRevision, sp.Execution.RepoURL, d.ownUser(k.Instance), true, r.CreatedAt)
		if !ok {
			return
		}
		if d.markOutOfPlan(ctx, r, s, f) {
			found = append(found, k.Name)
		}
	})
	if len(found) == 0 {
		return false, nil
	}
	return d.afterOutOfPlan(ctx, r, sp, found)
}

// markOutOfPlan records a pending step as out-of-plan.
func (d *driver) markOutOfPlan(ctx context.Context, r store.Rollout, s store.AppStep, f foreignOp) bool {
	out := store.Outcome{StepID: s.ID, Version: s.Version, State: store.StepOutOfPlan, Message: f.message(),
		OpStartedAt: f.started, PreviousRevision: f.prev}
	if _, err := d.journal.RecordOutcome(context.WithoutCancel(ctx), out); err != nil {
		d.noteStoreError(err, s)
		return false
	}
	d.e.event(ctx, r.ID, "", "out-of-plan", s.App.Name, "detected", f.message())
	return true
}

// afterOutOfPlan pauses the rollout (policy outOfPlanSync: pause, the default) after apps were found synced
// outside the plan, or only publishes them (continue). It reports whether the rollout was paused.
func (d *driver) afterOutOfPlan(ctx context.Context, r store.Rollout, sp *storedPlan, apps []string) (bool, error) {
	sort.Strings(apps)
	what := fmt.Sprintf("%d app(s) synced to %s outside the plan before their wave: %s", len(apps),
		text.ShortRev(r.MergeSHA), text.FirstOf(apps, 5))
	if sp.Execution.OutOfPlanSync == plan.OutOfPlanSyncContinue {
		d.e.event(ctx, r.ID, "", "out-of-plan", "", "continue", what)
		d.publish(ctx, r.ID)
		return false, nil
	}
	paused := false
	_, err := d.e.updateRollout(ctx, r.ID, func(x *store.Rollout) (bool, error) {
		if x.State != store.RolloutRunning && x.State != store.RolloutAwaitingApproval {
			return false, nil
		}
		x.State, paused = store.RolloutPaused, true
		x.Message = what + " (Argo CD's automated sync or a person; turn automated sync off before the merge: " +
			"fleetwave rollout prepare). /resume continues the plan (they are not synced again); /rollback or /abort"
		return true, nil
	})
	if err != nil {
		return false, err
	}
	if paused {
		d.e.event(ctx, r.ID, "", "paused", "", "ok", "outOfPlanSync: pause")
	}
	d.publish(ctx, r.ID)
	return paused, nil
}

// takeOutOfPlan returns, and forgets, the apps the last batch found synced outside the plan.
func (d *driver) takeOutOfPlan() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	found := d.outOfPlan
	d.outOfPlan = nil
	return found
}

// foreignSync is record's check before it calls an app synced, waited for or skipped: the operation that
// applied the revision was someone else's (automated, or another user; anyone's when the executor sent nothing
// for the step). The step must be pending or in intent (sync).
func (d *driver) foreignSync(ctx context.Context, repoURL string, st store.AppStep) (foreignOp, bool) {
	if st.State != store.StepPending && (st.State != store.StepIntent || st.Op != store.OpSync) {
		return foreignOp{}, false
	}
	created := time.Time{}
	if r := d.cur.Load(); r != nil {
		created = r.CreatedAt
	}
	// the stream's cache: it brought the operation argosync judged; a read past it is bounded as a sync is
	app := d.readApp(ctx, st.App, d.e.o.clock.Now().Add(d.e.o.syncTimeout))
	return foreignOperation(app, st.TargetRevision, repoURL, d.ownUser(st.App.Instance), st.State == store.StepPending, created)
}

// recordOutOfPlan records the step out-of-plan from record and queues the app for runWave.
func (d *driver) recordOutOfPlan(ctx context.Context, st store.AppStep, f foreignOp) store.StepState {
	r := d.cur.Load()
	var id int64 = d.id
	if r != nil {
		id = r.ID
	}
	nst, err := d.journal.RecordOutcome(context.WithoutCancel(ctx), store.Outcome{StepID: st.ID, Version: st.Version,
		State: store.StepOutOfPlan, Message: f.message(), OpStartedAt: f.started, PreviousRevision: f.prev})
	if err != nil {
		d.noteStoreError(err, st)
		return st.State
	}
	d.e.event(ctx, id, "", "out-of-plan", st.App.Name, "detected", f.message())
	d.mu.Lock()
	d.outOfPlan = append(d.outOfPlan, st.App.Name)
	d.mu.Unlock()
	return nst.State
}
