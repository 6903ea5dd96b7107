package sharedtest

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFind(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "github", "openapi"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvDir, dir)
	for _, tc := range []struct {
		sub  string
		want bool
	}{
		{"github/openapi", true},
		{"github", true},
		{"fidelity", false},
	} {
		p, ok := Find(tc.sub)
		if ok != tc.want || p != filepath.Join(dir, filepath.FromSlash(tc.sub)) {
			t.Errorf("Find(%q) = %q, %v; want %v", tc.sub, p, ok, tc.want)
		}
	}
}

// Without FLEETWAVE_SHARED_DIR the folder is "shared" beside the module root, whatever package runs the test.
func TestFindBesideModule(t *testing.T) {
	t.Setenv(EnvDir, "")
	p, _ := Find("fidelity")
	root, ok := moduleRoot()
	if !ok {
		t.Fatal("module root not found from the package directory")
	}
	if want := filepath.Join(filepath.Dir(root), "shared", "fidelity"); p != want {
		t.Fatalf("Find(fidelity) = %q, want %q", p, want)
	}
	if _, err := os.Stat(filepath.Join(root, "internal", "testkit", "sharedtest")); err != nil {
		t.Fatalf("module root %s is not this repository's: %v", root, err)
	}
}
