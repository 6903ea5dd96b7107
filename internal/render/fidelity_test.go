package render_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/render/fidelity"
	"github.com/fleetwave/fleetwave/internal/sharedtest"
)

// TestFidelity renders every case of the fidelity corpus in-process and compares the result with Argo CD's own
// manifest generation, object by object, as the corpus's compare tool does, once per reference toolchain with
// the Argo CD version it belongs to (sharedtest.FidelityTargets: expected.yaml, Argo CD 3.5 with Helm 4, as 3.5
// and 3.6; expected-helm3.yaml, the Helm 3 toolchain of 3.4, as 3.4). Cases where Argo CD refuses to render must
// fail here too. The corpus is the shared folder's (sharedtest.Fidelity: skipped with one line on a clone, a
// failure when FLEETWAVE_REQUIRE_SHARED=1 and it is absent or incomplete).
func TestFidelity(t *testing.T) {
	r := render.New(render.Options{})
	for _, ft := range sharedtest.FidelityTargets {
		t.Run("argocd-"+ft.ArgoCDVersion, func(t *testing.T) { testFidelity(t, r, ft.ArgoCDVersion, ft.Expected) })
	}
}

func testFidelity(t *testing.T, r *render.Renderer, argocdVersion, expectedName string) {
	errName := strings.TrimSuffix(expectedName, ".yaml") + "-error.txt"
	passed, total, inOrder := 0, 0, 0
	for _, caseDir := range sharedtest.FidelityCaseDirs(t) {
		total++
		t.Run(filepath.Base(caseDir), func(t *testing.T) {
			got, err := renderCaseAs(r, caseDir, argocdVersion)
			if want, rerr := os.ReadFile(filepath.Join(caseDir, errName)); rerr == nil {
				if err == nil {
					t.Fatalf("rendered, but Argo CD refuses this case: %s", firstLine(string(want)))
				}
				passed++
				return
			}
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			want, err := os.ReadFile(filepath.Join(caseDir, expectedName))
			if err != nil {
				t.Fatal(err)
			}
			diffs, sameOrder, err := fidelity.Compare(want, got)
			if err != nil {
				t.Fatal(err)
			}
			if len(diffs) > 0 {
				t.Fatalf("differs from Argo CD:\n%s", strings.Join(diffs, "\n"))
			}
			if !sameOrder {
				t.Fatalf("objects identical, but the document order differs from Argo CD's")
			}
			passed++
			inOrder++
		})
	}
	t.Logf("fidelity (Argo CD %s, %s): %d/%d cases identical (%d rendered in Argo CD's document order, %d refused as Argo CD refuses)",
		argocdVersion, expectedName, passed, total, inOrder, passed-inOrder)
}

// TestFidelityTargetsDiffer renders the cases whose two reference outputs differ (Helm 4's built-in API versions,
// its YAML, its install order) as the other toolchain's Argo CD version: each must then differ from that
// reference (objects or their order), or the target switch would be untested by TestFidelity.
func TestFidelityTargetsDiffer(t *testing.T) {
	r := render.New(render.Options{})
	n := 0
	for _, caseDir := range sharedtest.FidelityCaseDirs(t) {
		helm4, err4 := os.ReadFile(filepath.Join(caseDir, "expected.yaml"))
		helm3, err3 := os.ReadFile(filepath.Join(caseDir, "expected-helm3.yaml"))
		if err4 != nil || err3 != nil || bytes.Equal(helm4, helm3) {
			continue
		}
		n++
		t.Run(filepath.Base(caseDir), func(t *testing.T) {
			for _, c := range []struct {
				version string
				other   []byte
			}{{"3.4", helm4}, {"3.6", helm3}} {
				got, err := renderCaseAs(r, caseDir, c.version)
				if err != nil {
					t.Fatalf("render as %s: %v", c.version, err)
				}
				diffs, sameOrder, err := fidelity.Compare(c.other, got)
				if err != nil {
					t.Fatal(err)
				}
				if len(diffs) == 0 && sameOrder {
					t.Errorf("rendered as Argo CD %s, it matches the other toolchain's output", c.version)
				}
			}
		})
	}
	if n == 0 {
		t.Fatal("no case whose expected.yaml and expected-helm3.yaml differ")
	}
}

// TestFixtures renders the team's own fixtures (testdata/fixtures/render and each engine's testdata/fixtures),
// which cover what the corpus cannot (multi-source $ref values, offline dependency build, refusals), against
// expected outputs made by Argo CD's own code (`make goldens`, tools/oracle) or, where a fixture says
// ORACLE-SKIP, by hand with the reason given.
func TestFixtures(t *testing.T) {
	dirs, err := filepath.Glob("../../testdata/fixtures/render/*")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("*/testdata/fixtures/*")
	dirs = append(dirs, more...)
	r := render.New(render.Options{})
	n := 0
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, "app.yaml")); err != nil {
			continue
		}
		n++
		t.Run(dir, func(t *testing.T) {
			got, err := renderCase(r, dir)
			if want, rerr := os.ReadFile(filepath.Join(dir, "expected-error.txt")); rerr == nil {
				if err == nil {
					t.Fatalf("rendered, but Argo CD refuses this fixture: %s", firstLine(string(want)))
				}
				return
			}
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			want, err := os.ReadFile(filepath.Join(dir, "expected.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			diffs, sameOrder, err := fidelity.Compare(want, got)
			if err != nil {
				t.Fatal(err)
			}
			if len(diffs) > 0 {
				t.Fatalf("differs from the expected output:\n%s", strings.Join(diffs, "\n"))
			}
			if !sameOrder {
				t.Fatalf("objects identical, but the document order differs")
			}
		})
	}
	if n == 0 {
		t.Fatal("no render fixtures found")
	}
}

func renderCase(r *render.Renderer, caseDir string) ([]byte, error) {
	return renderCaseAs(r, caseDir, "")
}

// renderCaseAs renders a case as Argo CD argocdVersion ("" keeps the case's render-env.yaml setting or the
// default).
func renderCaseAs(r *render.Renderer, caseDir, argocdVersion string) ([]byte, error) {
	appYAML, err := os.ReadFile(filepath.Join(caseDir, "app.yaml"))
	if err != nil {
		return nil, err
	}
	app, err := render.ParseApplication(appYAML)
	if err != nil {
		return nil, err
	}
	s, err := render.LoadSettings(filepath.Join(caseDir, "render-env.yaml"))
	if err != nil {
		return nil, err
	}
	if argocdVersion != "" {
		s.ArgoCDVersion = argocdVersion
	}
	// Fixture convention: refs/<ref>/ holds the checkout of a ref source's repository; every other source is
	// in the case folder itself.
	roots := map[string]string{}
	for _, src := range app.Spec.GetSources() {
		if src.Ref != "" {
			if st, err := os.Stat(filepath.Join(caseDir, "refs", src.Ref)); err == nil && st.IsDir() {
				roots[src.RepoURL] = filepath.Join(caseDir, "refs", src.Ref)
			}
		}
	}
	res, err := r.Render(context.Background(), render.Request{
		App: app,
		Repos: func(url string) (string, bool) {
			if root, ok := roots[url]; ok {
				return root, true
			}
			return caseDir, true
		},
		Settings: s,
	})
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := render.WriteYAML(&buf, res.Objects); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
