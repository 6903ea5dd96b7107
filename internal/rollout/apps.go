package rollout

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/health"
	synccommon "github.com/argoproj/argo-cd/gitops-engine/v3/pkg/sync/common"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/rollout/argosync"
)

// This file is the per-app part of a step: the intent/outcome protocol of internal/edge/store around argosync's
// SyncApp (Fastly's algorithm, with race-proof evidence of "done"), and the reconciliation of what a killed
// process left in flight.

// errNotStarting refuses a sync at the last moment: the rollout was paused, aborted or superseded, the
// replica drains, or the lease is gone. Nothing was recorded; the step stays as it was.
var errNotStarting = errors.New("not starting: the rollout stopped starting syncs")

// stepRun is one app's operation in progress: the step as last written, and what the intent will record.
type stepRun struct {
	mu      sync.Mutex
	step    store.AppStep
	op      store.Op
	prev    string             // the app's live revision, recorded as PreviousRevision by a first sync intent
	want    store.RolloutState // the rollout state in which the operation may start
	refused bool               // onTrigger refused: nothing recorded
	// windowRefused: Argo CD refused the sync request because of a sync window.
	windowRefused bool
	// deadline: past it, reads of the app that fail stop being retried (the sync timeout; zero: none).
	deadline time.Time
	// unreachable: a call for this step found its instance not answering (unreachable.go).
	unreachable bool
	repoURL     string // the rollout's repository (multi-source apps)
	// operationDone frees the app's place in its instance's budget (once; nil: none held).
	operationDone func()
}

func (r *stepRun) get() store.AppStep {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.step
}

type runKey struct{}

func runOf(ctx context.Context) *stepRun {
	r, _ := ctx.Value(runKey{}).(*stepRun)
	return r
}

// onOperationDone is argosync's Options.OnOperationDone: the app's operation is over, so its place in the
// instance's budget (maxSyncs, the controller's operation processors) goes to the next app while this one
// becomes Healthy.
func (d *driver) onOperationDone(ctx context.Context, _ string) {
	if run := runOf(ctx); run != nil && run.operationDone != nil {
		run.operationDone()
	}
}

// onTrigger is argosync's Options.OnTrigger: called just before the sync request, it records the intent. The
// intent is fenced by the lease: a replica that lost the rollout cannot start anything.
func (d *driver) onTrigger(ctx context.Context, _, _ string) error {
	run := runOf(ctx)
	if run == nil {
		return errors.New("recording the intent: no app step for this sync")
	}
	run.mu.Lock()
	defer run.mu.Unlock()
	if !d.mayStart(ctx, run.want) {
		run.refused = true
		return errNotStarting
	}
	st, err := d.journal.RecordIntent(ctx, store.Intent{StepID: run.step.ID, Version: run.step.Version, Op: run.op,
		PreviousRevision: run.prev, Owner: d.e.o.owner})
	if err != nil {
		if errors.Is(err, store.ErrLeaseLost) {
			d.lost.Store(true)
			d.cancel()
		}
		run.refused = true
		return fmt.Errorf("recording the intent: %w", err)
	}
	run.step = st
	return nil
}

// onLostSync is argosync's Options.OnLostSync: before a sync that Argo CD accepted and then dropped unstarted is
// requested again, it checks that the rollout still starts syncs, and logs and records the re-request. The
// step's intent stands: its operation, started after the intent, is the step's whichever request started it
// (evidence.go), so a restart finds it as it finds any.
func (d *driver) onLostSync(ctx context.Context, app, revision string, requests int, reason string) error {
	run := runOf(ctx)
	if run == nil {
		return errors.New("requesting the sync again: no app step for this sync")
	}
	run.mu.Lock()
	defer run.mu.Unlock()
	if !d.mayStart(ctx, run.want) {
		return errNotStarting
	}
	msg := fmt.Sprintf("sync to %s requested again (request %d): %s", text.ShortRev(revision), requests+1, reason)
	d.e.o.log.Warn("a sync Argo CD accepted never started: requesting it again", "rollout", d.id, "app", run.step.App.String(),
		"revision", revision, "requests", requests, "reason", reason)
	d.e.event(ctx, d.id, "", "sync-requested-again", run.step.App.String(), "lost", msg)
	return nil
}

