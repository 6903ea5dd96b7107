package discover

import (
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/edge/source"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
)

func parseApp(t *testing.T, doc string) *v1alpha1.Application {
	t.Helper()
	var a v1alpha1.Application
	if err := yaml.Unmarshal([]byte(doc), &a); err != nil {
		t.Fatal(err)
	}
	return &a
}

func mod(paths ...string) []source.Change {
	var out []source.Change
	for _, p := range paths {
		out = append(out, source.Change{Status: "M", Path: p})
	}
	return out
}

func TestAffectedRules(t *testing.T) {
	helmApp := `
metadata: {name: web}
spec:
  source:
    repoURL: https://github.com/example/fleet.git
    path: charts/web
    helm:
      valueFiles: [values-prd.yaml, ../../values/shared.yaml, "envs/*.yaml"]
      fileParameters: [{name: cfg, path: files/cfg.txt}]
  destination: {name: prd-eu-1, namespace: web}`
	multiApp := `
metadata: {name: multi}
spec:
  sources:
  - repoURL: https://charts.example.com
    chart: web
    targetRevision: 1.2.3
    helm:
      valueFiles: [$values/values/web/prd.yaml]
  - repoURL: git@github.com:example/fleet.git
    ref: values
  - repoURL: https://github.com/example/fleet
    ref: extra
    path: extra-manifests
  destination: {name: prd-eu-1}`
	annotated := `
metadata:
  name: ann
  annotations: {argocd.argoproj.io/manifest-generate-paths: ".;/shared/common"}
spec:
  source: {repoURL: https://github.com/example/fleet.git, path: apps/ann}
  destination: {name: prd-eu-1}`
	external := `
metadata: {name: ext}
spec:
  source: {repoURL: https://github.com/other/repo.git, path: apps/ext}
  destination: {name: prd-eu-1}`
	kustom := `
metadata: {name: k}
spec:
  source: {repoURL: https://github.com/example/fleet.git, path: overlays/prd}
  destination: {name: prd-eu-1}`

	cases := []struct {
		name      string
		base      string // "" = absent
		head      string // "" = absent; "=" = same as base
		failed    bool
		read      []string
		dirs      []string
		changes   []source.Change
		want      []string // reasons
		warning   string   // substring
		notAffect bool
	}{
		{name: "added", head: kustom, want: []string{"added"}},
		{name: "removed", base: kustom, want: []string{"removed"}},
		{name: "nothing relevant changed", base: kustom, head: "=", read: []string{"overlays/prd/kustomization.yaml"}, changes: mod("README.md"), notAffect: true},
		{name: "source path", base: kustom, head: "=", changes: mod("overlays/prd/notes.txt"), want: []string{"source-path: overlays/prd/notes.txt"}},
		{name: "source path is a directory prefix, not a string prefix", base: kustom, head: "=", changes: mod("overlays/prd-2/x.yaml"), notAffect: true},
		{name: "read file outside the path (kustomize base)", base: kustom, head: "=", read: []string{"overlays/prd/kustomization.yaml", "base/deploy.yaml"},
			changes: mod("base/deploy.yaml"), want: []string{"read-file: base/deploy.yaml"}},
		{name: "file added to a listed directory", base: kustom, head: "=", dirs: []string{"base"},
			changes: []source.Change{{Status: "A", Path: "base/new.yaml"}}, want: []string{"read-dir: base/new.yaml"}},
		{name: "unread file modified in a listed directory", base: kustom, head: "=", dirs: []string{"base"},
			changes: mod("base/README.md"), notAffect: true},
		{name: "rename away from a read file", base: kustom, head: "=", read: []string{"base/deploy.yaml"},
			changes: []source.Change{{Status: "R", Path: "base/deploy2.yaml", OldPath: "base/deploy.yaml"}}, want: []string{"read-file: base/deploy.yaml"}},
		{name: "helm value file outside the chart", base: helmApp, head: "=", changes: mod("values/shared.yaml"), want: []string{"value-file: values/shared.yaml"}},
		{name: "helm value file glob", base: helmApp, head: "=", changes: mod("charts/web/envs/eu.yaml"), want: []string{"source-path: charts/web/envs/eu.yaml"}},
		{name: "helm file parameter", base: helmApp, head: "=", changes: mod("charts/web/files/cfg.txt"), want: []string{"source-path: charts/web/files/cfg.txt"}},
		{name: "ref source value file", base: multiApp, head: "=", changes: mod("values/web/prd.yaml"), want: []string{"ref-source: values/web/prd.yaml"}},
		{name: "ref source with a path", base: multiApp, head: "=", changes: mod("extra-manifests/cm.yaml"), want: []string{"ref-source: extra-manifests/cm.yaml"}},
		{name: "other value file of the ref repo", base: multiApp, head: "=", changes: mod("values/web/stg.yaml"), notAffect: true},
		{name: "external source untouched by this repository", base: external, head: "=", changes: mod("apps/ext/x.yaml"), notAffect: true},
		{name: "definition changed", base: kustom, head: strings.Replace(kustom, "overlays/prd", "overlays/prd2", 1), changes: mod("x"), want: []string{"application-changed"}},
		{name: "tracking annotation alone is not a change", base: kustom, head: strings.Replace(kustom, "metadata: {name: k}", "metadata: {name: k, annotations: {argocd.argoproj.io/tracking-id: 'root:argoproj.io/Application:argocd/k'}}", 1), notAffect: true},
		{name: "base render failed", base: kustom, head: "=", failed: true, want: []string{"base-render-failed"}},
		{name: "manifest-generate-paths: relative path", base: annotated, head: "=", changes: mod("apps/ann/x.yaml"), want: []string{"manifest-generate-paths: apps/ann/x.yaml"}},
		{name: "manifest-generate-paths: absolute path", base: annotated, head: "=", changes: mod("shared/common/a.yaml"), want: []string{"manifest-generate-paths: shared/common/a.yaml"}},
		{name: "manifest-generate-paths: '.' on a ref source without a path matches every change (as in Argo CD)",
			base: `
metadata:
  name: multi2
  annotations: {argocd.argoproj.io/manifest-generate-paths: .}
spec:
  sources:
  - {repoURL: https://github.com/example/fleet.git, path: charts/x, helm: {valueFiles: [$v/values/x.yaml]}}
  - {repoURL: https://github.com/example/fleet.git, ref: v}
  destination: {name: prd-eu-1}`, head: "=", changes: mod("README.md"), want: []string{"manifest-generate-paths: README.md"}},
		{name: "manifest-generate-paths: ignored with a Helm repository source",
			base: strings.Replace(multiApp, "metadata: {name: multi}", "metadata: {name: multi, annotations: {argocd.argoproj.io/manifest-generate-paths: /nowhere}}", 1), head: "=",
			changes: mod("values/web/prd.yaml"), want: []string{"ref-source: values/web/prd.yaml"}},
		{name: "manifest-generate-paths: absolute paths hold for a ref source without a path",
			base: `
metadata:
  name: multi2
  annotations: {argocd.argoproj.io/manifest-generate-paths: /charts/x}
spec:
  sources:
  - {repoURL: https://github.com/example/fleet.git, path: charts/x, helm: {valueFiles: [$v/values/x.yaml]}}
  - {repoURL: https://github.com/example/fleet.git, ref: v}
  destination: {name: prd-eu-1}`, head: "=", changes: mod("README.md"), notAffect: true},
		{name: "manifest-generate-paths: a read file outside the paths warns", base: annotated, head: "=", read: []string{"base/x.yaml"},
			changes: mod("base/x.yaml"), notAffect: true, warning: "base/x.yaml changed and feeds this app's manifests, but is outside its argocd.argoproj.io/manifest-generate-paths"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ev Evidence
			if tc.base != "" {
				ev.Base = parseApp(t, tc.base)
			}
			switch tc.head {
			case "":
			case "=":
				ev.Head = parseApp(t, tc.base)
			default:
				ev.Head = parseApp(t, tc.head)
			}
			ev.BaseRenderFailed, ev.ReadFiles, ev.ReadDirs = tc.failed, tc.read, tc.dirs
			v := Affected(ev, tc.changes, thisRepo)
			var got []string
			for _, r := range v.Reasons {
				got = append(got, r.String())
			}
			if tc.notAffect {
				if v.Affected {
					t.Fatalf("affected by %q, want not affected", got)
				}
			} else if !v.Affected || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("affected=%v reasons %q, want %q", v.Affected, got, tc.want)
			}
			if !strings.Contains(v.Warning, tc.warning) || (tc.warning == "" && v.Warning != "") {
				t.Fatalf("warning = %q, want %q", v.Warning, tc.warning)
			}
		})
	}
}

