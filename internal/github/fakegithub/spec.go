package fakegithub

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
)

// botSubset is ../shared/github/openapi/bot-subset.json: GitHub's REST description (octokit/openapi 23.0.2,
// MIT, see testdata/LICENSE.octokit-openapi) reduced to the operations the bot calls.
//
//go:embed testdata/bot-subset.json
var botSubset []byte

// extraOperations are further operations extracted from the full description by TestExtraOperations
// (go test ./internal/github/fakegithub -run TestExtraOperations -update): see extraOperationIDs.
//
//go:embed testdata/extra-operations.json
var extraOperations []byte

// spec is the loaded description and a router over it.
type spec struct {
	doc      *openapi3.T
	examples map[string]json.RawMessage // components/examples/*/value
	routes   []route
}

type route struct {
	method   string
	template string
	re       *regexp.Regexp
	params   []string
	op       *openapi3.Operation
	item     *openapi3.PathItem
}

// loadSpec parses the description once per process; the result is only read afterwards.
var loadSpec = sync.OnceValues(func() (*spec, error) {
	merged, err := mergeDescriptions(botSubset, extraOperations)
	if err != nil {
		return nil, err
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(merged)
	if err != nil {
		return nil, fmt.Errorf("loading the GitHub OpenAPI description: %w", err)
	}
	if err := doc.Validate(context.Background(), openapi3.DisableExamplesValidation()); err != nil {
		return nil, fmt.Errorf("validating the GitHub OpenAPI description: %w", err)
	}
	var raw struct {
		Components struct {
			Examples map[string]struct {
				Value json.RawMessage `json:"value"`
			} `json:"examples"`
		} `json:"components"`
	}
	if err := json.Unmarshal(merged, &raw); err != nil {
		return nil, err
	}
	s := &spec{doc: doc, examples: map[string]json.RawMessage{}}
	for name, ex := range raw.Components.Examples {
		s.examples[name] = ex.Value
	}
	for template, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			r, err := newRoute(method, template, item, op)
			if err != nil {
				return nil, err
			}
			s.routes = append(s.routes, r)
		}
	}
	// Literal segments before parameters: /git/ref/{ref} must not be shadowed by a more general template.
	sort.Slice(s.routes, func(i, j int) bool {
		if len(s.routes[i].params) != len(s.routes[j].params) {
			return len(s.routes[i].params) < len(s.routes[j].params)
		}
		return s.routes[i].template < s.routes[j].template
	})
	return s, nil
})

// greedyParams may contain "/" (go-github sends refs and file paths unescaped).
var greedyParams = map[string]bool{"ref": true, "path": true, "basehead": true}

var paramRe = regexp.MustCompile(`\{([^}]+)\}`)

func newRoute(method, template string, item *openapi3.PathItem, op *openapi3.Operation) (route, error) {
	var params []string
	var b strings.Builder
	b.WriteString("^")
	last := 0
	for _, m := range paramRe.FindAllStringSubmatchIndex(template, -1) {
		b.WriteString(regexp.QuoteMeta(template[last:m[0]]))
		name := template[m[2]:m[3]]
		params = append(params, name)
		if greedyParams[name] {
			b.WriteString("(.+)")
		} else {
			b.WriteString("([^/]+)")
		}
		last = m[1]
	}
	b.WriteString(regexp.QuoteMeta(template[last:]) + "$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return route{}, fmt.Errorf("routing %s %s: %w", method, template, err)
	}
	return route{method: method, template: template, re: re, params: params, op: op, item: item}, nil
}

// find returns the operation for a request path (without the API prefix) and its path parameters.
func (s *spec) find(method, path string) (*routers.Route, map[string]string, bool) {
	for _, r := range s.routes {
		if r.method != method {
			continue
		}
		m := r.re.FindStringSubmatch(path)
		if m == nil {
			continue
		}
		params := map[string]string{}
		for i, name := range r.params {
			v, err := url.PathUnescape(m[i+1])
			if err != nil {
				v = m[i+1]
			}
			params[name] = v
		}
		return &routers.Route{Spec: s.doc, Path: r.template, PathItem: r.item, Method: method, Operation: r.op}, params, true
	}
	return nil, nil, false
}

// example returns a fresh copy of components/examples/name as generic JSON.
func (s *spec) example(name string) map[string]any {
	raw, ok := s.examples[name]
	if !ok {
		panic(fmt.Sprintf("fakegithub: no example %q in the description", name))
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		panic(err)
	}
	if list, ok := v.([]any); ok { // "-items" examples are lists of one
		return list[0].(map[string]any)
	}
	return v.(map[string]any)
}

// mergeDescriptions adds the paths and components of extra to base (base wins on a name both define).
func mergeDescriptions(base, extra []byte) ([]byte, error) {
	var b, e map[string]any
	if err := json.Unmarshal(base, &b); err != nil {
		return nil, fmt.Errorf("reading bot-subset.json: %w", err)
	}
	if err := json.Unmarshal(extra, &e); err != nil {
		return nil, fmt.Errorf("reading extra-operations.json: %w", err)
	}
	bp, _ := b["paths"].(map[string]any)
	ep, _ := e["paths"].(map[string]any)
	for k, v := range ep {
		if _, ok := bp[k]; !ok {
			bp[k] = v
		}
	}
	bc, _ := b["components"].(map[string]any)
	ec, _ := e["components"].(map[string]any)
	for kind, entries := range ec {
		if bc[kind] == nil {
			bc[kind] = map[string]any{}
		}
		dst := bc[kind].(map[string]any)
		for name, v := range entries.(map[string]any) {
			if _, ok := dst[name]; !ok {
				dst[name] = v
			}
		}
	}
	return json.Marshal(b)
}
