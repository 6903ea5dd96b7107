package plan

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// MaxPolicyBytes is the largest policy file ParsePolicy reads.
const MaxPolicyBytes = 1 << 20

// ParsePolicy reads a release policy strictly: unknown fields, duplicate keys, wrong types, bad durations and
// percentages, missing or duplicate wave names are errors. A *PolicyError lists all of them with
// file:line:col and a hint. Valid but suspicious settings come back as Policy.Warnings.
func ParsePolicy(filename string, data []byte) (*Policy, error) {
	ps := &parser{file: filename}
	if len(data) > MaxPolicyBytes {
		ps.diags = append(ps.diags, Diagnostic{File: filename, Line: 1, Column: 1,
			Message: fmt.Sprintf("policy is %d bytes, more than the %d a policy may have", len(data), MaxPolicyBytes)})
		return nil, ps.result()
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			ps.diags = append(ps.diags, Diagnostic{File: filename, Line: 1, Column: 1, Message: "the policy is empty",
				Hint: "start with apiVersion: " + APIVersion + " and a list of waves"})
		} else {
			ps.syntaxError(err)
		}
		return nil, ps.result()
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		ps.errAt(&extra, "keep the policy in one document", "the policy file has more than one YAML document")
	} else if !errors.Is(err, io.EOF) {
		ps.syntaxError(err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	p := ps.policy(root)
	if err := ps.result(); err != nil {
		return nil, err
	}
	p.Source = filename
	p.Warnings = append(p.Warnings, ps.diags...)
	return p, nil
}

func (ps *parser) policy(root *yaml.Node) *Policy {
	p := &Policy{OnFailure: OnFailurePause, AutomatedSync: AutomatedSyncForbid, OnConflict: ConflictWait, Commands: map[string]CommandRule{}}
	var apiVersionSeen, wavesSeen bool
	var requireCanaryKey *yaml.Node
	var waveNodes []*yaml.Node
	known := []string{"apiVersion", "appKindLabel", "automatedSync", "commands", "diff", "onConflict", "onFailure", "outOfPlanSync", "prune", "requireCanary", "tracks", "waves"}
	fs, ok := ps.mapping(root, "the policy")
	if !ok {
		return p
	}
	// Top-level keys starting with "x-" are free for YAML anchors (as in docker compose files).
	fs = slices.DeleteFunc(fs, func(f field) bool { return strings.HasPrefix(f.name, "x-") })
	ok = ps.fieldsOf(fs, "the policy", known, func(f field) {
		switch f.name {
		case "apiVersion":
			apiVersionSeen = true
			if v, ok := ps.str(f.val, "apiVersion"); ok {
				if v != APIVersion {
					ps.errAt(ps.resolve(f.val), "this fleetwave reads apiVersion: "+APIVersion, "unsupported apiVersion %q", v)
				}
				p.APIVersion = v
			}
		case "waves":
			wavesSeen = true
			var isList bool
			waveNodes, isList = ps.list(f.val, "waves")
			if isList && len(waveNodes) == 0 {
				ps.errAt(ps.resolve(f.val), "list the waves in rollout order, each with a name and a selector", "waves is empty")
			}
		case "onFailure":
			p.OnFailure = ps.onFailure(f.val, "onFailure")
		case "automatedSync":
			if v, ok := ps.mode(f.val, "automatedSync", "use forbid (the default) or disable-during-rollout",
				string(AutomatedSyncForbid), string(AutomatedSyncDisableDuringRollout)); ok {
				p.AutomatedSync = AutomatedSyncMode(v)
			}
		case "onConflict":
			if v, ok := ps.mode(f.val, "onConflict", "use wait (the default: the newer rollout queues) or supersede (the older one stops)",
				string(ConflictWait), string(ConflictSupersede)); ok {
				p.OnConflict = ConflictMode(v)
			}
		case "outOfPlanSync":
			if v, ok := ps.mode(f.val, "outOfPlanSync", "use pause (the default: the rollout pauses) or continue (the apps are only reported)",
				string(OutOfPlanSyncPause), string(OutOfPlanSyncContinue)); ok {
				p.OutOfPlanSync = OutOfPlanSyncMode(v)
			}
		case "prune":
			p.Prune, _ = ps.boolean(f.val, "prune")
		case "requireCanary":
			requireCanaryKey = f.key
			p.RequireCanary, _ = ps.boolean(f.val, "requireCanary")
		case "appKindLabel":
			if v, ok := ps.str(f.val, "appKindLabel"); ok {
				if !validLabelKey(v) {
					ps.errAt(ps.resolve(f.val), "name an Application label key such as app.kubernetes.io/name",
						"appKindLabel: %q is not a label key", v)
				}
				p.AppKindLabel = v
			}
		case "commands":
			ps.commands(f.val, p)
		case "diff":
			p.Diff = ps.diffSettings(f.val)
		case "tracks":
			ps.tracks(f.val, p)
		}
	})
	if !ok {
		return p
	}
	if !apiVersionSeen {
		ps.errAt(root, "start the policy with apiVersion: "+APIVersion, "the policy has no apiVersion")
	}
	if !wavesSeen {
		ps.errAt(root, "list the waves in rollout order, each with a name and a selector", "the policy has no waves")
	}
	names := map[string]WavePolicy{}
	for i, wn := range waveNodes {
		w, ok := ps.wave(wn, i)
		if !ok {
			continue
		}
		// Names compare case-insensitively, as /approve and /rollback name waves: "prod" and "PROD" are one wave.
		if first, dup := names[strings.ToLower(w.Name)]; dup && w.Name != "" {
			hint := fmt.Sprintf("first defined at line %d; wave names must be unique", first.Line)
			if first.Name != w.Name {
				hint = fmt.Sprintf("first defined at line %d as %q; wave names must be unique whatever their case", first.Line, first.Name)
			}
			ps.errAt(wn, hint, "duplicate wave name %q", w.Name)
			continue
		}
		names[strings.ToLower(w.Name)] = w
		p.Waves = append(p.Waves, w)
	}
	for _, t := range p.Tracks {
		if _, clash := names[strings.ToLower(t.Name)]; clash && t.OneWave {
			ps.errAt(&yaml.Node{Line: t.Line, Column: 1}, "a oneWave track's apps go in a wave of its name; name the track otherwise",
				"track %q has the name of a wave", t.Name)
		}
	}
	ps.crossCheck(p, requireCanaryKey)
	return p
}

// mode reads a string that must be one of allowed; anything else is an error with hint.
func (ps *parser) mode(n *yaml.Node, what, hint string, allowed ...string) (string, bool) {
	v, ok := ps.str(n, what)
	if !ok {
		return "", false
	}
	if !slices.Contains(allowed, v) {
		ps.errAt(ps.resolve(n), hint, "%s: unknown mode %q", what, v)
		return "", false
	}
	return v, true
}

func (ps *parser) onFailure(n *yaml.Node, what string) FailureAction {
	v, ok := ps.str(n, what)
	if !ok {
		return ""
	}
	switch FailureAction(v) {
	case OnFailurePause, OnFailureRollback:
		return FailureAction(v)
	}
	ps.errAt(ps.resolve(n), "use pause or rollback", "%s: unknown action %q", what, v)
	return ""
}

func (ps *parser) commands(n *yaml.Node, p *Policy) {
	names := CommandNames()
	ps.fields(n, "commands", names, func(f field) {
		what := "commands." + f.name
		var rule CommandRule
		ps.fields(f.val, what, []string{"permission", "teams"}, func(g field) {
			switch g.name {
			case "permission":
				if v, ok := ps.str(g.val, what+".permission"); ok {
					if Permission(v).rank() == 0 {
						ps.errAt(ps.resolve(g.val), "use read, triage, write, maintain or admin",
							"%s.permission: unknown permission %q", what, v)
					}
					rule.Permission = Permission(v)
				}
			case "teams":
				rule.Teams = ps.teams(g.val, what+".teams")
			}
		})
		if rule.Permission == "" && len(rule.Teams) == 0 {
			ps.errAt(f.key, "give a permission (read, triage, write, maintain, admin) and/or teams",
				"%s says nobody may run /%s", what, f.name)
			return
		}
		p.Commands[f.name] = rule
	})
}

func (ps *parser) wave(n *yaml.Node, index int) (WavePolicy, bool) {
	n = ps.resolve(n)
	w := WavePolicy{Line: n.Line}
	what := fmt.Sprintf("wave %d", index+1)
	if n.Kind == yaml.MappingNode { // name the wave in messages about its keys, if it has a plain name
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k, v := n.Content[i], n.Content[i+1]; k.Value == "name" && v.Kind == yaml.ScalarNode && validWaveName(v.Value) {
				what = fmt.Sprintf("wave %q", v.Value)
			}
		}
	}
	var selectorSeen bool
	known := []string{"approval", "failureThreshold", "gates", "maxParallel", "maxPerLabel", "name", "onFailure",
		"production", "requireCanary", "selector", "soak"}
	// Read the name first so that messages about other fields can name the wave.
	fs, ok := ps.mapping(n, what)
	if !ok {
		return w, false
	}
	for _, f := range fs {
		if f.name == "name" && !isNull(ps.resolve(f.val)) {
			if v, ok := ps.str(f.val, what+" name"); ok {
				if !validWaveName(v) {
					ps.errAt(ps.resolve(f.val), "use 1 to 63 letters, digits, '.', '_' or '-' (the name appears in "+
						"check-runs and in /approve <wave>; \"all\" is reserved)", "invalid wave name %q", v)
				}
				w.Name = v
				what = fmt.Sprintf("wave %q", v)
			}
		}
	}
	ps.fieldsOf(fs, what, known, func(f field) {
		switch f.name {
		case "selector":
			selectorSeen = true
			w.Selector = ps.selector(f.val, what+" selector")
		case "maxParallel":
			if q, ok := ps.quantity(f.val, what+" maxParallel"); ok {
				w.MaxParallel = &q
			}
		case "maxPerLabel":
			fs, _ := ps.mapping(f.val, what+" maxPerLabel")
			for _, l := range fs {
				if !validLabelKey(l.name) {
					ps.errAt(l.key, "name a cluster label key such as region", "%s maxPerLabel: %q is not a label key", what, l.name)
					continue
				}
				if v, ok := ps.integer(l.val, fmt.Sprintf("%s maxPerLabel %s", what, l.name)); ok {
					w.MaxPerLabel = append(w.MaxPerLabel, LabelLimit{Key: l.name, Max: v})
				}
			}
			slices.SortFunc(w.MaxPerLabel, func(a, b LabelLimit) int { return cmp.Compare(a.Key, b.Key) })
		case "soak":
			w.Soak, _ = ps.duration(f.val, what+" soak")
		case "approval":
			w.Approval = ps.approval(f.val, what+" approval")
		case "gates":
			w.Gates = ps.gates(f.val, what+" gates")
		case "failureThreshold":
			w.FailureThreshold, _ = ps.quantity(f.val, what+" failureThreshold")
		case "onFailure":
			w.OnFailure = ps.onFailure(f.val, what+" onFailure")
		case "production":
			w.Production, _ = ps.boolean(f.val, what+" production")
		case "requireCanary":
			if b, ok := ps.boolean(f.val, what+" requireCanary"); ok {
				w.RequireCanary = &b
			}
		}
	})
	if w.Name == "" {
		ps.errAt(n, "give every wave a unique name: it appears in check-runs and in /approve <wave>", "%s has no name", what)
	}
	if !selectorSeen {
		ps.errAt(n, "use selector: {} to take every app no earlier wave took", "%s has no selector", what)
	}
	return w, true
}

