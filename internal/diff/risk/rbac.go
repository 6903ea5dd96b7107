package risk

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// rule is one PolicyRule of a Role or ClusterRole.
type rule struct {
	apiGroups, resources, verbs, resourceNames, nonResourceURLs []string
}

func rules(o *unstructured.Unstructured) []rule {
	list, _, _ := unstructured.NestedSlice(o.Object, "rules")
	out := make([]rule, 0, len(list))
	for _, e := range list {
		m, _ := e.(map[string]any)
		out = append(out, rule{
			apiGroups: strs(m["apiGroups"]), resources: strs(m["resources"]), verbs: strs(m["verbs"]),
			resourceNames: strs(m["resourceNames"]), nonResourceURLs: strs(m["nonResourceURLs"]),
		})
	}
	return out
}

func strs(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// covers reports whether the values granted by have include want: "*" grants everything; an empty list
// grants everything when empty means "all" (resourceNames).
func covers(have, want []string, emptyIsAll bool) bool {
	if emptyIsAll && len(have) == 0 {
		return true
	}
	if slices.Contains(have, "*") {
		return true
	}
	if emptyIsAll && len(want) == 0 {
		return false // want is all names, have is some
	}
	for _, w := range want {
		if !slices.Contains(have, w) {
			// "pods/*" covers "pods/log" (the API server's subresource wildcard).
			if i := strings.IndexByte(w, '/'); i < 0 || !slices.Contains(have, w[:i]+"/*") {
				return false
			}
		}
	}
	return true
}

// grants reports whether base rule r allows everything rule w allows (RBAC is additive: w adds nothing then).
func (r rule) grants(w rule) bool {
	if len(w.nonResourceURLs) > 0 {
		return covers(r.nonResourceURLs, w.nonResourceURLs, false) && covers(r.verbs, w.verbs, false)
	}
	return len(r.nonResourceURLs) == 0 && covers(r.apiGroups, w.apiGroups, false) && covers(r.resources, w.resources, false) &&
		covers(r.verbs, w.verbs, false) && covers(r.resourceNames, w.resourceNames, true)
}

// widerRules are the head rules whose permissions no single base rule already grants. (Two base rules together
// could grant one head rule; such a rule is still reported: a false "widened" is safer than a missed one.)
func widerRules(base, head []rule) []rule {
	var out []rule
	for _, h := range head {
		if !slices.ContainsFunc(base, func(b rule) bool { return b.grants(h) }) {
			out = append(out, h)
		}
	}
	return out
}

// ruleNote summarises rules that widen: "2 rules: secrets get,list; * *" with verbs "*" called out.
func ruleNote(rs []rule) string {
	if len(rs) == 0 {
		return ""
	}
	var parts []string
	star := false
	for _, r := range rs {
		what := strings.Join(r.resources, ",")
		if len(r.nonResourceURLs) > 0 {
			what = strings.Join(r.nonResourceURLs, ",")
		}
		if len(r.resourceNames) > 0 {
			what += "(" + strings.Join(r.resourceNames, ",") + ")"
		}
		if slices.Contains(r.verbs, "*") {
			star = true
		}
		parts = append(parts, what+" "+strings.Join(r.verbs, ","))
	}
	if len(parts) > 3 {
		parts = append(parts[:3], "+"+itoa(len(parts)-3)+" more")
	}
	s := "grants " + strings.Join(parts, "; ")
	if star {
		s += " (verbs *)"
	}
	return s
}

// subjects of a binding, as "Kind namespace/name".
func subjects(o *unstructured.Unstructured) []string {
	list, _, _ := unstructured.NestedSlice(o.Object, "subjects")
	var out []string
	for _, e := range list {
		m, _ := e.(map[string]any)
		kind, _ := m["kind"].(string)
		ns, _ := m["namespace"].(string)
		name, _ := m["name"].(string)
		if ns != "" {
			name = ns + "/" + name
		}
		out = append(out, kind+" "+name)
	}
	return out
}

func roleRef(o *unstructured.Unstructured) string {
	return str(o, "roleRef", "kind") + " " + str(o, "roleRef", "name")
}

func bindingNote(added []string, ref string) string {
	var s string
	if len(added) > 0 {
		s = " binds " + strings.Join(added, ", ")
	}
	if ref != "" {
		s += " to " + ref
	}
	return s
}
