package discover

import (
	"reflect"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
	"github.com/fleetwave/fleetwave/internal/testkit/hostileyaml"
	"github.com/fleetwave/fleetwave/internal/testkit/memceiling"
)

// TestAliasBombsAreProblemsOfTheirFile: an alias bomb in a file discovery reads is refused as a problem of that
// file; every other Application is still found. Each case runs under a 1 GiB heap ceiling.
func TestAliasBombsAreProblemsOfTheirFile(t *testing.T) {
	good := appDoc("good", "argocd", "apps/good")
	// padded passes the YAML library's per-document rule; 300 of them in one file expand to ~20M nodes.
	padded := "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: x}\nspec:\n  info:\n" + hostileyaml.AliasBomb("    ", 5) +
		"    pad: [" + strings.TrimSuffix(strings.Repeat("x,", 1000), ",") + "]\n"
	tests := []struct {
		name    string
		files   map[string]string
		problem string
		apps    []string
	}{
		{name: "Application", files: map[string]string{
			"apps/bad.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: bad}\nspec:\n  info:\n" + hostileyaml.AliasBomb("    ", 9),
		}, problem: "apps/bad.yaml: refused (yaml-aliases)", apps: []string{"good"}},
		{name: "later document", files: map[string]string{
			"apps/bad.yaml": appDoc("other", "argocd", "apps/other") + "\n---\napiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: s}\nspec:\n" + hostileyaml.AliasBomb("  ", 9),
		}, problem: "apps/bad.yaml: refused (yaml-aliases)", apps: []string{"good"}},
		{name: "many documents each within the library's rule", files: map[string]string{
			"apps/bad.yaml": strings.Repeat(padded+"---\n", 300),
		}, problem: "apps/bad.yaml: refused (yaml-aliases)", apps: []string{"good"}},
		{name: "git files generator input", files: map[string]string{
			"apps/set.yaml": `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: set}
spec:
  generators:
  - git:
      repoURL: ` + repoURL + `
      files: [{path: "tenants/*/config.yaml"}]
  template:
    metadata: {name: '{{tenant}}'}
    spec: {project: default, source: {repoURL: ` + repoURL + `, path: '{{path}}'}, destination: {name: in-cluster}}
`,
			"tenants/a/config.yaml": "tenant: a\n",
			"tenants/b/config.yaml": "tenant: b\n" + hostileyaml.AliasBomb("", 9),
		}, problem: "tenants/b/config.yaml: refused (yaml-aliases)", apps: []string{"good"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			memceiling.Run(t, 1<<30, func(t *testing.T) {
				files := map[string]string{"apps/good.yaml": good}
				for k, v := range tt.files {
					files[k] = v
				}
				inv := Discover(Options{Root: filetest.Tree(t, files), IsThisRepo: thisRepo})
				p := problems(inv)
				if !strings.Contains(p, tt.problem) || !strings.Contains(p, "excessive aliasing") {
					t.Errorf("problems do not report %q:\n%s", tt.problem, p)
				}
				for _, pr := range inv.Problems {
					if strings.Contains(pr.Error(), "\n") {
						t.Errorf("problem spans lines: %q", pr.Error())
					}
				}
				var got []string
				for _, a := range inv.Apps() {
					if a.App.Name == "good" {
						got = append(got, a.App.Name)
					}
				}
				if !reflect.DeepEqual(got, tt.apps) {
					t.Errorf("apps = %q, want %q among them", names(inv.Apps()), tt.apps)
				}
			})
		})
	}
}