func (ps *parser) selector(n *yaml.Node, what string) Selector {
	var s Selector
	ps.fields(n, what, []string{"instances", "matchExpressions", "matchLabels"}, func(f field) {
		switch f.name {
		case "instances":
			names, ok := ps.stringList(f.val, what+" instances")
			if !ok {
				return
			}
			if len(names) == 0 {
				ps.errAt(ps.resolve(f.val), "name the Argo CD instances the wave takes (instances: [eu, us]), or leave instances out to take every instance's",
					"%s instances is empty", what)
				return
			}
			for _, name := range names {
				if strings.TrimSpace(name) == "" {
					ps.errAt(ps.resolve(f.val), "write each instance's name as the instances file names it", "%s instances: an empty name", what)
					return
				}
			}
			s.Instances = names
		case "matchLabels":
			fs, _ := ps.mapping(f.val, what+" matchLabels")
			if len(fs) > 0 {
				s.MatchLabels = make(map[string]string, len(fs))
			}
			for _, l := range fs {
				if !validLabelKey(l.name) {
					ps.errAt(l.key, "label keys look like env or example.com/tier", "%s matchLabels: %q is not a label key", what, l.name)
					continue
				}
				v := ps.resolve(l.val)
				if v.Kind != yaml.ScalarNode || isNull(v) {
					ps.errAt(v, `write the label value, quoted ("") when empty`, "%s matchLabels %s must be a value, not %s",
						what, l.name, describe(v))
					continue
				}
				s.MatchLabels[l.name] = v.Value
			}
		case "matchExpressions":
			items, _ := ps.list(f.val, what+" matchExpressions")
			for i, it := range items {
				if r, ok := ps.requirement(it, fmt.Sprintf("%s matchExpressions[%d]", what, i)); ok {
					s.MatchExpressions = append(s.MatchExpressions, r)
				}
			}
		}
	})
	return s
}

