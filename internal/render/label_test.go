package render_test

import (
	"testing"

	"github.com/fleetwave/fleetwave/internal/render"
)

func TestSourcesLabel(t *testing.T) {
	tests := []struct{ name, sources, want string }{
		{"a path", "source: {repoURL: R, path: apps/web}", "apps/web"},
		{"a chart", "source: {repoURL: https://charts.example.com, chart: ingress, targetRevision: 1.0.0}", "chart ingress"},
		{"sources, a ref-only one left out", "sources: [{repoURL: R, path: apps/web}, {repoURL: R, ref: values}, {repoURL: C, chart: db}]",
			"source 1: apps/web; source 3: chart db"},
		{"no path", "source: {repoURL: R}", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			app, err := render.ParseApplication([]byte("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a}\nspec:\n  " + tc.sources + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			if got := render.SourcesLabel(app); got != tc.want {
				t.Errorf("SourcesLabel = %q, want %q", got, tc.want)
			}
		})
	}
}
