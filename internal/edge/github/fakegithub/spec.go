package fakegithub

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
)

// GitHub's REST description (octokit/openapi, MIT) is third-party material: it lives beside the repository in
// the shared folder (internal/testkit/sharedtest), never in it. These are its files there.
const (
	descriptionDir    = "github/openapi"
	botSubsetFile     = "bot-subset.json"        // the operations the bot calls, trimmed from the full description
	fullDescriptionGz = "api.github.com.json.gz" // the full description, for operations bot-subset.json lacks
)

// description is GitHub's REST description with the route of each operation the fake serves.
type description struct {
	doc    *openapi3.T
	routes map[string]*routers.Route // by operationId
	extra  []string                  // operations taken from the full description
}

// descriptions caches one load per folder: the description is only read after loading.
var descriptions sync.Map // folder → func() (*description, error)

// loadDescription reads the description in dir (the shared folder's github/openapi): bot-subset.json, plus
// the operations the fake serves that it lacks, extracted from api.github.com.json.gz with every component
// they reference. Every operation of the fake must be in it, with the same method and path.
func loadDescription(dir string) (*description, error) {
	f, _ := descriptions.LoadOrStore(dir, sync.OnceValues(func() (*description, error) { return readDescription(dir) }))
	return f.(func() (*description, error))()
}

