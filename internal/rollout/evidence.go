package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/health"
	synccommon "github.com/argoproj/argo-cd/gitops-engine/v3/pkg/sync/common"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/store"
)

// This file decides, from what Argo CD shows, what became of an operation the executor announced (intent) or
// had accepted (triggered) before it was killed. The rules are package argosync's ("When is an
// app done"): an operation is the step's when it applies the step's revision and started after the
// intent (startedAt has second precision: compare with IntentAt truncated to the second, widened by the
// allowed clock skew); it is done only when it Succeeded, a reconcile happened after it finished, and the app is
// Healthy.

// opVerdict is what became of a step's operation.
type opVerdict int

const (
	// opNone: no operation of the step is to be seen. A step in intent never reached Argo CD (the request was
	// not sent, or refused); a step in triggered lost its evidence.
	opNone opVerdict = iota
	// opRunning: the step's operation is requested or running.
	opRunning
	// opSucceeded: it finished Succeeded (health still to be judged).
	opSucceeded
	// opFailed: it finished Failed or Error (or was terminated).
	opFailed
)

func (v opVerdict) String() string {
	return [...]string{"none", "running", "succeeded", "failed"}[v]
}

// opEvidence is what the verdict rests on.
type opEvidence struct {
	StartedAt, FinishedAt time.Time
	Message               string
}

// judgeStep decides what became of the operation a step announced, from the app as Argo CD shows it now.
func judgeStep(app *v1alpha1.Application, s store.AppStep, skew time.Duration) (opVerdict, opEvidence) {
	rev := s.OpRevision()
	since := s.IntentAt.Truncate(time.Second).Add(-skew)
	os := app.Status.OperationState
	// A sync request sets app.operation and clears status.operationState in one write
	// (util/argo/argo.go SetAppOperation); until the controller picks it up there is no operation state.
	if op := app.Operation; op != nil && operationTargets(op.Sync, rev) && (os == nil || os.StartedAt.Time.Before(since)) {
		return opRunning, opEvidence{}
	}
	if os != nil && !os.StartedAt.Time.Before(since) && appliedRevision(os) == rev {
		ev := opEvidence{StartedAt: os.StartedAt.Time, Message: os.Message}
		if os.FinishedAt != nil {
			ev.FinishedAt = os.FinishedAt.Time
		}
		switch os.Phase {
		case synccommon.OperationRunning, synccommon.OperationTerminating:
			return opRunning, ev
		case synccommon.OperationSucceeded:
			return opSucceeded, ev
		default:
			return opFailed, ev
		}
	}
	// A later operation replaced ours in status.operationState: the history keeps successful syncs
	// (controller/state.go persistRevisionHistory).
	for i := len(app.Status.History) - 1; i >= 0; i-- {
		h := app.Status.History[i]
		if h.DeployStartedAt != nil && !h.DeployStartedAt.Time.Before(since) && historyHas(h, rev) {
			return opSucceeded, opEvidence{StartedAt: h.DeployStartedAt.Time, FinishedAt: h.DeployedAt.Time,
				Message: "found in the app's history"}
		}
	}
	return opNone, opEvidence{}
}

func operationTargets(op *v1alpha1.SyncOperation, rev string) bool {
	if op == nil {
		return false
	}
	return op.Revision == rev || slices.Contains(op.Revisions, rev)
}

// appliedRevision is the revision an operation applies: syncResult.revision(s) once the controller wrote it
// (while still Running, controller/sync.go), else the requested one.
func appliedRevision(os *v1alpha1.OperationState) string {
	if r := os.SyncResult; r != nil {
		if r.Revision != "" {
			return r.Revision
		}
		if len(r.Revisions) > 0 {
			return firstNonEmpty(r.Revisions)
		}
	}
	if s := os.Operation.Sync; s != nil {
		if s.Revision != "" {
			return s.Revision
		}
		return firstNonEmpty(s.Revisions)
	}
	return ""
}

func firstNonEmpty(revs []string) string {
	for _, r := range revs {
		if r != "" {
			return r
		}
	}
	return ""
}

func historyHas(h v1alpha1.RevisionHistory, rev string) bool {
	return h.Revision == rev || slices.Contains(h.Revisions, rev)
}

// liveRevision is the revision the app runs: that of its last successful sync (the last history entry, written
// only on success). "" for an app never synced. For a multi-source app, the revision of the first source from
// repoURL (or the first source).
func liveRevision(app *v1alpha1.Application, repoURL string) string {
	if app == nil || len(app.Status.History) == 0 {
		return ""
	}
	h := app.Status.History.LastRevisionHistory()
	if h.Revision != "" || len(h.Revisions) == 0 {
		return h.Revision
	}
	for i, src := range h.Sources {
		if i < len(h.Revisions) && repoURL != "" && sameRepo(src.RepoURL, repoURL) {
			return h.Revisions[i]
		}
	}
	return h.Revisions[0]
}

func sameRepo(a, b string) bool {
	norm := func(s string) string {
		s = strings.ToLower(strings.TrimSuffix(strings.TrimSuffix(s, "/"), ".git"))
		if i := strings.Index(s, "://"); i >= 0 {
			s = s[i+3:]
		}
		if i := strings.Index(s, "@"); i >= 0 {
			s = s[i+1:]
		}
		return strings.Replace(s, ":", "/", 1)
	}
	return norm(a) == norm(b)
}

// operationInFlight: an operation is requested or running.
func operationInFlight(app *v1alpha1.Application) bool {
	if app.Operation != nil {
		return true
	}
	os := app.Status.OperationState
	return os != nil && !os.Phase.Completed()
}

// atRevision: the app's last successful sync applied rev, nothing is in flight, and it is Healthy — a rollback
// to rev has nothing to do.
func atRevision(app *v1alpha1.Application, rev, repoURL string) bool {
	return app != nil && rev != "" && !operationInFlight(app) && liveRevision(app, repoURL) == rev &&
		app.Status.Health.Status == health.HealthStatusHealthy
}

// reconciledAfter: the app's status was computed after the operation finished. reconciledAt has second
// precision, so only a strictly later second proves it (see package argosync, doc.go).
func reconciledAfter(app *v1alpha1.Application, finished time.Time) bool {
	ra := app.Status.ReconciledAt
	return ra != nil && !finished.IsZero() && ra.Time.After(finished)
}

// automatedOn: Argo CD syncs the app by itself (and refuses syncs to another revision and rollbacks).
func automatedOn(app *v1alpha1.Application) bool {
	return app != nil && app.Spec.SyncPolicy != nil && app.Spec.SyncPolicy.IsAutomatedSyncEnabled()
}

// healthProblem names a health that fails a soak: Degraded, or Missing (the app's resources are gone).
func healthProblem(app *v1alpha1.Application) string {
	switch h := app.Status.Health.Status; h {
	case health.HealthStatusDegraded, health.HealthStatusMissing:
		msg := string(h)
		// The app's health has no message of its own: name the first resource in that state.
		for _, r := range app.Status.Resources {
			if r.Health != nil && r.Health.Status == h {
				msg += fmt.Sprintf(" (%s %s", r.Kind, r.Name)
				if r.Health.Message != "" {
					msg += ": " + r.Health.Message
				}
				msg += ")"
				break
			}
		}
		return msg
	}
	return ""
}
