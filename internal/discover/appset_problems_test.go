package discover

import (
	"strings"
	"testing"
)

// TestApplicationSetsThatGenerateNothingUsableAreProblems: an ApplicationSet whose template leaves a name
// unresolved, or whose git generator path leaves the repository, is reported as a problem of that ApplicationSet
// instead of yielding an app named "{{.missing" or silently nothing.
func TestApplicationSetsThatGenerateNothingUsableAreProblems(t *testing.T) {
	set := func(name, spec string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: " + name + ", namespace: argocd}\nspec:\n" + spec
	}
	tmpl := func(name string) string {
		return "  template:\n    metadata: {name: '" + name + "'}\n    spec: {project: default, source: {repoURL: " + repoURL +
			", path: apps}, destination: {name: in-cluster, namespace: x}}\n"
	}
	tests := []struct {
		name, appset, problem string
	}{
		{"legacy template not closed", set("s", "  generators: [{list: {elements: [{env: a}]}}]\n"+tmpl("{{.missing")),
			`argocd/s: generator 1: generated application name "{{.missing" is not a valid Kubernetes name`},
		{"legacy parameter unknown", set("s", "  generators: [{list: {elements: [{env: a}]}}]\n"+tmpl("web-{{cluster}}")),
			`argocd/s: generator 1: generated application name "web-{{cluster}}" is not a valid Kubernetes name`},
		{"go template without value", set("s", "  goTemplate: true\n  generators: [{list: {elements: [{env: a}]}}]\n"+tmpl("web-{{.cluster}}")),
			`argocd/s: generator 1: generated application name "web-<no value>" is not a valid Kubernetes name`},
		{"git directories outside", set("s", "  generators: [{git: {repoURL: "+repoURL+", directories: [{path: '../*'}]}}]\n"+tmpl("{{path.basename}}")),
			`argocd/s: generator 1: git generator: directories path "../*" leaves the repository`},
		{"git files absolute", set("s", "  generators: [{git: {repoURL: "+repoURL+", files: [{path: '/etc/*.yaml'}]}}]\n"+tmpl("{{path.basename}}")),
			`argocd/s: generator 1: git generator: files path "/etc/*.yaml" leaves the repository`},
		{"git files climbing out", set("s", "  generators: [{git: {repoURL: "+repoURL+", files: [{path: 'apps/../../x.yaml'}]}}]\n"+tmpl("{{path.basename}}")),
			`git generator: files path "apps/../../x.yaml" leaves the repository`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv, apps := generateFrom(t, tt.appset, map[string]string{"apps/good.yaml": appDoc("good", "argocd", "apps/good"), "apps/x/k.yaml": "a: 1\n"}, nil)
			if got := names(apps); len(got) != 1 || got[0] != "good" {
				t.Errorf("apps = %q, want only good", got)
			}
			p := problems(inv)
			if !strings.Contains(p, "appset.yaml: ") || !strings.Contains(p, tt.problem) {
				t.Errorf("problems do not report %q:\n%s", tt.problem, p)
			}
		})
	}
}
