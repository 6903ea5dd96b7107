package app

import (
	"context"
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
		name string
		rep  report.Report
		want string
	}{
		{name: "nothing changes", rep: report.Report{Apps: []report.App{app("web", report.StatusUnchanged)}}, want: github.ConclusionNeutral},
		{name: "a change", rep: report.Report{Apps: []report.App{app("web", report.StatusChanged)}}, want: github.ConclusionSuccess},
		{name: "a failed render", rep: report.Report{Apps: []report.App{app("web", report.StatusError)}}, want: github.ConclusionFailure},
		{name: "no app's source is the repository", rep: report.Report{Apps: []report.App{app("web", report.StatusSkipped)},
			NoSourceInRepo: true, AppRepoURLs: []string{"https://github.com/acme/gitops.git"}}, want: github.ConclusionFailure},
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
		})
	}
}
