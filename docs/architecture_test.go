// Package docs holds no code: its test keeps docs/architecture.md's map of the packages true.
package docs

import (
	"os"
	"os/exec"
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
