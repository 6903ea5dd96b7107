package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// ApplicationSets whose live generators were not evaluated are listed in every form, those the change touches
// first and marked; only those fail the report.
func TestUnevaluatedApplicationSets(t *testing.T) {
	rep := &Report{Apps: []App{{Name: "web", Namespace: "argocd", Status: StatusUnchanged}}, Unevaluated: []Unevaluated{
		{ApplicationSet: "argocd/prs", File: "sets/prs.yaml", Generators: []string{"pullRequest"}, Reason: "it needs a live service"},
		{ApplicationSet: "argocd/scm", File: "sets/scm.yaml", Generators: []string{"scmProvider", "plugin"}, Reason: "this change adds it", Changed: true},
	}}
	rep.Summarize()
	if !rep.HasErrors() || rep.UnevaluatedChanged() != 1 {
		t.Fatalf("HasErrors %v, changed %d: want true, 1", rep.HasErrors(), rep.UnevaluatedChanged())
	}
	md := rep.Markdown()
	changed := strings.Index(md, "- ❌ changed by this PR: applicationset argocd/scm (sets/scm.yaml): scmProvider, plugin generator not evaluated: this change adds it")
	other := strings.Index(md, "- applicationset argocd/prs (sets/prs.yaml): pullRequest generator not evaluated: it needs a live service")
	if changed < 0 || other < 0 || changed > other {
		t.Errorf("markdown lists them as (changed at %d, other at %d):\n%s", changed, other, md)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "applicationset argocd/scm (sets/scm.yaml): scmProvider, plugin generator not evaluated: this change adds it [changed by this change]") {
		t.Errorf("text:\n%s", text.String())
	}
	var doc struct {
		Unevaluated []struct {
			ApplicationSet string
			Generators     []string
			Changed        bool
		}
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil || json.Unmarshal(js.Bytes(), &doc) != nil || len(doc.Unevaluated) != 2 || !doc.Unevaluated[1].Changed {
		t.Errorf("json (%v): %s", err, js.String())
	}

	rep.Unevaluated[1].Changed = false
	if rep.HasErrors() {
		t.Error("an unevaluated ApplicationSet the change does not touch fails the report")
	}
}
