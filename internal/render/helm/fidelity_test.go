package helm_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/render/helm"
	"github.com/fleetwave/fleetwave/internal/testkit/sharedtest"
)

// TestFidelity renders every Helm case of the shared render-fidelity corpus (sharedtest.Fidelity: skipped with one
// line on a clone, a failure when FLEETWAVE_REQUIRE_SHARED=1 and it is absent or incomplete) once per reference
// toolchain, as the Argo CD version that toolchain belongs to (sharedtest.FidelityTargets: 3.5 and 3.4), and
// compares the result, after Argo CD's list expansion and tracking, with what Argo CD's repo-server produced, or
// checks that it fails where Argo CD failed (expected*-error.txt).
func TestFidelity(t *testing.T) {
	for _, ft := range sharedtest.FidelityTargets {
		t.Run("argocd-"+ft.ArgoCDVersion, func(t *testing.T) { testFidelity(t, ft.ArgoCDVersion, ft.Expected) })
	}
}

func testFidelity(t *testing.T, argocdVersion, expectedName string) {
	dirs := sharedtest.FidelityCaseDirs(t)
	e := helm.New()
	var identical, total int
	var scores []string
	for _, dir := range dirs {
		name := filepath.Base(dir)
		tc := readCase(t, dir, renderEnv{})
		tc.env.ArgoCDVersion = argocdVersion
		if !tc.isHelm() {
			continue
		}
		total++
		ok := t.Run(name, func(t *testing.T) {
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
		if ok {
			identical++
		} else {
			status = "DIFFERENT"
		}
		scores = append(scores, name+": "+status)
	}
	if total == 0 {
		t.Fatal("no Helm case found in the corpus")
	}
	sort.Strings(scores)
	for _, s := range scores {
		t.Log(s)
	}
	t.Logf("fidelity (Argo CD %s, %s): %d/%d Helm cases identical", argocdVersion, expectedName, identical, total)
}