const operatorHint = "operators are In, NotIn, Exists and DoesNotExist"

func (ps *parser) requirement(n *yaml.Node, what string) (Requirement, bool) {
	var r Requirement
	var valuesNode *yaml.Node
	var operatorSeen bool
	ok := ps.fields(n, what, []string{"key", "operator", "values"}, func(f field) {
		switch f.name {
		case "key":
			if v, ok := ps.str(f.val, what+" key"); ok {
				if !validLabelKey(v) {
					ps.errAt(ps.resolve(f.val), "label keys look like env or example.com/tier", "%s: %q is not a label key", what, v)
				}
				r.Key = v
			}
		case "operator":
			operatorSeen = true
			if v, ok := ps.str(f.val, what+" operator"); ok {
				switch Operator(v) {
				case OpIn, OpNotIn, OpExists, OpDoesNotExist:
					r.Operator = Operator(v)
				default:
					ps.errAt(ps.resolve(f.val), operatorHint+suggestOperator(v), "%s: unknown operator %q", what, v)
				}
			}
		case "values":
			valuesNode = ps.resolve(f.val)
			r.Values, _ = ps.stringList(f.val, what+" values")
		}
	})
	if !ok {
		return r, false
	}
	n = ps.resolve(n)
	if r.Key == "" {
		ps.errAt(n, "every expression needs a key", "%s has no key", what)
	}
	switch r.Operator {
	case "":
		if !operatorSeen {
			ps.errAt(n, operatorHint, "%s has no operator", what)
		}
	case OpIn, OpNotIn:
		if len(r.Values) == 0 {
			at := n
			if valuesNode != nil {
				at = valuesNode
			}
			ps.errAt(at, "In and NotIn need at least one value", "%s: %s without values", what, r.Operator)
		}
	case OpExists, OpDoesNotExist:
		if len(r.Values) > 0 {
			ps.errAt(valuesNode, "Exists and DoesNotExist take no values", "%s: %s with values", what, r.Operator)
		}
	}
	return r, true
}

