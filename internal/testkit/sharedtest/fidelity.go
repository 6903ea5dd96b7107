package sharedtest

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// EnvFidelityDir names the render-fidelity corpus itself (the folder holding cases/), instead of "fidelity" in
// the shared folder.
const EnvFidelityDir = "FLEETWAVE_FIDELITY_DIR"

// FidelityCases is how many cases a complete render-fidelity corpus has at least.
const FidelityCases = 44

// FidelityTarget is one reference toolchain of the corpus: the Argo CD version to render as, the file of each
// case holding that toolchain's output (or, where Argo CD refuses, its "<name>-error.txt"), and the other
// toolchain's file, which a render as this version must differ from wherever the two references differ.
type FidelityTarget struct {
	ArgoCDVersion string
	Expected      string
	Other         string
}

// FidelityTargets are the corpus's toolchains, each rendered as the Argo CD release it belongs to: expected.yaml is
// Argo CD 3.5 with helm 4.2.1, expected-helm3.yaml the Argo CD 3.4 toolchain (helm 3.19.4). Not 3.6: v3.6.1 ships
// helm 4.3.1, whose built-in API versions differ (the helm-api-versions case); the 3.6 renders are proven against
// the real v3.6.1 repo-server by make e2e.
var FidelityTargets = []FidelityTarget{
	{ArgoCDVersion: "3.5", Expected: "expected.yaml", Other: "expected-helm3.yaml"},
	{ArgoCDVersion: "3.4", Expected: "expected-helm3.yaml", Other: "expected.yaml"},
}

// Fidelity returns the render-fidelity corpus: $FLEETWAVE_FIDELITY_DIR when set, else "fidelity" in the shared
// folder (Dir). A corpus that is absent, or present but incomplete (CheckFidelity), skips tb with one line, or
// fails it when the shared material is required: tests over the corpus never run on part of it.
func Fidelity(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv(EnvFidelityDir)
	if dir == "" {
		dir = Dir(tb, "fidelity")
	} else if _, err := os.Stat(dir); err != nil {
		unusable(tb, "render-fidelity corpus not found at "+dir+" ("+EnvFidelityDir+"); unset "+EnvFidelityDir+
			" to use the shared folder's copy, or point it at the corpus")
	}
	if problems := CheckFidelity(dir); len(problems) > 0 {
		if len(problems) > 5 {
			problems = append(problems[:5], fmt.Sprintf("%d more problems", len(problems)-5))
		}
		unusable(tb, "render-fidelity corpus at "+dir+" is incomplete: "+strings.Join(problems, "; ")+
			"; replace it with a complete copy")
	}
	return dir
}

// FidelityCaseDirs returns the corpus's case folders (those with an app.yaml), sorted; see Fidelity.
func FidelityCaseDirs(tb testing.TB) []string {
	tb.Helper()
	dirs, err := fidelityCaseDirs(Fidelity(tb))
	if err != nil {
		tb.Fatal(err)
	}
	return dirs
}

// CheckFidelity lists what makes the corpus at dir incomplete: fewer than FidelityCases cases (folders of
// cases/ with an app.yaml), a case without its render-env.yaml or one of Argo CD's outputs (expected.yaml and
// expected-helm3.yaml, or expected-error.txt / expected-helm3-error.txt where Argo CD refuses), or a path a case's SOURCE says was vendored
// ("src/x <= https://...") that is absent. Nil means complete.
func CheckFidelity(dir string) []string {
	cases, err := fidelityCaseDirs(dir)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	if len(cases) < FidelityCases {
		problems = append(problems, fmt.Sprintf("%d cases with an app.yaml, want at least %d", len(cases), FidelityCases))
	}
	for _, c := range cases {
		name := filepath.Base(c)
		if !exists(filepath.Join(c, "render-env.yaml")) {
			problems = append(problems, name+" has no render-env.yaml")
		}
		for _, ref := range []string{"expected.yaml", "expected-helm3.yaml"} {
			errFile := strings.TrimSuffix(ref, ".yaml") + "-error.txt"
			if !exists(filepath.Join(c, ref)) && !exists(filepath.Join(c, errFile)) {
				problems = append(problems, name+" has neither "+ref+" nor "+errFile)
			}
		}
		if missing := missingVendored(c); len(missing) > 0 {
			problems = append(problems, name+": SOURCE lists vendored "+strings.Join(missing, ", ")+", absent")
		}
	}
	return problems
}

func fidelityCaseDirs(dir string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(dir, "cases"))
	if err != nil {
		return nil, fmt.Errorf("no cases folder: %w", err)
	}
	var cases []string
	for _, e := range entries {
		if c := filepath.Join(dir, "cases", e.Name()); exists(filepath.Join(c, "app.yaml")) { // a case may be a symlink
			cases = append(cases, c)
		}
	}
	sort.Strings(cases)
	return cases, nil
}

// missingVendored lists the paths a case's SOURCE says were vendored ("src/x <= https://...") but that are absent.
func missingVendored(caseDir string) []string {
	b, err := os.ReadFile(filepath.Join(caseDir, "SOURCE"))
	if err != nil {
		return nil
	}
	var missing []string
	for _, line := range strings.Split(string(b), "\n") {
		p, _, ok := strings.Cut(line, " <= ")
		if p = strings.TrimSpace(p); !ok || !strings.HasPrefix(p, "src/") {
			continue
		}
		if !exists(filepath.Join(caseDir, filepath.FromSlash(p))) {
			missing = append(missing, p)
		}
	}
	return missing
}

// unusable skips tb with msg, or fails it when the shared material is required.
func unusable(tb testing.TB, msg string) {
	tb.Helper()
	if Required() {
		tb.Fatal(msg + " (" + EnvRequire + "=1: it must be there, complete)")
	}
	tb.Skip(msg + ": skipped")
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
