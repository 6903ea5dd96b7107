package repofs

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// RuleYAMLAliases refuses a YAML file whose aliases expand to too much (a "billion laughs").
const RuleYAMLAliases Rule = "yaml-aliases"

// The alias rule is the one the YAML libraries apply when they decode (go-yaml v2 and v3 decode.go,
// allowedAliasRatio: "document contains excessive aliasing"), which Helm values and plain manifests already get:
// once more than aliasMinAliased nodes come from alias expansion in a file of more than aliasMinTotal expanded
// nodes, at most 99% of the nodes may come from alias expansion up to aliasRatioLow expanded nodes, falling
// linearly to 10% at aliasRatioHigh and beyond. Unlike the libraries, the rule is applied to a whole file (all
// its documents together), and a budget caps the nodes alias expansion adds over all the files one render reads
// (MaxAliasedNodes): kustomize's YAML library (kyaml, RNode.DeAnchor) expands aliases without any limit.
const (
	aliasMinAliased = 100
	aliasMinTotal   = 1000
	aliasRatioLow   = 400_000
	aliasRatioHigh  = 4_000_000

	// MaxAliasedNodes caps the nodes alias expansion may add over all the YAML files of one render.
	MaxAliasedNodes = 1_000_000
	// saturate keeps node counts from overflowing (an expansion is refused long before).
	saturate = int64(1) << 50
)

func allowedAliasRatio(total int64) float64 {
	switch {
	case total <= aliasRatioLow:
		return 0.99
	case total >= aliasRatioHigh:
		return 0.10
	default:
		return 0.99 - 0.89*(float64(total-aliasRatioLow)/float64(aliasRatioHigh-aliasRatioLow))
	}
}

// AliasBudget counts the nodes alias expansion adds over several files (one render); a file read again is
// counted once. The zero value allows MaxAliasedNodes; it is safe for concurrent use.
type AliasBudget struct {
	mu      sync.Mutex
	used    int64
	counted map[string]bool
	Max     int64 // 0 means MaxAliasedNodes
}

// CheckYAMLAliases refuses data, the content of the repository file rel, when its YAML aliases expand beyond the
// alias rule, or beyond what remains of budget (nil: no budget). The expansion is counted on the parsed node
// tree, with no expansion performed, in time linear in the file's size. Content without both an anchor and an
// alias, or that is not YAML at all, passes: the library that reads it judges it. The refusal is one line naming
// the file and the rule.
func CheckYAMLAliases(rel string, data []byte, budget *AliasBudget) error {
	if !bytes.Contains(data, []byte("&")) || !bytes.Contains(data, []byte("*")) {
		return nil
	}
	refuse := func(t *tally) error {
		return &Refusal{Rule: RuleYAMLAliases, Path: rel, Detail: fmt.Sprintf(
			"YAML aliases expand %d nodes written to %d or more (excessive aliasing)", t.literal, min(t.total, aliasRatioHigh))}
	}
	// The file as a YAML stream (go-yaml's decoders), then as kyaml reads it (kio.ByteReader: split at every line
	// starting with "---", the first document of each part).
	var stream tally
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			break // end of the stream, or not YAML: not this rule's to judge
		}
		if stream.add(&doc) {
			return refuse(&stream)
		}
	}
	var parts tally
	if bytes.Contains(data, []byte("\n---")) {
		for _, part := range kyamlSeparator.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), -1) {
			var doc yaml.Node
			if err := yaml.NewDecoder(strings.NewReader(part + "\n")).Decode(&doc); err != nil {
				continue
			}
			if parts.add(&doc) {
				return refuse(&parts)
			}
		}
	}
	aliased := max(stream.total-stream.literal, parts.total-parts.literal)
	if budget == nil || aliased <= 0 {
		return nil
	}
	budget.mu.Lock()
	defer budget.mu.Unlock()
	if budget.counted[rel] {
		return nil
	}
	limit := budget.Max
	if limit <= 0 {
		limit = MaxAliasedNodes
	}
	if budget.used+aliased > limit {
		return &Refusal{Rule: RuleYAMLAliases, Path: rel,
			Detail: fmt.Sprintf("YAML aliases in the files read expand to more than %d nodes (excessive aliasing)", limit)}
	}
	budget.used += aliased
	if budget.counted == nil {
		budget.counted = map[string]bool{}
	}
	budget.counted[rel] = true
	return nil
}

// kyamlSeparator is kyaml's document separator (kio/byteio_reader.go splitDocuments).
var kyamlSeparator = regexp.MustCompile(`\n---.*\n`)

// tally counts the nodes of a file's documents, aliases expanded and as written.
type tally struct{ total, literal int64 }

// add counts doc and reports whether the file so far breaks the alias rule.
func (t *tally) add(doc *yaml.Node) bool {
	s := sizer{memo: map[*yaml.Node]int64{}, active: map[*yaml.Node]bool{}}
	t.total = sat(t.total + s.expanded(doc))
	t.literal += s.literal
	aliased := t.total - t.literal
	return aliased > aliasMinAliased && t.total > aliasMinTotal && float64(aliased)/float64(t.total) > allowedAliasRatio(t.total)
}

func sat(n int64) int64 { return min(n, saturate) }

// sizer counts the nodes of a document with aliases expanded (memoised per node, so shared anchors cost once)
// and the nodes actually written.
type sizer struct {
	memo    map[*yaml.Node]int64
	active  map[*yaml.Node]bool
	literal int64
}

func (s *sizer) expanded(n *yaml.Node) int64 {
	if n == nil {
		return 0
	}
	if v, ok := s.memo[n]; ok {
		return v
	}
	if s.active[n] {
		return 1 // an alias inside its own anchor: yaml refuses it; count it once
	}
	s.active[n] = true
	defer delete(s.active, n)
	s.literal++
	var t int64 = 1
	if n.Kind == yaml.AliasNode {
		t = s.expanded(n.Alias)
	} else {
		for _, c := range n.Content {
			t = sat(t + s.expanded(c))
		}
	}
	s.memo[n] = t
	return t
}
