// Package sharedtest finds the third-party material that lives beside the repository, not in it: the render
// fidelity corpus (real charts with Argo CD's own output), GitHub's recorded webhook deliveries and GitHub's REST
// API description. A clone of the repository does not have them; a development machine and CI have them in a
// folder named shared next to the checkout.
//
// Tests over that material call Dir: where it is absent the test is skipped with one line that says what is
// missing and how to provide it, except when FLEETWAVE_REQUIRE_SHARED=1 (set by .ci/run), where a missing or
// partial copy fails the test instead of hiding behind a skip. Everything else in the repository's tests runs on
// fixtures written here. It is imported by tests and test fakes only.
package sharedtest

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// EnvDir names the shared folder explicitly; EnvRequire, set to 1, turns a missing folder into a failure.
const (
	EnvDir     = "FLEETWAVE_SHARED_DIR"
	EnvRequire = "FLEETWAVE_REQUIRE_SHARED"
)

const module = "github.com/fleetwave/fleetwave"

// Required reports whether the shared material must be there (FLEETWAVE_REQUIRE_SHARED=1).
func Required() bool { return os.Getenv(EnvRequire) == "1" }

// Find returns the path of sub (slash-separated, such as "github/openapi") inside the shared folder and whether
// it exists. The folder is $FLEETWAVE_SHARED_DIR, else "shared" beside the root of the module this process
// runs in (found by walking up from the working directory to fleetwave's go.mod).
func Find(sub string) (string, bool) {
	root := os.Getenv(EnvDir)
	if root == "" {
		mod, ok := moduleRoot()
		if !ok {
			return "", false
		}
		root = filepath.Join(filepath.Dir(mod), "shared")
	}
	p := filepath.Join(root, filepath.FromSlash(sub))
	_, err := os.Stat(p)
	return p, err == nil
}

// Dir returns the path of sub inside the shared folder, or skips tb with one line when it is absent (fails it
// when the material is required).
func Dir(tb testing.TB, sub string) string {
	tb.Helper()
	p, ok := Find(sub)
	if !ok {
		Missing(tb, sub+" (third-party material kept beside the repository, not in it)")
	}
	return p
}

// Missing skips tb (or fails it when the shared material is required) with one line naming what is missing.
func Missing(tb testing.TB, what string) {
	tb.Helper()
	msg := "shared material not found: " + what + "; set " + EnvDir + " to the folder that holds it"
	if Required() {
		tb.Fatal(msg + " (" + EnvRequire + "=1: it must be there)")
	}
	tb.Skip(msg + ": skipped")
}

// moduleRoot walks up from the working directory to the go.mod of fleetwave's module (not a nested module of
// its own, such as tools/oracle) and returns that directory.
func moduleRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if isFleetwaveModule(filepath.Join(dir, "go.mod")) {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

func isFleetwaveModule(gomod string) bool {
	f, err := os.Open(gomod)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "module ") {
			return strings.TrimSpace(strings.TrimPrefix(line, "module ")) == module
		}
	}
	return false
}
