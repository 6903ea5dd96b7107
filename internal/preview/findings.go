package preview

import (
	"fmt"
	"sort"

	"github.com/fleetwave/fleetwave/internal/discover"
	"github.com/fleetwave/fleetwave/internal/report"
)

// findings records what the repository itself says (stage 6's end): the head's problems, the ApplicationSets not
// evaluated, no Argo CD app at all, paths git refuses to write; and sums the report up.
func (p *pipeline) findings(rep *report.Report) {
	for _, pr := range p.head.inv.Problems {
		rep.Problems = append(rep.Problems, pr.Error())
	}
	rep.Unevaluated = unevaluated(p.base.inv, p.head.inv)
	if !p.base.inv.Declares() && !p.head.inv.Declares() && len(rep.Unevaluated) == 0 && len(p.head.inv.Problems) == 0 {
		rep.NoApps = true
		rep.Notes = append(rep.Notes, "no Argo CD Application or ApplicationSet at either revision, so nothing was previewed: is this the GitOps repository that declares the Applications?")
	}
	for _, name := range p.head.co.Skipped() {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%q: not checked out: git refuses to write such a path (an app that reads it finds it missing)", name))
	}
	sort.Strings(rep.Problems)
	rep.Summarize()
}

// removes while they were not generated (its apps would go, unknown).
func unevaluated(base, head *discover.Inventory) []report.Unevaluated {
	var out []report.Unevaluated
	seen := map[string]bool{}
	add := func(u discover.Unevaluated) {
		seen[u.AppSet] = true
		out = append(out, report.Unevaluated{ApplicationSet: u.AppSet, File: u.File, Parent: u.Parent,
			Generators: u.Generators, Reason: u.Reason, Changed: u.Changed})
	}
	for _, u := range head.Unevaluated {
		add(u)
	}
	generated := map[string]bool{}
	for _, a := range head.Apps() {
		generated[a.AppSet] = true
	}
	for _, u := range base.Unevaluated {
		if !seen[u.AppSet] && !generated[u.AppSet] {
			u.Reason, u.Changed = "this change removes it, and what it generated is not known", true
			add(u)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ApplicationSet < out[j].ApplicationSet })
	return out
}
