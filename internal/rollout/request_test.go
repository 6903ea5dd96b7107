package rollout_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/rollout"
)

// TestNewRequest: the App's merges and the terminal's rollouts get the same request of a planned change: its
// revisions and plan with the policy's execution settings, the operator's prune added to the policy's, and
// without a policy only what the plan itself tells.
func TestNewRequest(t *testing.T) {
	automated := &plan.Plan{Policy: ".fleetwave.yaml", Violations: []plan.Violation{}, Waves: []plan.Wave{{Name: "all",
		Batches: []plan.Batch{{Apps: []plan.PlannedApp{{Name: "web", Namespace: "argocd", AutomatedSync: true}}}}}}}
	manual := &plan.Plan{Policy: ".fleetwave.yaml", Violations: []plan.Violation{}, Waves: []plan.Wave{{Name: "all",
		Batches: []plan.Batch{{Apps: []plan.PlannedApp{{Name: "web", Namespace: "argocd"}}}}}}}
	strict := &plan.Policy{AutomatedSync: plan.AutomatedSyncForbid, OnConflict: plan.ConflictSupersede, OutOfPlanSync: plan.OutOfPlanSyncContinue, Prune: true}
	tests := []struct {
		name string
		c    rollout.Change
		want rollout.Request
	}{
		{"the policy's settings go with the plan",
			rollout.Change{Repo: "org/fleet", PRNumber: 3, MergeSHA: "m", BaseSHA: "b", InstallationID: 9, Plan: manual, Policy: strict,
				PRPlanDigest: "d", RepoURL: "https://example.com/fleet.git", Branch: "main"},
			rollout.Request{Repo: "org/fleet", PRNumber: 3, MergeSHA: "m", BaseSHA: "b", InstallationID: 9, Plan: manual, PRPlanDigest: "d",
				RepoURL: "https://example.com/fleet.git", Branch: "main", AutomatedSync: plan.AutomatedSyncForbid,
				OnConflict: rollout.ConflictSupersede, OutOfPlanSync: plan.OutOfPlanSyncContinue, Prune: true}},
		{"the operator's prune adds to a policy without",
			rollout.Change{Repo: "org/fleet", MergeSHA: "m", Plan: manual, Policy: &plan.Policy{}, Prune: true},
			rollout.Request{Repo: "org/fleet", MergeSHA: "m", Plan: manual, Prune: true}},
		{"no policy: a policy file's plan with automated apps was made under disable-during-rollout",
			rollout.Change{Repo: "local/plan", MergeSHA: "m", Plan: automated},
			rollout.Request{Repo: "local/plan", MergeSHA: "m", Plan: automated, AutomatedSync: plan.AutomatedSyncDisableDuringRollout}},
		{"no policy, no automated app: nothing to switch",
			rollout.Change{Repo: "local/plan", MergeSHA: "m", Plan: manual},
			rollout.Request{Repo: "local/plan", MergeSHA: "m", Plan: manual}},
		{"no policy, a selector's plan: nothing is inferred",
			rollout.Change{Repo: "selector/env=prd", Plan: rollout.SelectorPlan("env=prd", []v1alpha1.Application{app("web", true)})},
			rollout.Request{Repo: "selector/env=prd"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := rollout.NewRequest(tc.c)
			if tc.want.Plan == nil {
				tc.want.Plan = tc.c.Plan
			}
			if got != tc.want {
				t.Errorf("NewRequest =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func app(name string, automated bool) v1alpha1.Application {
	a := v1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "argocd"},
		Spec: v1alpha1.ApplicationSpec{Destination: v1alpha1.ApplicationDestination{Server: "https://kubernetes.default.svc"}}}
	if automated {
		a.Spec.SyncPolicy = &v1alpha1.SyncPolicy{Automated: &v1alpha1.SyncPolicyAutomated{}}
	}
	return a
}

// TestStatedApprover: from a terminal, a wave without approval teams is approved by the user, and a wave with
// teams only by a user who states one of them, recorded as stated.
func TestStatedApprover(t *testing.T) {
	pl := plan.Plan{Policy: ".fleetwave.yaml", Waves: []plan.Wave{{Name: "canary"},
		{Name: "production", Gates: plan.Gates{Approval: &plan.Approval{Teams: []string{"org/sre"}}}}}}
	raw, err := json.Marshal(pl)
	if err != nil {
		t.Fatal(err)
	}
	r := store.Rollout{ID: 7, Plan: raw}
	tests := []struct {
		wave, memberOf string
		want, err      string
	}{
		{wave: "Canary", want: "ann"},
		{wave: "canary", memberOf: "org/sre", err: "wave canary names no approval team"},
		{wave: "production", err: "may only be approved by members of org/sre"},
		{wave: "production", memberOf: "ORG/sre", want: "ann (stated member of org/sre, not checked)"},
		{wave: "production", memberOf: "org/dev", err: "is not one of the approval teams of wave production"},
		{wave: "nope", err: `rollout #7 has no wave "nope" (waves: canary, production)`},
	}
	for _, tc := range tests {
		got, err := rollout.StatedApprover(r, tc.wave, "ann", tc.memberOf)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s/%s: err %v, want %q", tc.wave, tc.memberOf, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s/%s: %q, %v; want %q", tc.wave, tc.memberOf, got, err, tc.want)
		}
	}
}