// trackingAPI marks a step triggered as soon as Argo CD accepted its sync request; inst is the instance whose
// Argo CD it is.
type trackingAPI struct {
	ArgoCD
	d    *driver
	inst string
}

// note tells the driver what the instance answered, and the step when it did not answer.
func (t trackingAPI) note(ctx context.Context, err error) {
	if !t.d.e.inst.multi {
		return
	}
	t.d.noteInstance(ctx, t.inst, err)
	if run := runOf(ctx); run != nil && unreachableErr(err) {
		run.mu.Lock()
		run.unreachable = true
		run.mu.Unlock()
	}
}

// slowAnswer is how long a call that Argo CD answers at once (a sync request, a read without refresh) may go
// unanswered before its instance counts as not answering. Without it, an instance that accepts connections and
// never answers (a frozen argocd-server, a path that drops packets) would be noticed only when the client gives
// up: its 60 s per attempt, retried four times.
const slowAnswer = 20 * time.Second

// slowRefresh is slowAnswer for a read with refresh, which waits for Argo CD to reconcile the app: seconds
// usually, longer on a busy controller.
const slowRefresh = 45 * time.Second

// watchSlow marks the instance not answering when the call it guards is still unanswered after d (the call's own
// answer then settles it, through note); stop ends the watch.
func (t trackingAPI) watchSlow(ctx context.Context, d time.Duration) (stop func()) {
	return t.d.watchSlow(ctx, t.inst, d)
}

// watchSlow is trackingAPI.watchSlow for any call the driver makes to instance inst.
func (d *driver) watchSlow(ctx context.Context, inst string, after time.Duration) (stop func()) {
	if !d.e.inst.multi {
		return func() {}
	}
	timer := d.e.o.clock.AfterFunc(after, func() {
		d.noteInstance(context.WithoutCancel(ctx), inst, fmt.Errorf("no answer to a request for %s", after))
	})
	return func() { timer.Stop() }
}

// slowAfter is how long a read of an app may go unanswered before its instance counts as not answering.
func slowAfter(refresh v1alpha1.RefreshType) time.Duration {
	if refresh != "" {
		return slowRefresh
	}
	return slowAnswer
}

func (t trackingAPI) GetApplication(ctx context.Context, name string, refresh v1alpha1.RefreshType) (*v1alpha1.Application, error) {
	stop := t.watchSlow(ctx, slowAfter(refresh))
	app, err := t.ArgoCD.GetApplication(ctx, name, refresh)
	stop()
	t.note(ctx, err)
	return app, err
}

func (t trackingAPI) Sync(ctx context.Context, name string, req argocd.SyncRequest) (*v1alpha1.Application, error) {
	stop := t.watchSlow(ctx, slowAnswer)
	app, err := t.ArgoCD.Sync(ctx, name, req)
	stop()
	t.note(ctx, err)
	if err != nil {
		if run := runOf(ctx); run != nil && argocd.IsSyncWindowRefusal(err) {
			run.mu.Lock()
			run.windowRefused = true
			run.mu.Unlock()
		}
		return app, err
	}
	t.d.noteOwnUser(t.inst, app)
	if run := runOf(ctx); run != nil {
		run.mu.Lock()
		if run.step.State == store.StepIntent {
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			if st, merr := t.d.journal.MarkTriggered(wctx, run.step.ID, run.step.Version); merr == nil {
				run.step = st
			}
			cancel()
		}
		run.mu.Unlock()
	}
	return app, nil
}

