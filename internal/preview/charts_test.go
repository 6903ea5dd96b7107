package preview

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/edge/chartfetch"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch/helmrepotest"
	"github.com/fleetwave/fleetwave/internal/edge/repocreds"
	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/report"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

const chartsRepoURL = "https://github.com/example/charts-fleet.git"

func vendorChart(version string) helmrepotest.Chart {
	return helmrepotest.Chart{Name: "cert-manager", Version: version, Values: "replicaCount: 1\n",
		Templates: map[string]string{"deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n" +
			"  labels: {app.kubernetes.io/version: \"" + version + "\"}\nspec:\n  replicas: {{ .Values.replicaCount }}\n"}}
}

// chartsFleet commits, on main, an app installing a vendor chart with its values in this repository ($values),
// and returns the repository and a renderer allowed to fetch from the chart repository.
func chartsFleet(t *testing.T) (string, *helmrepotest.Server, *render.Renderer) {
	t.Helper()
	srv := helmrepotest.New(t, "fleet", "preview-chart-password", vendorChart("1.15.0"), vendorChart("1.16.1"))
	set, err := repocreds.Parse("repositories.yaml", []byte(srv.Secret("jetstack")))
	if err != nil {
		t.Fatal(err)
	}
	f, err := chartfetch.New(chartfetch.Options{Repos: set, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"apps/cert-manager.yaml":   certManagerApp(srv.URL, "1.15.0"),
		"values/cert-manager.yaml": "replicaCount: 2\n",
	})
	gittest.Run(t, dir, "init", "-q", "-b", "main")
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "base")
	return dir, srv, render.New(render.Options{Charts: f})
}

func certManagerApp(repoURL, version string) string {
	return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: cert-manager, namespace: argocd}\nspec:\n  project: default\n" +
		"  destination: {server: https://kubernetes.default.svc, namespace: cert-manager}\n  sources:\n" +
		"  - {repoURL: " + repoURL + ", chart: cert-manager, targetRevision: " + version + ", helm: {valueFiles: [$values/values/cert-manager.yaml]}}\n" +
		"  - {repoURL: " + chartsRepoURL + ", targetRevision: HEAD, ref: values}\n"
}

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, c := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPreviewChartFromHelmRepository(t *testing.T) {
	dir, srv, r := chartsFleet(t)
	change := func(branch string, files map[string]string) {
		gittest.Run(t, dir, "checkout", "-q", "-b", branch, "main")
		write(t, dir, files)
		gittest.Run(t, dir, "add", "-A")
		gittest.Run(t, dir, "commit", "-q", "-m", branch)
	}
	change("bump", map[string]string{"apps/cert-manager.yaml": certManagerApp(srv.URL, "1.16.1")})
	change("values", map[string]string{"values/cert-manager.yaml": "replicaCount: 3\n"})
	change("docs", map[string]string{"README.md": "unrelated\n"})

	for _, tc := range []struct {
		head   string
		status report.Status
		want   []string
	}{
		{"bump", report.StatusChanged, []string{`-    app.kubernetes.io/version: 1.15.0`, `+    app.kubernetes.io/version: 1.16.1`}},
		{"values", report.StatusChanged, []string{"-  replicas: 2", "+  replicas: 3"}},
		// Not reached by the change: the Application pins the chart, so unchanged (not "not known here").
		{"docs", report.StatusUnchanged, nil},
	} {
		t.Run(tc.head, func(t *testing.T) {
			rep, err := reportOf(Run(context.Background(), r, Input{RepoDir: dir, Base: "main", Head: tc.head, RepoURLs: []string{chartsRepoURL}}))
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Apps) != 1 {
				t.Fatalf("apps: %+v", rep.Apps)
			}
			a := rep.Apps[0]
			if a.Status != tc.status {
				t.Fatalf("status %s (%s), want %s", a.Status, a.Error, tc.status)
			}
			var diff strings.Builder
			for _, res := range a.Resources {
				diff.WriteString(res.Diff)
			}
			for _, w := range tc.want {
				if !strings.Contains(diff.String(), w) {
					t.Errorf("diff lacks %q:\n%s", w, diff.String())
				}
			}
		})
	}
	// One preview's base and head share the index; each version is downloaded once across all three.
	if srv.Count("/index.yaml") != 1 || srv.Archives() != 2 {
		t.Errorf("requests: index %d, archives %d; want 1 and 2", srv.Count("/index.yaml"), srv.Archives())
	}
}
