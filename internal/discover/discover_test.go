package discover

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/edge/source"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
)

const repoURL = "https://github.com/example/fleet.git"

func thisRepo(u string) bool { return source.NewRepoMatcher(repoURL).Match(u) }

var fleetClusters = []Cluster{
	{Name: "prd-eu-1", Server: "https://prd-eu-1.example.com", Labels: map[string]string{"env": "prd", "region": "eu-1"}},
	{Name: "stg-eu-1", Server: "https://stg-eu-1.example.com", Labels: map[string]string{"env": "stg", "region": "eu-1"}},
	{Name: "prd-us-1", Server: "https://prd-us-1.example.com", Labels: map[string]string{"env": "prd", "region": "us-1"}, Project: "payments"},
}

// generateFrom discovers a repository holding one ApplicationSet (appset.yaml) plus extra files.
func generateFrom(t *testing.T, appset string, extra map[string]string, clusters []Cluster) (*Inventory, []*App) {
	t.Helper()
	files := map[string]string{"appset.yaml": appset}
	for k, v := range extra {
		files[k] = v
	}
	inv := Discover(Options{Root: filetest.Tree(t, files), Clusters: clusters, IsThisRepo: thisRepo})
	return inv, inv.Apps()
}

func names(apps []*App) []string {
	var out []string
	for _, a := range apps {
		out = append(out, a.App.Name)
	}
	sort.Strings(out)
	return out
}

func problems(inv *Inventory) string {
	var s []string
	for _, p := range inv.Problems {
		s = append(s, p.Error())
	}
	return strings.Join(s, "\n")
}

