package plan

import (
	"slices"
	"strings"
)

// Selector picks apps by labels, like a Kubernetes label selector. It looks at the union of the
// Application's metadata.labels and its destination cluster's labels; when both have a key, the
// Application's value wins (it is the more specific statement). An empty selector matches every app.
type Selector struct {
	MatchLabels      map[string]string `json:"matchLabels,omitempty"`
	MatchExpressions []Requirement     `json:"matchExpressions,omitempty"`
	// Instances, when set, takes only the apps of these Argo CD instances (App.Instance, the instances file's
	// names), whatever their labels; the policy file's `instances: [eu, us]`.
	Instances []string `json:"instances,omitempty"`

	// argo: Argo CD rollingSync semantics (Application labels only, unknown operators as Argo CD treats them).
	argo bool
}

// Requirement is one matchExpressions entry.
type Requirement struct {
	Key      string   `json:"key"`
	Operator Operator `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

// Operator is a matchExpressions operator.
type Operator string

// The selector operators.
const (
	OpIn           Operator = "In"
	OpNotIn        Operator = "NotIn"
	OpExists       Operator = "Exists"
	OpDoesNotExist Operator = "DoesNotExist"
)

// Empty reports whether s has no requirement (it matches every app).
func (s Selector) Empty() bool {
	return len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0 && len(s.Instances) == 0
}

// String renders s the way kubectl writes selectors: "env=prd,region in (eu-1,eu-2),!canary"; "" if empty. The
// instances come first, as "@instance in (eu,us)" ("@" is in no label key, so no label requirement reads the same).
func (s Selector) String() string {
	var parts []string
	if len(s.Instances) > 0 {
		insts := slices.Clone(s.Instances)
		slices.Sort(insts)
		parts = append(parts, "@instance in ("+strings.Join(slices.Compact(insts), ",")+")")
	}
	for _, r := range s.requirements() {
		switch r.Operator {
		case OpIn:
			if len(r.Values) == 1 {
				parts = append(parts, r.Key+"="+r.Values[0])
			} else {
				parts = append(parts, r.Key+" in ("+strings.Join(r.Values, ",")+")")
			}
		case OpNotIn:
			if len(r.Values) == 1 {
				parts = append(parts, r.Key+"!="+r.Values[0])
			} else {
				parts = append(parts, r.Key+" notin ("+strings.Join(r.Values, ",")+")")
			}
		case OpExists:
			parts = append(parts, r.Key)
		case OpDoesNotExist:
			parts = append(parts, "!"+r.Key)
		default:
			parts = append(parts, r.Key+" "+string(r.Operator)+" ("+strings.Join(r.Values, ",")+")")
		}
	}
	return strings.Join(parts, ",")
}

// requirements is s as one sorted list (matchLabels become In with one value), the canonical form.
func (s Selector) requirements() []Requirement {
	reqs := make([]Requirement, 0, len(s.MatchLabels)+len(s.MatchExpressions))
	for k, v := range s.MatchLabels {
		reqs = append(reqs, Requirement{Key: k, Operator: OpIn, Values: []string{v}})
	}
	for _, r := range s.MatchExpressions {
		vals := slices.Clone(r.Values)
		slices.Sort(vals)
		reqs = append(reqs, Requirement{Key: r.Key, Operator: r.Operator, Values: slices.Compact(vals)})
	}
	slices.SortFunc(reqs, func(a, b Requirement) int {
		if c := strings.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		if c := strings.Compare(string(a.Operator), string(b.Operator)); c != 0 {
			return c
		}
		return slices.Compare(a.Values, b.Values)
	})
	return reqs
}

// matcher is a selector compiled for speed: requirements in canonical order, In/NotIn values as sets when big.
type matcher struct {
	reqs      []compiledReq
	argo      bool
	instances []string // nil: any instance
}

type compiledReq struct {
	key    string
	op     Operator
	values []string
	set    map[string]struct{} // for long value lists
}

func (s Selector) compile() matcher {
	m := matcher{argo: s.argo, instances: s.Instances}
	for _, r := range s.requirements() {
		c := compiledReq{key: r.Key, op: r.Operator, values: r.Values}
		if len(r.Values) > 8 {
			c.set = make(map[string]struct{}, len(r.Values))
			for _, v := range r.Values {
				c.set[v] = struct{}{}
			}
		}
		m.reqs = append(m.reqs, c)
	}
	return m
}

func (c *compiledReq) has(v string) bool {
	if c.set != nil {
		_, ok := c.set[v]
		return ok
	}
	return slices.Contains(c.values, v)
}

// matches reports whether a is selected. Kubernetes semantics
// (k8s.io/apimachinery/pkg/labels/selector.go Requirement.Matches): In needs the key with a listed value, NotIn
// and DoesNotExist hold when the key is absent, Exists needs the key; unknown operators never match.
func (m *matcher) matches(a *App) bool {
	if m.instances != nil && !slices.Contains(m.instances, a.Instance) {
		return false
	}
	if m.argo {
		return m.matchesArgo(a)
	}
	for i := range m.reqs {
		r := &m.reqs[i]
		v, ok := a.label(r.key)
		switch r.op {
		case OpIn:
			if !ok || !r.has(v) {
				return false
			}
		case OpNotIn:
			if ok && r.has(v) {
				return false
			}
		case OpExists:
			if !ok {
				return false
			}
		case OpDoesNotExist:
			if ok {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// matchesArgo is Argo CD's rollingSync step selection, argo-cd v3.2.11
// applicationset/controllers/applicationset_controller.go buildAppDependencyList and labelMatchedExpression:
// only the Application's labels count; a present key must satisfy In/NotIn (any other operator fails); an
// absent key fails In and is ignored for every other operator.
func (m *matcher) matchesArgo(a *App) bool {
	for i := range m.reqs {
		r := &m.reqs[i]
		v, ok := a.Labels[r.key]
		if !ok {
			if r.op == OpIn {
				return false
			}
			continue
		}
		switch r.op {
		case OpIn:
			if !r.has(v) {
				return false
			}
		case OpNotIn:
			if r.has(v) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// label looks key up in the app's labels, then in its destination cluster's labels.
func (a *App) label(key string) (string, bool) {
	if v, ok := a.Labels[key]; ok {
		return v, true
	}
	v, ok := a.ClusterLabels[key]
	return v, ok
}
