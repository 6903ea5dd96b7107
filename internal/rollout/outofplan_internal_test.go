package rollout

import (
	"testing"
	"time"

	synccommon "github.com/argoproj/argo-cd/gitops-engine/v3/pkg/sync/common"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestForeignOperation: who started the operation applying the merge decides whether it is outside the plan,
// from each place Argo CD records it (requested operation, operation state, history), within the lookback.
func TestForeignOperation(t *testing.T) {
	now := time.Date(2026, 11, 28, 22, 0, 0, 0, time.UTC)
	created := now.Add(5 * time.Minute) // the rollout, recorded after the merge's plan was computed
	since := created.Add(-outOfPlanLookback)
	auto := v1alpha1.OperationInitiator{Automated: true}
	user := func(n string) v1alpha1.OperationInitiator { return v1alpha1.OperationInitiator{Username: n} }
	hist := func(rev string, at time.Time, by v1alpha1.OperationInitiator) v1alpha1.RevisionHistory {
		started := metav1.NewTime(at)
		return v1alpha1.RevisionHistory{Revision: rev, DeployStartedAt: &started, DeployedAt: metav1.NewTime(at.Add(2 * time.Second)), InitiatedBy: by}
	}
	opState := func(rev string, at time.Time, by v1alpha1.OperationInitiator, phase synccommon.OperationPhase) *v1alpha1.OperationState {
		return &v1alpha1.OperationState{Operation: v1alpha1.Operation{Sync: &v1alpha1.SyncOperation{Revision: rev}, InitiatedBy: by},
			Phase: phase, StartedAt: metav1.NewTime(at), SyncResult: &v1alpha1.SyncOperationResult{Revision: rev}}
	}
	for _, tc := range []struct {
		name   string
		app    v1alpha1.Application
		own    string
		anyone bool
		want   string // the message; "" when not outside the plan
		prev   string
	}{
		{name: "automated sync running the merge",
			app: v1alpha1.Application{Status: v1alpha1.ApplicationStatus{
				OperationState: opState(revB, now, auto, synccommon.OperationRunning),
				History:        v1alpha1.RevisionHistories{hist(revA, now.Add(-time.Hour), user("fleetwave"))}}},
			want: "synced outside the plan by automated sync (operation running, started 22:00:00)", prev: revA},
		{name: "automated sync requested, not started yet",
			app:  v1alpha1.Application{Operation: &v1alpha1.Operation{Sync: &v1alpha1.SyncOperation{Revision: revB}, InitiatedBy: auto}},
			want: "synced outside the plan by automated sync (operation requested)"},
		{name: "a person, the last entry of the history",
			app: v1alpha1.Application{Status: v1alpha1.ApplicationStatus{
				History: v1alpha1.RevisionHistories{hist(revA, now.Add(-time.Hour), user("x")), hist(revB, now, user("alice"))}}},
			own: "fleetwave", want: "synced outside the plan by user alice (operation succeeded, started 22:00:00)", prev: revA},
		{name: "a person's sync of the merge, moved away since: its wave syncs it",
			app: v1alpha1.Application{Status: v1alpha1.ApplicationStatus{
				OperationState: opState(revC, now.Add(time.Minute), user("bob"), synccommon.OperationSucceeded),
				History: v1alpha1.RevisionHistories{hist(revA, now.Add(-time.Hour), user("x")), hist(revB, now, user("alice")),
					hist(revC, now.Add(time.Minute), user("bob"))}}},
			own: "fleetwave"},
		{name: "an earlier rollout of the same merge, rolled back: the rerun syncs it (CI, TestRolloutCommands)",
			app: v1alpha1.Application{Status: v1alpha1.ApplicationStatus{
				OperationState: opState(revA, now.Add(time.Minute), user("fleetwave"), synccommon.OperationSucceeded),
				History: v1alpha1.RevisionHistories{hist(revA, now.Add(-time.Hour), user("x")), hist(revB, now, user("fleetwave")),
					hist(revA, now.Add(time.Minute), user("fleetwave"))}}},
			anyone: true},
		{name: "fleetwave's own account, its request recorded: its own",
			app: v1alpha1.Application{Status: v1alpha1.ApplicationStatus{OperationState: opState(revB, now, user("fleetwave"), synccommon.OperationSucceeded)}},
			own: "fleetwave"},
		{name: "a user while fleetwave's own name is unknown and it sent a request: not judged",
			app: v1alpha1.Application{Status: v1alpha1.ApplicationStatus{OperationState: opState(revB, now, user("alice"), synccommon.OperationSucceeded)}}},
		{name: "any user when fleetwave sent nothing for the app",
			app:    v1alpha1.Application{Status: v1alpha1.ApplicationStatus{OperationState: opState(revB, now, user("fleetwave"), synccommon.OperationSucceeded)}},
			anyone: true, want: "synced outside the plan by user fleetwave (operation succeeded, started 22:00:00)"},
		{name: "failed before the rollout existed (an earlier rollout's sync): its wave syncs it",
			app:    v1alpha1.Application{Status: v1alpha1.ApplicationStatus{OperationState: opState(revB, now, user("fleetwave"), synccommon.OperationFailed)}},
			anyone: true},
		{name: "automated sync failed after the rollout began: reported",
			app:    v1alpha1.Application{Status: v1alpha1.ApplicationStatus{OperationState: opState(revB, created.Add(time.Second), auto, synccommon.OperationError)}},
			anyone: true, want: "synced outside the plan by automated sync (operation error, started 22:05:01)"},
		{name: "another revision is not the merge",
			app:    v1alpha1.Application{Status: v1alpha1.ApplicationStatus{OperationState: opState(revC, now, auto, synccommon.OperationSucceeded)}},
			anyone: true},
		{name: "before the lookback: already there",
			app:    v1alpha1.Application{Status: v1alpha1.ApplicationStatus{OperationState: opState(revB, since.Add(-time.Second), auto, synccommon.OperationSucceeded)}},
			anyone: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, ok := foreignOperation(&tc.app, revB, "", tc.own, tc.anyone, created)
			got := ""
			if ok {
				got = f.message()
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if ok && f.prev != tc.prev {
				t.Errorf("previous revision %q, want %q", f.prev, tc.prev)
			}
		})
	}
}
