package fakegithub

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "regenerate testdata/extra-operations.json from the full GitHub description")

// extraOperationIDs are the operations the bot calls beyond bot-subset.json.
var extraOperationIDs = []string{
	"teams/get-membership-for-user-in-org", // GET /orgs/{org}/teams/{team_slug}/memberships/{username}
	"apps/get-repo-installation",           // GET /repos/{owner}/{repo}/installation
}

// fullDescription is GitHub's complete REST description (octokit/openapi 23.0.2), outside the repository.
func fullDescription() string {
	if p := os.Getenv("FLEETWAVE_GITHUB_OPENAPI"); p != "" {
		return p
	}
	return filepath.Join("..", "..", "..", "..", "shared", "github", "openapi", "api.github.com.json.gz")
}

// TestExtraOperations checks that testdata/extra-operations.json is the self-contained extract of
// extraOperationIDs from the full description (every $ref it needs included); -update rewrites it.
func TestExtraOperations(t *testing.T) {
	f, err := os.Open(fullDescription())
	if err != nil {
		if *update {
			t.Fatal(err)
		}
		t.Skipf("full GitHub description not available (%v); set FLEETWAVE_GITHUB_OPENAPI", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var full map[string]any
	if err := json.NewDecoder(zr).Decode(&full); err != nil {
		t.Fatal(err)
	}
	got, err := extract(full, extraOperationIDs)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "extra-operations.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run go test -run TestExtraOperations -update", path)
	}
}

// extract copies the operations ids, with their path items' parameters, and the transitive closure of the
// components they reference. octokit's x-octokit keys are dropped.
func extract(full map[string]any, ids []string) ([]byte, error) {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	out := map[string]any{
		"openapi": full["openapi"],
		"info": map[string]any{"title": "fleetwave extra operations", "version": "1",
			"description": "Extracted from @octokit/openapi 23.0.2 (MIT) by internal/github/fakegithub TestExtraOperations: " +
				strings.Join(ids, ", ")},
		"paths":      map[string]any{},
		"components": map[string]any{},
	}
	paths := out["paths"].(map[string]any)
	var queue []string
	collect := func(v any) { queue = append(queue, refs(v)...) }
	for p, item := range full["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			o, ok := op.(map[string]any)
			if !ok || !want[o["operationId"].(string)] {
				continue
			}
			delete(o, "x-octokit")
			if paths[p] == nil {
				paths[p] = map[string]any{}
			}
			paths[p].(map[string]any)[method] = o
			collect(o)
			delete(want, o["operationId"].(string))
		}
	}
	if len(want) > 0 {
		missing := make([]string, 0, len(want))
		for id := range want {
			missing = append(missing, id)
		}
		sort.Strings(missing)
		return nil, &missingError{missing}
	}
	comps := out["components"].(map[string]any)
	fullComps := full["components"].(map[string]any)
	for len(queue) > 0 {
		ref := queue[0]
		queue = queue[1:]
		parts := strings.Split(strings.TrimPrefix(ref, "#/components/"), "/")
		if len(parts) != 2 {
			continue
		}
		kind, name := parts[0], parts[1]
		if comps[kind] == nil {
			comps[kind] = map[string]any{}
		}
		if _, done := comps[kind].(map[string]any)[name]; done {
			continue
		}
		v := fullComps[kind].(map[string]any)[name]
		comps[kind].(map[string]any)[name] = v
		collect(v)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

type missingError struct{ ids []string }

func (e *missingError) Error() string {
	return "operations not in the description: " + strings.Join(e.ids, ", ")
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
