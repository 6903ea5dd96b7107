package kustomize

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/render/repofs"
	"github.com/fleetwave/fleetwave/internal/render/repofs/repofstest"
)

// diffEnv is the build environment of the testdata/diff cases.
var diffEnv = &v1alpha1.Env{
	{Name: "ARGOCD_APP_NAME", Value: "diffapp"},
	{Name: "ARGOCD_APP_NAMESPACE", Value: "dest"},
	{Name: "ARGOCD_APP_REVISION", Value: "0123456789abcdef0123456789abcdef01234567"},
	{Name: "ARGOCD_APP_REVISION_SHORT", Value: "0123456"},
}

// diffCase is a testdata/diff/<case>/case*.yaml: an application source's Kustomize half.
type diffCase struct {
	Path         string                               `json:"path"`
	Kustomize    *v1alpha1.ApplicationSourceKustomize `json:"kustomize"`
	BuildOptions string                               `json:"buildOptions"`
	KubeVersion  string                               `json:"kubeVersion"`
	APIVersions  []string                             `json:"apiVersions"`
}

func loadDiffCase(t *testing.T, file string) diffCase {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var c diffCase
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if c.KubeVersion == "" {
		c.KubeVersion = "v1.30.0"
	}
	if c.APIVersions == nil {
		c.APIVersions = []string{"v1", "apps/v1", "apps/v1/Deployment", "batch/v1"}
	}
	return c
}

// TestGoldens builds each testdata/diff case and compares it with the output Argo CD's own util/kustomize Build
// produced with the pinned kustomize and helm binaries (written by TestDifferential -update).
func TestGoldens(t *testing.T) {
	cases, err := filepath.Glob("testdata/diff/*/case*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e := New()
	for _, cf := range cases {
		if strings.Contains(cf, ".expected") {
			continue
		}
		t.Run(strings.TrimPrefix(cf, "testdata/diff/"), func(t *testing.T) {
			c := loadDiffCase(t, cf)
			base := strings.TrimSuffix(cf, ".yaml")
			objs, err := e.Build(context.Background(), Input{FS: repofstest.Open(t, filepath.Dir(cf)), AppPath: c.Path, Kustomize: c.Kustomize,
				Env: diffEnv, BuildOptions: c.BuildOptions, KubeVersion: c.KubeVersion, APIVersions: c.APIVersions})
			if _, statErr := os.Stat(base + ".expected-error.txt"); statErr == nil {
				if err == nil {
					t.Fatal("Argo CD fails on this case, the build succeeded")
				}
				return
			}
			want, rerr := os.ReadFile(base + ".expected.yaml")
			if rerr != nil {
				t.Fatalf("no golden (run TestDifferential -update): %v", rerr)
			}
			if err != nil {
				t.Fatal(err)
			}
			if diffs := compareObjects(t, objs, want); len(diffs) > 0 {
				t.Errorf("%d differences:\n%s", len(diffs), strings.Join(diffs, "\n"))
			}
		})
	}
}

func ids(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName())
	}
	sort.Strings(out)
	return out
}

