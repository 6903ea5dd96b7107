package plan

import (
	"bytes"
	"strings"
	"testing"
)

// TestMarkdownBounded: the markdown of a 10,000-app plan stays small enough for a PR comment section.
func TestMarkdownBounded(t *testing.T) {
	pol, apps := benchFleet(t)
	var md bytes.Buffer
	if err := Build(pol, apps).WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if md.Len() > 64<<10 {
		t.Errorf("markdown is %d bytes for a 10,000-app plan", md.Len())
	}
	for _, want := range []string{"| Wave | Apps | Clusters | Batches | Gates |", "```mermaid\nflowchart LR\n", "…and ", "(see the JSON output)"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
}

// TestMarkdownEscapes: names come from repositories and cluster Secrets; they must not break tables, inject
// HTML or end the Mermaid label.
func TestMarkdownEscapes(t *testing.T) {
	apps := []App{{Name: "x", Cluster: `evil|<img src=x>"]`, AutomatedSync: true}}
	p := Build(parse(t, head+"  - {name: w, selector: {}}\n"), apps)
	var md bytes.Buffer
	if err := p.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	if strings.Contains(out, "<img") || strings.Contains(out, "evil|") {
		t.Errorf("unescaped input in markdown:\n%s", out)
	}
	if !strings.Contains(out, `evil\|&lt;img src=x&gt;"\]`) {
		t.Errorf("cluster name not escaped as expected:\n%s", out)
	}
}