func TestGenerators(t *testing.T) {
	cases := []struct {
		name     string
		appset   string
		extra    map[string]string
		clusters []Cluster
		want     []string                                 // generated app names
		check    func(t *testing.T, apps map[string]*App) // optional field checks, by name
		problem  string                                   // substring of an expected problem
	}{
		{
			name: "list legacy with values",
			appset: `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: guestbook}
spec:
  generators:
  - list:
      elements:
      - {cluster: engineering-dev, url: https://kubernetes.default.svc, values: {ns: dev}}
      - {cluster: engineering-prod, url: https://prd-eu-1.example.com, values: {ns: prod}}
  template:
    metadata: {name: '{{cluster}}-guestbook'}
    spec:
      project: default
      source: {repoURL: ` + repoURL + `, path: 'guestbook/{{cluster}}', targetRevision: HEAD}
      destination: {server: '{{url}}', namespace: '{{values.ns}}'}
`,
			clusters: fleetClusters,
			want:     []string{"engineering-dev-guestbook", "engineering-prod-guestbook"},
			check: func(t *testing.T, apps map[string]*App) {
				a := apps["engineering-prod-guestbook"]
				if a.App.Spec.Source.Path != "guestbook/engineering-prod" || a.App.Spec.Destination.Namespace != "prod" {
					t.Errorf("spec = %+v", a.App.Spec)
				}
				if a.Key != "argocd/engineering-prod-guestbook" || a.AppSet != "argocd/guestbook" || a.File != "appset.yaml" {
					t.Errorf("key %q appset %q file %q", a.Key, a.AppSet, a.File)
				}
				if a.Cluster.Name != "prd-eu-1" || !a.ClusterKnown {
					t.Errorf("cluster = %+v", a.Cluster)
				}
				if got := a.App.Finalizers; !reflect.DeepEqual(got, []string{v1alpha1.ResourcesFinalizerName}) {
					t.Errorf("finalizers = %v", got)
				}
			},
		},
		{
			name: "list goTemplate with nested element and elementsYaml",
			appset: `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: nested, namespace: team}
spec:
  goTemplate: true
  goTemplateOptions: ["missingkey=error"]
  generators:
  - list:
      elements:
      - {name: a, cfg: {replicas: 2}}
      elementsYaml: "- {name: b, cfg: {replicas: 3}}"
  template:
    metadata: {name: '{{.name}}-{{.cfg.replicas}}'}
    spec:
      project: default
      source: {repoURL: ` + repoURL + `, path: 'apps/{{.name}}'}
      destination: {name: in-cluster, namespace: '{{.name | upper}}'}
`,
			want: []string{"a-2", "b-3"},
			check: func(t *testing.T, apps map[string]*App) {
				a := apps["a-2"]
				if a.App.Namespace != "team" || a.Key != "team/a-2" || a.App.Spec.Destination.Namespace != "A" {
					t.Errorf("app = %s %+v", a.Key, a.App.Spec.Destination)
				}
				if a.Cluster.Name != InClusterName || !a.ClusterKnown {
					t.Errorf("cluster = %+v", a.Cluster)
				}
			},
		},
		{
			name: "missingkey=error fails the generator",
			appset: `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: strict}
spec:
  goTemplate: true
  goTemplateOptions: ["missingkey=error"]
  generators:
  - list: {elements: [{name: a}]}
  template:
    metadata: {name: '{{.nope}}'}
    spec: {project: default, source: {repoURL: x, path: .}, destination: {name: in-cluster}}
`,
			problem: "map has no entry for key",
		},
		{
			name: "clusters legacy: name, nameNormalized, server, labels, values; local cluster without selector",
			appset: `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: addons}
spec:
  generators:
  - clusters:
      values: {tier: '{{metadata.labels.env}}-tier'}
  template:
    metadata: {name: 'addons-{{nameNormalized}}', labels: {env: '{{metadata.labels.env}}', tier: '{{values.tier}}'}}
    spec:
      project: '{{project}}'
      source: {repoURL: ` + repoURL + `, path: addons}
      destination: {server: '{{server}}', namespace: addons}
`,
			clusters: append(append([]Cluster(nil), fleetClusters...), Cluster{Name: "Odd_Name", Server: "https://odd.example.com"}),
			want:     []string{"addons-in-cluster", "addons-odd-name", "addons-prd-eu-1", "addons-prd-us-1", "addons-stg-eu-1"},
			check: func(t *testing.T, apps map[string]*App) {
				a := apps["addons-prd-us-1"]
				if a.App.Labels["env"] != "prd" || a.App.Labels["tier"] != "prd-tier" || a.App.Spec.Project != "payments" {
					t.Errorf("labels %v project %q", a.App.Labels, a.App.Spec.Project)
				}
				local := apps["addons-in-cluster"]
				if local.App.Spec.Destination.Server != InClusterServer || local.App.Labels["env"] != "{{metadata.labels.env}}" {
					t.Errorf("local cluster app: %+v %v", local.App.Spec.Destination, local.App.Labels)
				}
			},
		},
		{
			name: "clusters goTemplate with selector excludes the local cluster",
			appset: `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: web}
spec:
  goTemplate: true
  generators:
  - clusters:
      selector:
        matchExpressions: [{key: env, operator: In, values: [prd]}]
  template:
    metadata: {name: 'web-{{.name}}', labels: {region: '{{index .metadata.labels "region"}}'}}
    spec:
      project: default
      source: {repoURL: ` + repoURL + `, path: web}
      destination: {server: '{{.server}}', namespace: web}
`,
			clusters: fleetClusters,
			want:     []string{"web-prd-eu-1", "web-prd-us-1"},
			check: func(t *testing.T, apps map[string]*App) {
				if got := apps["web-prd-eu-1"].App.Labels["region"]; got != "eu-1" {
					t.Errorf("region = %q", got)
				}
			},
		},
		{
			name: "clusters flatList",
			appset: `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: flat}
spec:
  goTemplate: true
  generators:
  - clusters: {flatList: true, selector: {matchLabels: {region: eu-1}}}
  template:
    metadata: {name: 'flat-{{len .clusters}}'}
    spec: {project: default, source: {repoURL: x, path: .}, destination: {name: in-cluster}}
`,
			clusters: fleetClusters,
			want:     []string{"flat-2"},
		},
		{
			name: "git directories legacy: path, basename, path[n], exclude",
			appset: `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: dirs}
spec:
  generators:
  - git:
      repoURL: git@github.com:example/fleet
      revision: HEAD
      directories:
      - path: apps/*
      - path: apps/skip
        exclude: true
  template:
    metadata: {name: '{{path.basenameNormalized}}-{{path[0]}}', labels: {dir: '{{path.basename}}'}}
    spec:
      project: default
      source: {repoURL: ` + repoURL + `, path: '{{path}}'}
      destination: {name: in-cluster, namespace: '{{path.basenameNormalized}}'}
`,
			extra: map[string]string{"apps/Web_App/x.yaml": "a: 1", "apps/api/x.yaml": "a: 1", "apps/skip/x.yaml": "a: 1", "apps/.hidden/x.yaml": "a: 1", "apps/api/deep/x.yaml": "a: 1"},
			want:  []string{"api-apps", "web-app-apps"},
			check: func(t *testing.T, apps map[string]*App) {
				if got := apps["web-app-apps"].App.Labels["dir"]; got != "Web_App" {
					t.Errorf("basename = %q", got)
				}
			},
		},
		{
			name: "git directories goTemplate: path.segments and pathParamPrefix",
			appset: `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: dirs}
spec:
  goTemplate: true
  generators:
  - git:
      repoURL: ` + repoURL + `
      pathParamPrefix: app
      directories: [{path: "envs/*/*"}]
  template:
    metadata: {name: '{{index .app.path.segments 1}}-{{.app.path.basename}}'}
    spec:
      project: default
      source: {repoURL: ` + repoURL + `, path: '{{.app.path.path}}'}
      destination: {name: in-cluster, namespace: default}
`,
			extra: map[string]string{"envs/prd/web/k.yaml": "", "envs/stg/web/k.yaml": ""},
			want:  []string{"prd-web", "stg-web"},
		},
		{
			name: "git files: yaml object, json array, pathspec star crosses directories, exclude",
			appset: `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: files}
spec:
  generators:
  - git:
      repoURL: ` + repoURL + `
      files:
      - path: "tenants/**/config.*"
      - path: "tenants/old/**"
        exclude: true
  template:
    metadata: {name: '{{tenant.name}}-{{path.basename}}-{{path.filenameNormalized}}'}
    spec:
      project: default
      source: {repoURL: ` + repoURL + `, path: '{{path}}'}
      destination: {name: in-cluster, namespace: '{{tenant.name}}'}
`,
			extra: map[string]string{
				"tenants/a/config.yaml":     "tenant: {name: alpha}\n",
				"tenants/b/c/config.json":   `[{"tenant": {"name": "beta"}}, {"tenant": {"name": "gamma"}}]`,
				"tenants/old/x/config.yaml": "tenant: {name: old}\n",
			},
			want: []string{"alpha-a-config.yaml", "beta-c-config.json", "gamma-c-config.json"},
		},
		{
			name: "git generator on another repository is a problem",
			appset: `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: other}
spec:
  generators:
  - git: {repoURL: https://github.com/other/repo, directories: [{path: '*'}]}
  template:
    metadata: {name: '{{path.basename}}'}
    spec: {project: default, source: {repoURL: x, path: .}, destination: {name: in-cluster}}
`,
			problem: "not the repository being previewed",
		},
		{
			name: "matrix: git directories x clusters, goTemplate",
			appset: `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: matrix}
spec:
  goTemplate: true
  generators:
  - matrix:
      generators:
      - git: {repoURL: ` + repoURL + `, directories: [{path: "svc/*"}]}
      - clusters: {selector: {matchLabels: {env: prd}}}
  template:
    metadata: {name: '{{.path.basename}}-{{.name}}'}
    spec:
      project: default
      source: {repoURL: ` + repoURL + `, path: '{{.path.path}}'}
      destination: {server: '{{.server}}', namespace: '{{.path.basename}}'}
`,
			extra:    map[string]string{"svc/api/a.yaml": "", "svc/web/a.yaml": ""},
			clusters: fleetClusters,
			want:     []string{"api-prd-eu-1", "api-prd-us-1", "web-prd-eu-1", "web-prd-us-1"},
		},
		{
			name: "matrix: second generator interpolated with the first's parameters (legacy)",
			appset: `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: interp}
spec:
  generators:
  - matrix:
      generators:
      - list: {elements: [{env: prd}, {env: stg}]}
      - clusters: {selector: {matchLabels: {env: '{{env}}'}}}
  template:
    metadata: {name: '{{env}}-{{name}}'}
    spec: {project: default, source: {repoURL: x, path: .}, destination: {server: '{{server}}'}}
`,
			clusters: fleetClusters,
			want:     []string{"prd-prd-eu-1", "prd-prd-us-1", "stg-stg-eu-1"},
		},
		{
			name: "matrix with one child is an error",
			appset: `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: bad}
spec:
  generators:
  - matrix: {generators: [{list: {elements: [{a: b}]}}]}
  template:
    metadata: {name: x}
    spec: {project: default, source: {repoURL: x, path: .}, destination: {name: in-cluster}}
`,
			problem: "found less than two generators",
		},
		{
			name: "merge: overrides by merge key, first generator's order",
			appset: `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: merge}
spec:
  generators:
  - merge:
      mergeKeys: [name]
      generators:
      - clusters: {values: {size: small}}
      - list: {elements: [{name: prd-us-1, values: {size: large}}]}
  template:
    metadata: {name: '{{name}}-{{values.size}}'}
    spec: {project: default, source: {repoURL: x, path: .}, destination: {server: '{{server}}'}}
`,
			clusters: fleetClusters,
			want:     []string{"in-cluster-small", "prd-eu-1-small", "prd-us-1-large", "stg-eu-1-small"},
		},
		{
			name: "post-selector over flattened parameters",
			appset: `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: sel}
spec:
  generators:
  - list:
      elements: [{name: a, tier: gold}, {name: b, tier: bronze}]
    selector: {matchLabels: {tier: gold}}
  template:
    metadata: {name: '{{name}}'}
    spec: {project: default, source: {repoURL: x, path: .}, destination: {name: in-cluster}}
`,
			want: []string{"a"},
		},
		{
			name: "templatePatch cannot change the project",
			appset: `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: patch}
spec:
  goTemplate: true
  generators:
  - list: {elements: [{name: a, auto: true}]}
  template:
    metadata: {name: '{{.name}}'}
    spec: {project: default, source: {repoURL: x, path: .}, destination: {name: in-cluster}}
  templatePatch: |
    spec:
      project: evil
      {{- if .auto }}
      syncPolicy:
        automated: {prune: true}
      {{- end }}
`,
			want: []string{"a"},
			check: func(t *testing.T, apps map[string]*App) {
				a := apps["a"]
				if a.App.Spec.Project != "default" || a.App.Spec.SyncPolicy == nil || a.App.Spec.SyncPolicy.Automated == nil {
					t.Errorf("spec = %+v", a.App.Spec)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inv, apps := generateFrom(t, tc.appset, tc.extra, tc.clusters)
			if tc.problem != "" {
				if !strings.Contains(problems(inv), tc.problem) {
					t.Fatalf("problems = %q, want one containing %q", problems(inv), tc.problem)
				}
				return
			}
			if p := problems(inv); p != "" {
				t.Fatalf("unexpected problems: %s", p)
			}
			if got := names(apps); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("apps = %q, want %q", got, tc.want)
			}
			if tc.check != nil {
				byName := map[string]*App{}
				for _, a := range apps {
					byName[a.App.Name] = a
				}
				tc.check(t, byName)
			}
		})
	}
}

