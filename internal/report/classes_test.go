package report

import (
	"reflect"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/diff"
	"github.com/fleetwave/fleetwave/internal/diff/risk"
)

func TestAppFindingsAndClasses(t *testing.T) {
	hook := diff.Resource{Key: diff.Key{Group: "batch", Kind: "Job", Namespace: "web", Name: "migrate"}, Change: diff.Unchanged, HookTypes: []string{"PreSync"}}
	gone := diff.Resource{Key: diff.Key{Group: "batch", Kind: "Job", Namespace: "web", Name: "old"}, Change: diff.Removed, HookTypes: []string{"PostSync"}}
	img := withRisks(res("Deployment", "web", "web", diff.Modified, "d"), risk.Finding{Class: risk.Image, Detail: "web: a:1 → a:2"})
	meta := withRisks(res("ConfigMap", "web", "cfg", diff.Modified, "d"), risk.Finding{Class: risk.Metadata, Detail: "team"})
	crd := withRisks(res("CustomResourceDefinition", "", "w.acme.io", diff.Removed, "d"), risk.Finding{Class: risk.CRDRemoved, Detail: "w.acme.io"})
	tests := []struct {
		name string
		app  App
		want []risk.Class
	}{
		{"nothing changed, hooks do not run", App{Hooks: []diff.Resource{hook}}, nil},
		{"a change runs the hooks", App{Resources: []diff.Resource{meta}, Hooks: []diff.Resource{hook}, Counts: diff.Summary{Modified: 1}},
			[]risk.Class{risk.Hook, risk.Metadata}},
		{"a removed hook does not run", App{Resources: []diff.Resource{meta}, Hooks: []diff.Resource{gone}, Counts: diff.Summary{Modified: 1}},
			[]risk.Class{risk.Metadata}},
		{"most serious first, each once", App{Resources: []diff.Resource{meta, img, crd, img}, Counts: diff.Summary{Modified: 3, Removed: 1}},
			[]risk.Class{risk.CRDRemoved, risk.Image, risk.Metadata}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.app.RiskClasses(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("RiskClasses() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestClassLineCountsApps(t *testing.T) {
	img := withRisks(res("Deployment", "web", "web", diff.Modified, "d"), risk.Finding{Class: risk.Image, Detail: "web: a:1 → a:2"})
	meta := withRisks(res("ConfigMap", "web", "cfg", diff.Modified, "d"), risk.Finding{Class: risk.Metadata, Detail: "team"})
	r := &Report{Apps: []App{
		{Name: "a", Status: StatusChanged, Resources: []diff.Resource{img, meta}, Counts: diff.Summary{Modified: 2}},
		{Name: "b", Status: StatusChanged, Resources: []diff.Resource{img}, Counts: diff.Summary{Modified: 1}},
		{Name: "c", Status: StatusUnchanged},
	}}
	want := "**Classes**: `image` images changed (2 apps) · `metadata` metadata only (1 app)"
	if got := r.ClassLine(); got != want {
		t.Errorf("ClassLine() = %q\nwant %q", got, want)
	}
	if got := (&Report{Apps: []App{{Status: StatusUnchanged}}}).ClassLine(); got != "" {
		t.Errorf("ClassLine() of no change = %q, want none", got)
	}
	// A section names the details when its apps agree, only the classes when they do not.
	a, b := &r.Apps[0], &r.Apps[1]
	if got := sectionClasses([]*App{b, b}); got != "Classes: `image` web: a:1 → a:2\n\n" {
		t.Errorf("same details: %q", got)
	}
	if got := sectionClasses([]*App{a, b}); got != "Classes: `image`, `metadata`\n\n" {
		t.Errorf("different details: %q", got)
	}
	if got := sectionClasses([]*App{&r.Apps[2]}); got != "" {
		t.Errorf("no classes: %q", got)
	}
	var buf strings.Builder
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"classes": [
        "image",
        "metadata"
      ]`) {
		t.Errorf("the JSON does not carry the app's classes:\n%s", buf.String())
	}
}