func TestReach(t *testing.T) {
	root := filetest.Tree(t, map[string]string{
		"kustomize/base/kustomization.yaml":         "resources: [deploy.yaml]\nconfigMapGenerator: [{name: cfg, files: [app.properties=../../config/app.properties], envs: [../../config/extra.env]}]\n",
		"kustomize/base/deploy.yaml":                "kind: Deployment\n",
		"config/app.properties":                     "a=1\n",
		"config/extra.env":                          "B=2\n",
		"kustomize/overlays/prd/kustomization.yaml": "resources: [../../base, ../../../common/pdb.yaml]\npatches: [{path: patch.yaml}]\ntransformers: [../../../transformers/labels.yaml]\n",
		"kustomize/overlays/prd/patch.yaml":         "kind: Deployment\n",
		"transformers/labels.yaml":                  "apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: p}\npath: ../patches/common.yaml\n",
		"patches/common.yaml":                       "kind: Deployment\n",
		"common/pdb.yaml":                           "kind: PodDisruptionBudget\n",
		"charts/app/Chart.yaml":                     "apiVersion: v2\nname: app\nversion: 1.0.0\ndependencies: [{name: lib, repository: 'file://../lib'}, {name: redis, repository: https://charts.example.com}]\n",
		"charts/lib/Chart.yaml":                     "apiVersion: v2\nname: lib\nversion: 1.0.0\ntype: library\n",
		"values/app/prd.yaml":                       "a: 1\n",
		"jsonnet/app/main.jsonnet":                  "{}\n",
		"unrelated/x.yaml":                          "kind: ConfigMap\n",
	})
	inv := Discover(Options{Root: root, IsThisRepo: thisRepo})
	src := func(s string) *App {
		return &App{App: parseApp(t, "metadata: {name: web}\nspec:\n  project: p\n  destination: {namespace: web}\n"+s)}
	}
	cases := []struct {
		name      string
		app       *App
		in, out   []string
		unbounded bool
	}{
		{name: "kustomize closure", app: src("  source: {repoURL: " + repoURL + ", path: kustomize/overlays/prd}\n"),
			in:  []string{"kustomize/overlays/prd/patch.yaml", "kustomize/base/deploy.yaml", "config/app.properties", "config/extra.env", "common/pdb.yaml", "transformers/labels.yaml", "patches/common.yaml", "kustomize/overlays/prd/new.yaml"},
			out: []string{"unrelated/x.yaml", "kustomize/overlays/stg/kustomization.yaml", "charts/app/Chart.yaml"}},
		{name: "helm value files and file:// dependencies", app: src("  source: {repoURL: " + repoURL + ", path: charts/app, helm: {valueFiles: [../../values/app/prd.yaml, ../../values/app/$ARGOCD_APP_NAME.yaml]}}\n"),
			in:  []string{"charts/app/templates/x.yaml", "charts/lib/templates/_h.tpl", "values/app/prd.yaml", "values/app/web.yaml"},
			out: []string{"values/app/stg.yaml", "charts/other/Chart.yaml"}},
		{name: "value file globs", app: src("  source: {repoURL: " + repoURL + ", path: charts/app, helm: {valueFiles: [../../values/app/p*.yaml]}}\n"),
			in: []string{"values/app/prd.yaml", "values/app/pre.yaml"}, out: []string{"values/app/stg.yaml", "values/other/prd.yaml"}},
		{name: "ref source value files", app: src("  sources:\n  - {repoURL: https://charts.example.com, chart: app, targetRevision: 1.0.0, helm: {valueFiles: [$v/values/app/prd.yaml]}}\n  - {repoURL: " + repoURL + ", ref: v}\n"),
			in: []string{"values/app/prd.yaml"}, out: []string{"values/app/stg.yaml", "charts/app/Chart.yaml"}},
		{name: "external source", app: src("  source: {repoURL: https://github.com/other/repo, path: charts/app}\n"),
			out: []string{"charts/app/Chart.yaml"}},
		{name: "jsonnet is unbounded", app: src("  source: {repoURL: " + repoURL + ", path: jsonnet/app}\n"), unbounded: true},
		{name: "the repository root is unbounded", app: src("  source: {repoURL: " + repoURL + ", path: .}\n"), unbounded: true},
		{name: "an unknown variable in a value file path is unbounded", app: src("  source: {repoURL: " + repoURL + ", path: charts/app, helm: {valueFiles: [$CLUSTER.yaml]}}\n"), unbounded: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := inv.Reach(tc.app)
			if r.Unbounded() != tc.unbounded {
				t.Fatalf("unbounded = %v", r.Unbounded())
			}
			for _, f := range tc.in {
				if !r.Touches([]string{f}) || !r.TouchesAny(NewPaths([]string{f})) {
					t.Errorf("%s not in reach", f)
				}
				// The indexed form answers the same over a set that holds the file among others.
				if !r.TouchesAny(NewPaths(append(append([]string(nil), tc.out...), f))) {
					t.Errorf("%s among %q not in reach", f, tc.out)
				}
			}
			for _, f := range tc.out {
				if r.Touches([]string{f}) {
					t.Errorf("%s in reach", f)
				}
			}
			if !tc.unbounded && r.TouchesAny(NewPaths(tc.out)) {
				t.Errorf("some of %q in reach", tc.out)
			}
			if r.TouchesAny(NewPaths(nil)) {
				t.Error("an empty set touches the reach")
			}
		})
	}
}