// newSession opens an argosync session (one shared application stream) on an instance's Argo CD; its stream
// connects in the background (Session.WaitConnected). Rollbacks sync to a revision the app's targetRevision no
// longer resolves to: they skip argosync's wait for the revision to resolve (a pinned sync; Argo CD then shows
// the app OutOfSync until Git is reverted). nil when the instance is not configured.
func (d *driver) newSession(ctx context.Context, sp *storedPlan, rollback bool, inst string) *argosync.Session {
	argo, err := d.e.argoFor(inst)
	if err != nil {
		return nil
	}
	o := d.e.o
	opts := argosync.Options{
		Prune: sp.Execution.Prune, RepoURL: sp.Execution.RepoURL, Timeout: o.syncTimeout,
		StallTimeout: o.stallTimeout, ClockSkew: o.clockSkew, LostAnswerGrace: o.intentGrace, Clock: o.clock, OnTrigger: d.onTrigger,
		OnOperationDone: d.onOperationDone,
		// The session talks to one instance's Argo CD: that instance's retries of a sync lost unstarted.
		LostSyncRetries: o.lostSyncRetries[inst], OnLostSync: d.onLostSync,
	}
	if rollback {
		opts.ResolveTimeout = time.Nanosecond
	} else {
		opts.Branch = sp.Execution.Branch // a forward sync goes only to apps tracking the merge's branch
	}
	return argosync.NewSession(ctx, trackingAPI{ArgoCD: argo, d: d, inst: inst}, opts)
}

// forwardSession is the driver's session for forward syncs on an instance (openForward), its stream connected;
// nil when the instance is not configured.
func (d *driver) forwardSession(ctx context.Context, sp *storedPlan, inst string) *argosync.Session {
	s := d.openForward(ctx, sp)[inst]
	if s != nil {
		s.WaitConnected(ctx, 10*time.Second)
	}
	return s
}

// openForward opens the driver's session for forward syncs, if it is not open yet, without waiting for its
// stream: it is opened as soon as the rollout may start, so the stream's initial snapshot of the apps arrives
// while the rollout's first wave is being set up. It is kept across batches and waves (one stream for the
// whole rollout) and closed when the driver stops. One session per instance of the plan's apps that is
// configured (a stream per instance). Only the step goroutine calls it.
func (d *driver) openForward(ctx context.Context, sp *storedPlan) map[string]*argosync.Session {
	d.mu.Lock()
	fwd := d.fwd
	d.mu.Unlock()
	if fwd != nil {
		return fwd
	}
	keys := d.e.planKeys(sp)
	c := newAppCache(d.e.o.namespace, keys)
	d.mu.Lock()
	d.cache = c
	d.mu.Unlock()
	fwd = map[string]*argosync.Session{}
	for _, k := range keys {
		if _, done := fwd[k.Instance]; done {
			continue
		}
		// Its stream feeds the cache (trackingAPI.Watch): not under d.mu.
		fwd[k.Instance] = d.newSession(ctx, sp, false, k.Instance)
	}
	d.mu.Lock()
	d.fwd = fwd
	d.mu.Unlock()
	return fwd
}

func (d *driver) closeSessions() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, s := range d.fwd {
		if s != nil {
			s.Close()
		}
	}
	d.fwd = nil
}

// readApp returns an app's state before working on it: from the stream's cache (a forward batch waited for the
// stream's initial snapshot to bring it, runBatch), else one GET (in the app's own goroutine). nil when it cannot
// be read: SyncApp then reads it itself and reports why it cannot.
func (d *driver) readApp(ctx context.Context, k store.AppKey, deadline time.Time) *v1alpha1.Application {
	if c := d.appCache(); c != nil {
		if app := c.get(k); app != nil {
			return app
		}
	}
	app, err := d.getAppUntil(ctx, k, "", deadline)
	if err != nil {
		return nil
	}
	return app
}

// keyOn names an app of instance inst as the store does (an app without a namespace lives in the control-plane
// namespace).
func (d *driver) keyOn(inst string, a *v1alpha1.Application) store.AppKey {
	ns := a.Namespace
	if ns == "" {
		ns = d.e.o.namespace
	}
	return store.AppKey{Instance: inst, Namespace: ns, Name: a.Name}
}

func qualified(k store.AppKey) string {
	if k.Namespace == "" {
		return k.Name
	}
	return k.Namespace + "/" + k.Name
}

func appOrStub(app *v1alpha1.Application, k store.AppKey) v1alpha1.Application {
	if app != nil {
		return *app
	}
	var a v1alpha1.Application
	a.Name, a.Namespace = k.Name, k.Namespace
	return a
}

