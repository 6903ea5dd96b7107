package argosync

import (
	"strings"
	"time"

	synccommon "github.com/argoproj/argo-cd/gitops-engine/v3/pkg/sync/common"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
)

// The functions in this file judge what an Application object proves. They are pure, so each rule is tested on
// its own (evidence_test.go).

// target says which revision the rollout wants and, for a multi-source app, at which source positions
// (1-based). positions is nil for a single-source app.
type target struct {
	revision  string
	positions []int64
}

// sourcePositions picks the sources of a multi-source app the revision belongs to: those whose repoURL is repo.
func sourcePositions(app *v1alpha1.Application, repo string) []int64 {
	var out []int64
	for i, src := range app.Spec.Sources {
		if normalizeRepo(src.RepoURL) == normalizeRepo(repo) {
			out = append(out, int64(i+1))
		}
	}
	return out
}

// tracks reports whether the app's targetRevision — of each source at the target's positions, or of its single
// source — resolves to the tip of branch, and otherwise the first one that does not. Argo CD resolves an empty
// targetRevision as HEAD, the remote's default branch (util/git/client.go, nativeGitClient.lsRemote).
func (t target) tracks(app *v1alpha1.Application, branch string) (string, bool) {
	revs := []string{app.Spec.GetSource().TargetRevision}
	if t.positions != nil {
		revs = revs[:0]
		for _, p := range t.positions {
			if int(p) <= len(app.Spec.Sources) {
				revs = append(revs, app.Spec.Sources[p-1].TargetRevision)
			}
		}
	}
	for _, rev := range revs {
		switch rev {
		case "", "HEAD", branch, "refs/heads/" + branch:
		default:
			return rev, false
		}
	}
	return "", true
}

func normalizeRepo(u string) string {
	u = strings.ToLower(strings.TrimSpace(u))
	u = strings.TrimSuffix(strings.TrimSuffix(u, "/"), ".git")
	for _, p := range []string{"https://", "http://", "ssh://", "git://"} {
		u = strings.TrimPrefix(u, p)
	}
	if at := strings.IndexByte(u, '@'); at >= 0 && at < strings.IndexAny(u+"/", "/:") {
		u = u[at+1:]
	}
	return strings.Replace(u, ":", "/", 1)
}

// matches reports whether revs (one per source, or one for a single source) carry the target revision at every
// position that matters.
func (t target) matches(single string, multi []string) bool {
	if t.positions == nil {
		return single == t.revision
	}
	for _, p := range t.positions {
		if int(p) > len(multi) || multi[p-1] != t.revision {
			return false
		}
	}
	return len(t.positions) > 0
}

// resolved: the app's targetRevision resolves to the target (status.sync.revision(s), written at each
// reconcile).
func (t target) resolved(app *v1alpha1.Application) bool {
	return t.matches(app.Status.Sync.Revision, app.Status.Sync.Revisions)
}

// applied: the last operation applied the target revision (status.operationState.syncResult.revision(s)). The
// controller writes it while the operation is still Running, so it proves nothing without phase Succeeded.
func (t target) applied(app *v1alpha1.Application) bool {
	os := app.Status.OperationState
	if os == nil || os.SyncResult == nil {
		return false
	}
	return t.matches(os.SyncResult.Revision, os.SyncResult.Revisions)
}

// inFlight: an operation is requested or running. Argo CD keeps app.operation set until the operation
// completes (controller/appcontroller.go setOperationState clears it with the final phase).
func inFlight(app *v1alpha1.Application) bool {
	if app.Operation != nil {
		return true
	}
	os := app.Status.OperationState
	return os != nil && !os.Phase.Completed()
}

// succeeded: the last operation completed with phase Succeeded.
func succeeded(app *v1alpha1.Application) bool {
	os := app.Status.OperationState
	return os != nil && os.Phase == synccommon.OperationSucceeded && !inFlight(app)
}

// reconcileVerdict says whether the app's status (sync, health) was computed after its last operation finished.
type reconcileVerdict int

const (
	// reconcileBefore: reconciledAt is older than finishedAt, or missing.
	reconcileBefore reconcileVerdict = iota
	// reconcileAmbiguous: same second. Argo CD's timestamps are RFC 3339 seconds, and the controller's
	// post-operation refresh usually lands in the operation's last second, so equality cannot tell a reconcile
	// that started before the operation finished from one that started after.
	reconcileAmbiguous
	// reconcileAfter: reconciledAt is a later second than finishedAt (or there never was an operation).
	reconcileAfter
)

