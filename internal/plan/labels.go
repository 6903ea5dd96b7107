package plan

import (
	"slices"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/fleetwave/fleetwave/internal/diff/risk"
)

// ClassLabel is the pull-request label the policy puts on a change carrying a risk class (`labels:` in
// .fleetwave.yaml: {crd: "risk: crd", image: images}).
type ClassLabel struct {
	Class string
	Label string
	// Line is where the class is named in the policy file.
	Line int
}

// maxLabelName is the longest label name GitHub accepts.
const maxLabelName = 50

// labels parses the policy's labels: a mapping of risk class to label name.
func (ps *parser) labels(n *yaml.Node, p *Policy) {
	fs, ok := ps.mapping(n, "labels")
	if !ok {
		return
	}
	for _, f := range fs {
		if !risk.Known(f.name) {
			ps.errAt(f.key, "classes are "+classList(), "labels: unknown class %q", f.name)
			continue
		}
		v, ok := ps.str(f.val, "labels."+f.name)
		if !ok {
			continue
		}
		switch name := strings.TrimSpace(v); {
		case name == "":
			ps.errAt(ps.resolve(f.val), "name the pull-request label this class puts on the change", "labels.%s is empty", f.name)
			continue
		case utf8.RuneCountInString(name) > maxLabelName:
			ps.errAt(ps.resolve(f.val), "GitHub's label names are at most 50 characters", "labels.%s: %q is too long for a label", f.name, name)
			continue
		case name != v:
			ps.errAt(ps.resolve(f.val), "GitHub trims label names; write it without the spaces around it", "labels.%s: %q has spaces around it", f.name, v)
			continue
		}
		p.Labels = append(p.Labels, ClassLabel{Class: f.name, Label: v, Line: f.key.Line})
	}
	slices.SortStableFunc(p.Labels, func(a, b ClassLabel) int { return risk.Class(a.Class).Rank() - risk.Class(b.Class).Rank() })
}

// PullRequestLabels says which labels the policy puts on a change whose apps carry classes: want are the labels
// of the classes present, managed every label the policy names (a label of several classes is wanted when one
// of them is present). Labels compare case-insensitively, as GitHub's do. Both are nil without labels.
func (p *Policy) PullRequestLabels(classes []risk.Class) (want, managed []string) {
	for _, l := range p.Labels {
		if !containsFold(managed, l.Label) {
			managed = append(managed, l.Label)
		}
		if slices.Contains(classes, risk.Class(l.Class)) && !containsFold(want, l.Label) {
			want = append(want, l.Label)
		}
	}
	return want, managed
}

func containsFold(list []string, s string) bool {
	return slices.ContainsFunc(list, func(x string) bool { return strings.EqualFold(x, s) })
}

// acknowledge parses the classes that need a person's acknowledgement: a list of risk classes.
func (ps *parser) acknowledge(n *yaml.Node, p *Policy) {
	cs, ok := ps.stringList(n, "acknowledge")
	if !ok {
		return
	}
	if len(cs) == 0 {
		ps.errAt(ps.resolve(n), "name the risk classes a person must acknowledge, or leave acknowledge out", "acknowledge is empty")
	}
	for j, c := range cs {
		node := ps.resolve(n).Content[j]
		switch {
		case !risk.Known(c):
			ps.errAt(node, "classes are "+classList(), "acknowledge: unknown class %q", c)
		case slices.Contains(p.Acknowledge, c):
			ps.errAt(node, "name each class once", "acknowledge: class %q is listed twice", c)
		default:
			p.Acknowledge = append(p.Acknowledge, c)
		}
	}
	slices.SortStableFunc(p.Acknowledge, func(a, b string) int { return risk.Class(a).Rank() - risk.Class(b).Rank() })
}

// NeedAcknowledgement are the classes among classes that the policy asks a person to acknowledge, most serious
// first (nil: none).
func (p *Policy) NeedAcknowledgement(classes []risk.Class) []risk.Class {
	var out []risk.Class
	for _, c := range p.Acknowledge {
		if slices.Contains(classes, risk.Class(c)) {
			out = append(out, risk.Class(c))
		}
	}
	return out
}
