package e2e_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch/helmrepotest"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch/ocitest"
	"github.com/fleetwave/fleetwave/internal/edge/repocreds"
	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

// webChart is a vendor chart whose output says which version rendered it and with which values.
func webChart(version string) helmrepotest.Chart {
	return helmrepotest.Chart{Name: "web", Version: version,
		Values: "replicas: 1\nimage: web\nextraLabels: {}\n",
		Templates: map[string]string{
			"deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
  labels:
    helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
    {{- range $k, $v := .Values.extraLabels }}
    {{ $k }}: {{ $v | quote }}
    {{- end }}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec:
      containers:
      - name: web
        image: {{ .Values.image }}:{{ .Chart.Version }}
`,
			"service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-web
  namespace: {{ .Release.Namespace }}
spec:
  selector: {app: {{ .Release.Name }}}
  ports: [{port: 80}]
`,
		}}
}

// libChart is a dependency; stackChart depends on it through the repository without vendoring it.
func libChart(version string) helmrepotest.Chart {
	return helmrepotest.Chart{Name: "lib", Version: version, Values: "greeting: hello\n",
		Templates: map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-lib\n" +
			"data:\n  greeting: {{ .Values.greeting | quote }}\n  version: {{ .Chart.Version | quote }}\n"}}
}

func stackChart(repoURL string) helmrepotest.Chart {
	return helmrepotest.Chart{Name: "stack", Version: "1.0.0", Values: "lib:\n  greeting: from-stack\n",
		Dependencies: []*chart.Dependency{{Name: "lib", Version: "~0.1.0", Repository: repoURL}},
		Templates: map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-stack\n" +
			"data:\n  deps: {{ len .Chart.Dependencies | quote }}\n"}}
}