func readDescription(dir string) (*description, error) {
	subset, err := os.ReadFile(filepath.Join(dir, botSubsetFile))
	if err != nil {
		return nil, fmt.Errorf("GitHub's REST description is incomplete: %w", err)
	}
	var base map[string]any
	if err := json.Unmarshal(subset, &base); err != nil {
		return nil, fmt.Errorf("reading %s: %w", botSubsetFile, err)
	}
	var missing []*operation
	for i := range operations {
		if operationIn(base, &operations[i]) == nil {
			missing = append(missing, &operations[i])
		}
	}
	d := &description{}
	if len(missing) > 0 {
		extra, err := extractOperations(filepath.Join(dir, fullDescriptionGz), missing)
		if err != nil {
			return nil, err
		}
		merge(base, extra)
		for _, op := range missing {
			d.extra = append(d.extra, op.id)
		}
	}
	merged, err := json.Marshal(base)
	if err != nil {
		return nil, err
	}
	doc, err := openapi3.NewLoader().LoadFromData(merged)
	if err != nil {
		return nil, fmt.Errorf("loading GitHub's REST description: %w", err)
	}
	if err := doc.Validate(context.Background(), openapi3.DisableExamplesValidation()); err != nil {
		return nil, fmt.Errorf("validating GitHub's REST description: %w", err)
	}
	d.doc = doc
	d.routes, err = bind(doc, operations)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// bind finds each of ops in doc, by method and path template, and checks that GitHub names it as the fake
// does.
func bind(doc *openapi3.T, ops []operation) (map[string]*routers.Route, error) {
	routes := map[string]*routers.Route{}
	var errs []error
	for i := range ops {
		op := &ops[i]
		item := doc.Paths.Value(op.template)
		var o *openapi3.Operation
		if item != nil {
			o = item.GetOperation(op.method)
		}
		if o == nil || o.OperationID != op.id {
			errs = append(errs, fmt.Errorf("%s %s is not %s in GitHub's REST description", op.method, op.template, op.id))
			continue
		}
		routes[op.id] = &routers.Route{Spec: doc, Path: op.template, PathItem: item, Method: op.method, Operation: o}
	}
	return routes, errors.Join(errs...)
}

// operationIn returns the operation object of op in a description decoded as generic JSON, nil when absent
// or named otherwise.
func operationIn(desc map[string]any, op *operation) map[string]any {
	paths, _ := desc["paths"].(map[string]any)
	item, _ := paths[op.template].(map[string]any)
	o, _ := item[strings.ToLower(op.method)].(map[string]any)
	if o == nil || o["operationId"] != op.id {
		return nil
	}
	return o
}

// extractOperations reads the full description and returns a description of ops alone: their operations
// (with their path items' parameters) and the transitive closure of the components they reference.
// octokit's x-octokit keys are dropped.
func extractOperations(gz string, ops []*operation) (map[string]any, error) {
	f, err := os.Open(gz)
	if err != nil {
		return nil, fmt.Errorf("GitHub's REST description is incomplete (operations not in %s need it): %w", botSubsetFile, err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", gz, err)
	}
	// Components stay raw until referenced: most of the full description is never decoded.
	var full struct {
		Paths      map[string]map[string]json.RawMessage
		Components map[string]map[string]json.RawMessage
	}
	if err := json.NewDecoder(zr).Decode(&full); err != nil {
		return nil, fmt.Errorf("reading %s: %w", gz, err)
	}
	paths := map[string]any{}
	var queue []string
	var absent []string
	for _, op := range ops {
		raw, ok := full.Paths[op.template][strings.ToLower(op.method)]
		var o map[string]any
		if ok {
			if err := json.Unmarshal(raw, &o); err != nil {
				return nil, fmt.Errorf("reading %s %s in %s: %w", op.method, op.template, gz, err)
			}
		}
		if o == nil || o["operationId"] != op.id {
			absent = append(absent, fmt.Sprintf("%s (%s %s)", op.id, op.method, op.template))
			continue
		}
		delete(o, "x-octokit")
		item, _ := paths[op.template].(map[string]any)
		if item == nil {
			item = map[string]any{}
			if p, ok := full.Paths[op.template]["parameters"]; ok {
				var params any
				if err := json.Unmarshal(p, &params); err != nil {
					return nil, err
				}
				item["parameters"] = params
				queue = append(queue, refs(params)...)
			}
			paths[op.template] = item
		}
		item[strings.ToLower(op.method)] = o
		queue = append(queue, refs(o)...)
	}
	if len(absent) > 0 {
		sort.Strings(absent)
		return nil, fmt.Errorf("not in GitHub's REST description: %s", strings.Join(absent, ", "))
	}
	comps := map[string]any{}
	for len(queue) > 0 {
		ref := queue[0]
		queue = queue[1:]
		kind, name, ok := strings.Cut(strings.TrimPrefix(ref, "#/components/"), "/")
		if !ok || strings.Contains(name, "/") {
			return nil, fmt.Errorf("reference %q in %s: only #/components/<kind>/<name> is followed", ref, gz)
		}
		if comps[kind] == nil {
			comps[kind] = map[string]any{}
		}
		dst := comps[kind].(map[string]any)
		if _, done := dst[name]; done {
			continue
		}
		raw, ok := full.Components[kind][name]
		if !ok {
			return nil, fmt.Errorf("reference %q is not in %s", ref, gz)
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("reading %s in %s: %w", ref, gz, err)
		}
		dst[name] = v
		queue = append(queue, refs(v)...)
	}
	return map[string]any{"paths": paths, "components": comps}, nil
}

// merge adds the paths (operations) and components of extra to base; base wins on a name both define.
func merge(base, extra map[string]any) {
	for _, section := range []string{"paths", "components"} {
		if base[section] == nil {
			base[section] = map[string]any{}
		}
	}
	bp := base["paths"].(map[string]any)
	for p, v := range extra["paths"].(map[string]any) {
		if bp[p] == nil {
			bp[p] = map[string]any{}
		}
		dst := bp[p].(map[string]any)
		for k, x := range v.(map[string]any) {
			if _, ok := dst[k]; !ok {
				dst[k] = x
			}
		}
	}
	bc := base["components"].(map[string]any)
	for kind, entries := range extra["components"].(map[string]any) {
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
}

// refs lists the "$ref" values anywhere in v.
func refs(v any) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "$ref" {
				out = append(out, s)
				continue
			}
			out = append(out, refs(e)...)
		}
	case []any:
		for _, e := range x {
			out = append(out, refs(e)...)
		}
	}
	return out
}
