package preview

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/edge/chartfetch"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch/helmrepotest"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch/ocitest"
	"github.com/fleetwave/fleetwave/internal/edge/repocreds"
	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/report"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

func vendorBenchChart(version string) helmrepotest.Chart {
	return helmrepotest.Chart{Name: "vendor", Version: version,
		Values: "replicas: 1\nimage: registry.example.com/vendor:" + version + "\n",
		Templates: map[string]string{"deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  labels: {helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}}
spec:
  replicas: {{ .Values.replicas }}
  template:
    spec:
      containers:
      - name: app
        image: {{ .Values.image }}
`, "service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
spec:
  ports:
  - port: 80
`}}
}

// vendorFleet commits 100 Applications on main, each installing the vendor chart 1.0.0 from srv with values of its
// own (one list-generator ApplicationSet), then on branch change the one-line bump to 1.1.0.
func vendorFleet(tb testing.TB, repoURL string) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "fleet")
	appset := func(version string) string {
		var b strings.Builder
		b.WriteString("apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: vendor, namespace: argocd}\nspec:\n  goTemplate: true\n  generators:\n  - list:\n      elements:\n")
		for i := 0; i < 100; i++ {
			fmt.Fprintf(&b, "      - {name: team-%03d, replicas: \"%d\"}\n", i, 1+i%3)
		}
		b.WriteString(`  template:
    metadata: {name: 'vendor-{{.name}}'}
    spec:
      project: default
      source:
        repoURL: ` + repoURL + `
        chart: vendor
        targetRevision: ` + version + `
        helm:
          parameters:
          - {name: replicas, value: '{{.replicas}}'}
      destination: {server: https://kubernetes.default.svc, namespace: '{{.name}}'}
`)
		return b.String()
	}
	write := func(version string) {
		if err := os.MkdirAll(filepath.Join(dir, "apps"), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "apps", "vendor.yaml"), []byte(appset(version)), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	write("1.0.0")
	gittest.Run(tb, dir, "init", "-q", "-b", "main")
	gittest.Run(tb, dir, "remote", "add", "origin", "https://github.com/example/vendor-fleet.git")
	gittest.Run(tb, dir, "add", "-A")
	gittest.Run(tb, dir, "commit", "-q", "-m", "100 apps on vendor 1.0.0")
	gittest.Run(tb, dir, "checkout", "-q", "-b", "change")
	write("1.1.0")
	gittest.Run(tb, dir, "commit", "-q", "-am", "vendor 1.1.0")
	return dir
}

func vendorRenderer(tb testing.TB, secrets string, tr *http.Transport, cacheDir string) *render.Renderer {
	tb.Helper()
	set, err := repocreds.Parse("repositories.yaml", []byte(secrets))
	if err != nil {
		tb.Fatal(err)
	}
	f, err := chartfetch.New(chartfetch.Options{Repos: set, CacheDir: cacheDir, Transport: tr})
	if err != nil {
		tb.Fatal(err)
	}
	return render.New(render.Options{Charts: f})
}

func TestVendorChartBumpShowsEveryApp(t *testing.T) {
	srv := helmrepotest.New(t, "fleet", "bench-password", vendorBenchChart("1.0.0"), vendorBenchChart("1.1.0"))
	dir := vendorFleet(t, srv.URL)
	rep, err := reportOf(Run(context.Background(), vendorRenderer(t, srv.Secret("vendor"), nil, t.TempDir()), Input{RepoDir: dir, Base: "main", Head: "change"}))
	if err != nil {
		t.Fatal(err)
	}
	want := report.Summary{Apps: 100, Changed: 100, ResourcesModified: 100}
	if rep.Summary != want {
		t.Fatalf("summary %+v, want %+v (%v)", rep.Summary, want, firstErrors(rep))
	}
	// Base and head: one index, two archives.
	if got := srv.Count("/index.yaml") + srv.Archives(); got != 3 {
		t.Errorf("%d downloads, want 3 (one index.yaml, the two versions' archives)", got)
	}
}

// BenchmarkVendorChartBump100Apps: PR→diff for a pull request that bumps one vendor chart used by 100 apps, from
// a Helm repository and from an OCI registry on loopback. cold: an empty chart cache; warm: the cache of an earlier
// preview, in a new process (a new fetcher on the same directory: nothing downloaded; index.yaml revalidated, or
// the two tags' manifests asked again, since tags can move). downloads/op counts chart archives and registry
// blobs, requests/op (warm) every request.
func BenchmarkVendorChartBump100Apps(b *testing.B) {
	srv := helmrepotest.New(b, "fleet", "bench-password", vendorBenchChart("1.0.0"), vendorBenchChart("1.1.0"))
	reg := ocitest.New(b, "fleet", "bench-password")
	for _, v := range []string{"1.0.0", "1.1.0"} {
		data, err := os.ReadFile(helmrepotest.Package(b, vendorBenchChart(v), b.TempDir()))
		if err != nil {
			b.Fatal(err)
		}
		reg.MustPushChart(b, data, "charts")
	}
	for _, src := range []struct {
		name, repoURL, secrets string
		tr                     *http.Transport
		downloads, requests    func() int
	}{
		{"helm", srv.URL, srv.Secret("vendor"), nil,
			srv.Archives, func() int { return srv.Count("/index.yaml") + srv.Archives() }},
		{"oci", reg.Host + "/charts", reg.Secret("vendor", reg.Host+"/charts", map[string]string{"enableOCI": "true"}), reg.Transport(),
			func() int { return reg.Count("blob") }, func() int { return reg.Count("blob") + reg.Count("manifest") + reg.Count("tags") }},
	} {
		dir := vendorFleet(b, src.repoURL)
		run := func(b *testing.B, r *render.Renderer) {
			rep, err := reportOf(Run(context.Background(), r, Input{RepoDir: dir, Base: "main", Head: "change"}))
			if err != nil {
				b.Fatal(err)
			}
			if rep.Summary.Changed != 100 {
				b.Fatalf("%d apps changed, want 100 (%v)", rep.Summary.Changed, firstErrors(rep))
			}
		}
		b.Run(src.name+"/cold", func(b *testing.B) {
			before := src.downloads()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				r := vendorRenderer(b, src.secrets, src.tr, b.TempDir())
				b.StartTimer()
				run(b, r)
			}
			b.ReportMetric(float64(src.downloads()-before)/float64(b.N), "downloads/op")
		})
		b.Run(src.name+"/warm", func(b *testing.B) {
			cache := b.TempDir()
			run(b, vendorRenderer(b, src.secrets, src.tr, cache))
			downloads, requests := src.downloads(), src.requests()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				r := vendorRenderer(b, src.secrets, src.tr, cache)
				b.StartTimer()
				run(b, r)
			}
			b.ReportMetric(float64(src.downloads()-downloads)/float64(b.N), "downloads/op")
			b.ReportMetric(float64(src.requests()-requests)/float64(b.N), "requests/op")
		})
	}
}