// TestRefusals covers the hostile-input rules: every refusal is an error naming the rule and the file.
func TestRefusals(t *testing.T) {
	tests := []struct {
		name        string
		dir         string
		opts        *v1alpha1.ApplicationSourceKustomize
		buildOpts   string
		allowRemote bool
		wantRule    repofs.Rule
		wantText    []string
	}{
		{name: "github base", dir: "remote-github", wantRule: RuleRemote, wantText: []string{"app/kustomization.yaml", "resources", "not allowed"}},
		{name: "https resource", dir: "remote-https", wantRule: RuleRemote, wantText: []string{"app/kustomization.yaml", "https://raw.githubusercontent.com"}},
		{name: "git:: base", dir: "remote-git", wantRule: RuleRemote, wantText: []string{"git::https://example.com"}},
		{name: "scp-style component", dir: "remote-ssh", wantRule: RuleRemote, wantText: []string{"components"}},
		{name: "remote patch file", dir: "remote-patch", wantRule: RuleRemote, wantText: []string{"patches.path"}},
		{name: "remote allowed still refused", dir: "remote-github", allowRemote: true, wantRule: RuleRemote, wantText: []string{"no network access"}},
		{name: "remote component added by the application", dir: "components", opts: &v1alpha1.ApplicationSourceKustomize{
			Components: []string{"https://github.com/example/repo//component"}}, wantRule: RuleRemote},
		{name: "dot-dot escape", dir: "escape", wantRule: repofs.RulePathEscape, wantText: []string{"../../outside"}},
		{name: "exec plugin", dir: "exec-plugin", wantRule: RulePlugin, wantText: []string{"external plugins disabled"}},
		{name: "KRM exec function", dir: "krm-function", wantRule: RulePlugin},
		{name: "chart repository pull", dir: "helm-pull", buildOpts: "--enable-helm", wantRule: RuleHelmPull, wantText: []string{"nginx", "not vendored"}},
		{name: "helm generator plugin", dir: "helm-generator-plugin", buildOpts: "--enable-helm", wantRule: RulePlugin, wantText: []string{"helmCharts"}},
	}
	e := New()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.Build(context.Background(), Input{
				FS: repofstest.Open(t, filepath.Join("testdata", tt.dir)), AppPath: "app", Kustomize: tt.opts,
				BuildOptions: tt.buildOpts, AllowRemote: tt.allowRemote, KubeVersion: "v1.30.0",
			})
			if err == nil {
				t.Fatal("build succeeded, want a refusal")
			}
			msg := err.Error()
			if !strings.Contains(msg, "refused ("+string(tt.wantRule)+")") {
				t.Errorf("error %q does not name rule %s", msg, tt.wantRule)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			if !strings.HasPrefix(msg, "kustomize build app:") {
				t.Errorf("error %q does not name the application path", msg)
			}
			for _, s := range tt.wantText {
				if !strings.Contains(msg, s) {
					t.Errorf("error %q does not mention %q", msg, s)
				}
			}
		})
	}
}

