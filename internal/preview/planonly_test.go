package preview

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/fleetwave/fleetwave/internal/report"
)

// countingLive is a LiveComparer that counts the apps it is asked to compare, and finds each in sync.
type countingLive struct{ calls, apps atomic.Int64 }

func (c *countingLive) CompareLive(_ context.Context, apps []LiveApp) ([]*report.Live, error) {
	c.calls.Add(1)
	c.apps.Add(int64(len(apps)))
	return make([]*report.Live, len(apps)), nil
}

// TestPlanOnlyMakesThePreviewsPlan: a merge's run (PlanOnly) makes the plan a full preview of the same change
// makes, without asking Argo CD for any live state and without the comment's presentation.
func TestPlanOnlyMakesThePreviewsPlan(t *testing.T) {
	dir := exampleRepo(t)
	var fullLive, onlyLive countingLive
	full, err := Run(context.Background(), theRenderer(), Input{RepoDir: dir, Base: "main", Head: "change", Plan: true, ArgoCD: ArgoCD{Live: &fullLive}})
	if err != nil {
		t.Fatal(err)
	}
	only, err := Run(context.Background(), theRenderer(), Input{RepoDir: dir, Base: "main", Head: "change", PlanOnly: true, ArgoCD: ArgoCD{Live: &onlyLive}})
	if err != nil {
		t.Fatal(err)
	}
	if full.Plan == nil || only.Plan == nil {
		t.Fatalf("plans: full %v, plan only %v", full.Plan, only.Plan)
	}
	fullJSON, err := json.Marshal(full.Plan)
	if err != nil {
		t.Fatal(err)
	}
	onlyJSON, err := json.Marshal(only.Plan)
	if err != nil {
		t.Fatal(err)
	}
	if string(onlyJSON) != string(fullJSON) || only.Plan.Digest() != full.Plan.Digest() {
		t.Errorf("the plan-only plan differs from the preview's:\n%s\nwant\n%s", onlyJSON, fullJSON)
	}
	if full.Report.Summary != only.Report.Summary {
		t.Errorf("summary %+v, want the preview's %+v", only.Report.Summary, full.Report.Summary)
	}
	if fullLive.apps.Load() == 0 {
		t.Fatal("the full preview compared no app with its live state: the test proves nothing")
	}
	if n := onlyLive.calls.Load(); n != 0 {
		t.Errorf("the plan-only run asked Argo CD for the live state %d time(s), want none", n)
	}
	if only.Report.Footer != nil || full.Report.Footer == nil {
		t.Errorf("footers: plan only %+v, full %+v; want only the full preview's", only.Report.Footer, full.Report.Footer)
	}
}
