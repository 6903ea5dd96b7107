// Package golden compares a test's output with a file under the package's testdata directory, and rewrites the
// file with the output when the tests run with -update (review the change with git diff, then commit it).
// It is imported by tests only.
package golden

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// update is the -update flag of every test binary that imports this package (go test -update ./...).
var update = flag.Bool("update", false, "rewrite the golden files under testdata/ with the tests' output")

// Assert fails t when got differs from testdata/name, naming the first line that differs. With -update it
// writes got to testdata/name instead (creating directories).
func Assert(t testing.TB, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", filepath.FromSlash(name))
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file (run go test -update, then review the diff); first difference at %s",
			path, FirstDiff(string(want), got))
	}
}

// FirstDiff describes the first line where want and got differ.
func FirstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl || i >= len(w) || i >= len(g) {
			return fmt.Sprintf("line %d:\n- %s\n+ %s", i+1, wl, gl)
		}
	}
	return "(same lines, different bytes)"
}

// Updating reports whether the tests run with -update: tests that write other generated files (pictures in
// docs/) use the same flag instead of defining their own.
func Updating() bool { return *update }