func TestTemplateFunctions(t *testing.T) {
	tp := newTemplater()
	for _, tc := range []struct {
		tmpl string
		go_  bool
		want string
	}{
		{`{{ normalize "Foo_Bar.baz-" }}`, true, "foo-bar.baz"},
		{`{{ slugify "Hello World, Again!" }}`, true, "hello-world-again"},
		{`{{ slugify 12 true "Hello World, Again" }}`, true, "hello-world"},
		{`{{ slugify 12 false "Hello World, Again" }}`, true, "hello-world"},
		{`{{ toYaml .m }}`, true, "a: 1"},
		{`{{ (fromYaml "a: b").a }}`, true, "b"},
		{`plain {{x}} and {{ missing }} and {{n}}`, false, "plain X and {{ missing }} and {{n}}"},
	} {
		got, err := tp.Replace(tc.tmpl, map[string]any{"x": "X", "n": 3, "m": map[string]any{"a": 1}}, tc.go_, nil)
		if err != nil || got != tc.want {
			t.Errorf("Replace(%q) = %q, %v; want %q", tc.tmpl, got, err, tc.want)
		}
	}
	if _, err := tp.Replace(`{{ env "HOME" }}`, nil, true, nil); err == nil {
		t.Error("env is available to templates")
	}
}

func TestPathspecMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, path string
		want          bool
	}{
		{"apps/config.json", "apps/config.json", true},
		{"apps", "apps/a/config.json", true},
		{"apps/", "apps/a/config.json", true},
		{"app", "apps/config.json", false},
		{"apps/*.json", "apps/a/b.json", true}, // * crosses / in git's default pathspec
		{"apps/*/config.json", "apps/a/config.json", true},
		{"apps/?.json", "apps/a.json", true},
		{"apps/[ab].json", "apps/c.json", false},
		{"apps/[!ab].json", "apps/c.json", true},
		{"*.yaml", "x/y.yaml", true},
		{"apps/**/c.yaml", "apps/c.yaml", false},
	} {
		if got := pathspecMatch(tc.pattern, tc.path); got != tc.want {
			t.Errorf("pathspecMatch(%q, %q) = %v, want %v", tc.pattern, tc.path, got, tc.want)
		}
	}
}

func TestScanSkipsChartsPatchesAndReportsBrokenFiles(t *testing.T) {
	root := filetest.Tree(t, map[string]string{
		"apps/a.yaml": `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: a}
spec: {project: default, source: {repoURL: x, path: a}, destination: {name: in-cluster}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: not-an-app}
`,
		"apps/dup.yaml":          `{apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {name: a}, spec: {project: default, destination: {name: in-cluster}}}`,
		"charts/root/Chart.yaml": "name: root\n",
		"charts/root/templates/apps.yaml": `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: {{ .Values.name }}}
`,
		"overlay/kustomization.yaml":   "resources: [app.yaml]\npatches: [{path: patch.yaml}]\n",
		"overlay/app.yaml":             `{apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {name: k, namespace: team}, spec: {project: default, destination: {name: in-cluster}}}`,
		"overlay/patch.yaml":           `{apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {name: k}, spec: {source: {targetRevision: v2}}}`,
		"broken/app.yaml":              "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: [\n",
		"values/unrelated-broken.yaml": "this: is: not: yaml: argoproj.io\n",
		".github/workflows/x.yaml":     `{apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {name: hidden}}`,
	})
	inv := Discover(Options{Root: root, IsThisRepo: thisRepo})
	if got := names(inv.Apps()); !reflect.DeepEqual(got, []string{"a", "k"}) {
		t.Fatalf("apps = %q", got)
	}
	p := problems(inv)
	if !strings.Contains(p, "broken/app.yaml: document 1: parsing YAML") {
		t.Errorf("no one-line problem for the broken Application file:\n%s", p)
	}
	if !strings.Contains(p, "apps/dup.yaml: argocd/a: application declared twice (also in apps/a.yaml)") {
		t.Errorf("no duplicate problem:\n%s", p)
	}
	if strings.Contains(p, "unrelated-broken") {
		t.Errorf("a broken file that declares no Application is reported:\n%s", p)
	}
	for _, pr := range inv.Problems {
		if strings.Contains(pr.Error(), "\n") {
			t.Errorf("problem spans lines: %q", pr.Error())
		}
	}
}