// TestSymlinkEscape: a resource that is a symbolic link to a file outside the checkout is refused and never read.
func TestSymlinkEscape(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.yaml")
	if err := os.WriteFile(secret, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stolen\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(root, "app")
	if err := os.MkdirAll(app, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(app, "kustomization.yaml"), []byte("resources:\n- link.yaml\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(app, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	for _, opts := range []string{"", "--load-restrictor LoadRestrictionsNone"} {
		repo := repofstest.Open(t, root)
		objs, err := New().Build(context.Background(), Input{FS: repo, AppPath: "app", BuildOptions: opts})
		if err == nil || !strings.Contains(err.Error(), "refused ("+string(repofs.RuleSymlinkEscape)+")") {
			t.Fatalf("%q: got %v, %v; want a symlink-escape refusal", opts, ids(objs), err)
		}
		for _, f := range repo.Recorder().Files() {
			if strings.Contains(f, "secret") || f == "app/link.yaml" {
				t.Errorf("%q: read %s", opts, f)
			}
		}
	}
	// a symbolic link to /etc as a base directory
	if err := os.Symlink("/etc", filepath.Join(app, "etc")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(app, "kustomization.yaml"), []byte("resources:\n- etc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := New().Build(context.Background(), Input{FS: repofstest.Open(t, root), AppPath: "app"})
	if err == nil || !strings.Contains(err.Error(), string(repofs.RuleSymlinkEscape)) {
		t.Fatalf("got %v, want a symlink-escape refusal", err)
	}
}

// TestLoadRestrictor: kustomize's default LoadRestrictionsRootOnly refuses a file outside the kustomization
// root; --load-restrictor LoadRestrictionsNone allows it (still inside the checkout).
func TestLoadRestrictor(t *testing.T) {
	e := New()
	in := Input{FS: repofstest.Open(t, "testdata/load-restrictor"), AppPath: "app"}
	if _, err := e.Build(context.Background(), in); err == nil || !strings.Contains(err.Error(), "is not in or below") {
		t.Fatalf("root-only: got %v, want kustomize's security error", err)
	}
	in.BuildOptions = "--load-restrictor LoadRestrictionsNone"
	objs, err := e.Build(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(objs); len(got) != 1 || got[0] != "ConfigMap//cm" {
		t.Fatalf("got %v", got)
	}
	in.BuildOptions = "--load-restrictor Nonsense"
	if _, err := e.Build(context.Background(), in); err == nil || !strings.Contains(err.Error(), "illegal flag value") {
		t.Fatalf("got %v, want an illegal flag value error", err)
	}
}

// TestComponents: a missing component fails the build unless ignoreMissingComponents drops it, as Argo CD does.
func TestComponents(t *testing.T) {
	e := New()
	repo := repofstest.Open(t, "testdata/components")
	opts := &v1alpha1.ApplicationSourceKustomize{Components: []string{"../components/present", "../components/absent"}}
	_, err := e.Build(context.Background(), Input{FS: repo, AppPath: "app", Kustomize: opts})
	if err == nil || !strings.Contains(err.Error(), "../components/absent has no match") {
		t.Fatalf("got %v, want a missing component error", err)
	}
	opts.IgnoreMissingComponents = true
	objs, err := e.Build(context.Background(), Input{FS: repo, AppPath: "app", Kustomize: opts})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].GetAnnotations()["component"] != "present" {
		t.Fatalf("component not applied: %v", objs)
	}
	if got := repo.Recorder().Dirs(); !contains(got, "components/absent") {
		t.Errorf("the missing component is not recorded as a dependency: %v", got)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestHelmCharts checks the in-process HelmChartInflationGenerator against kustomize's documented behaviour:
// values override, CRDs included, test hooks skipped, other hooks kept, the namespace inherited from the overlay
// (helmRootNamespace) and the namespace transformer skipping helm-generated resources, Capabilities from
// --helm-kube-version and --helm-api-versions.
func TestHelmCharts(t *testing.T) {
	e := New()
	in := Input{
		FS: repofstest.Open(t, "testdata/helm-chart"), AppPath: "overlay", BuildOptions: "--enable-helm",
		KubeVersion: "v1.29.4", APIVersions: []string{"v1", "batch/v1/CronJob"},
	}
	objs, err := e.Build(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ConfigMap/prod/rel-cm",
		"CustomResourceDefinition//widgets.example.com",
		"Job//rel-hook",
		"Secret//rel-unscoped",
	}
	if got := ids(objs); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("got %v, want %v", got, want)
	}
	for _, o := range objs {
		if o.GetKind() != "ConfigMap" {
			continue
		}
		data, _, _ := unstructured.NestedStringMap(o.Object, "data")
		wantData := map[string]string{"greeting": "hi", "a": "1", "b": "3", "kube": "v1.29.4", "hasCron": "true"}
		for k, v := range wantData {
			if data[k] != v {
				t.Errorf("data.%s = %q, want %q", k, data[k], v)
			}
		}
		for k := range o.GetAnnotations() {
			if strings.HasPrefix(k, "internal.config.kubernetes.io") {
				t.Errorf("internal annotation %s leaked", k)
			}
		}
	}
	// without --enable-helm kustomize refuses helmCharts
	in.BuildOptions = ""
	if _, err := e.Build(context.Background(), in); err == nil || !strings.Contains(err.Error(), "enable-helm") {
		t.Fatalf("got %v, want kustomize's --enable-helm error", err)
	}
	// the checkout is never written
	if _, err := os.Stat("testdata/helm-chart/base/charts/demo/values.yaml"); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir("testdata/helm-chart/base")
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		if strings.HasPrefix(en.Name(), ".fleetwave") {
			t.Errorf("wrote %s into the checkout", en.Name())
		}
	}
}

// TestBuildOptions covers kustomize build flags Argo CD may pass from argocd-cm.
func TestBuildOptions(t *testing.T) {
	tests := []struct {
		opts    string
		wantErr string
	}{
		{opts: "--enable-alpha-plugins"},
		{opts: "--enable-helm --helm-command /usr/bin/evil"},
		{opts: "--reorder none"},
		{opts: "--enable-exec --network --mount type=bind,src=/,dst=/x"},
		{opts: "-o /tmp/out", wantErr: "--output is not supported"},
		{opts: "--no-such-flag", wantErr: "unknown flag"},
		{opts: "extra/path", wantErr: "specify one path"},
		{opts: "--reorder random", wantErr: "illegal flag value --reorder"},
	}
	for _, tt := range tests {
		t.Run(tt.opts, func(t *testing.T) {
			objs, err := New().Build(context.Background(), Input{FS: repofstest.Open(t, "testdata/components"), AppPath: "app", BuildOptions: tt.opts})
			if tt.wantErr == "" {
				if err != nil || len(objs) != 1 {
					t.Fatalf("got %v, %v", ids(objs), err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestEditErrors: failures of Argo CD's kustomize edit sequence are reported like kustomize reports them
// (kustomize v5.8.1's field validator accepts any label, annotation or namespace, so those are not errors).
func TestEditErrors(t *testing.T) {
	tests := []struct {
		name    string
		opts    v1alpha1.ApplicationSourceKustomize
		wantErr string
	}{
		{name: "bad image", opts: v1alpha1.ApplicationSourceKustomize{Images: v1alpha1.KustomizeImages{"busybox"}}, wantErr: "invalid format of image"},
		{name: "existing label without force", opts: v1alpha1.ApplicationSourceKustomize{CommonLabels: map[string]string{"team": "b"}},
			wantErr: "label team already in kustomization file"},
		{name: "existing label without force into labels", opts: v1alpha1.ApplicationSourceKustomize{CommonLabels: map[string]string{"x": "b"},
			LabelWithoutSelector: true, Patches: v1alpha1.KustomizePatches{{Patch: "[]", Target: &v1alpha1.KustomizeSelector{}}}}, wantErr: ""},
		{name: "include templates without without-selector", opts: v1alpha1.ApplicationSourceKustomize{
			CommonLabels: map[string]string{"a": "b"}, LabelIncludeTemplates: true}, wantErr: "--without-selector flag must be specified"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New().Build(context.Background(), Input{FS: repofstest.Open(t, "testdata/components"), AppPath: "app", Kustomize: &tt.opts})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got %v, want %q", err, tt.wantErr)
			}
		})
	}
	var r *repofs.Refusal
	_, err := New().Build(context.Background(), Input{FS: repofstest.Open(t, "testdata/components"), AppPath: "../x"})
	if !errors.As(err, &r) {
		t.Fatalf("got %v, want a refusal for an application path outside the checkout", err)
	}
}

// TestOpenAPIIsolation: a kustomization's `openapi` changes kustomize's process-wide schema; a broken custom
// schema makes kustomize panic. The build fails cleanly and the next build uses the default schema again
// (containers merged by name, not replaced).
func TestOpenAPIIsolation(t *testing.T) {
	e := New()
	repo := repofstest.Open(t, "testdata/openapi-bad")
	if _, err := e.Build(context.Background(), Input{FS: repo, AppPath: "app"}); err == nil {
		t.Fatal("a broken OpenAPI schema built")
	}
	objs, err := e.Build(context.Background(), Input{FS: repo, AppPath: "good"})
	if err != nil {
		t.Fatal(err)
	}
	containers, _, _ := unstructured.NestedSlice(objs[0].Object, "spec", "template", "spec", "containers")
	if len(containers) != 2 {
		t.Fatalf("strategic merge did not merge containers by name: %v", containers)
	}
}
