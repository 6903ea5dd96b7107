package plan

import (
	"fmt"
	"strings"

	"github.com/itchyny/gojq"
	"gopkg.in/yaml.v3"
)

// DiffSettings are the policy's `diff` section: how the PR preview presents differences. They never change
// what is rolled out.
type DiffSettings struct {
	// Ignore are differences left out of the preview's diffs, in Argo CD's ignoreDifferences form (applied
	// with Argo CD's own normalizer to both sides of every resource they match).
	Ignore []IgnoreRule `json:"ignore,omitempty"`
	// ShowChartLabels turns off the default folding of hunks that only change the helm.sh/chart label.
	ShowChartLabels bool `json:"showChartLabels,omitempty"`
}

// IgnoreRule selects resources (group and kind are globs, "*" for any; name and namespace exact, empty for any)
// and the fields of theirs to leave out of the diff: RFC 6901 JSON pointers and jq path expressions, as in an
// Application's spec.ignoreDifferences.
type IgnoreRule struct {
	Group             string   `json:"group,omitempty"`
	Kind              string   `json:"kind"`
	Name              string   `json:"name,omitempty"`
	Namespace         string   `json:"namespace,omitempty"`
	JSONPointers      []string `json:"jsonPointers,omitempty"`
	JQPathExpressions []string `json:"jqPathExpressions,omitempty"`
	// Line is the rule's line in the policy file.
	Line int `json:"-"`
}

func (ps *parser) diffSettings(n *yaml.Node) DiffSettings {
	var d DiffSettings
	ps.fields(n, "diff", []string{"ignore", "showChartLabels"}, func(f field) {
		switch f.name {
		case "showChartLabels":
			d.ShowChartLabels, _ = ps.boolean(f.val, "diff.showChartLabels")
		case "ignore":
			items, ok := ps.list(f.val, "diff.ignore")
			if !ok {
				return
			}
			for i, it := range items {
				if r, ok := ps.ignoreRule(it, fmt.Sprintf("diff.ignore[%d]", i)); ok {
					d.Ignore = append(d.Ignore, r)
				}
			}
		}
	})
	return d
}

func (ps *parser) ignoreRule(n *yaml.Node, what string) (IgnoreRule, bool) {
	n = ps.resolve(n)
	r := IgnoreRule{Line: n.Line}
	bad := false // an entry was refused, with its own error
	ok := ps.fields(n, what, []string{"group", "kind", "name", "namespace", "jsonPointers", "jqPathExpressions"}, func(f field) {
		switch f.name {
		case "group":
			r.Group, _ = ps.str(f.val, what+".group")
		case "kind":
			r.Kind, _ = ps.str(f.val, what+".kind")
		case "name":
			r.Name, _ = ps.str(f.val, what+".name")
		case "namespace":
			r.Namespace, _ = ps.str(f.val, what+".namespace")
		case "jsonPointers":
			ptrs, _ := ps.stringList(f.val, what+".jsonPointers")
			items, _ := ps.list(f.val, what+".jsonPointers")
			for i, p := range ptrs {
				if p != "" && !strings.HasPrefix(p, "/") {
					ps.errAt(ps.resolve(items[i]), "a JSON pointer starts with /, e.g. /spec/replicas (RFC 6901; ~1 stands for / in a key)",
						"%s.jsonPointers: %q is not a JSON pointer", what, p)
					bad = true
					continue
				}
				r.JSONPointers = append(r.JSONPointers, p)
			}
		case "jqPathExpressions":
			exprs, _ := ps.stringList(f.val, what+".jqPathExpressions")
			items, _ := ps.list(f.val, what+".jqPathExpressions")
			for i, e := range exprs {
				// Argo CD runs del(<expression>) (util/argo/normalizers/diff_normalizer.go NewIgnoreNormalizer).
				q, err := gojq.Parse("del(" + e + ")")
				if err == nil {
					_, err = gojq.Compile(q)
				}
				if err != nil {
					ps.errAt(ps.resolve(items[i]), "write a jq path, e.g. .spec.template.spec.containers[] | select(.name == \"app\") | .image",
						"%s.jqPathExpressions: %q is not a jq path expression: %v", what, e, err)
					bad = true
					continue
				}
				r.JQPathExpressions = append(r.JQPathExpressions, e)
			}
		}
	})
	if !ok || bad {
		return r, false
	}
	if r.Kind == "" {
		ps.errAt(n, "name the kind the rule applies to (a glob: \"*\" for every kind)", "%s has no kind", what)
		return r, false
	}
	if len(r.JSONPointers) == 0 && len(r.JQPathExpressions) == 0 {
		ps.errAt(n, "list the fields to ignore under jsonPointers or jqPathExpressions", "%s ignores nothing", what)
		return r, false
	}
	return r, true
}