func suggestOperator(v string) string {
	for _, op := range []Operator{OpIn, OpNotIn, OpExists, OpDoesNotExist} {
		if strings.EqualFold(string(op), v) || strings.EqualFold(strings.ReplaceAll(string(op), "Not", "Not "), v) {
			return fmt.Sprintf("; did you mean %q?", op)
		}
	}
	return ""
}

func (ps *parser) approval(n *yaml.Node, what string) Approval {
	// An approval block means approval before the wave starts, unless it says required: false or when: after.
	a := Approval{Required: true, When: ApprovalBefore}
	var requiredKey *yaml.Node
	ps.fields(n, what, []string{"required", "teams", "when"}, func(f field) {
		switch f.name {
		case "required":
			requiredKey = f.key
			a.Required, _ = ps.boolean(f.val, what+" required")
		case "teams":
			a.Teams = ps.teams(f.val, what+" teams")
		case "when":
			v, ok := ps.str(f.val, what+" when")
			switch ApprovalTiming(v) {
			case ApprovalBefore, ApprovalAfter:
				a.When = ApprovalTiming(v)
			default:
				if !ok {
					return
				}
				ps.errAt(f.val, "before: no app of the wave syncs until someone approves (the default); after: "+
					"the wave syncs and passes its soak and gates, then waits for approval before the next wave",
					"%s when must be before or after, not %q", what, v)
			}
		}
	})
	if !a.Required && len(a.Teams) > 0 && requiredKey != nil {
		ps.errAt(requiredKey, "drop required: false to ask those teams for approval, or drop the teams",
			"%s names teams but says approval is not required", what)
	}
	return a
}

func (ps *parser) gates(n *yaml.Node, what string) []MetricGate {
	items, _ := ps.list(n, what)
	var out []MetricGate
	for i, it := range items {
		gw := fmt.Sprintf("%s[%d]", what, i)
		var g MetricGate
		fs, ok := ps.mapping(it, gw)
		if !ok {
			continue
		}
		if len(fs) == 0 {
			ps.errAt(ps.resolve(it), "write a gate as prometheus: {url, query, max or min, for}", "%s is empty", gw)
			continue
		}
		ps.fieldsOf(fs, gw, []string{"prometheus"}, func(f field) {
			g.Prometheus = ps.prometheus(f.val, gw+" prometheus")
		})
		if g.Prometheus == nil {
			continue
		}
		out = append(out, g)
	}
	return out
}

