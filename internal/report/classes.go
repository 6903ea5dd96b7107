package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fleetwave/fleetwave/internal/diff"
	"github.com/fleetwave/fleetwave/internal/diff/risk"
	"github.com/fleetwave/fleetwave/internal/kit/markdown"
	"github.com/fleetwave/fleetwave/internal/kit/text"
)

// Finding is one class of an app's change and the resource that carries it (Resource is empty for the app's
// hooks as a whole).
type Finding struct {
	risk.Finding
	Resource string `json:"resource,omitempty"`
}

// Findings are the classes of an app's change, most serious first: its resources' (internal/diff/risk), and
// risk.Hook when its sync runs hooks (a resource changes and the head has hooks; Argo CD runs them on every
// sync, changed or not).
func (a *App) Findings() []Finding {
	var out []Finding
	for _, r := range a.Resources {
		for _, f := range r.Risks {
			out = append(out, Finding{Finding: f, Resource: r.Key.String()})
		}
	}
	if a.Counts.Changed() {
		var hooks []string
		for _, h := range a.Hooks {
			if h.Change != diff.Removed {
				hooks = append(hooks, strings.Join(h.HookTypes, ",")+" "+h.Kind+" "+h.Name)
			}
		}
		if len(hooks) > 0 {
			out = append(out, Finding{Finding: risk.Finding{Class: risk.Hook, Detail: strings.Join(hooks, "; ")}})
		}
	}
	slices.SortStableFunc(out, func(x, y Finding) int { return x.Class.Rank() - y.Class.Rank() })
	return out
}

// RiskClasses are the distinct classes of an app's change, most serious first.
func (a *App) RiskClasses() []risk.Class {
	var out []risk.Class
	for _, f := range a.Findings() {
		if !slices.Contains(out, f.Class) {
			out = append(out, f.Class)
		}
	}
	return out
}

// ClassCount is how many apps of a preview carry a class.
type ClassCount struct {
	Class risk.Class `json:"class"`
	Apps  int        `json:"apps"`
}

// ClassCounts count the apps per class over the apps the preview shows, most serious class first.
func (r *Report) ClassCounts() []ClassCount {
	n := map[risk.Class]int{}
	for i := range r.Apps {
		if a := &r.Apps[i]; a.Status != StatusError && a.Status != StatusSkipped {
			for _, c := range a.RiskClasses() {
				n[c]++
			}
		}
	}
	var out []ClassCount
	for _, c := range risk.Classes {
		if n[c] > 0 {
			out = append(out, ClassCount{c, n[c]})
		}
	}
	return out
}

// ClassLine is the classes with their app counts for the head of the comment and the check-run summary
// ("**Classes**: `image` images changed (40 apps) · `metadata` metadata only (5 apps)"); "" when nothing changed.
func (r *Report) ClassLine() string {
	cs := r.ClassCounts()
	if len(cs) == 0 {
		return ""
	}
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("`%s` %s (%s)", c.Class, markdown.Escape(c.Class.Title()), text.Plural(c.Apps, "app"))
	}
	return "**Classes**: " + strings.Join(parts, " · ")
}

// sectionClasses is the line of an app section naming its classes: with their details when every app of the
// section has the same ones, else the class titles only (details name the app's own resources).
func sectionClasses(apps []*App) string {
	if len(apps) == 0 {
		return ""
	}
	lines := func(a *App) []string {
		var out []string
		for _, f := range a.Findings() {
			s := fmt.Sprintf("`%s`", f.Class)
			if f.Detail != "" {
				s += " " + markdown.Escape(f.Detail)
			}
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
		return out
	}
	first := lines(apps[0])
	same := true
	for _, a := range apps[1:] {
		if !slices.Equal(lines(a), first) {
			same = false
			break
		}
	}
	if !same {
		var cs []string
		seen := map[risk.Class]bool{}
		for _, a := range apps {
			for _, c := range a.RiskClasses() {
				if !seen[c] {
					seen[c] = true
					cs = append(cs, string(c))
				}
			}
		}
		slices.SortFunc(cs, func(x, y string) int { return risk.Class(x).Rank() - risk.Class(y).Rank() })
		for i, c := range cs {
			cs[i] = "`" + c + "`"
		}
		return "Classes: " + strings.Join(cs, ", ") + "\n\n"
	}
	if len(first) == 0 {
		return ""
	}
	if len(first) > 8 {
		first = append(first[:8], fmt.Sprintf("+%d more", len(first)-8))
	}
	return "Classes: " + strings.Join(first, "; ") + "\n\n"
}

// withClasses is a copy of apps with their Classes set, for the JSON form.
func withClasses(apps []App) []App {
	out := slices.Clone(apps)
	for i := range out {
		out[i].Classes = out[i].RiskClasses()
	}
	return out
}
