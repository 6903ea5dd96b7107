package render_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
	"github.com/fleetwave/fleetwave/internal/testkit/hostileyaml"
	"github.com/fleetwave/fleetwave/internal/testkit/memceiling"
)

// TestRenderAliasBombs: a YAML alias bomb in any input of any source type fails that app's render with one line,
// within a 1 GiB heap ceiling (each case runs in a child process of the test binary).
func TestRenderAliasBombs(t *testing.T) {
	bomb := hostileyaml.AliasBomb("  ", 9)
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
	padded := cm + "data:\n" + hostileyaml.AliasBomb("  ", 5) + "  pad: [" + strings.TrimSuffix(strings.Repeat("x,", 1000), ",") + "]\n"
	files := map[string]string{
		"dir/cm.yaml":                            cm + "data:\n" + bomb,
		"dirmany/cm.yaml":                        strings.Repeat(padded+"---\n", 300),
		"jsonnet/main.jsonnet":                   "std.parseYaml(importstr 'bomb.yaml')",
		"jsonnet/bomb.yaml":                      "l: 1\n" + hostileyaml.AliasBomb("", 9),
		"jsonnetcode/main.jsonnet":               "std.parseYaml(" + fmt.Sprintf("%q", hostileyaml.AliasBomb("", 9)) + ")",
		"chart/Chart.yaml":                       "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
		"chart/values.yaml":                      "greeting: hi\n" + hostileyaml.AliasBomb("", 9),
		"chart/templates/cm.yaml":                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {g: {{ .Values.greeting | quote }}}\n",
		"chart2/Chart.yaml":                      "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
		"chart2/extra.yaml":                      "greeting: hi\n" + hostileyaml.AliasBomb("", 9),
		"chart2/templates/cm.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {g: {{ .Values.greeting | quote }}}\n",
		"chart3/Chart.yaml":                      "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
		"chart3/templates/cm.yaml":               cm + "data:\n{{ .Files.Get \"files/bomb.txt\" | indent 2 }}\n",
		"chart3/files/bomb.txt":                  hostileyaml.AliasBomb("", 9),
		"kust/kustomization.yaml":                "resources: [cm.yaml]\n",
		"kust/cm.yaml":                           cm + "data:\n" + bomb,
		"kustmany/kustomization.yaml":            "resources: [cm.yaml]\n",
		"kustmany/cm.yaml":                       strings.Repeat(padded+"---\n", 300),
		"kusthelm/kustomization.yaml":            "helmCharts:\n- name: demo\n  releaseName: r\n",
		"kusthelm/charts/demo/Chart.yaml":        "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
		"kusthelm/charts/demo/templates/cm.yaml": cm + "data:\n{{ .Files.Get \"files/bomb.txt\" | indent 2 }}\n",
		"kusthelm/charts/demo/files/bomb.txt":    hostileyaml.AliasBomb("", 9),
		"kusthelm/charts/demo/values.yaml":       "{}\n",
	}
	tests := []struct{ name, source, buildOptions string }{
		{"plain manifest", "{repoURL: r, path: dir}", ""},
		{"many manifests each within the library's rule", "{repoURL: r, path: dirmany}", ""},
		{"jsonnet parseYaml of a file", "{repoURL: r, path: jsonnet}", ""},
		{"jsonnet parseYaml of code", "{repoURL: r, path: jsonnetcode}", ""},
		{"helm values.yaml", "{repoURL: r, path: chart}", ""},
		{"helm value file", "{repoURL: r, path: chart2, helm: {valueFiles: [extra.yaml]}}", ""},
		{"helm template output", "{repoURL: r, path: chart3}", ""},
		{"kustomize resource", "{repoURL: r, path: kust}", ""},
		{"kustomize resources each within the library's rule", "{repoURL: r, path: kustmany}", ""},
		{"kustomize helmCharts output", "{repoURL: r, path: kusthelm}", "--enable-helm"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			memceiling.Run(t, 1<<30, func(t *testing.T) {
				root := filetest.Tree(t, files)
				req := mustApp(t, "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: evil, namespace: argocd}\nspec:\n  destination: {namespace: d}\n  source: "+tc.source+"\n")
				req.Repos = func(string) (string, bool) { return root, true }
				req.Settings.KustomizeBuildOptions = tc.buildOptions
				_, err := render.New(render.Options{}).Render(context.Background(), req)
				if err == nil {
					t.Fatal("rendered; want a refusal")
				}
				msg := err.Error()
				if strings.Contains(msg, "\n") || !strings.Contains(msg, `app "evil"`) || len(msg) > 1000 {
					t.Errorf("error is not one short line naming the app: %q", msg)
				}
				if !strings.Contains(msg, "excessive aliasing") {
					t.Errorf("error does not name the rule: %q", msg)
				}
			})
		})
	}
}