// syncApp brings one app to the step's target revision and records the outcome. It returns the step's state
// afterwards.
func (d *driver) syncApp(ctx context.Context, sess *argosync.Session, sp *storedPlan, s store.AppStep, operationDone func()) store.StepState {
	if sess == nil {
		return d.recordEarly(ctx, &stepRun{step: s, op: store.OpSync}, "not synced: "+instanceError(s.App.Instance).Error(), store.StepFailed)
	}
	// The sync timeout bounds each part of the app's work, whatever Argo CD does: an Argo CD that does not
	// answer (gone away, a dead port-forward) fails the app when it is up; it does not hold the rollout forever.
	// In a fleet of instances, one that does not answer holds its apps instead (unreachable.go): one read, and
	// an app whose instance is down stays pending, nothing recorded.
	readUntil := d.e.o.clock.Now().Add(d.e.o.syncTimeout)
	if d.e.inst.multi {
		readUntil = d.e.o.clock.Now()
	}
	app := d.readApp(ctx, s.App, readUntil)
	if ctx.Err() != nil {
		return s.State
	}
	if held, _ := d.instanceHeld(s.App.Instance); held && app == nil {
		return s.State
	}
	// argosync bounds its own work on the app by the same timeout (argosync.Options.Timeout).
	run := &stepRun{step: s, op: store.OpSync, prev: liveRevision(app, sp.Execution.RepoURL), want: store.RolloutRunning,
		deadline: d.e.o.clock.Now().Add(d.e.o.syncTimeout), repoURL: sp.Execution.RepoURL, operationDone: operationDone}
	res := sess.SyncApp(context.WithValue(ctx, runKey{}, run), appOrStub(app, s.App), s.TargetRevision)
	return d.record(ctx, run, res)
}

// rollbackApp syncs one app back to the revision it ran before the rollout and records the outcome.
func (d *driver) rollbackApp(ctx context.Context, sess *argosync.Session, r store.Rollout, sp *storedPlan, s store.AppStep) store.StepState {
	if sess == nil {
		return d.recordEarly(ctx, &stepRun{step: s, op: store.OpRollback}, "not rolled back: "+instanceError(s.App.Instance).Error(), store.StepFailed)
	}
	app := d.readApp(ctx, s.App, time.Time{})
	if ctx.Err() != nil {
		return s.State
	}
	run := &stepRun{step: s, op: store.OpRollback, want: store.RolloutRollingBack}
	if automatedOn(app) {
		// Argo CD refuses a rollback (and a sync to another revision) while automated sync is on, and would sync
		// the app forward again by itself.
		if err := d.disableAutomated(ctx, r, s.App.Instance, app, "rollback"); err != nil {
			return d.recordEarly(ctx, run, fmt.Sprintf("switching automated sync off before the rollback: %v", err), store.StepFailed)
		}
	}
	if atRevision(app, s.PreviousRevision, sp.Execution.RepoURL) {
		// Nothing applied the rollout's revision (its sync failed before applying): nothing to undo.
		return d.recordEarly(ctx, run, "already at "+text.ShortRev(s.PreviousRevision)+" and Healthy: nothing to roll back", store.StepRolledBack)
	}
	res := sess.SyncApp(context.WithValue(ctx, runKey{}, run), appOrStub(app, s.App), s.PreviousRevision)
	return d.record(ctx, run, res)
}

// recordEarly records an outcome reached without any side effect: an intent (the protocol's only way out of
// pending/synced), then the outcome at once.
func (d *driver) recordEarly(ctx context.Context, run *stepRun, msg string, state store.StepState) store.StepState {
	st, err := d.journal.RecordIntent(ctx, store.Intent{StepID: run.step.ID, Version: run.step.Version, Op: run.op,
		PreviousRevision: run.prev, Owner: d.e.o.owner})
	if err != nil {
		d.noteStoreError(err, run.step)
		return run.step.State
	}
	st, err = d.journal.RecordOutcome(ctx, store.Outcome{StepID: st.ID, Version: st.Version, State: state, Message: msg})
	if err != nil {
		d.noteStoreError(err, st)
		return st.State
	}
	return st.State
}

