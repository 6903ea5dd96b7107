package render_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/render/fidelity"
	"github.com/fleetwave/fleetwave/internal/testkit/sharedtest"
)

// TestFidelity renders every case of the fidelity corpus in-process and compares the result with Argo CD's own
// manifest generation, object by object, as the corpus's compare tool does, once per reference toolchain with
// the Argo CD version it belongs to (sharedtest.FidelityTargets: expected.yaml, Argo CD 3.5 with Helm 4, as
// 3.5; expected-helm3.yaml, the Helm 3 toolchain of 3.4, as 3.4). Cases where Argo CD refuses to render must
// fail here too. Where the two references differ (Helm 4's built-in API versions, its YAML, its install order),
// the render must also differ from the other one (objects or order), so the version switch itself is tested.
// The corpus is the shared folder's (sharedtest.Fidelity: skipped with one line on a clone, a failure when
// FLEETWAVE_REQUIRE_SHARED=1 and it is absent or incomplete).
func TestFidelity(t *testing.T) {
	r := render.New(render.Options{})
	for _, ft := range sharedtest.FidelityTargets {
		t.Run("argocd-"+ft.ArgoCDVersion, func(t *testing.T) { testFidelity(t, r, ft) })
	}
}

func testFidelity(t *testing.T, r *render.Renderer, ft sharedtest.FidelityTarget) {
	errName := strings.TrimSuffix(ft.Expected, ".yaml") + "-error.txt"
	passed, total, inOrder, distinct := 0, 0, 0, 0
	for _, caseDir := range sharedtest.FidelityCaseDirs(t) {
		total++
		t.Run(filepath.Base(caseDir), func(t *testing.T) {
			got, err := renderCaseAs(r, caseDir, ft.ArgoCDVersion)
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
			want, err := os.ReadFile(filepath.Join(caseDir, ft.Expected))
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
			if other, err := os.ReadFile(filepath.Join(caseDir, ft.Other)); err == nil && !bytes.Equal(other, want) {
				distinct++
				odiffs, oSameOrder, err := fidelity.Compare(other, got)
				if err != nil {
					t.Fatal(err)
				}
				if len(odiffs) == 0 && oSameOrder {
					t.Errorf("rendered as Argo CD %s, it also matches %s, which differs from %s", ft.ArgoCDVersion, ft.Other, ft.Expected)
				}
			}
		})
	}
	if distinct == 0 {
		t.Errorf("no case whose %s and %s differ: the version switch is untested", ft.Expected, ft.Other)
	}
	t.Logf("fidelity (Argo CD %s, %s): %d/%d cases identical (%d rendered in Argo CD's document order, %d refused as Argo CD refuses; %d differ from %s as they should)",
		ft.ArgoCDVersion, ft.Expected, passed, total, inOrder, passed-inOrder, distinct, ft.Other)
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
	// render --app's worker sends EncodeYAML's stream: the same bytes on every case.
	if enc, err := render.EncodeYAML(res.Objects, 1<<40); err != nil || !bytes.Equal(enc, buf.Bytes()) {
		return nil, fmt.Errorf("EncodeYAML (%v) differs from WriteYAML", err)
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
