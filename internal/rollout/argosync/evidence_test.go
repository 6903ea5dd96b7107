package argosync

import (
	"testing"
	"time"

	synccommon "github.com/argoproj/argo-cd/gitops-engine/v3/pkg/sync/common"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) *metav1.Time {
	t := metav1.NewTime(t0.Add(d))
	return &t
}

// obj builds an app: rv, operation state (phase, applied revision, started, finished), reconciledAt.
type obj struct {
	rv           string
	opSet        bool
	phase        synccommon.OperationPhase
	applied      string
	started      time.Duration
	finished     *time.Duration
	reconciled   *time.Duration
	syncRevision string
	multiApplied []string
	multiSync    []string
}

func (o obj) app() *v1alpha1.Application {
	a := &v1alpha1.Application{}
	a.ResourceVersion = o.rv
	if o.opSet {
		a.Operation = &v1alpha1.Operation{Sync: &v1alpha1.SyncOperation{}}
	}
	if o.phase != "" {
		os := &v1alpha1.OperationState{Phase: o.phase, StartedAt: *at(o.started),
			SyncResult: &v1alpha1.SyncOperationResult{Revision: o.applied, Revisions: o.multiApplied}}
		if o.finished != nil {
			os.FinishedAt = at(*o.finished)
		}
		a.Status.OperationState = os
	}
	if o.reconciled != nil {
		a.Status.ReconciledAt = at(*o.reconciled)
	}
	a.Status.Sync.Revision = o.syncRevision
	a.Status.Sync.Revisions = o.multiSync
	return a
}

func dur(d time.Duration) *time.Duration { return &d }

