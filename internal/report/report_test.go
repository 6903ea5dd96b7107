package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/diff"
	"github.com/fleetwave/fleetwave/internal/diff/risk"
	"github.com/fleetwave/fleetwave/internal/kit/markdown"
	"github.com/fleetwave/fleetwave/internal/testkit/golden"
)

// fakePlan is a Plan made of values.
type fakePlan struct {
	ok       bool
	text, md string
	Waves    []map[string]any `json:"waves"`
	Viol     []map[string]any `json:"violations"`
}

func (p *fakePlan) OK() bool                        { return p.ok }
func (p *fakePlan) Complete() bool                  { return true }
func (p *fakePlan) WriteText(w io.Writer) error     { _, err := io.WriteString(w, p.text); return err }
func (p *fakePlan) WriteMarkdown(w io.Writer) error { _, err := io.WriteString(w, p.md); return err }
func res(kind, ns, name string, c diff.Change, d string) diff.Resource {
	return diff.Resource{Key: diff.Key{Kind: kind, Namespace: ns, Name: name}, Change: c, Diff: d}
}

func withRisks(r diff.Resource, fs ...risk.Finding) diff.Resource { r.Risks = fs; return r }

func sample() *Report {
	r := &Report{
		Base: "1111111111111111111111111111111111111111",
		Head: "2222222222222222222222222222222222222222",
		Apps: []App{
			{Name: "web-prd-eu-1", Namespace: "argocd", Cluster: "prd-eu-1", Status: StatusChanged,
				Resources: []diff.Resource{
					withRisks(res("ConfigMap", "web", "cfg", diff.Modified, "--- base/core/ConfigMap/web/cfg\n+++ head/core/ConfigMap/web/cfg\n@@ -1 +1 @@\n-a: 1\n+a: 2\n"),
						risk.Finding{Class: risk.Other, Detail: "ConfigMap cfg: a"}),
					{Key: diff.Key{Kind: "Secret", Namespace: "web", Name: "db"}, Change: diff.Modified,
						Risks:      []risk.Finding{{Class: risk.SecretKeys, Detail: "key password"}},
						Diff:       "--- base/core/Secret/web/db\n+++ head/core/Secret/web/db\n@@ -1,2 +1,2 @@\n data:\n-  password: <previous value>\n+  password: <changed>\n",
						SecretKeys: []diff.SecretKey{{Key: "data.password", Change: "changed"}}},
				},
				Hooks:      []diff.Resource{{Key: diff.Key{Group: "batch", Kind: "Job", Namespace: "web", Name: "migrate"}, Change: diff.Unchanged, HookTypes: []string{"PreSync"}}},
				Counts:     diff.Summary{Modified: 2, Unchanged: 3},
				ReadFiles:  []string{"charts/web/Chart.yaml", "values/shared.yaml"},
				AffectedBy: []string{"read-file: values/shared.yaml"}},
			{Name: "api", Namespace: "argocd", Cluster: "stg-eu-1", Status: StatusUnchanged, Resources: []diff.Resource{}, Hooks: []diff.Resource{}, ReadFiles: []string{"api/a.yaml"}},
			{Name: "broken", Namespace: "argocd", Cluster: "in-cluster", Status: StatusError, Error: `app "broken" (broken): chart not found`},
			{Name: "new", Namespace: "argocd", Cluster: "test-eu-1", Status: StatusAdded,
				Resources: []diff.Resource{withRisks(res("Namespace", "", "new", diff.Added, "--- /dev/null\n+++ head/core/Namespace/_cluster/new\n@@ -0,0 +1 @@\n+kind: Namespace\n"),
					risk.Finding{Class: risk.Added, Detail: "Namespace new"})},
				Counts: diff.Summary{Added: 1}},
		},
		Problems: []string{"apps/bad.yaml: document 1: parsing YAML: yaml: line 3: did not find expected key"},
	}
	r.Summarize()
	return r
}

func withPlan(r *Report) *Report {
	r.Plan = &fakePlan{ok: true, text: "plan: 2 waves\n", md: "### Wave plan\n\n| Wave | Apps |\n|---|---|\n| canary | 1 |\n",
		Waves: []map[string]any{{"name": "canary"}, {"name": "production"}}, Viol: []map[string]any{}}
	r.Summary.Waves = 2
	return r
}

