package argosync

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/health"
	synccommon "github.com/argoproj/argo-cd/gitops-engine/v3/pkg/sync/common"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/kit/text"
)

// maxStall caps the interval between reads of an app the stream is silent about.
const maxStall = 5 * time.Minute

// maxTransientSyncErrors bounds the sync requests per app that may end in a transient error (after the
// client's own retries) before the app fails.
const maxTransientSyncErrors = 3

// appRun is the work on one app.
type appRun struct {
	s     *Session
	name  string
	qname string // namespace/name for API calls
	sub   *subscription
	t     target
	trig  *trigger
	notes []string
	res   Result

	// confirmed is the object answered by a refresh request made after the operation finished: Argo CD answers
	// it only once a reconcile started after the request is written, so it and any later version showing the
	// same operation carry post-operation status.
	confirmed *v1alpha1.Application
}

func (r *appRun) note(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

// finish records the verdict from the last object seen.
func (r *appRun) finish(o Outcome, app *v1alpha1.Application, format string, args ...any) {
	r.res.Outcome = o
	msg := fmt.Sprintf(format, args...)
	parts := append([]string{}, r.notes...)
	if msg != "" {
		parts = append(parts, msg)
	}
	r.res.Message = strings.Join(parts, "; ")
	if app != nil {
		r.res.SyncStatus = app.Status.Sync.Status
		r.res.Health = app.Status.Health.Status
		if os := app.Status.OperationState; os != nil && (r.trig == nil || r.trig.startedSince(app)) {
			r.res.OperationStartedAt = os.StartedAt.Time
			if os.FinishedAt != nil {
				r.res.OperationFinishedAt = os.FinishedAt.Time
			}
		}
	}
}

func (r *appRun) fail(app *v1alpha1.Application, format string, args ...any) {
	r.finish(OutcomeFailed, app, format, args...)
}

// run is Fastly's algorithm for one app: wait until the revision resolves; skip if already Synced and Healthy
// at it; if an operation is in flight, wait for it; otherwise sync and wait. See doc.go for what "done" means.
func (r *appRun) run(ctx context.Context, revision string) {
	opts := r.s.opts
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	cur := r.sub.get()
	if cur == nil {
		var err error
		if cur, err = r.get(ctx, ""); err != nil {
			r.fail(nil, "reading the app: %v", err)
			return
		}
	}
	r.t = target{revision: revision}
	if cur.Spec.HasMultipleSources() {
		if opts.RepoURL == "" {
			r.fail(cur, "multi-source app: the repository the revision belongs to is needed (repo URL option)")
			return
		}
		if r.t.positions = sourcePositions(cur, opts.RepoURL); len(r.t.positions) == 0 {
			r.fail(cur, "multi-source app has no source from %s", opts.RepoURL)
			return
		}
	}

	// 0. An app that tracks another revision than the branch the revision is the tip of is not this change's to
	// roll out: syncing it to the revision would pin it there (Options.Branch).
	if opts.Branch != "" {
		if rev, ok := r.t.tracks(cur, opts.Branch); !ok {
			r.finish(OutcomeSkipped, cur, "not rolled out: tracks %s, not %s", rev, opts.Branch)
			return
		}
	}

	// 1. Wait until the revision resolves (status.sync.revision is what targetRevision resolved to).
	pinned := false
	if !r.t.resolved(cur) {
		if app, err := r.get(ctx, v1alpha1.RefreshTypeNormal); err == nil {
			cur = app
		} else if !argocd.IsTransient(err) || ctx.Err() != nil {
			r.fail(cur, "refreshing the app: %v", err)
			return
		}
		if !r.t.resolved(cur) && !opts.DryRun {
			var err error
			rctx, rcancel := context.WithTimeout(ctx, opts.ResolveTimeout)
			cur, err = r.waitUntil(rctx, "its targetRevision to resolve to "+text.ShortRev(revision), r.t.resolved)
			rcancel()
			if ctx.Err() != nil {
				r.fail(cur, "%v", err)
				return
			}
		}
		if !r.t.resolved(cur) {
			if opts.RequireResolved {
				r.fail(cur, "targetRevision %q resolves to %s, not %s", targetRevision(cur), text.ShortRev(cur.Status.Sync.Revision), text.ShortRev(revision))
				return
			}
			pinned = true
			r.note("targetRevision %q resolves to %s: syncing to %s explicitly (Argo CD will show OutOfSync)",
				targetRevision(cur), text.ShortRev(cur.Status.Sync.Revision), text.ShortRev(revision))
		}
	}

	transientLeft := maxTransientSyncErrors
	accepted := 0                   // sync requests Argo CD accepted
	lostGrace := opts.LostSyncGrace // doubles with each re-request of a vanished sync
	lost := ""                      // why the last accepted request is judged lost: the next request re-requests it
	for attempt := 0; ; attempt++ {
		cur = r.sub.get()
		// 2. An operation is in flight: wait for it, never start another.
		observed := false
		if inFlight(cur) {
			if opts.DryRun {
				r.finish(OutcomeDryRun, cur, "would wait for the operation in progress, then sync to %s unless it applies it", text.ShortRev(revision))
				return
			}
			var err error
			if cur, err = r.waitUntil(ctx, "the operation in progress to finish", func(a *v1alpha1.Application) bool { return !inFlight(a) }); err != nil {
				r.fail(cur, "%v", err)
				return
			}
			observed = true
		}
		// An operation we saw running, or one started after our refused request (ours when a retried request had
		// reached Argo CD), has completed: judge it.
		ours := r.trig != nil && r.trig.startedSince(cur)
		if (observed || ours) && r.t.applied(cur) {
			if succeeded(cur) {
				outcome := OutcomeWaited
				if ours {
					outcome = OutcomeSynced
				}
				r.awaitHealthy(ctx, cur, outcome, pinned)
				return
			}
			if ours {
				os := cur.Status.OperationState
				r.fail(cur, "sync %s: %s", os.Phase, os.Message)
				return
			}
			// Someone else's operation to the revision failed: try ours.
		}

		// 3. Already Synced and Healthy at the revision, with a status computed after the last operation.
		if !pinned && r.syncedHealthy(cur) {
			var err error
			if cur, err = r.reconciled(ctx, cur); err != nil {
				r.fail(cur, "%v", err)
				return
			}
			if inFlight(cur) {
				continue
			}
			if r.syncedHealthy(cur) {
				r.finish(OutcomeSkipped, cur, "already Synced and Healthy at %s", text.ShortRev(revision))
				return
			}
		}

		// 4. Decide to sync.
		if automated(cur) {
			r.fail(cur, "automated sync is enabled: Argo CD syncs the app by itself and refuses a sync to a pinned revision; turn it off for the rollout")
			return
		}
		if opts.DryRun {
			r.finish(OutcomeDryRun, cur, "would sync to %s (sync %s, health %s)", text.ShortRev(revision), cur.Status.Sync.Status, cur.Status.Health.Status)
			return
		}
		if attempt >= opts.MaxSyncAttempts {
			r.fail(cur, "gave up after %d attempts: other operations kept running", attempt)
			return
		}
		if lost != "" {
			// A re-request of a sync that vanished: the intent of the first one stands (its operation, were it to
			// run after all, would be found by it: the executor's rules for a restart).
			if opts.OnLostSync != nil {
				if err := opts.OnLostSync(ctx, r.name, revision, accepted, lost); err != nil {
					r.fail(cur, "before requesting the sync again: %v", err)
					return
				}
			}
			lost = ""
		} else if opts.OnTrigger != nil {
			if err := opts.OnTrigger(ctx, r.name, revision); err != nil {
				r.fail(cur, "before syncing: %v", err)
				return
			}
		}
		at := opts.Clock.Now()
		r.res.TriggeredAt = at
		answer, err := r.sync(ctx)
		if err != nil {
			if errors.Is(err, argocd.ErrOperationInProgress) {
				// An operation is running: someone else's, or ours when a retried request had reached Argo CD.
				t := newTrigger(at, opts.ClockSkew, nil)
				r.trig = &t
				if gerr := r.read(ctx); gerr != nil {
					r.fail(cur, "reading the app after a refused sync: %v", gerr)
					return
				}
				continue
			}
			if argocd.IsTransient(err) && ctx.Err() == nil {
				// Unknown whether Argo CD acted, and what it shows now may predate the request: watch for an
				// operation started after it (ours, judged as such) for the grace period before trusting
				// "Synced and Healthy" or sending the request again.
				t := newTrigger(at, opts.ClockSkew, nil)
				r.trig = &t
				var werr error
				if cur, werr = r.awaitLostRequest(ctx); werr != nil {
					r.fail(cur, "syncing: %v", werr)
					return
				}
				if r.ranOurs(cur) || inFlight(cur) {
					if r.ranOurs(cur) {
						r.note("the sync request's answer was lost; its operation was found in Argo CD, not requested again")
					} else {
						r.note("the sync request's answer was lost; an operation in progress was found in Argo CD")
					}
					attempt--
					continue
				}
				if transientLeft > 0 {
					transientLeft--
					attempt--
					continue
				}
			}
			r.fail(cur, "%v", err)
			return
		}
		t := newTrigger(at, opts.ClockSkew, answer)
		r.trig = &t
		r.sub.offer(answer)
		accepted++

		// 5. Wait for our operation to start (when vanished requests are re-requested), then to complete.
		if opts.LostSyncRetries > 0 {
			var vanished bool
			if cur, vanished, err = r.awaitStarted(ctx, lostGrace); err != nil {
				r.fail(cur, "%v", err)
				return
			}
			if vanished {
				if accepted > opts.LostSyncRetries {
					r.fail(cur, "the sync of %s to %s was requested %d times and never started: an argocd-agent principal may be dropping it (argocd-agent #841)",
						r.name, text.ShortRev(revision), accepted)
					return
				}
				lost = fmt.Sprintf("accepted, then cleared: no operation, operation state or history entry of it %s after the request", lostGrace)
				lostGrace *= 2
				attempt--
				continue
			}
		}
		if cur, err = r.waitUntil(ctx, "the sync operation to finish", r.trig.completedSince); err != nil {
			r.fail(cur, "%v", err)
			return
		}
		os := cur.Status.OperationState
		if os.Phase != synccommon.OperationSucceeded {
			r.fail(cur, "sync %s: %s", os.Phase, os.Message)
			return
		}
		if !r.t.applied(cur) {
			r.fail(cur, "the operation applied %s, not %s", text.ShortRev(appliedRevision(cur)), text.ShortRev(revision))
			return
		}
		r.awaitHealthy(ctx, cur, OutcomeSynced, pinned)
		return
	}
}

// awaitHealthy completes an app whose operation applied the revision: it waits for a reconcile after the
// operation finished, then for health Healthy (Degraded fails).
func (r *appRun) awaitHealthy(ctx context.Context, cur *v1alpha1.Application, outcome Outcome, pinned bool) {
	if f := r.s.opts.OnOperationDone; f != nil {
		f(ctx, r.name)
	}
	op := cur
	cur, err := r.reconciled(ctx, cur)
	if err != nil {
		r.fail(cur, "%v", err)
		return
	}
	settled := func(a *v1alpha1.Application) bool {
		h := a.Status.Health.Status
		return h == health.HealthStatusHealthy || h == health.HealthStatusDegraded || inFlight(a) || !sameOperation(a, op)
	}
	if cur, err = r.waitUntil(ctx, "the app to become Healthy", settled); err != nil {
		r.fail(cur, "%v", err)
		return
	}
	switch {
	case inFlight(cur) || !sameOperation(cur, op):
		r.fail(cur, "another operation started before the app became Healthy")
	case cur.Status.Health.Status == health.HealthStatusDegraded:
		r.fail(cur, "Degraded after the sync to %s%s", text.ShortRev(r.t.revision), healthMessage(cur))
	default:
		msg := "applied " + text.ShortRev(r.t.revision) + ", Healthy"
		if !pinned && cur.Status.Sync.Status != v1alpha1.SyncStatusCodeSynced {
			msg += fmt.Sprintf(" (sync status %s: live state differs from Git)", cur.Status.Sync.Status)
		}
		r.finish(outcome, cur, "%s", msg)
	}
}

// awaitLostRequest waits, for the lost-answer grace period, for an operation started after the trigger (or any
// operation in flight), then reads the app until Argo CD answers, so the caller judges a fresh object: an Argo CD
// that does not answer proves nothing — the request's operation may be running, or have finished, meanwhile, and
// a request sent again once it answers would start a second one. Only the end of ctx (or a refusal) is an error.
func (r *appRun) awaitLostRequest(ctx context.Context) (*v1alpha1.Application, error) {
	clock := r.s.opts.Clock
	deadline := clock.Now().Add(r.s.opts.LostAnswerGrace)
	started := func(a *v1alpha1.Application) bool { return a != nil && (r.ranOurs(a) || inFlight(a)) }
	for {
		if cur := r.sub.get(); started(cur) {
			return cur, nil
		}
		left := deadline.Sub(clock.Now())
		if left <= 0 {
			break
		}
		t := clock.NewTimer(min(left, r.s.opts.StallTimeout))
		select {
		case <-r.sub.notify:
			t.Stop()
		case <-t.Chan():
			if _, err := r.get(ctx, ""); err != nil && !argocd.IsTransient(err) && ctx.Err() == nil {
				return r.sub.get(), err
			}
		case <-ctx.Done():
			t.Stop()
			return r.sub.get(), ctx.Err()
		}
	}
	if err := r.readAnswered(ctx); err != nil {
		return r.sub.get(), err
	}
	return r.sub.get(), nil
}

// ranOurs: the app shows an operation that started after the trigger and applies the target revision: the one
// the request started. An operation to another revision that started just before the request — within the
// second and the clock skew startedSince allows, e.g. the sync a rollback follows — is not.
func (r *appRun) ranOurs(app *v1alpha1.Application) bool {
	return r.trig.startedSince(app) && r.t.applied(app)
}

// readAnswered re-reads the app until Argo CD answers (back-off from 1s to StallTimeout): only a refusal or the
// end of ctx is an error.
func (r *appRun) readAnswered(ctx context.Context) error {
	wait := time.Second
	for {
		_, err := r.get(ctx, "")
		if err == nil {
			return nil
		}
		if !argocd.IsTransient(err) || ctx.Err() != nil {
			return err
		}
		if perr := r.pause(ctx, wait); perr != nil {
			return fmt.Errorf("no answer from Argo CD since the sync request's answer was lost: %w", err)
		}
		wait = min(2*wait, max(r.s.opts.StallTimeout, time.Second))
	}
}

// awaitStarted waits for evidence that the accepted sync request started an operation: an operation state
// started since the request (or a history entry of one) in an object written after the request's answer. Every
// grace period without it, the app is read once: vanished is true when that fresh object shows the request
// vanished (trigger.vanished); an operation still only requested (an agent not connected, argocd-agent #809) is
// waited for another grace period. Only the end of ctx or the app's deletion is an error.
func (r *appRun) awaitStarted(ctx context.Context, grace time.Duration) (cur *v1alpha1.Application, vanished bool, err error) {
	clock := r.s.opts.Clock
	deadline := clock.Now().Add(grace)
	started := func(a *v1alpha1.Application) bool { return r.trig.after(a) && r.trig.ranSince(a) }
	for {
		cur = r.sub.get()
		if started(cur) {
			return cur, false, nil
		}
		if r.sub.deleted() {
			return cur, false, errors.New("the app was deleted while waiting for the sync operation to start")
		}
		left := deadline.Sub(clock.Now())
		if left <= 0 {
			if err := r.read(ctx); err != nil {
				return r.sub.get(), false, err
			}
			cur = r.sub.get()
			if r.trig.vanished(cur) {
				return cur, true, nil
			}
			if started(cur) {
				return cur, false, nil
			}
			deadline = clock.Now().Add(grace)
			continue
		}
		t := clock.NewTimer(left)
		select {
		case <-r.sub.notify:
			t.Stop()
		case <-t.Chan():
		case <-ctx.Done():
			t.Stop()
			return cur, false, fmt.Errorf("timed out waiting for the sync operation to start (sync %s, health %s): %w",
				statusOf(cur).Sync.Status, statusOf(cur).Health.Status, ctx.Err())
		}
	}
}

// reconciled returns an object whose status was computed after its last operation finished: cur itself when
// reconciledAt is a later second than finishedAt, else the answer of a refresh request (one call).
func (r *appRun) reconciled(ctx context.Context, cur *v1alpha1.Application) (*v1alpha1.Application, error) {
	if r.postOperation(cur) {
		return cur, nil
	}
	wait := time.Second
	for {
		app, err := r.get(ctx, v1alpha1.RefreshTypeNormal)
		if err == nil {
			r.confirmed = app
			return r.sub.get(), nil
		}
		if !argocd.IsTransient(err) || ctx.Err() != nil {
			return cur, fmt.Errorf("refreshing the app after its operation: %w", err)
		}
		if perr := r.pause(ctx, wait); perr != nil {
			return cur, fmt.Errorf("refreshing the app after its operation: %w", err)
		}
		wait = min(2*wait, maxStall)
	}
}

// read re-reads the app, riding out transient errors (the stream and later reads catch up if it gives up on
// one): only a refusal or the end of ctx is an error.
func (r *appRun) read(ctx context.Context) error {
	wait := time.Second
	for i := 0; ; i++ {
		_, err := r.get(ctx, "")
		if err == nil || (argocd.IsTransient(err) && i >= 2) {
			return nil
		}
		if !argocd.IsTransient(err) || ctx.Err() != nil {
			return err
		}
		if perr := r.pause(ctx, wait); perr != nil {
			return err
		}
		wait *= 2
	}
}

// pause waits d on the bot's clock.
func (r *appRun) pause(ctx context.Context, d time.Duration) error {
	t := r.s.opts.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.Chan():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// postOperation: cur's status is known to be computed after its last operation finished.
func (r *appRun) postOperation(cur *v1alpha1.Application) bool {
	if reconciledAfterOperation(cur) == reconcileAfter {
		return true
	}
	c := r.confirmed
	return c != nil && !newer(c, cur) && sameOperation(c, cur)
}

// syncedHealthy: Synced at the revision and Healthy, nothing in flight.
func (r *appRun) syncedHealthy(app *v1alpha1.Application) bool {
	return !inFlight(app) && app.Status.Sync.Status == v1alpha1.SyncStatusCodeSynced && r.t.resolved(app) &&
		app.Status.Health.Status == health.HealthStatusHealthy
}

// waitUntil waits for cond on the newest object known, woken by the stream. When the stream reconnected, or
// said nothing for a while, it reads the app once.
func (r *appRun) waitUntil(ctx context.Context, what string, cond func(*v1alpha1.Application) bool) (*v1alpha1.Application, error) {
	stall := r.s.opts.StallTimeout
	for {
		cur := r.sub.get()
		if cur != nil && cond(cur) {
			return cur, nil
		}
		if r.sub.deleted() {
			return cur, fmt.Errorf("the app was deleted while waiting for %s", what)
		}
		if r.s.w.isStopped() {
			stall = min(stall, 5*time.Second)
		}
		t := r.s.opts.Clock.NewTimer(stall)
		select {
		case <-r.sub.notify:
			t.Stop()
			if r.sub.takeResync() {
				if _, err := r.get(ctx, ""); err != nil && ctx.Err() == nil && argocd.IsMissingApp(err) {
					return cur, fmt.Errorf("the app disappeared while waiting for %s", what)
				}
			}
		case <-t.Chan():
			if _, err := r.get(ctx, ""); err != nil && ctx.Err() == nil && argocd.IsMissingApp(err) {
				return cur, fmt.Errorf("the app disappeared while waiting for %s", what)
			}
			stall = min(2*stall, maxStall)
		case <-ctx.Done():
			t.Stop()
			return cur, fmt.Errorf("timed out waiting for %s (sync %s, health %s): %w", what,
				statusOf(cur).Sync.Status, statusOf(cur).Health.Status, ctx.Err())
		}
	}
}

func (r *appRun) get(ctx context.Context, refresh v1alpha1.RefreshType) (*v1alpha1.Application, error) {
	r.res.APICalls++
	app, err := r.s.api.GetApplication(ctx, r.qname, refresh)
	if err != nil {
		return nil, err
	}
	r.sub.offer(app)
	return app, nil
}

func (r *appRun) sync(ctx context.Context) (*v1alpha1.Application, error) {
	r.res.APICalls++
	req := argocd.SyncRequest{Prune: r.s.opts.Prune}
	if r.t.positions == nil {
		req.Revision = r.t.revision
	} else {
		req.SourcePositions = r.t.positions
		for range r.t.positions {
			req.Revisions = append(req.Revisions, r.t.revision)
		}
	}
	return r.s.api.Sync(ctx, r.qname, req)
}

func statusOf(app *v1alpha1.Application) v1alpha1.ApplicationStatus {
	if app == nil {
		return v1alpha1.ApplicationStatus{}
	}
	return app.Status
}

func targetRevision(app *v1alpha1.Application) string {
	return app.Spec.GetSource().TargetRevision
}

func appliedRevision(app *v1alpha1.Application) string {
	os := app.Status.OperationState
	if os == nil || os.SyncResult == nil {
		return ""
	}
	if os.SyncResult.Revision != "" {
		return os.SyncResult.Revision
	}
	return strings.Join(os.SyncResult.Revisions, ",")
}

func healthMessage(app *v1alpha1.Application) string {
	for _, c := range app.Status.Conditions {
		if c.Message != "" {
			return ": " + c.Message
		}
	}
	return ""
}