// record turns argosync's verdict into the step's outcome.
func (d *driver) record(ctx context.Context, run *stepRun, res argosync.Result) store.StepState {
	st := run.get()
	if ctx.Err() != nil || d.lost.Load() {
		// Abandoned (hard stop, lease lost): the step stays as it is and is reconciled by whoever resumes.
		return st.State
	}
	if run.refused {
		return st.State
	}
	out := store.Outcome{StepID: st.ID, Version: st.Version, OpStartedAt: res.OperationStartedAt,
		OpFinishedAt: res.OperationFinishedAt, Health: string(res.Health), Message: res.Message}
	inFlight := st.State.InFlight()
	run.mu.Lock()
	windowRefused := run.windowRefused
	run.mu.Unlock()
	if windowRefused && res.Outcome == argosync.OutcomeFailed && run.op == store.OpSync && st.State == store.StepIntent {
		// Argo CD checks the windows before anything else (server/application/application.go Sync): the refused
		// request started nothing. An earlier attempt of it (the client retries after a lost answer) may have, so
		// the step's operation is looked for as below; none: the app waits for the window, it did not fail.
		state, ev, h, msg, found := d.findOperation(ctx, st, res.TriggeredAt, run.deadline)
		if found {
			if state == "" {
				return st.State
			}
			out.State, out.OpStartedAt, out.OpFinishedAt, out.Health, out.Message = state, ev.StartedAt, ev.FinishedAt, h, msg
			return d.saveOutcome(ctx, st, out)
		}
		d.windowRefusals.Add(1)
		return d.saveOutcome(ctx, st, store.Outcome{StepID: st.ID, Version: st.Version, State: store.StepPending, Message: windowRefusedMessage})
	}
	if run.op == store.OpSync && (res.Outcome == argosync.OutcomeSynced || res.Outcome == argosync.OutcomeWaited || res.Outcome == argosync.OutcomeSkipped) {
		// Applied, but by whom? An operation Argo CD's automated sync or a person started is not the plan's
		// (outofplan.go), whatever the timing made it look like.
		if f, ok := d.foreignSync(ctx, run.repoURL, st); ok {
			return d.recordOutOfPlan(ctx, st, f)
		}
	}
	run.mu.Lock()
	unreachable := run.unreachable
	run.mu.Unlock()
	if unreachable && !inFlight && run.op == store.OpSync && res.Outcome == argosync.OutcomeFailed {
		// Its instance stopped answering before the intent: nothing was sent. The app waits for the instance.
		return st.State
	}
	if inFlight && (res.Outcome == argosync.OutcomeSkipped || res.Outcome == argosync.OutcomeFailed) {
		// argosync decided to sync (the intent is recorded), then concluded without an operation of its own. The
		// request may have been processed all the same — its answer lost on the way — while Argo CD still showed
		// the app as it was before it (its cache lags: Progressive Syncs' race, argo-cd #29410): "already Synced
		// and Healthy" would then be a stale verdict. Only the absence of the step's operation for the grace
		// period confirms it; an operation found is followed to its end instead.
		state, ev, h, msg, found := d.findOperation(ctx, st, res.TriggeredAt, run.deadline)
		if found {
			if state == "" {
				return st.State // abandoned: reconciled by whoever resumes
			}
			out.State, out.OpStartedAt, out.OpFinishedAt, out.Health, out.Message = state, ev.StartedAt, ev.FinishedAt, h, msg
			return d.saveOutcome(ctx, st, out)
		}
		if unreachable && run.op == store.OpSync && st.State == store.StepIntent && res.Outcome == argosync.OutcomeFailed {
			// The request went to an instance that was not answering, and no operation of it appeared since: it
			// never started. The app goes back to pending, synced once its instance answers.
			return d.saveOutcome(ctx, st, store.Outcome{StepID: st.ID, Version: st.Version, State: store.StepPending,
				Message: fmt.Sprintf("the sync never started: Argo CD instance %q did not answer; synced when it does", st.App.Instance)})
		}
	}
	switch res.Outcome {
	case argosync.OutcomeSynced, argosync.OutcomeWaited:
		switch {
		case inFlight && run.op == store.OpSync:
			out.State = store.StepSynced
		case inFlight:
			out.State = store.StepRolledBack
		case run.op == store.OpSync && st.State == store.StepPending:
			// Another operation applied the revision while the bot waited; the bot sent nothing.
			out.State, out.Message = store.StepSkipped, "applied by an operation fleetwave did not start; "+res.Message
		case run.op == store.OpSync:
			return d.recordEarly(ctx, run, "applied by an operation fleetwave did not start; "+res.Message, store.StepSkipped)
		default:
			return d.recordEarly(ctx, run, "rolled back by an operation fleetwave did not start; "+res.Message, store.StepRolledBack)
		}
	case argosync.OutcomeSkipped:
		if run.op == store.OpRollback {
			return d.recordEarly(ctx, run, res.Message, store.StepRolledBack)
		}
		if st.State == store.StepFailed { // a retried app found already done
			return d.recordEarly(ctx, run, res.Message, store.StepSkipped)
		}
		out.State = store.StepSkipped
	default:
		if !inFlight {
			return d.recordEarly(ctx, run, "not synced: "+res.Message, store.StepFailed)
		}
		out.State = store.StepFailed
	}
	return d.saveOutcome(ctx, st, out)
}

