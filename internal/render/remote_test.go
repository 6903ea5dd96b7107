package render_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/chartfetch"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch/helmrepotest"
	"github.com/fleetwave/fleetwave/internal/edge/repocreds"
	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
	"github.com/fleetwave/fleetwave/internal/testkit/golden"
)

const repoPassword = "render-test-password"

// vendorChart is a chart as a vendor publishes it: values with defaults, a template using them.
func vendorChart(version string) helmrepotest.Chart {
	return helmrepotest.Chart{Name: "ingress-nginx", Version: version,
		Values: "replicaCount: 1\ncontroller:\n  image: registry.k8s.io/ingress-nginx/controller:v" + version + "\n",
		Templates: map[string]string{
			"deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-controller
  labels:
    helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
spec:
  replicas: {{ .Values.replicaCount }}
  template:
    spec:
      containers:
      - name: controller
        image: {{ .Values.controller.image }}
`,
		}}
}

func chartRenderer(t *testing.T, srv *helmrepotest.Server, secrets string) *render.Renderer {
	t.Helper()
	set, err := repocreds.Parse("repositories.yaml", []byte(secrets))
	if err != nil {
		t.Fatal(err)
	}
	f, err := chartfetch.New(chartfetch.Options{Repos: set, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return render.New(render.Options{Charts: f})
}

func TestRenderChartFromHelmRepository(t *testing.T) {
	srv := helmrepotest.New(t, "fleet", repoPassword, vendorChart("4.10.0"), vendorChart("4.11.0"))
	r := chartRenderer(t, srv, srv.Secret("ingress-nginx"))
	req := mustApp(t, `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: ingress, namespace: argocd}
spec:
  destination: {server: https://kubernetes.default.svc, namespace: ingress}
  source:
    repoURL: `+srv.URL+`
    chart: ingress-nginx
    targetRevision: ~4.10
    helm:
      parameters:
      - {name: replicaCount, value: "3"}
      values: |
        controller:
          image: mirror.example.com/controller:v4.10
`)
	out, res, err := renderYAML(t, r, req)
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "remote/single-source.yaml", out)
	if len(res.ReadFiles) != 0 {
		t.Errorf("a fetched chart's files are recorded as repository files: %v", res.ReadFiles)
	}
	// The second render of the same version downloads nothing.
	before := srv.Count("/index.yaml") + srv.Archives()
	if _, _, err := renderYAML(t, r, req); err != nil {
		t.Fatal(err)
	}
	if after := srv.Count("/index.yaml") + srv.Archives(); after != before {
		t.Errorf("second render made %d requests, want none", after-before)
	}
}

func TestRenderMultiSourceValuesFromThisRepository(t *testing.T) {
	srv := helmrepotest.New(t, "fleet", repoPassword, vendorChart("4.11.0"))
	r := chartRenderer(t, srv, srv.Secret("ingress-nginx"))
	root := filetest.Tree(t, map[string]string{
		"envs/prod/ingress.yaml": "replicaCount: 5\n",
		"envs/dev/ingress.yaml":  "replicaCount: 1\n",
	})
	req := mustApp(t, `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: ingress-prod, namespace: argocd}
spec:
  destination: {server: https://kubernetes.default.svc, namespace: ingress}
  sources:
  - repoURL: `+srv.URL+`
    chart: ingress-nginx
    targetRevision: 4.11.0
    helm:
      valueFiles: [$values/envs/prod/ingress.yaml]
  - repoURL: https://github.com/example/fleet.git
    targetRevision: HEAD
    ref: values
`)
	req.Repos = func(u string) (string, bool) { return root, u == "https://github.com/example/fleet.git" }
	out, res, err := renderYAML(t, r, req)
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "remote/multi-source-values.yaml", out)
	if got := strings.Join(res.ReadFiles, ","); got != "envs/prod/ingress.yaml" {
		t.Errorf("ReadFiles = %s, want the value file of this repository only", got)
	}
}

func TestRenderDependencyFromHelmRepository(t *testing.T) {
	srv := helmrepotest.New(t, "fleet", repoPassword, helmrepotest.Chart{Name: "redis", Version: "1.4.0",
		Values:    "port: 6379\n",
		Templates: map[string]string{"svc.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}-redis\nspec:\n  ports:\n  - port: {{ .Values.port }}\n"}},
		helmrepotest.Chart{Name: "redis", Version: "2.0.0", Templates: map[string]string{"x.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: wrong-major}\n"}})
	root := filetest.Tree(t, map[string]string{
		"apps/cache/Chart.yaml":  "apiVersion: v2\nname: cache\nversion: 0.1.0\ndependencies:\n- name: redis\n  version: ^1.0.0\n  repository: " + srv.URL + "\n",
		"apps/cache/values.yaml": "redis:\n  port: 7000\n",
	})
	app := `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: cache, namespace: argocd}
spec:
  destination: {server: https://kubernetes.default.svc, namespace: cache}
  source: {repoURL: https://github.com/example/fleet.git, path: apps/cache}
`
	req := mustApp(t, app)
	req.Repos = func(string) (string, bool) { return root, true }
	out, _, err := renderYAML(t, chartRenderer(t, srv, srv.Secret("redis")), req)
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "remote/dependency.yaml", out)

	// The same chart with no repository allowing the dependency's: one clear line, no credential.
	other := helmrepotest.New(t, "", "")
	_, _, err = renderYAML(t, chartRenderer(t, other, other.Secret("other")), req)
	if err == nil || !strings.Contains(err.Error(), "not rendered: repository "+srv.URL+" is not in the allowed repositories") {
		t.Fatalf("error %v", err)
	}
	if !errors.Is(err, chartfetch.ErrNotAllowed) || strings.Contains(err.Error(), repoPassword) {
		t.Errorf("error %v", err)
	}
}

func TestRenderChartRepositoryNotAllowed(t *testing.T) {
	srv := helmrepotest.New(t, "fleet", repoPassword, vendorChart("4.11.0"))
	other := helmrepotest.New(t, "", "")
	req := mustApp(t, `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: ingress, namespace: argocd}
spec:
  destination: {server: https://kubernetes.default.svc, namespace: ingress}
  source: {repoURL: `+srv.URL+`, chart: ingress-nginx, targetRevision: 4.11.0}
`)
	_, _, err := renderYAML(t, chartRenderer(t, other, other.Secret("other")), req)
	want := `app "ingress" (chart ingress-nginx): not rendered: repository ` + srv.URL + ` is not in the allowed repositories`
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %s", err, want)
	}
	// Not "external": an app on a repository the operator did not allow is an error, never skipped as unknown.
	if errors.Is(err, render.ErrExternalSource) {
		t.Error("a repository that is not allowed reads as an external source")
	}
	if srv.Count("/index.yaml") != 0 {
		t.Error("a repository that is not allowed was contacted")
	}

	// Without a fetcher (no repositories file) chart sources stay external, as before; an OCI source on a registry
	// that is not allowed is refused like a chart repository.
	if _, _, err := renderYAML(t, render.New(render.Options{}), req); !errors.Is(err, render.ErrExternalSource) {
		t.Errorf("without a fetcher: %v", err)
	}
	oci := mustApp(t, `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: oci, namespace: argocd}
spec:
  destination: {server: https://kubernetes.default.svc, namespace: x}
  source: {repoURL: oci://registry.example.com/charts/x, targetRevision: 1.0.0, path: .}
`)
	_, _, err = renderYAML(t, chartRenderer(t, srv, srv.Secret("x")), oci)
	if !errors.Is(err, chartfetch.ErrNotAllowed) || errors.Is(err, render.ErrExternalSource) ||
		!strings.Contains(err.Error(), "not rendered: repository oci://registry.example.com/charts/x is not in the allowed repositories") {
		t.Errorf("oci: %v", err)
	}
}

// A repoURL with user information is refused in one line naming the app, before anything is contacted: the pull
// request neither chooses credentials nor hides a host behind "@" (issue 38 item 4).
func TestRenderRepoURLWithUserinfoRefused(t *testing.T) {
	srv := helmrepotest.New(t, "fleet", repoPassword, vendorChart("4.11.0"))
	host := strings.TrimPrefix(srv.URL, "http://")
	req := mustApp(t, `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: ingress, namespace: argocd}
spec:
  destination: {server: https://kubernetes.default.svc, namespace: ingress}
  source: {repoURL: "http://fleet:guess@`+host+`", chart: ingress-nginx, targetRevision: 4.11.0}
`)
	_, _, err := renderYAML(t, chartRenderer(t, srv, srv.Secret("ingress-nginx")), req)
	want := `app "ingress" (chart ingress-nginx): repoURL ` + srv.URL + ` carries user information, refused: credentials come only from the allowed repositories file`
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %s", err, want)
	}
	if srv.Count("/index.yaml") != 0 {
		t.Error("the repository was contacted")
	}
}

func TestFetches(t *testing.T) {
	srv := helmrepotest.New(t, "", "")
	r := chartRenderer(t, srv, srv.Secret("charts"))
	for _, tc := range []struct {
		src  v1alpha1.ApplicationSource
		want bool
	}{
		{v1alpha1.ApplicationSource{RepoURL: srv.URL, Chart: "x", TargetRevision: "1.0.0"}, true},
		{v1alpha1.ApplicationSource{RepoURL: "https://charts.example.com", Chart: "x"}, false}, // not allowed
		{v1alpha1.ApplicationSource{RepoURL: srv.URL, Path: "x"}, false},                       // a git source
		{v1alpha1.ApplicationSource{RepoURL: "oci://registry.example.com/x", Path: "."}, false},
	} {
		if got := r.Fetches(&tc.src); got != tc.want {
			t.Errorf("Fetches(%+v) = %v", tc.src, got)
		}
	}
	if render.New(render.Options{}).Fetches(&v1alpha1.ApplicationSource{RepoURL: srv.URL, Chart: "x"}) {
		t.Error("a renderer without a fetcher fetches")
	}
}

func TestRenderRemoteChartValueFileInsideChart(t *testing.T) {
	// Value files without "$ref" are the chart's own files: the extracted chart is the source's root.
	srv := helmrepotest.New(t, "", "", vendorChart("4.12.0"))
	r := chartRenderer(t, srv, srv.Secret("charts"))
	req := mustApp(t, `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: ingress, namespace: argocd}
spec:
  destination: {server: https://kubernetes.default.svc, namespace: ingress}
  source:
    repoURL: `+srv.URL+`
    chart: ingress-nginx
    targetRevision: 4.12.0
    helm: {valueFiles: [values.yaml, missing.yaml], ignoreMissingValueFiles: true}
`)
	out, _, err := renderYAML(t, r, req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "helm.sh/chart: ingress-nginx-4.12.0") || !strings.Contains(out, "replicas: 1") {
		t.Errorf("output:\n%s", out)
	}
	// A value file the chart does not have is Argo CD's error, on one line.
	req.App.Spec.Source.Helm.IgnoreMissingValueFiles = false
	if _, _, err := renderYAML(t, r, req); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing value file: %v", err)
	}
}

func TestRenderRefSourceInAnotherRepositoryIsExternal(t *testing.T) {
	srv := helmrepotest.New(t, "", "", vendorChart("4.11.0"))
	r := chartRenderer(t, srv, srv.Secret("x"))
	req := mustApp(t, `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: ingress-prod, namespace: argocd}
spec:
  destination: {server: https://kubernetes.default.svc, namespace: ingress}
  sources:
  - repoURL: `+srv.URL+`
    chart: ingress-nginx
    targetRevision: 4.11.0
    helm:
      valueFiles: [$values/envs/prod/ingress.yaml]
  - repoURL: https://github.com/example/other.git
    targetRevision: HEAD
    ref: values
`)
	_, _, err := renderYAML(t, r, req)
	if !errors.Is(err, render.ErrExternalSource) || !strings.Contains(err.Error(), "ref source values (https://github.com/example/other.git, for $values/envs/prod/ingress.yaml) is not in the checkout") {
		t.Fatalf("error %v", err)
	}
	if srv.Archives() != 0 {
		t.Error("the chart was downloaded for an app that cannot render")
	}
}
