package chartfetch_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/chartfetch"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch/helmrepotest"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch/ocitest"
)

const ociPassword = "s3cret-registry-password"

// chartArchive packages a chart with helm's chartutil.Save and returns the archive.
func chartArchive(t *testing.T, c helmrepotest.Chart) []byte {
	t.Helper()
	b, err := os.ReadFile(helmrepotest.Package(t, c, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// registryWithCharts starts a registry with basic auth holding ingress-nginx at several versions under charts/.
func registryWithCharts(t *testing.T) *ocitest.Registry {
	t.Helper()
	reg := ocitest.New(t, "fleet", ociPassword)
	for _, v := range []string{"1.2.0", "1.9.3", "2.0.0", "4.10.0", "4.10.2", "4.11.0", "5.0.0-rc.1"} {
		reg.MustPushChart(t, chartArchive(t, ingress(v)), "charts")
	}
	return reg
}

func helmOCISecret(reg *ocitest.Registry, name string) string {
	return reg.Secret(name, reg.Host+"/charts", map[string]string{"type": "helm", "enableOCI": "true"})
}

func TestOCIChartResolvesRevisions(t *testing.T) {
	reg := registryWithCharts(t)
	f := fetcher(t, helmOCISecret(reg, "registry"), chartfetch.Options{Transport: reg.Transport()})
	for _, tc := range []struct{ revision, want string }{
		{"4.11.0", "4.11.0"},
		{"~4.10", "4.10.2"},
		{">=1.0 <2.0", "1.9.3"},
		{"*", "4.11.0"}, // prereleases only when asked for
		{">=5.0.0-0", "5.0.0-rc.1"},
	} {
		t.Run(tc.revision, func(t *testing.T) {
			ch, err := f.Chart(context.Background(), reg.Host+"/charts", "ingress-nginx", tc.revision)
			if err != nil {
				t.Fatal(err)
			}
			if ch.Version != tc.want {
				t.Fatalf("version %s, want %s", ch.Version, tc.want)
			}
			b, err := os.ReadFile(filepath.Join(ch.Dir, "templates", "cm.yaml"))
			if err != nil || !strings.Contains(string(b), "version: "+tc.want) {
				t.Fatalf("extracted chart: %q, %v", b, err)
			}
			if !strings.HasPrefix(ch.Digest, "sha256:") {
				t.Fatalf("digest %q, want the manifest's", ch.Digest)
			}
		})
	}
}

func TestOCIChartInsecureSkipsVerification(t *testing.T) {
	reg := registryWithCharts(t)
	ctx := context.Background()
	// Without insecure and without the registry's CA the certificate is refused, as helm pull refuses it.
	f := fetcher(t, helmOCISecret(reg, "registry"), chartfetch.Options{})
	if _, err := f.Chart(ctx, reg.Host+"/charts", "ingress-nginx", "4.11.0"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("untrusted certificate accepted: %v", err)
	}
	insecure := reg.Secret("registry", reg.Host+"/charts", map[string]string{"type": "helm", "enableOCI": "true", "insecure": "true"})
	f = fetcher(t, insecure, chartfetch.Options{})
	if _, err := f.Chart(ctx, reg.Host+"/charts", "ingress-nginx", "4.11.0"); err != nil {
		t.Fatalf("insecure: true: %v", err)
	}
}

func TestOCIChartCachedDownloadsNothing(t *testing.T) {
	reg := registryWithCharts(t)
	cache := t.TempDir()
	ctx := context.Background()
	f := fetcher(t, helmOCISecret(reg, "registry"), chartfetch.Options{CacheDir: cache, Transport: reg.Transport()})
	// Pushing reads manifests and blobs too: count from here.
	blobs, manifests, tags := reg.Count("blob"), reg.Count("manifest"), reg.Count("tags")
	for _, rev := range []string{"4.11.0", "~4.11", "4.11.0"} {
		if _, err := f.Chart(ctx, reg.Host+"/charts", "ingress-nginx", rev); err != nil {
			t.Fatal(err)
		}
	}
	if reg.Count("blob")-blobs != 1 || reg.Count("manifest")-manifests != 1 || reg.Count("tags")-tags != 1 {
		t.Fatalf("three fetches of one version: %d blob, %d manifest, %d tags requests; want 1, 1, 1",
			reg.Count("blob")-blobs, reg.Count("manifest")-manifests, reg.Count("tags")-tags)
	}
	// A second preview in a new process on the same cache: the tag is resolved again, nothing is downloaded.
	g := fetcher(t, helmOCISecret(reg, "registry"), chartfetch.Options{CacheDir: cache, Transport: reg.Transport()})
	if _, err := g.Chart(ctx, reg.Host+"/charts", "ingress-nginx", "4.11.0"); err != nil {
		t.Fatal(err)
	}
	if reg.Count("blob")-blobs != 1 || g.Requests("oci-blob") != 0 {
		t.Errorf("blob downloaded again: registry counted %d, fetcher %d", reg.Count("blob")-blobs, g.Requests("oci-blob"))
	}
	if g.Requests("oci-manifest") != 1 {
		t.Errorf("manifest requests %d, want 1 (the tag may have moved)", g.Requests("oci-manifest"))
	}
}

func TestOCIDependencyArchive(t *testing.T) {
	reg := registryWithCharts(t)
	f := fetcher(t, helmOCISecret(reg, "registry"), chartfetch.Options{Transport: reg.Transport()})
	ctx := context.Background()
	for _, tc := range []struct{ constraint, want string }{{"^4.10.0", "4.11.0"}, {"4.10.0", "4.10.0"}, {"~1", "1.9.3"}} {
		data, v, err := f.Archive(ctx, "oci://"+reg.Host+"/charts", "ingress-nginx", tc.constraint)
		if err != nil {
			t.Fatalf("%s: %v", tc.constraint, err)
		}
		if v != tc.want || len(data) == 0 {
			t.Fatalf("%s: version %s, %d bytes; want %s", tc.constraint, v, len(data), tc.want)
		}
	}
	if _, _, err := f.Archive(ctx, "oci://other.example.com/charts", "ingress-nginx", "^4"); !errors.Is(err, chartfetch.ErrNotAllowed) {
		t.Errorf("dependency on a registry not allowed: %v", err)
	}
	// getHelmDependencyRepos's last resort: an OCI repository whose URL the dependency's extends (a repository
	// Secret for <host>/charts/ingress-nginx, the dependency on <host>/charts), or the other way round.
	for _, url := range []string{reg.Host + "/charts/ingress-nginx", reg.Host} {
		g := fetcher(t, reg.Secret("registry", url, map[string]string{"enableOCI": "true"}), chartfetch.Options{Transport: reg.Transport()})
		if _, v, err := g.Archive(ctx, "oci://"+reg.Host+"/charts", "ingress-nginx", "4.10.0"); err != nil || v != "4.10.0" {
			t.Errorf("repository %s for a dependency on %s/charts: %s, %v", url, reg.Host, v, err)
		}
	}
}

// rawTar builds a tar (not gzipped) of entries.
func rawTar(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

const (
	layerTarGzip = "application/vnd.oci.image.layer.v1.tar+gzip"
	layerTar     = "application/vnd.oci.image.layer.v1.tar"
	helmLayer    = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	helmConfig   = "application/vnd.cncf.helm.config.v1+json"
)

func TestNativeOCISource(t *testing.T) {
	reg := ocitest.New(t, "fleet", ociPassword)
	cm := func(v string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  version: " + v + "\n"
	}
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0"} {
		reg.MustPushArtifact(t, "manifests/app", v, ocitest.Blob{}, nil,
			ocitest.Blob{MediaType: layerTarGzip, Data: tgz(t, entry{name: "base/cm.yaml", body: cm(v)})})
	}
	reg.MustPushArtifact(t, "manifests/app", "plain", ocitest.Blob{}, nil, ocitest.Blob{MediaType: layerTar, Data: rawTar(t, entry{name: "base/cm.yaml", body: cm("plain")})})
	reg.MustPushArtifact(t, "manifests/chart", "1.0.0", ocitest.Blob{MediaType: helmConfig, Data: []byte(`{"name":"demo","version":"1.0.0"}`)}, nil,
		ocitest.Blob{MediaType: helmLayer, Data: chartArchive(t, helmrepotest.Chart{Name: "demo", Version: "1.0.0", Templates: map[string]string{"cm.yaml": cm("chart")}})})
	secret := reg.Secret("manifests", "oci://"+reg.Host+"/manifests", map[string]string{"type": "oci"})
	creds := strings.Replace(secret, "secret-type: repository", "secret-type: repo-creds", 1)
	f := fetcher(t, creds, chartfetch.Options{Transport: reg.Transport()})
	ctx := context.Background()
	for _, tc := range []struct{ repo, revision, file, want string }{
		{"manifests/app", "1.1.0", "base/cm.yaml", "version: 1.1.0"},
		{"manifests/app", "^1.0.0", "base/cm.yaml", "version: 1.1.0"}, // ResolveRevision: a constraint over the tags
		{"manifests/app", "plain", "base/cm.yaml", "version: plain"},  // a plain tar layer
		{"manifests/chart", "1.0.0", "templates/cm.yaml", "version: chart"},
	} {
		t.Run(tc.repo+"@"+tc.revision, func(t *testing.T) {
			ch, err := f.Chart(ctx, "oci://"+reg.Host+"/"+tc.repo, "", tc.revision)
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(ch.Dir, tc.file))
			if err != nil || !strings.Contains(string(b), tc.want) {
				t.Fatalf("%s: %q, %v", tc.file, b, err)
			}
		})
	}
	// By digest, as Argo CD pins a resolved revision.
	d := reg.MustPushArtifact(t, "manifests/app", "3.0.0", ocitest.Blob{}, nil, ocitest.Blob{MediaType: layerTarGzip, Data: tgz(t, entry{name: "cm.yaml", body: cm("3")})})
	ch, err := f.Chart(ctx, "oci://"+reg.Host+"/manifests/app", "", d)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Digest != d {
		t.Errorf("digest %s, want %s", ch.Digest, d)
	}
}

func TestNativeOCIPlainHTTP(t *testing.T) {
	reg := ocitest.NewPlainHTTP(t, "", "")
	reg.MustPushArtifact(t, "app", "1.0.0", ocitest.Blob{}, nil, ocitest.Blob{MediaType: layerTarGzip, Data: tgz(t, entry{name: "cm.yaml", body: "kind: ConfigMap\n"})})
	ctx := context.Background()
	// Without insecureOCIForceHttp the registry is asked over TLS, which a plain-HTTP server cannot answer.
	f := fetcher(t, reg.Secret("app", "oci://"+reg.Host+"/app", map[string]string{"type": "oci"}), chartfetch.Options{})
	if _, err := f.Chart(ctx, "oci://"+reg.Host+"/app", "", "1.0.0"); err == nil {
		t.Fatal("fetched over TLS from a plain-HTTP registry")
	}
	f = fetcher(t, reg.Secret("app", "oci://"+reg.Host+"/app", map[string]string{"type": "oci", "insecureOCIForceHttp": "true"}), chartfetch.Options{})
	if _, err := f.Chart(ctx, "oci://"+reg.Host+"/app", "", "1.0.0"); err != nil {
		t.Fatalf("insecureOCIForceHttp: %v", err)
	}
}

func TestOCIFailures(t *testing.T) {
	reg := registryWithCharts(t)
	ctx := context.Background()
	host := reg.Host
	// Hostile and malformed artifacts, pushed as raw manifests.
	helmCfg := ocitest.Blob{MediaType: helmConfig, Data: []byte(`{"name":"x","version":"1.0.0"}`)}
	chartYAML := func(n string) entry {
		return entry{name: n + "/Chart.yaml", body: "apiVersion: v2\nname: " + n + "\nversion: 1.0.0\n"}
	}
	reg.MustPushArtifact(t, "charts/dotdot", "1.0.0", helmCfg, nil, ocitest.Blob{MediaType: helmLayer, Data: tgz(t, chartYAML("dotdot"), entry{name: "dotdot/../../evil", body: "x"})})
	reg.MustPushArtifact(t, "charts/abs", "1.0.0", helmCfg, nil, ocitest.Blob{MediaType: helmLayer, Data: tgz(t, chartYAML("abs"), entry{name: "/etc/evil", body: "x"})})
	reg.MustPushArtifact(t, "charts/link", "1.0.0", helmCfg, nil, ocitest.Blob{MediaType: helmLayer, Data: tgz(t, chartYAML("link"), entry{name: "link/templates/x.yaml", link: "/etc/passwd"})})
	reg.MustPushArtifact(t, "charts/image", "1.0.0", ocitest.Blob{}, nil, ocitest.Blob{MediaType: layerTarGzip, Data: tgz(t, chartYAML("image"))})
	reg.MustPushArtifact(t, "charts/fat", "1.0.0", helmCfg, map[string]string{"padding": strings.Repeat("x", 2048)}, ocitest.Blob{MediaType: helmLayer, Data: tgz(t, chartYAML("fat"))})
	layers := make([]ocitest.Blob, 11)
	for i := range layers {
		layers[i] = ocitest.Blob{MediaType: "application/vnd.example.note", Data: []byte{byte(i)}}
	}
	reg.MustPushArtifact(t, "manifests/many", "1.0.0", ocitest.Blob{}, nil, layers...)
	reg.MustPushArtifact(t, "manifests/two", "1.0.0", ocitest.Blob{}, nil, ocitest.Blob{MediaType: layerTarGzip, Data: tgz(t, entry{name: "a.yaml", body: "a"})}, ocitest.Blob{MediaType: layerTar, Data: rawTar(t, entry{name: "b.yaml", body: "b"})})
	reg.MustPushArtifact(t, "manifests/zstd", "1.0.0", ocitest.Blob{}, nil, ocitest.Blob{MediaType: "application/vnd.example.layer.v1.tar", Data: rawTar(t, entry{name: "a.yaml", body: "a"})})
	reg.MustPushArtifact(t, "manifests/link", "1.0.0", ocitest.Blob{}, nil, ocitest.Blob{MediaType: layerTarGzip, Data: tgz(t, entry{name: "x.yaml", link: "../../etc/passwd"})})

	allowed := helmOCISecret(reg, "registry") + "---\n" +
		strings.Replace(reg.Secret("manifests", "oci://"+host+"/manifests", map[string]string{"type": "oci"}), "secret-type: repository", "secret-type: repo-creds", 1)
	wrongPass := strings.ReplaceAll(allowed, ociPassword, "wrong-password-123")
	tr := reg.Transport()

	down := ocitest.New(t, "", "")
	downHost := down.Host
	down.Close()
	unreachable := down.Secret("down", downHost+"/charts", map[string]string{"enableOCI": "true"})

	slow := ocitest.New(t, "", "")
	slow.MustPushChart(t, chartArchive(t, ingress("1.0.0")), "charts")
	// Never an answer, not even the empty 200 a returning handler sends, whatever the request's context says:
	// the client must time out. The handlers end when the test does (before the registry closes).
	ended := make(chan struct{})
	t.Cleanup(func() { close(ended) })
	slow.SetHandler(func(w http.ResponseWriter, r *http.Request) bool {
		select {
		case <-ended:
		case <-time.After(5 * time.Second):
		}
		panic(http.ErrAbortHandler)
	})
	slowSecret := slow.Secret("slow", slow.Host+"/charts", map[string]string{"enableOCI": "true"})

	for _, tc := range []struct {
		name, secrets, repoURL, chart, revision string
		opts                                    chartfetch.Options
		sentinel                                error
		want                                    []string
	}{
		{name: "version not found", secrets: allowed, repoURL: host + "/charts", chart: "ingress-nginx", revision: "4.10.1",
			sentinel: chartfetch.ErrNotFound, want: []string{"version 4.10.1 not found", "nearest available versions: 1.9.3, 2.0.0, 4.10.0, 4.10.2, 4.11.0"}},
		{name: "constraint not satisfied", secrets: allowed, repoURL: host + "/charts", chart: "ingress-nginx", revision: "~3.1",
			sentinel: chartfetch.ErrNotFound, want: []string{`no version matching "~3.1"`, "nearest available versions: 1.2.0, 1.9.3, 2.0.0, 4.10.0, 4.10.2, 4.11.0"}},
		{name: "chart not found", secrets: allowed, repoURL: host + "/charts", chart: "nginx", revision: "1.0.0",
			sentinel: chartfetch.ErrNotFound, want: []string{`chart "nginx" not found: the registry has no repository ` + host + "/charts/nginx"}},
		{name: "wrong credentials", secrets: wrongPass, repoURL: host + "/charts", chart: "ingress-nginx", revision: "4.11.0",
			want: []string{"401 Unauthorized", "check the credentials"}},
		{name: "not allowed", secrets: allowed, repoURL: "registry.example.com/charts", chart: "ingress-nginx", revision: "4.11.0",
			sentinel: chartfetch.ErrNotAllowed, want: []string{"not rendered: repository registry.example.com/charts is not in the allowed repositories"}},
		{name: "unreachable", secrets: unreachable, repoURL: downHost + "/charts", chart: "ingress-nginx", revision: "1.0.0",
			want: []string{downHost + "/charts/ingress-nginx manifest 1.0.0", "connection refused"}},
		{name: "slow registry", secrets: slowSecret, repoURL: slow.Host + "/charts", chart: "ingress-nginx", revision: "1.0.0",
			opts: chartfetch.Options{Timeout: 300 * time.Millisecond}, sentinel: context.DeadlineExceeded, want: []string{"timeout", "no answer within 300ms"}},
		{name: "oversized manifest", secrets: allowed, repoURL: host + "/charts", chart: "fat", revision: "1.0.0",
			opts: chartfetch.Options{MaxManifestBytes: 1024}, sentinel: chartfetch.ErrRefused, want: []string{"charts/fat manifest 1.0.0", "over the cap of 1024"}},
		{name: "oversized layer", secrets: allowed, repoURL: host + "/charts", chart: "ingress-nginx", revision: "4.11.0",
			opts: chartfetch.Options{MaxArchiveBytes: 100}, sentinel: chartfetch.ErrRefused, want: []string{"the layer is", "over the cap of 100"}},
		{name: "dot-dot entry", secrets: allowed, repoURL: host + "/charts", chart: "dotdot", revision: "1.0.0",
			sentinel: chartfetch.ErrRefused, want: []string{"hostile-archive", "climbs out"}},
		{name: "absolute entry", secrets: allowed, repoURL: host + "/charts", chart: "abs", revision: "1.0.0",
			sentinel: chartfetch.ErrRefused, want: []string{"hostile-archive", "absolute"}},
		{name: "symlink entry", secrets: allowed, repoURL: host + "/charts", chart: "link", revision: "1.0.0",
			sentinel: chartfetch.ErrRefused, want: []string{"hostile-archive", "is a link"}},
		{name: "not a helm chart", secrets: allowed, repoURL: host + "/charts", chart: "image", revision: "1.0.0",
			sentinel: chartfetch.ErrRefused, want: []string{"not a Helm chart's"}},
		{name: "native: more than 10 layers", secrets: allowed, repoURL: "oci://" + host + "/manifests/many", revision: "1.0.0",
			sentinel: chartfetch.ErrRefused, want: []string{"expected no more than 10 oci layers, got 11"}},
		{name: "native: two content layers", secrets: allowed, repoURL: "oci://" + host + "/manifests/two", revision: "1.0.0",
			sentinel: chartfetch.ErrRefused, want: []string{"expected only a single oci content layer, got 2"}},
		{name: "native: media type not allowed", secrets: allowed, repoURL: "oci://" + host + "/manifests/zstd", revision: "1.0.0",
			sentinel: chartfetch.ErrRefused, want: []string{"application/vnd.example.layer.v1.tar is not in the list of allowed media types"}},
		{name: "native: symlink entry", secrets: allowed, repoURL: "oci://" + host + "/manifests/link", revision: "1.0.0",
			sentinel: chartfetch.ErrRefused, want: []string{"hostile-archive", "is a link"}},
		{name: "native: tag not found", secrets: allowed, repoURL: "oci://" + host + "/manifests/two", revision: "2.0.0",
			sentinel: chartfetch.ErrNotFound, want: []string{`revision "2.0.0" not found`, "nearest available versions: 1.0.0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			if opts.Transport == nil {
				opts.Transport = tr
			}
			if tc.secrets == unreachable || tc.secrets == slowSecret {
				opts.Transport = slow.Transport()
			}
			f := fetcher(t, tc.secrets, opts)
			_, err := f.Chart(ctx, tc.repoURL, tc.chart, tc.revision)
			if err == nil {
				t.Fatal("fetched")
			}
			msg := err.Error()
			t.Log(msg)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
			if tc.sentinel != nil && !errors.Is(err, tc.sentinel) {
				t.Errorf("error %q is not %v", msg, tc.sentinel)
			}
			if strings.Contains(msg, ociPassword) || strings.Contains(msg, "wrong-password-123") {
				t.Errorf("error leaks a credential: %q", msg)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error spans lines: %q", msg)
			}
		})
	}
}

// Concurrent renders of one version (the apps of a preview) pull it once and all get it: the extraction is one at
// a time per manifest digest.
func TestOCIConcurrentFetchesDownloadOnce(t *testing.T) {
	reg := registryWithCharts(t)
	reg.MustPushArtifact(t, "manifests/app", "1.0.0", ocitest.Blob{}, nil, ocitest.Blob{MediaType: layerTarGzip, Data: tgz(t, entry{name: "cm.yaml", body: "kind: ConfigMap\n"})})
	secrets := helmOCISecret(reg, "registry") + "---\n" + reg.Secret("app", "oci://"+reg.Host+"/manifests/app", map[string]string{"type": "oci"})
	f := fetcher(t, secrets, chartfetch.Options{Transport: reg.Transport()})
	blobs := reg.Count("blob")
	errs := make(chan error, 32)
	for i := 0; i < 32; i++ {
		go func() {
			var err error
			if i%2 == 0 {
				_, err = f.Chart(context.Background(), reg.Host+"/charts", "ingress-nginx", "~4.11")
			} else {
				_, err = f.Chart(context.Background(), "oci://"+reg.Host+"/manifests/app", "", "1.0.0")
			}
			errs <- err
		}()
	}
	for i := 0; i < 32; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := reg.Count("blob") - blobs; got != 2 {
		t.Errorf("32 concurrent fetches of two artifacts downloaded %d blobs, want 2 (fetcher: %d)", got, f.Requests("oci-blob"))
	}
}
