package preview

import (
	"context"
	"testing"

	"github.com/fleetwave/fleetwave/internal/report"
)

// reportOf is the report of Run's result, for the tests that read only the report (nil when there is none).
func reportOf(res *Result, err error) (*report.Report, error) {
	if res == nil {
		return nil, err
	}
	return res.Report, err
}

// TestResultCarriesThePlanAndThePolicy: the result hands the plan over as the *plan.Plan the report formats, and
// the release policy the preview read at head, with or without a plan, so that no caller reads the policy again
// or casts the report's plan back.
func TestResultCarriesThePlanAndThePolicy(t *testing.T) {
	dir := exampleRepo(t)
	for _, withPlan := range []bool{true, false} {
		res, err := Run(context.Background(), theRenderer(), Input{RepoDir: dir, Base: "main", Head: "change", Plan: withPlan})
		if err != nil {
			t.Fatal(err)
		}
		if res.PolicyFile != ".fleetwave.yaml" || res.Policy == nil || res.Policy.Source != res.PolicyFile {
			t.Errorf("plan %v: policy %q (%v), want the head's .fleetwave.yaml", withPlan, res.PolicyFile, res.Policy)
		}
		if !withPlan {
			if res.Plan != nil || res.Report.Plan != nil {
				t.Errorf("no plan asked: result plan %v, report plan %v", res.Plan, res.Report.Plan)
			}
			continue
		}
		if res.Plan == nil || res.Report.Plan != report.Plan(res.Plan) {
			t.Fatalf("plan %v, report's plan %v: want the same plan", res.Plan, res.Report.Plan)
		}
		if res.Plan.Policy != res.Policy.Source || len(res.Plan.Waves) == 0 {
			t.Errorf("the plan (policy %q, %d waves) was not made with the result's policy %q", res.Plan.Policy, len(res.Plan.Waves), res.Policy.Source)
		}
	}
}