func reconciledAfterOperation(app *v1alpha1.Application) reconcileVerdict {
	rec := app.Status.ReconciledAt
	if rec == nil {
		return reconcileBefore
	}
	os := app.Status.OperationState
	if os == nil || os.FinishedAt == nil {
		if inFlight(app) {
			return reconcileBefore
		}
		return reconcileAfter
	}
	r, f := rec.Time.Truncate(time.Second), os.FinishedAt.Time.Truncate(time.Second)
	switch {
	case r.After(f):
		return reconcileAfter
	case r.Equal(f):
		return reconcileAmbiguous
	}
	return reconcileBefore
}

// trigger identifies the bot's own sync request.
type trigger struct {
	// notBefore is the earliest operationState.startedAt that can belong to an operation started by the request:
	// the bot's clock at the request, truncated to the second (Argo CD's precision) and widened by the allowed
	// clock skew between the bot and Argo CD.
	notBefore time.Time
	// rv is the resourceVersion of the sync answer: the write that set the operation and cleared
	// status.operationState (util/argo/argo.go SetAppOperation). Any operation state in a later version belongs
	// to this operation or a later one. hasRV is false when the answer was lost (a retried request was refused
	// with "another operation is already in progress").
	rv    int64
	hasRV bool
}

func newTrigger(at time.Time, skew time.Duration, answer *v1alpha1.Application) trigger {
	t := trigger{notBefore: at.Truncate(time.Second).Add(-skew)}
	if answer != nil {
		t.rv, t.hasRV = argocd.ResourceVersion(answer.ResourceVersion)
	}
	return t
}

// completedSince: the app shows a completed operation that started after the trigger. A status older than the
// trigger's write (Progressive Syncs' race: an app reporting Synced and Healthy, or even a Succeeded operation,
// from before the request) never qualifies.
func (t trigger) completedSince(app *v1alpha1.Application) bool {
	os := app.Status.OperationState
	if os == nil || !os.Phase.Completed() || app.Operation != nil {
		return false
	}
	if t.hasRV {
		if rv, ok := argocd.ResourceVersion(app.ResourceVersion); ok && rv <= t.rv {
			return false
		}
	}
	return !os.StartedAt.Time.Before(t.notBefore)
}

// startedSince: the app's (last or current) operation started after the trigger.
func (t trigger) startedSince(app *v1alpha1.Application) bool {
	os := app.Status.OperationState
	return os != nil && !os.StartedAt.Time.Before(t.notBefore)
}

// after: app is a version written after the request's answer (false when the answer was lost).
func (t trigger) after(app *v1alpha1.Application) bool {
	if app == nil || !t.hasRV {
		return false
	}
	rv, ok := argocd.ResourceVersion(app.ResourceVersion)
	return ok && rv > t.rv
}

// ranSince: the app shows an operation started since the request, in its operation state or its history (a
// later operation may have replaced it in the state; the history keeps successful syncs).
func (t trigger) ranSince(app *v1alpha1.Application) bool {
	if t.startedSince(app) {
		return true
	}
	for _, h := range app.Status.History {
		if h.DeployStartedAt != nil && !h.DeployStartedAt.Time.Before(t.notBefore) {
			return true
		}
	}
	return false
}

// vanished: the request's operation is gone without a trace. An object written after the request's answer shows
// no operation requested or running and no operation started since the request (ranSince): the operation was
// cleared before anything ran it (an argocd-agent principal overwriting it with an agent's status,
// argocd-agent #841). A request whose answer was lost proves nothing here (no resourceVersion to compare with).
func (t trigger) vanished(app *v1alpha1.Application) bool {
	return t.after(app) && !inFlight(app) && !t.ranSince(app)
}

// automated: Argo CD syncs the app by itself (and refuses a sync to any other revision than targetRevision).
func automated(app *v1alpha1.Application) bool {
	return app.Spec.SyncPolicy != nil && app.Spec.SyncPolicy.IsAutomatedSyncEnabled()
}

// newer reports whether a is a later version of the object than b.
func newer(a, b *v1alpha1.Application) bool {
	if b == nil {
		return true
	}
	if a == nil {
		return false
	}
	return argocd.NewerResourceVersion(a.ResourceVersion, b.ResourceVersion)
}

// sameOperation reports whether two objects show the same operation run (same start and finish).
func sameOperation(a, b *v1alpha1.Application) bool {
	x, y := a.Status.OperationState, b.Status.OperationState
	if x == nil || y == nil {
		return x == y
	}
	if !x.StartedAt.Equal(&y.StartedAt) {
		return false
	}
	if x.FinishedAt == nil || y.FinishedAt == nil {
		return x.FinishedAt == y.FinishedAt
	}
	return x.FinishedAt.Equal(y.FinishedAt)
}