// failedResources names the resources the app's last operation failed on, from status.operationState.syncResult
// (gitops-engine marks each SyncFailed with its message): "Deployment web/api: quota exceeded". At most three.
func failedResources(app *v1alpha1.Application) string {
	os := app.Status.OperationState
	if os == nil || os.SyncResult == nil {
		return ""
	}
	var parts []string
	n := 0
	for _, r := range os.SyncResult.Resources {
		if r.Status != synccommon.ResultCodeSyncFailed && r.HookPhase != synccommon.OperationFailed && r.HookPhase != synccommon.OperationError {
			continue
		}
		n++
		if len(parts) == 3 {
			continue
		}
		name := r.Kind + " " + r.Name
		if r.Namespace != "" {
			name = r.Kind + " " + r.Namespace + "/" + r.Name
		}
		if r.Message != "" && r.Message != os.Message {
			name += ": " + r.Message
		}
		parts = append(parts, name)
	}
	if n > len(parts) {
		parts = append(parts, fmt.Sprintf("%d more", n-len(parts)))
	}
	return strings.Join(parts, "; ")
}

func (d *driver) saveOutcome(ctx context.Context, st store.AppStep, out store.Outcome) store.StepState {
	nst, err := d.journal.RecordOutcome(context.WithoutCancel(ctx), out)
	if err != nil {
		d.noteStoreError(err, st)
		return st.State
	}
	return nst.State
}

// findOperation looks for the step's operation until the grace period after its last request has passed (an
// Argo CD that does not answer is asked until the later of that and the app's timeout, then the app fails as
// it stands). found is false when none appeared; otherwise the operation is awaited and judged (state "" when
// ctx ended first).
func (d *driver) findOperation(ctx context.Context, s store.AppStep, lastRequest, timeout time.Time) (state store.StepState, ev opEvidence, h, msg string, found bool) {
	from := s.IntentAt
	if lastRequest.After(from) {
		from = lastRequest
	}
	deadline := from.Add(d.e.o.intentGrace)
	readUntil := deadline
	if timeout.After(readUntil) {
		readUntil = timeout
	}
	if timeout.IsZero() {
		readUntil = time.Time{}
	}
	for {
		app, err := d.getAppUntil(ctx, s.App, "", readUntil)
		if err == nil {
			if v, _ := judgeStep(app, s, d.skew()); v != opNone {
				state, ev, h, msg = d.awaitOperation(ctx, s)
				return state, ev, h, msg, true
			}
		}
		if ctx.Err() != nil {
			return "", opEvidence{}, "", "", true
		}
		if !d.e.o.clock.Now().Before(deadline) {
			return "", opEvidence{}, "", "", false
		}
		if !d.pause(ctx, min(d.e.o.pollInterval, deadline.Sub(d.e.o.clock.Now()))) {
			return "", opEvidence{}, "", "", true
		}
	}
}

