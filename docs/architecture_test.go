// Package docs holds no code: its test keeps docs/architecture.md's map of the packages true.
package docs

import (
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestArchitectureNamesEveryPackage: every package of the module is named in architecture.md (in backticks, by its
// path from the module root), so the map cannot silently fall behind the code.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	doc, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Module.Path}}", "../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, module, _ := strings.Cut(line, " ")
		rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
		if rel == "" || rel == "docs" {
			continue
		}
		n++
		if !strings.Contains(string(doc), "`"+rel+"`") {
			t.Errorf("docs/architecture.md does not name package `%s`", rel)
		}
	}
	if n < 50 {
		t.Fatalf("only %d packages listed: go list did not see the module", n)
	}
}

// TestFoldersFormALayering: the module's top folders (cmd, webhooks, and each folder under internal/) import each
// other without a cycle, through any of their packages (tests aside): a package nested in a folder never reaches
// back, through another folder, to one that uses that folder. This is "no upward import" for a folder tree: an
// adapter that implements a stage's port may import the stage's types, but then nothing under the adapter's
// folder is imported by that stage.
func TestFoldersFormALayering(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "github.com/fleetwave/fleetwave/"
	top := func(pkg string) string {
		parts := strings.Split(strings.TrimPrefix(pkg, module), "/")
		switch {
		case parts[0] == "internal" && len(parts) > 2 && (parts[1] == "edge" || parts[1] == "kit"):
			return strings.Join(parts[:3], "/") // the groups of adapters and of shared wording: each member is a folder
		case parts[0] == "internal" && len(parts) > 1:
			return "internal/" + parts[1]
		}
		return parts[0]
	}
	edges := map[string]map[string]string{} // folder → folder → one import that makes the edge
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		for _, imp := range f[1:] {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			a, b := top(f[0]), top(imp)
			if a == b {
				continue
			}
			if edges[a] == nil {
				edges[a] = map[string]string{}
			}
			if _, ok := edges[a][b]; !ok {
				edges[a][b] = strings.TrimPrefix(f[0], module) + " imports " + strings.TrimPrefix(imp, module)
			}
		}
	}
	if len(edges) < 10 {
		t.Fatalf("only %d folders import others: go list did not see the module", len(edges))
	}
	// A depth-first search; a back edge is a cycle, reported with the imports that close it.
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(string)
	visit = func(a string) {
		state[a] = open
		path = append(path, a)
		for b := range edges[a] {
			switch state[b] {
			case unseen:
				visit(b)
			case open:
				i := slices.Index(path, b)
				cycle := append(slices.Clone(path[i:]), b)
				var why []string
				for k := 0; k+1 < len(cycle); k++ {
					why = append(why, edges[cycle[k]][cycle[k+1]])
				}
				t.Errorf("folders import each other: %s (%s)", strings.Join(cycle, " → "), strings.Join(why, "; "))
			}
		}
		path = path[:len(path)-1]
		state[a] = done
	}
	for _, a := range slices.Sorted(maps.Keys(edges)) {
		if state[a] == unseen {
			visit(a)
		}
	}
}