// twoInstances is sample() over a fleet of two Argo CD instances, eu and us, that both call a cluster in-cluster:
// every app shows its instance with its cluster, in the text, the comment and the JSON.
func twoInstances() *Report {
	r := sample()
	for i, inst := range []string{"eu", "eu", "us", "us"} {
		r.Apps[i].Instance = inst
	}
	r.Apps[2].Cluster = "in-cluster"
	r.Apps = append(r.Apps, r.Apps[0])
	r.Apps[4].Name, r.Apps[4].Instance, r.Apps[4].Cluster = "web-in", "us", "in-cluster"
	r.Summarize()
	return r
}

func TestSummarize(t *testing.T) {
	s := sample().Summary
	want := Summary{Apps: 4, Changed: 1, Unchanged: 1, Added: 1, Failed: 1, ResourcesAdded: 1, ResourcesModified: 2}
	if s != want {
		t.Fatalf("summary = %+v\nwant %+v", s, want)
	}
	r := sample()
	if !r.HasChanges() || !r.HasErrors() {
		t.Fatal("HasChanges/HasErrors")
	}
}

func TestGoldenOutputs(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    *Report
	}{{"diff", sample()}, {"plan", withPlan(sample())}, {"instances", twoInstances()}} {
		var text, js bytes.Buffer
		if err := tc.r.WriteText(&text); err != nil {
			t.Fatal(err)
		}
		if err := tc.r.WriteJSON(&js); err != nil {
			t.Fatal(err)
		}
		golden.Assert(t, tc.name+".txt", text.String())
		golden.Assert(t, tc.name+".json", js.String())
		golden.Assert(t, tc.name+".md", tc.r.Markdown())
	}
}

func TestJSONContract(t *testing.T) {
	var js bytes.Buffer
	if err := withPlan(sample()).WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Base, Head string
		Apps       []struct {
			Name, Namespace, Cluster, Status, Error string
			Resources                               []struct{ Group, Kind, Namespace, Name, Change, Diff string }
			Hooks                                   []json.RawMessage
			ReadFiles                               []string
		}
		Waves      []map[string]any
		Violations []map[string]any
	}
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Base == "" || len(got.Apps) != 4 || len(got.Waves) != 2 || got.Violations == nil {
		t.Fatalf("decoded = %+v", got)
	}
	a := got.Apps[0]
	if a.Status != "changed" || a.Cluster != "prd-eu-1" || a.Resources[0].Kind != "ConfigMap" || a.Resources[0].Change != "modified" || !strings.Contains(a.Resources[0].Diff, "+a: 2") {
		t.Fatalf("app 0 = %+v", a)
	}
	if got.Apps[2].Status != "error" || got.Apps[2].Error == "" {
		t.Fatalf("app 2 = %+v", got.Apps[2])
	}
}

func TestMarkdownPartsRespectLimitAndKeepSections(t *testing.T) {
	r := withPlan(sample())
	// 60 changed apps, each with a diff of ~3 KB.
	for i := 0; i < 60; i++ {
		var d strings.Builder
		d.WriteString("--- base/x\n+++ head/x\n@@ -1,60 +1,60 @@\n")
		for j := 0; j < 60; j++ {
			fmt.Fprintf(&d, "-  line %02d: old value for app %d\n+  line %02d: new value\n", j, i, j)
		}
		r.Apps = append(r.Apps, App{Name: fmt.Sprintf("bulk-%02d", i), Namespace: "argocd", Cluster: "c", Status: StatusChanged,
			Resources: []diff.Resource{res("ConfigMap", "x", "x", diff.Modified, d.String())}, Counts: diff.Summary{Modified: 1}})
	}
	// One app whose diff alone is larger than a comment.
	var huge strings.Builder
	huge.WriteString("--- base/y\n+++ head/y\n@@ -1 +1 @@\n")
	for j := 0; j < 8000; j++ {
		fmt.Fprintf(&huge, "+  generated line %d with some padding text\n", j)
	}
	r.Apps = append(r.Apps, App{Name: "huge", Namespace: "argocd", Cluster: "c", Status: StatusChanged,
		Resources: []diff.Resource{res("ConfigMap", "y", "y", diff.Modified, huge.String())}, Counts: diff.Summary{Modified: 1}})
	r.Summarize()
	r.Summary.Waves = 2

	const limit = 65536
	parts := r.MarkdownParts(limit)
	if len(parts) < 3 {
		t.Fatalf("%d parts, want several", len(parts))
	}
	if !strings.HasPrefix(parts[0], Marker+"\n## fleetwave preview") || !strings.Contains(parts[0], r.SummaryLine()[:20]) || !strings.Contains(parts[0], "### Wave plan") {
		t.Fatalf("part 1 does not open with the marker, summary and plan:\n%.400s", parts[0])
	}
	all := strings.Join(parts, "")
	for i, p := range parts {
		if len(p) > limit {
			t.Errorf("part %d is %d bytes", i+1, len(p))
		}
		if strings.Count(p, "<details>") != strings.Count(p, "</details>") {
			t.Errorf("part %d has unbalanced <details>", i+1)
		}
		if strings.Count(p, "\n```")%2 != 0 {
			t.Errorf("part %d has an unclosed code fence", i+1)
		}
		if i > 0 && !strings.HasPrefix(p, fmt.Sprintf("<!-- fleetwave:preview part=%d -->\n**fleetwave preview, part %d of %d**", i+1, i+1, len(parts))) {
			t.Errorf("part %d header: %.120s", i+1, p)
		}
	}
	for _, a := range r.Apps {
		if n := strings.Count(all, " "+a.Key()+" → "); a.Status != StatusUnchanged && a.Status != StatusError && n != 1 {
			t.Errorf("app %s has %d sections across parts", a.Key(), n)
		}
	}
	if !strings.Contains(all, "_Diff shortened:") {
		t.Error("the oversized section was not shortened with a note")
	}
	// Small reports stay one part, identical to Markdown().
	small := sample()
	if p := small.MarkdownParts(0); len(p) != 1 || p[0] != small.Markdown() {
		t.Fatalf("small report split into %d parts", len(p))
	}
}

