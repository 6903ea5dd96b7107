package app

import (
	"context"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/github"
	"github.com/fleetwave/fleetwave/internal/report"
)

// The diff check is never an all-clear (neutral or success) when nothing could be rendered because no app takes
// a source from the repository under the names the webhook gave.
func TestDiffCheckConclusion(t *testing.T) {
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
			a := &App{}
			run := a.diffCheck(context.Background(), Change{Number: 1}, &outcome{rep: &rep})
			if run.Conclusion != tc.want {
				t.Errorf("conclusion %s (%q), want %s", run.Conclusion, run.Output.Title, tc.want)
			}
			if tc.title != "" && (run.Output == nil || !strings.HasPrefix(run.Output.Title, tc.title)) {
				t.Errorf("title %+v, want it to start with %q", run.Output, tc.title)
			}
		})
	}
}
