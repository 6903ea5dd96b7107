package render_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/chartfetch"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch/helmrepotest"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch/ocitest"
	"github.com/fleetwave/fleetwave/internal/edge/repocreds"
	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
	"github.com/fleetwave/fleetwave/internal/testkit/golden"
)

const registryPassword = "render-registry-password"

// ociRegistry starts a registry with basic auth holding the vendor chart at versions under charts/.
func ociRegistry(t *testing.T, versions ...string) *ocitest.Registry {
	t.Helper()
	reg := ocitest.New(t, "fleet", registryPassword)
	for _, v := range versions {
		file := helmrepotest.Package(t, vendorChart(v), t.TempDir())
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		reg.MustPushChart(t, data, "charts")
	}
	return reg
}

func ociRenderer(t *testing.T, reg *ocitest.Registry, secrets string) *render.Renderer {
	t.Helper()
	set, err := repocreds.Parse("repositories.yaml", []byte(secrets))
	if err != nil {
		t.Fatal(err)
	}
	f, err := chartfetch.New(chartfetch.Options{Repos: set, CacheDir: t.TempDir(), Transport: reg.Transport()})
	if err != nil {
		t.Fatal(err)
	}
	return render.New(render.Options{Charts: f})
}

func TestRenderChartFromOCIRegistry(t *testing.T) {
	reg := ociRegistry(t, "4.10.0", "4.11.0")
	secret := reg.Secret("charts", reg.Host+"/charts", map[string]string{"type": "helm", "enableOCI": "true"})
	r := ociRenderer(t, reg, secret)
	root := filetest.Tree(t, map[string]string{"envs/prod/ingress.yaml": "replicaCount: 5\n"})
	req := mustApp(t, `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: ingress-prod, namespace: argocd}
spec:
  destination: {server: https://kubernetes.default.svc, namespace: ingress}
  sources:
  - repoURL: `+reg.Host+`/charts
    chart: ingress-nginx
    targetRevision: ">=4.10.0 <5"
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
	// The chart name and image say which version was pulled: 4.11.0, the highest the constraint allows.
	golden.Assert(t, "remote/oci-chart.yaml", strings.ReplaceAll(out, reg.Host, "registry.test"))
	if got := strings.Join(res.ReadFiles, ","); got != "envs/prod/ingress.yaml" {
		t.Errorf("ReadFiles = %s, want the value file of this repository only", got)
	}
	if !r.Fetches(&req.App.Spec.Sources[0]) {
		t.Error("Fetches is false for a chart in an allowed OCI registry")
	}
	before := reg.Count("blob") + reg.Count("manifest") + reg.Count("tags")
	if _, _, err := renderYAML(t, r, req); err != nil {
		t.Fatal(err)
	}
	if after := reg.Count("blob") + reg.Count("manifest") + reg.Count("tags"); after != before {
		t.Errorf("second render made %d registry requests, want none", after-before)
	}

	// Wrong credentials: one line naming the registry's answer, never the password.
	wrong := ociRenderer(t, reg, strings.ReplaceAll(secret, registryPassword, "not-the-"+registryPassword))
	_, _, err = renderYAML(t, wrong, req)
	if err == nil || !strings.Contains(err.Error(), "401 Unauthorized") || strings.Contains(err.Error(), registryPassword) {
		t.Errorf("wrong credentials: %v", err)
	}
}

func TestRenderDependencyFromOCIRegistry(t *testing.T) {
	reg := ociRegistry(t, "4.10.0", "4.11.0")
	root := filetest.Tree(t, map[string]string{
		"apps/edge/Chart.yaml":  "apiVersion: v2\nname: edge\nversion: 0.1.0\ndependencies:\n- name: ingress-nginx\n  version: ~4.10.0\n  repository: oci://" + reg.Host + "/charts\n",
		"apps/edge/values.yaml": "ingress-nginx:\n  replicaCount: 2\n",
	})
	req := mustApp(t, `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: edge, namespace: argocd}
spec:
  destination: {server: https://kubernetes.default.svc, namespace: edge}
  source: {repoURL: https://github.com/example/fleet.git, path: apps/edge}
`)
	req.Repos = func(string) (string, bool) { return root, true }
	r := ociRenderer(t, reg, reg.Secret("charts", reg.Host+"/charts", map[string]string{"type": "helm", "enableOCI": "true"}))
	out, _, err := renderYAML(t, r, req)
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "remote/oci-dependency.yaml", strings.ReplaceAll(out, reg.Host, "registry.test"))
}

func TestFetchesOCI(t *testing.T) {
	r := render.New(render.Options{Charts: mustFetcher(t, `apiVersion: v1
kind: Secret
metadata:
  labels: {argocd.argoproj.io/secret-type: repo-creds}
stringData: {url: "oci://registry.example.com/manifests", type: oci}
---
apiVersion: v1
kind: Secret
metadata:
  labels: {argocd.argoproj.io/secret-type: repository}
stringData: {url: "registry.example.com/charts", type: helm, enableOCI: "true"}
`)})
	for _, tc := range []struct {
		src  v1alpha1.ApplicationSource
		want bool
	}{
		{v1alpha1.ApplicationSource{RepoURL: "registry.example.com/charts", Chart: "x", TargetRevision: "1.0.0"}, true},
		{v1alpha1.ApplicationSource{RepoURL: "oci://registry.example.com/manifests/app", Path: ".", TargetRevision: "1.0.0"}, true},
		{v1alpha1.ApplicationSource{RepoURL: "oci://other.example.com/app", Path: "."}, false},
		{v1alpha1.ApplicationSource{RepoURL: "other.example.com/charts", Chart: "x"}, false},
	} {
		if got := r.Fetches(&tc.src); got != tc.want {
			t.Errorf("Fetches(%s) = %v, want %v", tc.src.RepoURL, got, tc.want)
		}
	}
}

func mustFetcher(t *testing.T, secrets string) *chartfetch.Fetcher {
	t.Helper()
	set, err := repocreds.Parse("repositories.yaml", []byte(secrets))
	if err != nil {
		t.Fatal(err)
	}
	f, err := chartfetch.New(chartfetch.Options{Repos: set, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestRenderNativeOCISource(t *testing.T) {
	reg := ocitest.New(t, "fleet", registryPassword)
	layer := func(version string) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		tw := tar.NewWriter(zw)
		for name, body := range map[string]string{
			"base/kustomization.yaml":          "resources: [cm.yaml]\n",
			"base/cm.yaml":                     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  version: \"" + version + "\"\n",
			"overlays/prod/kustomization.yaml": "resources: [../../base]\nnamePrefix: prod-\n",
		} {
			if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
				t.Fatal(err)
			}
			if _, err := tw.Write([]byte(body)); err != nil {
				t.Fatal(err)
			}
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	for _, v := range []string{"1.0.0", "1.1.0"} {
		reg.MustPushArtifact(t, "manifests/settings", v, ocitest.Blob{}, nil, ocitest.Blob{MediaType: "application/vnd.oci.image.layer.v1.tar+gzip", Data: layer(v)})
	}
	creds := strings.Replace(reg.Secret("manifests", "oci://"+reg.Host+"/manifests", map[string]string{"type": "oci"}),
		"secret-type: repository", "secret-type: repo-creds", 1)
	r := ociRenderer(t, reg, creds)
	req := mustApp(t, `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: settings, namespace: argocd}
spec:
  destination: {server: https://kubernetes.default.svc, namespace: settings}
  source:
    repoURL: oci://`+reg.Host+`/manifests/settings
    path: overlays/prod
    targetRevision: ~1.0
`)
	out, res, err := renderYAML(t, r, req)
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "remote/oci-native.yaml", out)
	if len(res.ReadFiles) != 0 {
		t.Errorf("an OCI artifact's files are recorded as repository files: %v", res.ReadFiles)
	}

	// Without a repositories file the source is external, as before.
	if _, _, err := renderYAML(t, render.New(render.Options{}), req); !errors.Is(err, render.ErrExternalSource) {
		t.Errorf("without repositories: %v", err)
	}
}

// A native OCI source's path stays inside the artifact, as apppathutil.Path keeps it inside Argo CD's extraction.
func TestRenderNativeOCIPathConfined(t *testing.T) {
	reg := ocitest.New(t, "", "")
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	body := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
	_ = tw.WriteHeader(&tar.Header{Name: "app/cm.yaml", Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte(body))
	_ = tw.Close()
	_ = zw.Close()
	reg.MustPushArtifact(t, "app", "1.0.0", ocitest.Blob{}, nil, ocitest.Blob{MediaType: "application/vnd.oci.image.layer.v1.tar+gzip", Data: buf.Bytes()})
	r := ociRenderer(t, reg, reg.Secret("app", "oci://"+reg.Host+"/app", map[string]string{"type": "oci"}))
	for _, path := range []string{"../../..", "/etc", "app/../../.."} {
		req := mustApp(t, `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: escape, namespace: argocd}
spec:
  destination: {server: https://kubernetes.default.svc, namespace: x}
  source: {repoURL: "oci://`+reg.Host+`/app", path: "`+path+`", targetRevision: 1.0.0}
`)
		out, _, err := renderYAML(t, r, req)
		if err == nil {
			t.Errorf("path %q rendered outside the artifact:\n%s", path, out)
			continue
		}
		t.Log(err)
		if strings.Contains(err.Error(), "registry") || strings.Contains(err.Error(), "manifest") {
			t.Errorf("path %q: the fetch failed, not the path: %v", path, err)
		}
	}
}
