package kustomize

import (
	"context"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/render/repofs"
	"github.com/fleetwave/fleetwave/internal/render/repofs/repofstest"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
	"github.com/fleetwave/fleetwave/internal/testkit/hostileyaml"
	"github.com/fleetwave/fleetwave/internal/testkit/memceiling"
)

// TestAliasBombs: a YAML alias bomb in any file kustomize reads is refused, naming the file and the rule, before
// kyaml expands it (kyaml's DeAnchor has no limit: "fatal error: out of memory" on a 485-byte file). Each case runs
// in a child process under a 1 GiB heap ceiling, so a regression fails instead of taking the machine.
func TestAliasBombs(t *testing.T) {
	bomb := hostileyaml.AliasBomb("  ", 9)
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"
	tests := []struct {
		name     string
		files    map[string]string
		opts     *v1alpha1.ApplicationSourceKustomize
		wantFile string
	}{
		{name: "resource", files: map[string]string{
			"app/kustomization.yaml": "resources: [cm.yaml]\n",
			"app/cm.yaml":            cm + "data:\n" + bomb,
		}, wantFile: "app/cm.yaml"},
		{name: "second document of a resource", files: map[string]string{
			"app/kustomization.yaml": "resources: [cm.yaml]\n",
			"app/cm.yaml":            cm + "---\n" + cm + "data:\n" + bomb,
		}, wantFile: "app/cm.yaml"},
		{name: "resource part after a document only kyaml skips", files: map[string]string{
			"app/kustomization.yaml": "resources: [cm.yaml]\n",
			"app/cm.yaml":            cm + "...\n]]: [\n---\n" + cm + "data:\n" + bomb,
		}, wantFile: "app/cm.yaml"},
		{name: "kustomization", files: map[string]string{
			"app/kustomization.yaml": "resources: [cm.yaml]\ncommonAnnotations:\n" + bomb,
			"app/cm.yaml":            cm,
		}, wantFile: "app/kustomization.yaml"},
		{name: "kustomization edited by the application", files: map[string]string{
			"app/kustomization.yaml": "resources: [cm.yaml]\ncommonAnnotations:\n" + bomb,
			"app/cm.yaml":            cm,
		}, opts: &v1alpha1.ApplicationSourceKustomize{NamePrefix: "p-"}, wantFile: "app/kustomization.yaml"},
		{name: "base", files: map[string]string{
			"app/kustomization.yaml":  "resources: [../base]\n",
			"base/kustomization.yaml": "resources: [cm.yaml]\n",
			"base/cm.yaml":            cm + "data:\n" + bomb,
		}, wantFile: "base/cm.yaml"},
		{name: "patch file", files: map[string]string{
			"app/kustomization.yaml": "resources: [cm.yaml]\npatches:\n- path: patch.yaml\n",
			"app/cm.yaml":            cm,
			"app/patch.yaml":         cm + "data:\n" + bomb,
		}, wantFile: "app/patch.yaml"},
		{name: "strategic merge patch", files: map[string]string{
			"app/kustomization.yaml": "resources: [cm.yaml]\npatchesStrategicMerge: [patch.yaml]\n",
			"app/cm.yaml":            cm,
			"app/patch.yaml":         cm + "data:\n" + bomb,
		}, wantFile: "app/patch.yaml"},
		{name: "generator input", files: map[string]string{
			"app/kustomization.yaml": "configMapGenerator:\n- name: gen\n  files: [conf.yaml]\n",
			"app/conf.yaml":          "data:\n" + bomb,
		}, wantFile: "app/conf.yaml"},
		{name: "component", files: map[string]string{
			"app/kustomization.yaml":  "resources: [cm.yaml]\ncomponents: [../comp]\n",
			"app/cm.yaml":             cm,
			"comp/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\ncommonLabels:\n" + bomb,
		}, wantFile: "comp/kustomization.yaml"},
		{name: "transformer configuration", files: map[string]string{
			"app/kustomization.yaml": "resources: [cm.yaml]\ntransformers: [t.yaml]\n",
			"app/cm.yaml":            cm,
			"app/t.yaml":             "apiVersion: builtin\nkind: LabelTransformer\nmetadata:\n  name: t\nlabels:\n" + bomb,
		}, wantFile: "app/t.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			memceiling.Run(t, 1<<30, func(t *testing.T) {
				_, err := New().Build(context.Background(), Input{FS: repofstest.Open(t, filetest.Tree(t, tt.files)), AppPath: "app",
					Kustomize: tt.opts, KubeVersion: "v1.30.0"})
				if err == nil {
					t.Fatal("build succeeded, want a refusal")
				}
				msg := err.Error()
				for _, s := range []string{"kustomize build app:", tt.wantFile, "refused (" + string(repofs.RuleYAMLAliases) + ")", "excessive aliasing"} {
					if !strings.Contains(msg, s) {
						t.Errorf("error %q does not mention %q", msg, s)
					}
				}
				if strings.Contains(msg, "\n") {
					t.Errorf("error is not one line: %q", msg)
				}
			})
		})
	}
}

// TestAliasesAllowed: ordinary anchors and aliases (shared labels, merge keys) still build.
func TestAliasesAllowed(t *testing.T) {
	root := filetest.Tree(t, map[string]string{
		"app/kustomization.yaml": "resources: [cm.yaml]\n",
		"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  labels: &l {a: b}\n  annotations: *l\n" +
			"data:\n" + hostileyaml.AliasBomb("  ", 3) + "  m:\n    <<: *l\n",
	})
	objs, err := New().Build(context.Background(), Input{FS: repofstest.Open(t, root), AppPath: "app", KubeVersion: "v1.30.0"})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].GetAnnotations()["a"] != "b" {
		t.Fatalf("got %v", objs)
	}
}
