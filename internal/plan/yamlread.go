package plan

// Strict reading of YAML nodes: every helper reports problems as diagnostics with the node's position.

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/fleetwave/fleetwave/internal/kit/yamlcodec"
)

// maxNodes bounds the YAML nodes ParsePolicy visits, aliases expanded (a guard against alias bombs).
const maxNodes = 200_000

// maxDiagnostics bounds the errors one parse reports.
const maxDiagnostics = 100

type parser struct {
	file  string
	diags []Diagnostic
	nodes int
}

func (ps *parser) result() error {
	var errs []Diagnostic
	for _, d := range ps.diags {
		if !d.Warning {
			errs = append(errs, d)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	slices.SortStableFunc(errs, func(a, b Diagnostic) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	if len(errs) > maxDiagnostics {
		errs = errs[:maxDiagnostics]
	}
	return &PolicyError{File: ps.file, Diagnostics: errs}
}

func (ps *parser) errAt(n *yaml.Node, hint, format string, args ...any) {
	ps.diags = append(ps.diags, Diagnostic{File: ps.file, Line: n.Line, Column: n.Column,
		Message: fmt.Sprintf(format, args...), Hint: hint})
}

func (ps *parser) warnAt(line int, hint, format string, args ...any) {
	ps.diags = append(ps.diags, Diagnostic{File: ps.file, Line: line,
		Message: fmt.Sprintf(format, args...), Hint: hint, Warning: true})
}

// syntaxError turns a yaml.v3 error ("yaml: line 3: did not find expected key") into a diagnostic.
func (ps *parser) syntaxError(err error) {
	line, msg := yamlcodec.ErrorLine(err)
	ps.diags = append(ps.diags, Diagnostic{File: ps.file, Line: line, Message: "invalid YAML: " + msg,
		Hint: "check the indentation, and quote values that contain ': ' or start with special characters"})
}

// resolve follows aliases and counts visited nodes.
func (ps *parser) resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	ps.nodes++
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if isNull(n) {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

type field struct {
	name string
	key  *yaml.Node
	val  *yaml.Node
}

// mapping returns n's key/value pairs with YAML merge keys (<<) applied (explicit keys win), reporting duplicate
// and non-string keys. ok is false when n is not a mapping.
func (ps *parser) mapping(n *yaml.Node, what string) ([]field, bool) {
	return ps.mappingDepth(n, what, 0)
}

func (ps *parser) mappingDepth(n *yaml.Node, what string, depth int) ([]field, bool) {
	n = ps.resolve(n)
	if n.Kind != yaml.MappingNode {
		ps.errAt(n, "", "%s must be a mapping, not %s", what, describe(n))
		return nil, false
	}
	var out []field
	seen := map[string]*yaml.Node{}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := ps.resolve(n.Content[i]), n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if k.Kind != yaml.ScalarNode || isNull(k) {
			ps.errAt(k, "", "keys of %s must be strings", what)
			continue
		}
		if first, dup := seen[k.Value]; dup {
			ps.errAt(k, fmt.Sprintf("first set at line %d", first.Line), "duplicate key %q in %s", k.Value, what)
			continue
		}
		seen[k.Value] = k
		out = append(out, field{name: k.Value, key: k, val: v})
	}
	for _, m := range merges {
		if depth > 10 {
			ps.errAt(m, "", "merge keys (<<) in %s nest too deep or refer to themselves", what)
			break
		}
		m = ps.resolve(m)
		sources := []*yaml.Node{m}
		if m.Kind == yaml.SequenceNode {
			sources = m.Content
		}
		for _, src := range sources {
			sub, ok := ps.mappingDepth(src, what, depth+1)
			if !ok {
				continue
			}
			for _, f := range sub {
				if _, dup := seen[f.name]; !dup {
					seen[f.name] = f.key
					out = append(out, f)
				}
			}
		}
	}
	return out, true
}

// fields calls handle for every known, non-null field of mapping n and reports unknown ones.
func (ps *parser) fields(n *yaml.Node, what string, known []string, handle func(f field)) bool {
	fs, ok := ps.mapping(n, what)
	if !ok {
		return false
	}
	return ps.fieldsOf(fs, what, known, handle)
}

// fieldsOf is fields over pairs mapping already returned.
func (ps *parser) fieldsOf(fs []field, what string, known []string, handle func(f field)) bool {
	for _, f := range fs {
		if !slices.Contains(known, f.name) {
			ps.errAt(f.key, suggest(f.name, known), "unknown field %q in %s", f.name, what)
			continue
		}
		if ps.nodes > maxNodes {
			ps.errAt(f.key, "", "the policy expands to more than %d YAML nodes (aliases)", maxNodes)
			return false
		}
		if isNull(ps.resolve(f.val)) {
			continue // an explicit null is the same as leaving the field out
		}
		handle(f)
	}
	return true
}

// suggest proposes the known name closest to an unknown one.
func suggest(name string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		if strings.EqualFold(k, name) {
			return fmt.Sprintf("did you mean %q?", k)
		}
		if d := editDistance(strings.ToLower(name), strings.ToLower(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	if best != "" {
		return fmt.Sprintf("did you mean %q?", best)
	}
	return "known fields: " + strings.Join(known, ", ")
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func (ps *parser) str(n *yaml.Node, what string) (string, bool) {
	n = ps.resolve(n)
	if n.Kind != yaml.ScalarNode || isNull(n) {
		ps.errAt(n, "", "%s must be a string, not %s", what, describe(n))
		return "", false
	}
	return n.Value, true
}

func (ps *parser) boolean(n *yaml.Node, what string) (bool, bool) {
	n = ps.resolve(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!bool" {
		b, err := strconv.ParseBool(strings.ToLower(n.Value))
		if err == nil {
			return b, true
		}
	}
	ps.errAt(n, "write true or false", "%s must be true or false, not %s", what, describe(n))
	return false, false
}

func (ps *parser) integer(n *yaml.Node, what string) (int, bool) {
	n = ps.resolve(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!int" {
		if v, err := strconv.Atoi(n.Value); err == nil && v >= 0 {
			return v, true
		}
	}
	ps.errAt(n, "write a whole number such as 1", "%s must be a whole number of 0 or more, not %s", what, describe(n))
	return 0, false
}

func (ps *parser) number(n *yaml.Node, what string) (float64, bool) {
	n = ps.resolve(n)
	if n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float") {
		if f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64); err == nil && finite(f) {
			return f, true
		}
	}
	ps.errAt(n, "write a number such as 0.01", "%s must be a finite number, not %s", what, describe(n))
	return 0, false
}

const quantityHint = `write a count such as 5 or a percentage such as "25%" (0% to 100%)`

func (ps *parser) quantity(n *yaml.Node, what string) (Quantity, bool) {
	n = ps.resolve(n)
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!str") {
		ps.errAt(n, quantityHint, "%s must be a count or a percentage, not %s", what, describe(n))
		return Quantity{}, false
	}
	q, err := parseQuantity(n.Value)
	if err != nil {
		ps.errAt(n, quantityHint, "%s: %v", what, err)
		return Quantity{}, false
	}
	return q, true
}

const durationHint = "write a Go duration such as 90s, 10m or 1h30m"

func (ps *parser) duration(n *yaml.Node, what string) (Duration, bool) {
	n = ps.resolve(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!int" {
		ps.errAt(n, durationHint, "%s %s has no unit", what, n.Value)
		return 0, false
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		ps.errAt(n, durationHint, "%s must be a duration, not %s", what, describe(n))
		return 0, false
	}
	d, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if err != nil {
		ps.errAt(n, durationHint, "%s: %q is not a duration", what, n.Value)
		return 0, false
	}
	if d < 0 {
		ps.errAt(n, durationHint, "%s: %q is negative", what, n.Value)
		return 0, false
	}
	return Duration(d), true
}

func (ps *parser) list(n *yaml.Node, what string) ([]*yaml.Node, bool) {
	n = ps.resolve(n)
	if n.Kind != yaml.SequenceNode {
		ps.errAt(n, "", "%s must be a list, not %s", what, describe(n))
		return nil, false
	}
	return n.Content, true
}

func (ps *parser) stringList(n *yaml.Node, what string) ([]string, bool) {
	items, ok := ps.list(n, what)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		s, ok := ps.str(it, what+" entries")
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

const teamHint = "write teams as org/team-slug, e.g. acme/sre"

func (ps *parser) teams(n *yaml.Node, what string) []string {
	items, ok := ps.list(n, what)
	if !ok {
		return nil
	}
	var out []string
	for _, it := range items {
		s, ok := ps.str(it, what+" entries")
		if !ok {
			continue
		}
		if !validTeam(s) {
			ps.errAt(ps.resolve(it), teamHint, "%s: %q is not a team", what, s)
			continue
		}
		out = append(out, s)
	}
	return out
}

func validTeam(s string) bool {
	org, slug, ok := strings.Cut(s, "/")
	return ok && org != "" && slug != "" && allIn(org, "-") && allIn(slug, "-_.")
}

func allIn(s, extra string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(extra, r)) {
			return false
		}
	}
	return true
}

// validWaveName: a name that fits check-run titles and "/approve <wave>": 1–63 letters, digits, '.', '_', '-',
// starting with a letter or digit. "all" is reserved for "/rollback all".
func validWaveName(s string) bool {
	if s == "" || len(s) > 63 || s == "all" {
		return false
	}
	c := s[0]
	return (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') && allIn(s, "._-")
}

// validLabelKey accepts Kubernetes-style label keys: an optional DNS prefix and '/', then a name.
func validLabelKey(s string) bool {
	prefix, name, hasPrefix := strings.Cut(s, "/")
	if !hasPrefix {
		name, prefix = prefix, ""
	}
	if name == "" || len(name) > 63 || !allIn(name, "-_.") || (hasPrefix && (prefix == "" || !allIn(prefix, "-."))) {
		return false
	}
	return true
}