func TestFenceOutlastsBackticksInDiffs(t *testing.T) {
	if f := fence("a ```` b"); f != "`````" {
		t.Fatalf("fence = %q", f)
	}
	if f := fence("plain"); f != "```" {
		t.Fatalf("fence = %q", f)
	}
}

func TestLiveDetailsAreShown(t *testing.T) {
	r := sample()
	r.Apps[0].Live = &Live{Compared: 4, Drift: []string{"ConfigMap web/orphan", "Secret web/db"},
		Extraneous: []string{"ConfigMap web/orphan"}, IgnoredExtraneous: []string{"ConfigMap web/scratch"},
		DriftSecretKeys: map[string][]string{"Secret web/db": {"data.token"}}}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	md := r.Markdown()
	for _, want := range []string{
		"would be pruned by a sync with prune (in no render, tracked as the app's): ConfigMap web/orphan",
		"extraneous, ignored by Argo CD (IgnoreExtraneous), not drift: ConfigMap web/scratch",
		"Secret web/db: changed live (values never shown): data.token",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q", want)
		}
		if !strings.Contains(md, markdown.Escape(want)) {
			t.Errorf("markdown lacks %q", markdown.Escape(want))
		}
	}
}

func TestTableNamesTheRendererOnlyWhenArgoCDRendered(t *testing.T) {
	r := sample()
	if md := r.Markdown(); strings.Contains(md, "Rendered by") {
		t.Error("a table of apps all rendered in process has a Rendered by column")
	}
	r.Apps[0].RenderedBy = "argocd"
	if md := r.Markdown(); !strings.Contains(md, "| Rendered by |") || !strings.Contains(md, "| Argo CD |") {
		t.Errorf("the table does not say Argo CD rendered an app:\n%s", md)
	}
}

func TestTableListsEverySecretKeyOfASection(t *testing.T) {
	secret := func(key string) diff.Resource {
		return diff.Resource{Key: diff.Key{Kind: "Secret", Namespace: "web", Name: "db"}, Change: diff.Modified,
			Diff:       "--- base/core/Secret/web/db\n+++ head/core/Secret/web/db\n@@ -1 +1 @@\n-  " + key + ": <previous value>\n+  " + key + ": <changed>\n",
			SecretKeys: []diff.SecretKey{{Key: "data." + key, Change: "changed"}}}
	}
	r := &Report{Apps: []App{
		{Name: "web-a", Namespace: "argocd", Cluster: "a", Kind: "web", Status: StatusChanged, Resources: []diff.Resource{secret("password")}, Counts: diff.Summary{Modified: 1}},
		{Name: "web-b", Namespace: "argocd", Cluster: "b", Kind: "web", Status: StatusChanged, Resources: []diff.Resource{secret("token")}, Counts: diff.Summary{Modified: 1}},
	}}
	r.Summarize()
	md := r.Markdown()
	if !strings.Contains(md, "| `data.password` `data.token` |") {
		t.Errorf("the section's row does not list both variants' keys:\n%s", md)
	}
}