// TestFidelityAgainstRealArgoCDCharts serves a Helm chart repository over HTTPS with basic auth and an OCI
// registry (the CNCF distribution registry, htpasswd) from this process, inside the environment's network
// namespace, and registers them in Argo CD as repository Secrets with the same credentials (insecure: the
// certificates are the test's). Apps on them — a chart at an exact version, at a semver constraint, multi-source
// with $values from the GitOps repository, a chart whose dependency on the same repository is not vendored, a
// GitOps-repository chart depending on the Helm repository, a Helm chart in the registry (scheme-less repoURL, exact
// and constraint), and Argo CD's native OCI source (oci:// with a path, type oci) — are rendered by Argo CD's
// repo-server, which fetches them itself, and by fleetwave through internal/edge/chartfetch with the same repository
// Secrets: identical, object for object, in order.
func TestFidelityAgainstRealArgoCDCharts(t *testing.T) {
	e := loadEnv(t)
	ctx := context.Background()
	c, err := argocd.New(argocd.Options{BaseURL: e.ArgoCDURL, Token: e.Token, UserAgent: "fleetwave-e2e"})
	if err != nil {
		t.Fatal(err)
	}
	const user, password = "charts", "e2e-chart-repo-password"

	helmRepo := helmrepotest.NewTLS(t, user, password, webChart("1.0.0"), webChart("1.1.0"), webChart("2.0.0"),
		libChart("0.1.0"), libChart("0.1.1"), libChart("0.2.0"))
	helmRepo.Add(t, stackChart(helmRepo.URL))

	// Two registries: htpasswd basic auth, and bearer tokens from a token service (as Docker Hub, GHCR, Harbor).
	// Named by host name, not 127.0.0.1: Argo CD tells an OCI Helm repository by util/helm/client.go IsHelmOciRepo
	// (url.Parse finds no host), and an IP address with a port does not parse at all, so its repository API refuses
	// to register "127.0.0.1:port/charts" with enableOCI ("OCI Helm repository URL should include hostname and port
	// only", reposerver/repository/repository.go TestRepository). fleetwave reads the same function
	// (chartfetch isHelmOCIRepo); its repositories file is not connection-tested.
	reg, tokenReg := ocitest.New(t, user, password), ocitest.NewTokenAuth(t, user, password)
	for _, rg := range []*ocitest.Registry{reg, tokenReg} {
		for _, v := range []string{"1.0.0", "1.1.0", "2.0.0"} {
			data, err := os.ReadFile(helmrepotest.Package(t, webChart(v), t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			rg.MustPushChart(t, data, "charts")
		}
		for _, v := range []string{"1.0.0", "1.1.0"} {
			rg.MustPushArtifact(t, "manifests/settings", v, ocitest.Blob{}, nil,
				ocitest.Blob{MediaType: "application/vnd.oci.image.layer.v1.tar+gzip", Data: settingsLayer(t, v)})
		}
	}
	byName := func(rg *ocitest.Registry) string { _, port, _ := strings.Cut(rg.Host, ":"); return "localhost:" + port }
	ociCharts, tokenCharts := byName(reg)+"/charts", byName(tokenReg)+"/charts"
	ociNative, tokenNative := "oci://"+byName(reg)+"/manifests/settings", "oci://"+byName(tokenReg)+"/manifests/settings"

	// The GitOps repository (values, a chart with a remote dependency) as a file:// clone, as the fleet test has it.
	work := t.TempDir()
	checkout := filepath.Join(work, "fleet")
	for name, body := range map[string]string{
		"values/prod/web.yaml":        "replicas: 3\nextraLabels: {tier: frontend}\n",
		"apps/edge/Chart.yaml":        "apiVersion: v2\nname: edge\nversion: 0.1.0\ndependencies:\n- name: web\n  version: \">=1.0.0 <2.0.0\"\n  repository: " + helmRepo.URL + "\n",
		"apps/edge/values.yaml":       "web:\n  replicas: 2\n",
		"apps/edge/templates/ns.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: edge\n",
	} {
		p := filepath.Join(checkout, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gittest.Run(t, checkout, "init", "-q", "-b", "main")
	gittest.Run(t, checkout, "add", "-A")
	gittest.Run(t, checkout, "commit", "-q", "-m", "fleet")
	sha := gittest.Run(t, checkout, "rev-parse", "HEAD")
	bare := filepath.Join(work, "fleet.git")
	if out, err := exec.Command("git", "clone", "-q", "--bare", checkout, bare).CombinedOutput(); err != nil {
		t.Fatalf("cloning the fleet: %v\n%s", err, out)
	}
	fleetURL := "file://" + bare

	// A Helm repository registered without insecure: its certificate is trusted through argocd-tls-certs-cm, whose
	// entry for the host repo-server reads from its TLS data path (pkg/apis/application/v1alpha1/
	// repository_types.go getCAPath; in a cluster the ConfigMap is mounted there: here the test writes the file).
	caRepo := helmrepotest.NewTLS(t, user, password, webChart("1.0.0"), webChart("1.1.0"))
	ca, err := os.ReadFile(caRepo.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	if e.TLSDataPath == "" {
		t.Fatal("FLEETWAVE_E2E_ARGOCD_TLS_DATA_PATH is not set (the env file is incomplete: rerun make e2e-up)")
	}
	caHost := "127.0.0.1"
	caFile := filepath.Join(e.TLSDataPath, caHost)
	if err := os.WriteFile(caFile, ca, 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(caFile)

	// One repositories file for both: Argo CD gets each Secret's fields through its repository API, fleetwave the
	// file itself (with argocd-tls-certs-cm).
	repos := []map[string]any{
		{"repo": helmRepo.URL, "type": "helm", "name": "charts", "insecure": true},
		{"repo": caRepo.URL, "type": "helm", "name": "charts-ca"},
		{"repo": ociCharts, "type": "helm", "name": "oci-charts", "enableOCI": true, "insecure": true},
		{"repo": ociNative, "type": "oci", "name": "settings", "insecure": true},
		{"repo": tokenCharts, "type": "helm", "name": "token-charts", "enableOCI": true, "insecure": true},
		{"repo": tokenNative, "type": "oci", "name": "token-settings", "insecure": true},
	}
	for _, r := range repos {
		r["username"], r["password"] = user, password
	}
	secrets := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-tls-certs-cm, namespace: argocd}\ndata:\n  " + caHost + ": |\n    " +
		strings.ReplaceAll(strings.TrimSpace(string(ca)), "\n", "\n    ") + "\n" + registerRepositories(ctx, t, e, repos)
	set, err := repocreds.Parse("repositories.yaml", []byte(secrets))
	if err != nil {
		t.Fatal(err)
	}
	f, err := chartfetch.New(chartfetch.Options{Repos: set, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	r := render.New(render.Options{Charts: f})
	settings := render.Settings{Revision: sha, ControlPlaneNamespace: "argocd"}
	if err := fillSettings(ctx, e, c, &settings); err != nil {
		t.Fatal(err)
	}
	local := func(u string) (string, bool) { return checkout, u == fleetURL }

	chartSrc := func(repoURL, chart, rev string) string {
		return "{repoURL: '" + repoURL + "', chart: " + chart + ", targetRevision: '" + rev + "'}"
	}
	// want is in fleetwave's render: the case rendered what it says (the version a constraint picks, the values).
	for _, tc := range []struct{ name, spec, want string }{
		{"helm-exact", "  source: " + chartSrc(helmRepo.URL, "web", "1.0.0") + "\n", "image: web:1.0.0"},
		{"helm-constraint", "  source: " + chartSrc(helmRepo.URL, "web", ">=1.0.0 <2.0.0") + "\n", "image: web:1.1.0"},
		{"helm-wildcard", "  source: " + chartSrc(helmRepo.URL, "web", "1.*") + "\n", "image: web:1.1.0"},
		{"helm-multi-values", "  sources:\n  - repoURL: '" + helmRepo.URL + "'\n    chart: web\n    targetRevision: 1.1.0\n" +
			"    helm:\n      valueFiles: [$values/values/prod/web.yaml]\n      parameters: [{name: image, value: mirror.example/web}]\n" +
			"  - {repoURL: '" + fleetURL + "', targetRevision: '" + sha + "', ref: values}\n", "image: mirror.example/web:1.1.0"},
		{"helm-dependency", "  source: " + chartSrc(helmRepo.URL, "stack", "1.0.0") + "\n", "version: 0.1.1"},
		{"git-chart-remote-dependency", "  source: {repoURL: '" + fleetURL + "', path: apps/edge, targetRevision: '" + sha + "'}\n", "image: web:1.1.0"},
		{"helm-host-ca", "  source: " + chartSrc(caRepo.URL, "web", "~1.0") + "\n", "image: web:1.0.0"},
		{"oci-chart", "  source: " + chartSrc(ociCharts, "web", "1.0.0") + "\n", "image: web:1.0.0"},
		{"oci-chart-constraint", "  source: " + chartSrc(ociCharts, "web", "1.*") + "\n", "image: web:1.1.0"},
		{"oci-native", "  source: {repoURL: '" + ociNative + "', path: overlays/prod, targetRevision: 1.0.0}\n", `version: 1.0.0`},
		{"oci-native-constraint", "  source: {repoURL: '" + ociNative + "', path: overlays/prod, targetRevision: '^1.0.0'}\n", `version: 1.1.0`},
		{"oci-token-chart", "  source: " + chartSrc(tokenCharts, "web", ">=1.0.0 <2.0.0") + "\n", "image: web:1.1.0"},
		{"oci-token-native", "  source: {repoURL: '" + tokenNative + "', path: overlays/prod, targetRevision: 1.0.0}\n", `version: 1.0.0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app, err := render.ParseApplication([]byte("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: fw-" + tc.name + ", namespace: argocd}\n" +
				"spec:\n  project: default\n  destination: {server: https://kubernetes.default.svc, namespace: charts}\n" + tc.spec))
			if err != nil {
				t.Fatal(err)
			}
			ours, err := r.Render(ctx, render.Request{App: app, Repos: local, Settings: settings})
			if err != nil {
				t.Fatalf("rendering in process: %v", err)
			}
			theirs, err := argoRenderAsWritten(ctx, e, c, app)
			if err != nil {
				t.Fatalf("rendering through Argo CD: %v", err)
			}
			if got := compareWithArgoCD(t, theirs, ours); !strings.Contains(got, tc.want) {
				t.Errorf("fleetwave's render has no %q:\n%s", tc.want, got)
			}
		})
	}

	// A version no repository has: both refuse the app (fleetwave names the nearest versions).
	for name, repoURL := range map[string]string{"helm": helmRepo.URL, "oci": ociCharts} {
		t.Run("missing-version-"+name, func(t *testing.T) {
			app, err := render.ParseApplication([]byte("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: fw-missing-version, namespace: argocd}\n" +
				"spec:\n  project: default\n  destination: {server: https://kubernetes.default.svc, namespace: charts}\n  source: " + chartSrc(repoURL, "web", "1.0.9") + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			_, ours := r.Render(ctx, render.Request{App: app, Repos: local, Settings: settings})
			_, theirs := argoRenderAsWritten(ctx, e, c, app)
			if ours == nil || theirs == nil || !strings.Contains(ours.Error(), "1.0.0") {
				t.Fatalf("want both to refuse version 1.0.9, fleetwave naming the nearest (1.0.0):\nfleetwave: %v\nArgo CD: %v", ours, theirs)
			}
			if strings.Contains(ours.Error(), password) {
				t.Errorf("fleetwave's error shows the repository's password: %v", ours)
			}
			t.Logf("fleetwave: %v\nArgo CD: %v", ours, theirs)
		})
	}
}

// settingsLayer is a native OCI artifact's content: a Kustomize base and overlay, as `oras push` of a directory
// archives it (tar+gzip).
func settingsLayer(t *testing.T, version string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range []struct{ name, body string }{
		{"base/kustomization.yaml", "resources: [cm.yaml]\n"},
		{"base/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  version: \"" + version + "\"\n"},
		{"overlays/prod/kustomization.yaml", "resources: [../../base]\nnamePrefix: prod-\n"},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
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