func (ps *parser) prometheus(n *yaml.Node, what string) *PrometheusGate {
	g := &PrometheusGate{}
	var urlSeen, querySeen, boundSeen bool
	ps.fields(n, what, []string{"for", "max", "min", "query", "url"}, func(f field) {
		switch f.name {
		case "url":
			urlSeen = true
			if v, ok := ps.str(f.val, what+" url"); ok {
				u, err := url.Parse(v)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					ps.errAt(ps.resolve(f.val), "give the Prometheus base URL, e.g. http://prometheus.monitoring:9090",
						"%s url %q is not an http(s) URL", what, v)
				}
				g.URL = v
			}
		case "query":
			querySeen = true
			if v, ok := ps.str(f.val, what+" query"); ok {
				if strings.TrimSpace(v) == "" {
					ps.errAt(ps.resolve(f.val), "write a PromQL query that returns one number", "%s query is empty", what)
				}
				g.Query = v
			}
		case "max":
			boundSeen = true
			if v, ok := ps.number(f.val, what+" max"); ok {
				g.Max = &v
			}
		case "min":
			boundSeen = true
			if v, ok := ps.number(f.val, what+" min"); ok {
				g.Min = &v
			}
		case "for":
			g.For, _ = ps.duration(f.val, what+" for")
		}
	})
	at := ps.resolve(n)
	if !urlSeen {
		ps.errAt(at, "give the Prometheus base URL, e.g. http://prometheus.monitoring:9090", "%s has no url", what)
	}
	if !querySeen {
		ps.errAt(at, "write a PromQL query that returns one number", "%s has no query", what)
	}
	if !boundSeen {
		ps.errAt(at, "the gate passes while the query's value stays at most max and/or at least min", "%s has neither max nor min", what)
	}
	if g.Max != nil && g.Min != nil && *g.Min > *g.Max {
		ps.errAt(at, "min must not exceed max", "%s min %v is above max %v", what, *g.Min, *g.Max)
	}
	return g
}

// crossCheck reports what no single field shows: canary rules without a wave to check, the first wave asking
// for a canary, and warnings for zero limits and waves that can never receive an app.
func (ps *parser) crossCheck(p *Policy, requireCanaryKey *yaml.Node) {
	if p.RequireCanary && requireCanaryKey != nil && !slices.ContainsFunc(p.Waves, func(w WavePolicy) bool { return w.Production }) {
		ps.errAt(requireCanaryKey, "mark the production waves with production: true, or set requireCanary on a wave",
			"requireCanary is on but no wave is marked production")
	}
	if len(p.Waves) > 0 {
		w := p.Waves[0]
		first := p.RequireCanary && w.Production
		if w.RequireCanary != nil {
			first = *w.RequireCanary
		}
		if first {
			ps.diags = append(ps.diags, Diagnostic{File: ps.file, Line: w.Line, Message: fmt.Sprintf(
				"wave %q is the first wave, so it can never have a canary before it", w.Name),
				Hint: "add a canary wave before it, or set requireCanary: false on it"})
		}
	}
	for i, w := range p.Waves {
		if w.MaxParallel != nil && w.MaxParallel.Value == 0 {
			ps.warnAt(w.Line, "use at least 1", "wave %q: maxParallel %s admits no cluster; its apps will be reported "+
				"as %s", w.Name, w.MaxParallel, RuleUnsatisfiableLimits)
		}
		for _, l := range w.MaxPerLabel {
			if l.Max == 0 {
				ps.warnAt(w.Line, "use at least 1", "wave %q: maxPerLabel %s: 0 admits no cluster labelled %s; its apps "+
					"there will be reported as %s", w.Name, l.Key, l.Key, RuleUnsatisfiableLimits)
			}
		}
		if w.Production && !w.Approval.Required && w.Soak == 0 {
			ps.warnAt(w.Line, "add approval: {} to hold it until someone approves, or soak: 10m to watch it before the next wave",
				"wave %q is marked production but has neither an approval nor a soak: it starts as soon as the wave "+
					"before it succeeds, and the next wave as soon as it has synced", w.Name)
		}
		canon := w.Selector.String()
		for _, earlier := range p.Waves[:i] {
			if earlier.Selector.Empty() || earlier.Selector.String() == canon {
				ps.warnAt(w.Line, "reorder the waves or narrow the earlier selector", "wave %q can never receive an app: "+
					"wave %q (line %d) comes first and selects every app it would", w.Name, earlier.Name, earlier.Line)
				break
			}
		}
	}
}