func (d *driver) noteStoreError(err error, s store.AppStep) {
	if errors.Is(err, store.ErrLeaseLost) {
		d.lost.Store(true)
		d.cancel()
		return
	}
	// ErrConflict: another replica moved the step (after taking the lease over); its record stands.
	d.e.o.log.Warn("recording an app step", "rollout", d.id, "app", s.App.String(), "err", err)
}

// reconcileInFlight settles the steps a previous run left in intent or triggered, by what Argo CD shows: an
// operation of the step's (started after its intent, applying its revision) is waited for and judged; a sync
// intent with no operation never reached Argo CD and goes back to pending (to be synced, once); a rollback
// intent with none stays for the rollback pass to retry; a triggered step whose operation cannot be found
// failed.
func (d *driver) reconcileInFlight(ctx context.Context, r store.Rollout, sp *storedPlan, steps []store.AppStep) error {
	var wg sync.WaitGroup
	for _, s := range steps {
		if !s.State.InFlight() {
			continue
		}
		if err := d.e.acquire(ctx); err != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer d.e.release()
			d.reconcileStep(ctx, r, sp, s)
		}()
	}
	wg.Wait()
	return ctx.Err()
}

func (d *driver) reconcileStep(ctx context.Context, r store.Rollout, sp *storedPlan, s store.AppStep) {
	app, err := d.getApp(ctx, s.App, "")
	if err != nil {
		if argocd.IsMissingApp(err) {
			d.outcome(ctx, s, store.StepFailed, opEvidence{}, "", "the app no longer exists in Argo CD (or the bot may no longer read it)")
		}
		return
	}
	v, _ := judgeStep(app, s, d.skew())
	if v == opNone && s.State == store.StepIntent {
		// A request recorded moments ago may still be on its way (a replica that lost its lease, a process killed
		// mid-request): give it the grace period before concluding it never started.
		if wait := s.IntentAt.Add(d.e.o.intentGrace).Sub(d.e.o.clock.Now()); wait > 0 {
			if !d.pause(ctx, wait) {
				return
			}
			if app, err = d.getApp(ctx, s.App, ""); err != nil {
				return
			}
			v, _ = judgeStep(app, s, d.skew())
		}
	}
	if v == opNone {
		switch {
		case s.State == store.StepIntent && s.Op == store.OpSync:
			d.outcome(ctx, s, store.StepPending, opEvidence{}, "", "the sync never started (restart): synced again")
		case s.State == store.StepTriggered:
			d.outcome(ctx, s, store.StepFailed, opEvidence{}, string(app.Status.Health.Status),
				"Argo CD accepted the request but its operation is nowhere to be seen (replaced by another one?)")
		}
		d.e.event(ctx, r.ID, "", "reconcile", s.App.String(), "not-started", string(s.Op))
		return
	}
	state, ev, h, msg := d.awaitOperation(ctx, s)
	if state == "" {
		return // abandoned: stays in flight
	}
	d.outcome(ctx, s, state, ev, h, msg)
	d.e.event(ctx, r.ID, "", "reconcile", s.App.String(), string(state), msg)
}

func (d *driver) outcome(ctx context.Context, s store.AppStep, state store.StepState, ev opEvidence, h, msg string) {
	_, err := d.journal.RecordOutcome(context.WithoutCancel(ctx), store.Outcome{StepID: s.ID, Version: s.Version, State: state,
		OpStartedAt: ev.StartedAt, OpFinishedAt: ev.FinishedAt, Health: h, Message: msg})
	if err != nil {
		d.noteStoreError(err, s)
	}
}

func (d *driver) skew() time.Duration {
	if d.e.o.clockSkew > 0 {
		return d.e.o.clockSkew
	}
	return 2 * time.Second
}

func (d *driver) getApp(ctx context.Context, k store.AppKey, refresh v1alpha1.RefreshType) (*v1alpha1.Application, error) {
	return d.getAppUntil(ctx, k, refresh, time.Time{})
}