// Reaches are computed on every core at once (the closures they share are kept once), and a kustomization cycle,
// which Kustomize refuses, still leaves each side with the other in its reach, whichever is asked first.
func TestReachConcurrentAndCyclic(t *testing.T) {
	root := filetest.Tree(t, map[string]string{
		"k/a/kustomization.yaml":      "resources: [../b, a.yaml]\n",
		"k/a/a.yaml":                  "kind: ConfigMap\n",
		"k/b/kustomization.yaml":      "resources: [../a, b.yaml, ../shared]\n",
		"k/b/b.yaml":                  "kind: ConfigMap\n",
		"k/shared/kustomization.yaml": "resources: [s.yaml]\n",
		"k/shared/s.yaml":             "kind: ConfigMap\n",
		"k/other/kustomization.yaml":  "resources: [o.yaml]\n",
		"k/other/o.yaml":              "kind: ConfigMap\n",
	})
	for _, first := range []string{"k/a", "k/b"} {
		inv := Discover(Options{Root: root, IsThisRepo: thisRepo})
		app := func(p string) *App {
			return &App{App: parseApp(t, "metadata: {name: web}\nspec:\n  project: p\n  destination: {namespace: web}\n  source: {repoURL: "+repoURL+", path: "+p+"}\n")}
		}
		order := []string{first, "k/a", "k/b", "k/other"}
		var wg sync.WaitGroup
		got := make([]Reach, 4*len(order))
		for i := range got {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				got[i] = inv.Reach(app(order[i%len(order)]))
			}(i)
		}
		wg.Wait()
		for i, r := range got {
			p := order[i%len(order)]
			want := map[string]bool{"k/a/a.yaml": true, "k/b/b.yaml": true, "k/shared/s.yaml": true}
			if p == "k/other" {
				want = map[string]bool{"k/other/o.yaml": true}
			}
			for _, f := range []string{"k/a/a.yaml", "k/b/b.yaml", "k/shared/s.yaml", "k/other/o.yaml"} {
				if r.Touches([]string{f}) != want[f] {
					t.Errorf("first %s: reach of %s touches %s = %v, want %v", first, p, f, !want[f], want[f])
				}
			}
		}
	}
}
