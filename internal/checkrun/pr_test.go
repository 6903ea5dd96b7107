package checkrun

import (
	"errors"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/edge/github"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/report"
)

// The diff check is never an all-clear (neutral or success) when nothing could be rendered because no app takes
// a source from the repository under the names the webhook gave.
func TestDiffConclusion(t *testing.T) {
	app := func(name string, st report.Status) report.App {
		return report.App{Name: name, Namespace: "argocd", Status: st}
	}
	tests := []struct {
		name  string
		rep   report.Report
		want  string
		title string // a prefix of the title, when checked
	}{
		{name: "nothing changes", rep: report.Report{Apps: []report.App{app("web", report.StatusUnchanged)}}, want: github.ConclusionNeutral},
		{name: "a change", rep: report.Report{Apps: []report.App{app("web", report.StatusChanged)}}, want: github.ConclusionSuccess},
		{name: "a failed render", rep: report.Report{Apps: []report.App{app("web", report.StatusError)}}, want: github.ConclusionFailure},
		{name: "no app's source is the repository", rep: report.Report{Apps: []report.App{app("web", report.StatusSkipped)},
			NoSourceInRepo: true, AppRepoURLs: []string{"https://github.com/acme/gitops.git"}}, want: github.ConclusionFailure},
		// An ApplicationSet with live generators elsewhere in the repository does not fail an unrelated PR…
		{name: "an unevaluated ApplicationSet the PR does not touch", rep: report.Report{Apps: []report.App{app("web", report.StatusChanged)},
			Unevaluated: []report.Unevaluated{{ApplicationSet: "argocd/prs", Generators: []string{"pullRequest"}, Reason: "no Argo CD"}}},
			want: github.ConclusionSuccess, title: "1 of 1 apps change"},
		// …but one the PR adds or alters, whose apps are unknown, does.
		{name: "an unevaluated ApplicationSet the PR changes", rep: report.Report{Apps: []report.App{app("web", report.StatusUnchanged)},
			Unevaluated: []report.Unevaluated{{ApplicationSet: "argocd/scm", Generators: []string{"scmProvider"}, Reason: "this change adds it", Changed: true}}},
			want: github.ConclusionFailure, title: "1 changed ApplicationSet(s) could not be evaluated"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := tc.rep
			rep.Summarize()
			run := Diff("fleetwave/diff", "fleetwave-pr:1", &rep, nil)
			if run.Conclusion != tc.want {
				t.Errorf("conclusion %s (%q), want %s", run.Conclusion, run.Output.Title, tc.want)
			}
			if tc.title != "" && (run.Output == nil || !strings.HasPrefix(run.Output.Title, tc.title)) {
				t.Errorf("title %+v, want it to start with %q", run.Output, tc.title)
			}
		})
	}
}

// TestPlanWithoutPlan: the plan check is a failure, with an annotation at each error, when the policy is invalid,
// and neutral when no plan was made.
func TestPlanWithoutPlan(t *testing.T) {
	rep := &report.Report{}
	run := Plan(PlanInput{Name: "fleetwave/plan", ExternalID: "fleetwave-pr:3", Head: "0123456789abcdef", Report: rep,
		PolicyErr: &plan.PolicyError{File: ".fleetwave.yaml", Diagnostics: []plan.Diagnostic{{Line: 4, Column: 3, Message: "unknown key", Hint: "waves"}}}})
	if run.Conclusion != github.ConclusionFailure || run.Output.Title != "The release policy .fleetwave.yaml is invalid" ||
		!strings.Contains(run.Output.Summary, "at `0123456`") || len(run.Output.Annotations) != 1 {
		t.Fatalf("invalid policy: %+v %+v", run, run.Output)
	}
	if a := run.Output.Annotations[0]; a.Path != ".fleetwave.yaml" || a.StartLine != 4 || a.StartCol != 3 || a.Message != "unknown key (hint: waves)" {
		t.Errorf("annotation %+v", a)
	}
	run = Plan(PlanInput{Name: "fleetwave/plan", Report: rep})
	if run.Conclusion != github.ConclusionNeutral || run.Output.Title != "No plan" {
		t.Errorf("no plan: %+v", run.Output)
	}
}

// TestPreviewFailed: the reason is one line, its credentials masked.
func TestPreviewFailed(t *testing.T) {
	out := PreviewFailed("aaaaaaaaaa", "bbbbbbbbbb", errors.New("fetching https://x:s3cret@github.example.com/acme/repo: refused\nmore"))
	if strings.Contains(out.Summary, "s3cret") || strings.Contains(out.Summary, "more") || !strings.Contains(out.Summary, "Previewing `aaaaaaa..bbbbbbb` failed: fetching") {
		t.Errorf("%q", out.Summary)
	}
}