// getAppUntil reads an app, riding out transient errors until deadline (zero: for as long as ctx lasts); past
// it, the last error is returned.
func (d *driver) getAppUntil(ctx context.Context, k store.AppKey, refresh v1alpha1.RefreshType, deadline time.Time) (*v1alpha1.Application, error) {
	argo, err := d.e.argoFor(k.Instance)
	if err != nil {
		return nil, err
	}
	// In a fleet of instances, an instance that does not answer is waited for past the deadline (its apps are
	// held, not failed: unreachable.go), except by a read that is given no time at all (a deadline of now).
	patient := d.e.inst.multi && deadline.After(d.e.o.clock.Now())
	wait := d.e.o.pollInterval
	for {
		stop := d.watchSlow(ctx, k.Instance, slowAfter(refresh))
		app, err := argo.GetApplication(ctx, qualified(k), refresh)
		stop()
		if d.e.inst.multi {
			d.noteInstance(ctx, k.Instance, err)
		}
		if err == nil || !argocd.IsTransient(err) && !(patient && unreachableErr(err)) {
			return app, err
		}
		if patient && unreachableErr(err) {
			if !d.pause(ctx, wait) {
				return nil, err
			}
			wait = min(2*wait, time.Minute)
			continue
		}
		if !deadline.IsZero() {
			left := deadline.Sub(d.e.o.clock.Now())
			if left <= 0 {
				return nil, err
			}
			wait = min(wait, left)
		}
		if !d.pause(ctx, wait) {
			return nil, err
		}
		wait = min(2*wait, time.Minute)
	}
}

// pause waits d on the executor's clock; false when ctx ended.
func (d *driver) pause(ctx context.Context, wait time.Duration) bool {
	t := d.e.o.clock.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.Chan():
		return true
	case <-ctx.Done():
		return false
	}
}

// awaitOperation waits for the step's operation (found by judgeStep) to finish, then for a reconcile after it
// and a settled health. It returns the outcome state, or "" when ctx ended first.
func (d *driver) awaitOperation(ctx context.Context, s store.AppStep) (store.StepState, opEvidence, string, string) {
	done := store.StepSynced
	if s.Op == store.OpRollback {
		done = store.StepRolledBack
	}
	deadline := d.e.o.clock.Now().Add(d.e.o.syncTimeout)
	var confirmed time.Time // finishedAt of the operation a refresh was answered for
	var refresh v1alpha1.RefreshType
	for {
		app, err := d.getAppUntil(ctx, s.App, refresh, deadline)
		refresh = ""
		if err != nil {
			if ctx.Err() != nil {
				return "", opEvidence{}, "", ""
			}
			if argocd.IsTransient(err) {
				return store.StepFailed, opEvidence{}, "", fmt.Sprintf("timed out: Argo CD did not answer for the sync timeout (%s): %v", d.e.o.syncTimeout, err)
			}
			return store.StepFailed, opEvidence{}, "", fmt.Sprintf("reading the app: %v", err)
		}
		v, ev := judgeStep(app, s, d.skew())
		h := string(app.Status.Health.Status)
		switch v {
		case opNone:
			return store.StepFailed, ev, h, "the operation disappeared (replaced by another one?)"
		case opFailed:
			msg := "sync " + string(app.Status.OperationState.Phase) + ": " + ev.Message
			if f := failedResources(app); f != "" {
				msg += " (failed: " + f + ")" // the resources it failed on, for the summary and the check-run
			}
			return store.StepFailed, ev, h, msg
		case opSucceeded:
			if !reconciledAfter(app, ev.FinishedAt) && !confirmed.Equal(ev.FinishedAt) {
				// Equal seconds prove nothing: ask for a reconcile, answered only once written (argosync doc.go).
				confirmed, refresh = ev.FinishedAt, v1alpha1.RefreshTypeNormal
				continue
			}
			switch app.Status.Health.Status {
			case health.HealthStatusHealthy:
				return done, ev, h, "applied " + text.ShortRev(s.OpRevision()) + ", Healthy (observed after a restart)"
			case health.HealthStatusDegraded:
				return store.StepFailed, ev, h, "Degraded after the sync to " + text.ShortRev(s.OpRevision())
			}
		}
		if d.e.o.clock.Now().After(deadline) {
			return store.StepFailed, ev, h, "timed out waiting for the operation found after a restart"
		}
		if !d.pause(ctx, d.e.o.pollInterval) {
			return "", opEvidence{}, "", ""
		}
	}
}