func TestDiscoverUsesRepositoryClusterSecrets(t *testing.T) {
	root := filetest.Tree(t, map[string]string{
		"clusters/prd.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: prd-eu-1
  labels: {argocd.argoproj.io/secret-type: cluster, env: prd, region: eu-1}
stringData:
  name: prd-eu-1
  server: https://prd-eu-1.example.com
  config: '{"bearerToken": "do-not-read"}'
`,
		"apps/a.yaml": `{apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {name: a}, spec: {project: default, destination: {server: "https://prd-eu-1.example.com"}}}`,
		"apps/b.yaml": `{apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {name: b}, spec: {project: default, destination: {name: nowhere}}}`,
	})
	inv := Discover(Options{Root: root, IsThisRepo: thisRepo})
	a, _ := inv.Get("argocd/a")
	if !a.ClusterKnown || a.Cluster.Labels["region"] != "eu-1" {
		t.Fatalf("cluster of a = %+v", a.Cluster)
	}
	b, _ := inv.Get("argocd/b")
	if b.ClusterKnown || b.Cluster.Name != "nowhere" {
		t.Fatalf("cluster of b = %+v known=%v", b.Cluster, b.ClusterKnown)
	}
	// Injected clusters replace the repository's.
	inv = Discover(Options{Root: root, IsThisRepo: thisRepo, Clusters: fleetClusters[1:2]})
	a, _ = inv.Get("argocd/a")
	if a.ClusterKnown {
		t.Fatalf("repository secrets used although clusters were injected: %+v", a.Cluster)
	}
}

func TestParseClusters(t *testing.T) {
	secrets := `apiVersion: v1
kind: Secret
metadata:
  name: c1
  labels: {argocd.argoproj.io/secret-type: cluster, env: prd, region: eu-1}
data:
  name: cHJkLWV1LTE=
  server: aHR0cHM6Ly9wcmQtZXUtMS5leGFtcGxlLmNvbQ==
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ignored}
---
apiVersion: v1
kind: Secret
metadata:
  name: c2
  labels: {argocd.argoproj.io/secret-type: cluster, env: stg}
stringData: {name: stg-eu-1, server: "https://stg-eu-1.example.com", project: web}
`
	got, err := ParseClusters("clusters.yaml", []byte(secrets))
	if err != nil {
		t.Fatal(err)
	}
	want := []Cluster{
		{Name: "prd-eu-1", Server: "https://prd-eu-1.example.com", Labels: map[string]string{"argocd.argoproj.io/secret-type": "cluster", "env": "prd", "region": "eu-1"}},
		{Name: "stg-eu-1", Server: "https://stg-eu-1.example.com", Project: "web", Labels: map[string]string{"argocd.argoproj.io/secret-type": "cluster", "env": "stg"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("secrets form = %+v\nwant %+v", got, want)
	}
	list := "clusters:\n  - {name: prd-eu-1, server: https://prd-eu-1.example.com, labels: {env: prd, region: eu-1}}\n"
	got, err = ParseClusters("clusters.yaml", []byte(list))
	if err != nil || len(got) != 1 || got[0].Labels["region"] != "eu-1" {
		t.Fatalf("list form = %+v, %v", got, err)
	}
	for name, bad := range map[string]string{
		"unknown field":  "clusters:\n  - {name: a, server: s, lables: {}}\n",
		"no server":      "clusters:\n  - {name: a}\n",
		"duplicate name": "clusters:\n  - {name: a, server: s1}\n  - {name: a, server: s2}\n",
		"bad base64":     "apiVersion: v1\nkind: Secret\nmetadata: {name: x, labels: {argocd.argoproj.io/secret-type: cluster}}\ndata: {server: '!!'}\n",
		"broken yaml":    "clusters: [\n",
	} {
		if _, err := ParseClusters("clusters.yaml", []byte(bad)); err == nil || !strings.HasPrefix(err.Error(), "clusters.yaml") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestClustersResolve(t *testing.T) {
	c := NewClusters(fleetClusters)
	for _, tc := range []struct {
		dest  v1alpha1.ApplicationDestination
		name  string
		known bool
	}{
		{v1alpha1.ApplicationDestination{Server: "https://prd-eu-1.example.com/"}, "prd-eu-1", true},
		{v1alpha1.ApplicationDestination{Name: "stg-eu-1"}, "stg-eu-1", true},
		{v1alpha1.ApplicationDestination{Server: InClusterServer}, InClusterName, true},
		{v1alpha1.ApplicationDestination{Name: InClusterName}, InClusterName, true},
		{v1alpha1.ApplicationDestination{Server: "https://gone"}, "https://gone", false},
		{v1alpha1.ApplicationDestination{}, "", false},
	} {
		got, err := c.Resolve(tc.dest)
		if got.Name != tc.name || (err == nil) != tc.known {
			t.Errorf("Resolve(%+v) = %q, %v", tc.dest, got.Name, err)
		}
		if !tc.known && !errors.Is(err, ErrUnknownCluster) {
			t.Errorf("Resolve(%+v) error = %v, want ErrUnknownCluster", tc.dest, err)
		}
	}
}

// fakeRender renders an app from a table of objects per app key, counting calls.
type fakeRender struct {
	mu    sync.Mutex
	calls map[string]int
	objs  map[string][]string
}

func (f *fakeRender) render(_ context.Context, a *App) ([]*unstructured.Unstructured, error) {
	f.mu.Lock()
	f.calls[a.Key]++
	f.mu.Unlock()
	docs, ok := f.objs[a.Key]
	if !ok {
		return nil, fmt.Errorf("no render for %s", a.Key)
	}
	var out []*unstructured.Unstructured
	for _, d := range docs {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(d), &m); err != nil {
			return nil, err
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out, nil
}

func appDoc(name, ns, path string) string {
	meta := "name: " + name
	if ns != "" {
		meta += ", namespace: " + ns
	}
	return `{apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {` + meta + `}, spec: {project: default, source: {repoURL: ` + repoURL + `, path: ` + path + `}, destination: {name: in-cluster, namespace: argocd}}}`
}

func TestExpandFollowsAppOfAppsRecursivelyAndStopsOnCycles(t *testing.T) {
	root := filetest.Tree(t, map[string]string{
		"root.yaml": appDoc("root", "", "apps"),
		// The child "a" is also kept as a plain file, with a different path: the rendered one wins.
		"apps/a.yaml": appDoc("a", "", "raw-path"),
	})
	inv := Discover(Options{Root: root, IsThisRepo: thisRepo})
	f := &fakeRender{calls: map[string]int{}, objs: map[string][]string{
		// root renders itself (self-managing root app), a child a, and an ApplicationSet.
		"argocd/root": {appDoc("root", "argocd", "apps"), appDoc("a", "", "a"), `{apiVersion: argoproj.io/v1alpha1, kind: ApplicationSet, metadata: {name: gen},
			spec: {generators: [{list: {elements: [{id: one}, {id: two}]}}], template: {metadata: {name: 'gen-{{id}}'}, spec: {project: default, source: {repoURL: r, path: '{{id}}'}, destination: {name: in-cluster}}}}}`},
		"argocd/a":       {appDoc("b", "", "b"), `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}`},
		"argocd/b":       {appDoc("a", "", "a")}, // a cycle: b declares a again
		"argocd/gen-one": {},
		"argocd/gen-two": {},
	}}
	inv.Expand(context.Background(), f.render, 4)
	if p := problems(inv); p != "" {
		t.Fatalf("problems: %s", p)
	}
	var keys []string
	for _, a := range inv.Apps() {
		keys = append(keys, fmt.Sprintf("%s<%s|%s", a.Key, a.Parent, a.AppSet))
	}
	want := []string{"argocd/a<argocd/root|", "argocd/b<argocd/a|", "argocd/gen-one<argocd/root|argocd/gen", "argocd/gen-two<argocd/root|argocd/gen", "argocd/root<|"}
	if !reflect.DeepEqual(keys, want) {
		t.Fatalf("apps = %q\nwant %q", keys, want)
	}
	a, _ := inv.Get("argocd/a")
	if a.App.Spec.Source.Path != "a" || a.File != "apps/a.yaml" {
		t.Fatalf("a = path %q file %q: the rendered Application should replace the raw one", a.App.Spec.Source.Path, a.File)
	}
	for k, n := range f.calls {
		if k == "argocd/a" && n != 2 || k != "argocd/a" && n != 1 {
			t.Errorf("%s rendered %d times", k, n)
		}
	}
}

func TestExpandReportsConflictingDeclarations(t *testing.T) {
	root := filetest.Tree(t, map[string]string{"p1.yaml": appDoc("p1", "", "p1"), "p2.yaml": appDoc("p2", "", "p2")})
	inv := Discover(Options{Root: root, IsThisRepo: thisRepo})
	f := &fakeRender{calls: map[string]int{}, objs: map[string][]string{
		"argocd/p1": {appDoc("c", "", "one")},
		"argocd/p2": {appDoc("c", "", "two")},
		"argocd/c":  {},
	}}
	inv.Expand(context.Background(), f.render, 2)
	if !strings.Contains(problems(inv), "argocd/c: application declared twice (by the manifests of argocd/p1 and by the manifests of argocd/p2)") {
		t.Fatalf("problems = %q", problems(inv))
	}
}

func TestDiscoverReusesTheParseOfUnchangedFiles(t *testing.T) {
	root := filetest.Tree(t, map[string]string{"a.yaml": appDoc("a", "", "a"), "b.yaml": appDoc("b", "", "b")})
	base := Discover(Options{Root: root, IsThisRepo: thisRepo})
	// The head revision changes b.yaml.
	if err := os.WriteFile(filepath.Join(root, "b.yaml"), []byte(appDoc("b", "", "b2")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "a.yaml"), []byte(appDoc("a", "", "not-read")), 0o644); err != nil {
		t.Fatal(err)
	}
	head := Discover(Options{Root: root, IsThisRepo: thisRepo, Reuse: base, Changed: map[string]bool{"b.yaml": true}})
	a, _ := head.Get("argocd/a")
	b, _ := head.Get("argocd/b")
	if a.App.Spec.Source.Path != "a" {
		t.Errorf("a.yaml was read again although unchanged: path %q", a.App.Spec.Source.Path)
	}
	if b.App.Spec.Source.Path != "b2" {
		t.Errorf("b.yaml was not read again although changed: path %q", b.App.Spec.Source.Path)
	}
	b0, _ := base.Get("argocd/a")
	if b0.App == a.App {
		t.Error("the inventories share an Application object")
	}
}
