package helm_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/render/helm"
)

// TestFidelity renders every Helm case of the shared corpus (../shared/fidelity) and compares the result, after
// Argo CD's list expansion and tracking, with what Argo CD's repo-server produced with helm v3.19.4
// (expected-helm3.yaml), or checks that it fails where Argo CD failed (expected-helm3-error.txt).
// Set FIDELITY_EXPECTED=expected.yaml to score against the Helm 4 references instead.
func TestFidelity(t *testing.T) {
	root := fidelityDir()
	cases, err := os.ReadDir(filepath.Join(root, "cases"))
	if err != nil {
		t.Skipf("fidelity corpus not found at %s (set FLEETWAVE_FIDELITY_DIR): %v", root, err)
	}
	expectedName := "expected-helm3.yaml"
	if v := os.Getenv("FIDELITY_EXPECTED"); v != "" {
		expectedName = v
	}
	e := helm.New()
	var identical, skipped, total int
	var scores []string
	for _, c := range cases {
		dir := filepath.Join(root, "cases", c.Name())
		if _, err := os.Stat(filepath.Join(dir, "app.yaml")); err != nil {
			continue
		}
		tc := readCase(t, dir, renderEnv{})
		if !tc.isHelm() {
			continue
		}
		total++
		ok := t.Run(c.Name(), func(t *testing.T) {
			in, _ := tc.input(t)
			objs, err := e.Template(context.Background(), in)
			errFile := filepath.Join(dir, strings.TrimSuffix(expectedName, ".yaml")+"-error.txt")
			if want, rerr := os.ReadFile(errFile); rerr == nil {
				if err == nil {
					t.Fatalf("rendered, but Argo CD fails: %s", firstLine(string(want)))
				}
				t.Logf("fails as Argo CD does: %v", err)
				return
			}
			if err != nil {
				if missing := missingVendoredDirs(dir); errors.Is(err, helm.ErrMissingDependency) && len(missing) > 0 {
					t.Skipf("corpus case is incomplete: its SOURCE lists vendored %v, absent from the case; the engine "+
						"refuses as it should, since chart repositories are not fetched: %v", missing, err)
				}
				t.Fatalf("render: %v", err)
			}
			want, err := os.ReadFile(filepath.Join(dir, expectedName))
			if err != nil {
				t.Fatal(err)
			}
			got := finish(t, objs, tc)
			diffs, orderDiffers, err := compareStreams(want, got)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range diffs {
				t.Error(d)
			}
			if orderDiffers {
				t.Logf("same objects, different order than Argo CD")
			}
		})
		status := "identical"
		switch {
		case !ok:
			status = "DIFFERENT"
		case len(missingVendoredDirs(dir)) > 0:
			status = "skipped (corpus case incomplete: vendored subcharts missing)"
			skipped++
		default:
			identical++
		}
		scores = append(scores, c.Name()+": "+status)
	}
	if total == 0 {
		t.Fatalf("no Helm case found under %s", root)
	}
	sort.Strings(scores)
	for _, s := range scores {
		t.Log(s)
	}
	t.Logf("fidelity (%s): %d/%d Helm cases identical, %d skipped (corpus case incomplete)", expectedName, identical, total, skipped)
}

// missingVendoredDirs lists the paths a case's SOURCE says were vendored ("src/x/charts/y <= https://...")
// but that are absent from the case.
func missingVendoredDirs(dir string) []string {
	b, err := os.ReadFile(filepath.Join(dir, "SOURCE"))
	if err != nil {
		return nil
	}
	var missing []string
	for _, line := range strings.Split(string(b), "\n") {
		p, _, ok := strings.Cut(line, " <= ")
		if !ok || !strings.HasPrefix(p, "src/") {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(strings.TrimSpace(p)))); err != nil {
			missing = append(missing, strings.TrimSpace(p))
		}
	}
	return missing
}
