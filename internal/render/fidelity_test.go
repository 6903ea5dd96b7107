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
// manifest generation (expected-helm3.yaml: Argo CD's code with the Helm v3 toolchain), object by object, as the
// corpus's compare tool does. Cases where Argo CD refuses to render must fail here too. The corpus is the shared
// folder's (sharedtest.Fidelity: skipped with one line on a clone, a failure when FLEETWAVE_REQUIRE_SHARED=1 and
// it is absent or incomplete).
func TestFidelity(t *testing.T) {
	r := render.New(render.Options{})
	passed, total, inOrder := 0, 0, 0
	for _, caseDir := range sharedtest.FidelityCaseDirs(t) {
		total++
		t.Run(filepath.Base(caseDir), func(t *testing.T) {
			got, err := renderCase(r, caseDir)
			if want, rerr := os.ReadFile(filepath.Join(caseDir, "expected-helm3-error.txt")); rerr == nil {
				if err == nil {
					t.Fatalf("rendered, but Argo CD refuses this case: %s", firstLine(string(want)))
				}
				passed++
				return
			}
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			want, err := os.ReadFile(filepath.Join(caseDir, "expected-helm3.yaml"))
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
	t.Logf("fidelity: %d/%d cases identical (%d rendered in Argo CD's document order, %d refused as Argo CD refuses)", passed, total, inOrder, passed-inOrder)
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
