package render_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/render"
)

// FuzzRender feeds arbitrary Application specs to the renderer over a small repository that sits next to a
// "secret" outside it. Whatever the spec says, the render must not panic, must not take longer than its cap, must
// not return the outside file's content, and must fail with one line.
func FuzzRender(f *testing.F) {
	seeds := []string{
		"source: {repoURL: r, path: chart}",
		"source: {repoURL: r, path: chart, helm: {valueFiles: [../../secret/values.yaml]}}",
		"source: {repoURL: r, path: chart, helm: {valueFiles: ['*.yaml'], parameters: [{name: a, value: '{x,y}'}]}}",
		"source: {repoURL: r, path: kust, kustomize: {namePrefix: p-, images: [nginx=evil:1], commonLabels: {a: b}}}",
		"source: {repoURL: r, path: kust, kustomize: {components: [../../secret]}}",
		"source: {repoURL: r, path: dir, directory: {recurse: true, include: '{*.yaml,*.json}'}}",
		"source: {repoURL: r, path: dir, directory: {jsonnet: {libs: [/etc]}}}",
		"sources: [{repoURL: r, path: chart, helm: {valueFiles: [$v/../secret/values.yaml]}}, {repoURL: r, ref: v}]",
		"source: {repoURL: r, path: /}",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	base := f.TempDir()
	root := filepath.Join(base, "repo")
	const secret = "TOP-SECRET-OUTSIDE-THE-REPO"
	files := map[string]string{
		"secret/values.yaml":           "greeting: " + secret + "\n",
		"repo/chart/Chart.yaml":        chartYAML,
		"repo/chart/values.yaml":       "greeting: hi\n",
		"repo/chart/templates/c.yaml":  cmTemplate,
		"repo/kust/kustomization.yaml": "resources: [cm.yaml]\n",
		"repo/kust/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: k}\n",
		"repo/dir/a.yaml":              "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: d}\n",
		"repo/dir/main.jsonnet":        "{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'j'}}",
	}
	for p, c := range files {
		full := filepath.Join(base, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	r := render.New(render.Options{Limits: render.Limits{Timeout: 2 * time.Second, MaxDocuments: 100, MaxOutputBytes: 1 << 20}})
	f.Fuzz(func(t *testing.T, spec string) {
		y := "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: fuzz}\nspec:\n  destination: {namespace: n}\n  " + spec + "\n"
		app, err := render.ParseApplication([]byte(y))
		if err != nil {
			return
		}
		res, err := r.Render(context.Background(), render.Request{App: app, Repos: func(string) (string, bool) { return root, true }})
		if err != nil {
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("error leaks the outside file: %v", err)
			}
			return
		}
		var b strings.Builder
		if err := render.WriteYAML(&b, res.Objects); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), secret) {
			t.Fatalf("render read a file outside the repository:\n%s", b.String())
		}
		for _, p := range res.ReadFiles {
			if strings.HasPrefix(p, "..") || filepath.IsAbs(p) {
				t.Fatalf("read outside the repository: %s", p)
			}
		}
	})
}