func TestReconciledAfterOperation(t *testing.T) {
	tests := []struct {
		name string
		o    obj
		want reconcileVerdict
	}{
		{"never reconciled", obj{}, reconcileBefore},
		{"reconciled, never operated", obj{reconciled: dur(0)}, reconcileAfter},
		{"reconciled while an operation is requested", obj{opSet: true, reconciled: dur(0)}, reconcileBefore},
		{"reconciled while running", obj{phase: "Running", reconciled: dur(5 * time.Second)}, reconcileBefore},
		{"reconciled before finish", obj{phase: "Succeeded", finished: dur(10 * time.Second), reconciled: dur(9 * time.Second)}, reconcileBefore},
		{"reconciled in the finish second", obj{phase: "Succeeded", finished: dur(10 * time.Second), reconciled: dur(10*time.Second + 900*time.Millisecond)}, reconcileAmbiguous},
		{"finish late in the second, reconcile early in it", obj{phase: "Succeeded", finished: dur(10*time.Second + 900*time.Millisecond), reconciled: dur(10 * time.Second)}, reconcileAmbiguous},
		{"reconciled a second later", obj{phase: "Succeeded", finished: dur(10 * time.Second), reconciled: dur(11 * time.Second)}, reconcileAfter},
	}
	for _, tt := range tests {
		if got := reconciledAfterOperation(tt.o.app()); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestTriggerCompletedSince(t *testing.T) {
	answer := obj{rv: "100", opSet: true}.app()
	trig := newTrigger(t0.Add(30*time.Second+500*time.Millisecond), 0, answer)
	lost := newTrigger(t0.Add(30*time.Second+500*time.Millisecond), 0, nil)
	skewed := newTrigger(t0.Add(32*time.Second), 2*time.Second, answer)
	tests := []struct {
		name string
		trig trigger
		o    obj
		want bool
	}{
		{"our operation succeeded", trig, obj{rv: "105", phase: "Succeeded", started: 30 * time.Second, finished: dur(33 * time.Second)}, true},
		{"started in the request's second, before it by the bot's clock", trig, obj{rv: "105", phase: "Succeeded", started: 30 * time.Second, finished: dur(31 * time.Second)}, true},
		{"still running", trig, obj{rv: "103", phase: "Running", started: 31 * time.Second}, false},
		{"completed but the operation field still set (a new one requested)", trig, obj{rv: "106", opSet: true, phase: "Succeeded", started: 31 * time.Second, finished: dur(33 * time.Second)}, false},
		{"stale: an older operation shown after our write (Progressive Syncs race)", trig, obj{rv: "101", phase: "Succeeded", applied: "new", started: -time.Hour, finished: dur(-time.Hour + 10*time.Second)}, false},
		{"stale: a version older than our answer", trig, obj{rv: "99", phase: "Succeeded", started: 31 * time.Second, finished: dur(32 * time.Second)}, false},
		{"answer lost: judged by time only", lost, obj{rv: "7", phase: "Failed", started: 31 * time.Second, finished: dur(32 * time.Second)}, true},
		{"answer lost: older operation", lost, obj{rv: "7", phase: "Succeeded", started: 29 * time.Second, finished: dur(32 * time.Second)}, false},
		{"bot clock 2s ahead, within the allowed skew", skewed, obj{rv: "101", phase: "Succeeded", started: 30 * time.Second, finished: dur(31 * time.Second)}, true},
		{"bot clock ahead beyond the skew", skewed, obj{rv: "101", phase: "Succeeded", started: 29 * time.Second, finished: dur(31 * time.Second)}, false},
	}
	for _, tt := range tests {
		if got := tt.trig.completedSince(tt.o.app()); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestTargetRevisions(t *testing.T) {
	single := target{revision: "abc"}
	multi := target{revision: "abc", positions: []int64{2}}
	tests := []struct {
		name              string
		t                 target
		o                 obj
		resolved, applied bool
	}{
		{"single resolved and applied", single, obj{syncRevision: "abc", phase: "Succeeded", applied: "abc"}, true, true},
		{"single resolved, old applied", single, obj{syncRevision: "abc", phase: "Succeeded", applied: "old"}, true, false},
		{"single pinned elsewhere, applied explicitly", single, obj{syncRevision: "old", phase: "Succeeded", applied: "abc"}, false, true},
		{"single never operated", single, obj{syncRevision: "abc"}, true, false},
		{"multi at position 2", multi, obj{multiSync: []string{"x", "abc"}, phase: "Succeeded", multiApplied: []string{"x", "abc"}}, true, true},
		{"multi at position 1 only", multi, obj{multiSync: []string{"abc", "x"}, phase: "Succeeded", multiApplied: []string{"abc", "x"}}, false, false},
		{"multi with fewer revisions", multi, obj{multiSync: []string{"abc"}}, false, false},
	}
	for _, tt := range tests {
		a := tt.o.app()
		if got := tt.t.resolved(a); got != tt.resolved {
			t.Errorf("%s: resolved %v", tt.name, got)
		}
		if got := tt.t.applied(a); got != tt.applied {
			t.Errorf("%s: applied %v", tt.name, got)
		}
	}
	if (target{revision: "abc", positions: []int64{}}).matches("", nil) {
		t.Error("a multi-source target without positions matched")
	}
}

func TestInFlightAndSucceeded(t *testing.T) {
	tests := []struct {
		name                string
		o                   obj
		inFlight, succeeded bool
	}{
		{"idle, never operated", obj{}, false, false},
		{"requested, not picked up", obj{opSet: true}, true, false},
		{"running", obj{opSet: true, phase: "Running"}, true, false},
		{"terminating", obj{opSet: true, phase: "Terminating"}, true, false},
		{"retrying: Running with finishedAt", obj{opSet: true, phase: "Running", finished: dur(time.Second)}, true, false},
		{"succeeded", obj{phase: "Succeeded", finished: dur(time.Second)}, false, true},
		{"failed", obj{phase: "Failed", finished: dur(time.Second)}, false, false},
		{"error", obj{phase: "Error", finished: dur(time.Second)}, false, false},
	}
	for _, tt := range tests {
		a := tt.o.app()
		if inFlight(a) != tt.inFlight || succeeded(a) != tt.succeeded {
			t.Errorf("%s: inFlight %v succeeded %v", tt.name, inFlight(a), succeeded(a))
		}
	}
}

func TestSourcePositions(t *testing.T) {
	a := &v1alpha1.Application{}
	a.Spec.Sources = v1alpha1.ApplicationSources{
		{RepoURL: "https://charts.example.com"},
		{RepoURL: "https://github.com/Org/GitOps.git"},
		{RepoURL: "git@github.com:org/gitops.git", Ref: "values"},
	}
	got := sourcePositions(a, "https://github.com/org/gitops")
	if len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Fatalf("positions %v", got)
	}
}

func TestNewerAndSameOperation(t *testing.T) {
	a, b := obj{rv: "10"}.app(), obj{rv: "9"}.app()
	if !newer(a, b) || newer(b, a) || newer(a, a) || !newer(a, nil) || newer(nil, a) {
		t.Error("newer by resourceVersion")
	}
	x := obj{phase: "Succeeded", started: time.Second, finished: dur(2 * time.Second)}.app()
	y := obj{phase: "Succeeded", started: time.Second, finished: dur(2 * time.Second), reconciled: dur(3 * time.Second)}.app()
	z := obj{phase: "Succeeded", started: 5 * time.Second, finished: dur(6 * time.Second)}.app()
	if !sameOperation(x, y) || sameOperation(x, z) || sameOperation(x, obj{}.app()) {
		t.Error("sameOperation")
	}
}

// TestTriggerVanished holds the rule that allows a re-request: only an object written after the answer, with no
// operation requested or running, and none started since the request in the operation state or the history.
func TestTriggerVanished(t *testing.T) {
	answer := obj{rv: "100", opSet: true}.app()
	trig := newTrigger(t0.Add(30*time.Second+500*time.Millisecond), 0, answer)
	lost := newTrigger(t0.Add(30*time.Second+500*time.Millisecond), 0, nil)
	withHistory := func(o obj, started time.Duration) *v1alpha1.Application {
		a := o.app()
		a.Status.History = append(a.Status.History, v1alpha1.RevisionHistory{DeployStartedAt: at(started), DeployedAt: *at(started + time.Second)})
		return a
	}
	tests := []struct {
		name string
		trig trigger
		app  *v1alpha1.Application
		want bool
	}{
		{"cleared, no operation state (the principal's write)", trig, obj{rv: "101"}.app(), true},
		{"cleared, the agent's old operation state back", trig, obj{rv: "101", phase: "Succeeded", started: -time.Hour, finished: dur(-time.Hour + 10*time.Second)}.app(), true},
		{"the answer itself: operation requested", trig, answer, false},
		{"operation still requested, not picked up (agent disconnected)", trig, obj{rv: "104", opSet: true}.app(), false},
		{"an old operation state still running", trig, obj{rv: "104", phase: "Running", started: -time.Hour}.app(), false},
		{"our operation running", trig, obj{rv: "104", opSet: true, phase: "Running", started: 31 * time.Second}.app(), false},
		{"our operation finished", trig, obj{rv: "109", phase: "Failed", started: 31 * time.Second, finished: dur(32 * time.Second)}.app(), false},
		{"a later operation replaced ours; the history has ours", trig, withHistory(obj{rv: "120", phase: "Failed", started: 40 * time.Second, finished: dur(41 * time.Second)}, 31*time.Second), false},
		{"the history's newest entry is older than the request", trig, withHistory(obj{rv: "101"}, -time.Hour), true},
		{"a version older than the answer", trig, obj{rv: "99"}.app(), false},
		{"answer lost: nothing proves the request vanished", lost, obj{rv: "101"}.app(), false},
	}
	for _, tt := range tests {
		if got := tt.trig.vanished(tt.app); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
