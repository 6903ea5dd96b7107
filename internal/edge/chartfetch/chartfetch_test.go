package chartfetch_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/repo"

	"github.com/fleetwave/fleetwave/internal/edge/chartfetch"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch/helmrepotest"
	"github.com/fleetwave/fleetwave/internal/edge/repocreds"
)

const password = "s3cret-chart-password"

func ingress(version string) helmrepotest.Chart {
	return helmrepotest.Chart{Name: "ingress-nginx", Version: version, Values: "replicas: 1\n",
		Templates: map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  version: " + version + "\n"}}
}

func repoServer(t *testing.T) *helmrepotest.Server {
	t.Helper()
	return helmrepotest.New(t, "fleet", password, ingress("1.2.0"), ingress("1.9.3"), ingress("2.0.0"), ingress("4.10.0"), ingress("4.10.2"), ingress("4.11.0"), ingress("5.0.0-rc.1"))
}

func fetcher(t *testing.T, secrets string, opts chartfetch.Options) *chartfetch.Fetcher {
	t.Helper()
	set, err := repocreds.Parse("repositories.yaml", []byte(secrets))
	if err != nil {
		t.Fatal(err)
	}
	opts.Repos = set
	if opts.CacheDir == "" {
		opts.CacheDir = t.TempDir()
	}
	f, err := chartfetch.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestChartResolvesRevisions(t *testing.T) {
	srv := repoServer(t)
	f := fetcher(t, srv.Secret("charts"), chartfetch.Options{})
	for _, tc := range []struct{ revision, want string }{
		{"4.11.0", "4.11.0"},
		{"v4.10.0", "4.10.0"}, // helm's IndexFile.Get takes a "v" prefix
		{"~4.10", "4.10.2"},
		{">=1.0 <2.0", "1.9.3"},
		{"*", "4.11.0"}, // prereleases only when asked for
		{"", "4.11.0"},
		{">=5.0.0-0", "5.0.0-rc.1"},
	} {
		t.Run(tc.revision, func(t *testing.T) {
			ch, err := f.Chart(context.Background(), srv.URL, "ingress-nginx", tc.revision)
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
			if ch.Digest == "" {
				t.Fatal("no digest from the index")
			}
		})
	}
	if n := srv.Count("/index.yaml"); n != 1 {
		t.Errorf("index.yaml fetched %d times, want once", n)
	}
}

func TestChartCachedDownloadsNothing(t *testing.T) {
	srv := repoServer(t)
	cache := t.TempDir()
	f := fetcher(t, srv.Secret("charts"), chartfetch.Options{CacheDir: cache})
	ctx := context.Background()
	if _, err := f.Chart(ctx, srv.URL, "ingress-nginx", "4.11.0"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Chart(ctx, srv.URL, "ingress-nginx", "~4.11"); err != nil {
		t.Fatal(err)
	}
	if got := srv.Count("/index.yaml") + srv.Archives(); got != 2 {
		t.Fatalf("%d requests for two fetches of one version, want 2 (one index, one archive)", got)
	}
	// A new process on the same cache: the index is revalidated (304), the archive is not downloaded.
	g := fetcher(t, srv.Secret("charts"), chartfetch.Options{CacheDir: cache})
	if _, err := g.Chart(ctx, srv.URL, "ingress-nginx", "4.11.0"); err != nil {
		t.Fatal(err)
	}
	if srv.Archives() != 1 {
		t.Errorf("archive downloaded %d times across two fetchers, want once", srv.Archives())
	}
	if g.Requests("index") != 1 || g.Requests("index-304") != 1 {
		t.Errorf("index requests %d, 304s %d; want one conditional request answered 304", g.Requests("index"), g.Requests("index-304"))
	}
	// Counted as cache hits (fleetwave_chart_requests_total{kind="cache-hit"}): the second fetch of the first
	// fetcher and the new process's.
	if f.Requests("cache-hit") != 1 || g.Requests("cache-hit") != 1 || f.Requests("archive") != 1 {
		t.Errorf("cache hits %d and %d, archives %d; want 1, 1 and 1", f.Requests("cache-hit"), g.Requests("cache-hit"), f.Requests("archive"))
	}
}

func TestChartFailures(t *testing.T) {
	srv := repoServer(t)
	other := helmrepotest.New(t, "", "", ingress("1.0.0"))
	ctx := context.Background()

	hostile := helmrepotest.New(t, "", "")
	addRaw := func(name, version string, data []byte, digest string) {
		idx := repo.NewIndexFile()
		if b, err := os.ReadFile(filepath.Join(hostile.Dir, "index.yaml")); err == nil && len(b) > 0 {
			loaded, err := repo.LoadIndexFile(filepath.Join(hostile.Dir, "index.yaml"))
			if err == nil {
				idx = loaded
			}
		}
		file := name + "-" + version + ".tgz"
		hostile.WriteFile(t, file, data)
		if digest == "" {
			sum := sha256.Sum256(data)
			digest = hex.EncodeToString(sum[:])
		}
		if err := idx.MustAdd(&chart.Metadata{APIVersion: "v2", Name: name, Version: version}, file, "", digest); err != nil {
			t.Fatal(err)
		}
		if err := idx.WriteFile(filepath.Join(hostile.Dir, "index.yaml"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	addRaw("dotdot", "1.0.0", tgz(t, entry{name: "dotdot/Chart.yaml", body: "apiVersion: v2\nname: dotdot\nversion: 1.0.0\n"}, entry{name: "dotdot/../../../etc/evil", body: "x"}), "")
	addRaw("abs", "1.0.0", tgz(t, entry{name: "/etc/evil", body: "x"}), "")
	addRaw("link", "1.0.0", tgz(t, entry{name: "link/Chart.yaml", body: "apiVersion: v2\nname: link\nversion: 1.0.0\n"}, entry{name: "link/templates/x.yaml", link: "/etc/passwd"}), "")
	good := tgz(t, entry{name: "tampered/Chart.yaml", body: "apiVersion: v2\nname: tampered\nversion: 1.0.0\n"})
	addRaw("tampered", "1.0.0", good, strings.Repeat("ab", 32))

	wrongPass := strings.Replace(srv.Secret("charts"), password, "wrong-password-123", 1)
	allowAll := srv.Secret("charts") + "---\n" + other.Secret("other") + "---\n" + hostile.Secret("hostile")

	slow := helmrepotest.New(t, "", "", ingress("1.0.0"))
	slow.Handler = func(w http.ResponseWriter, r *http.Request) bool {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
		return true
	}
	redirect := helmrepotest.New(t, "", "")
	redirect.Handler = func(w http.ResponseWriter, r *http.Request) bool {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
		return true
	}
	big := helmrepotest.New(t, "", "", ingress("1.0.0"), ingress("1.0.1"))

	for _, tc := range []struct {
		name, secrets, repoURL, chart, revision string
		opts                                    chartfetch.Options
		sentinel                                error
		want                                    []string
	}{
		{name: "version not found", secrets: allowAll, repoURL: srv.URL, chart: "ingress-nginx", revision: "4.10.1",
			sentinel: chartfetch.ErrNotFound, want: []string{"version 4.10.1 not found", "nearest available versions: 1.9.3, 2.0.0, 4.10.0, 4.10.2, 4.11.0"}},
		{name: "constraint not satisfied", secrets: allowAll, repoURL: srv.URL, chart: "ingress-nginx", revision: "~3.1",
			sentinel: chartfetch.ErrNotFound, want: []string{`no version matching "~3.1"`, "nearest available versions: 1.2.0, 1.9.3, 2.0.0, 4.10.0, 4.10.2, 4.11.0"}},
		{name: "chart not found", secrets: allowAll, repoURL: srv.URL, chart: "nginx", revision: "1.0.0",
			sentinel: chartfetch.ErrNotFound, want: []string{`chart "nginx" not found`, "similar charts: ingress-nginx"}},
		{name: "wrong credentials", secrets: wrongPass, repoURL: srv.URL, chart: "ingress-nginx", revision: "4.11.0",
			want: []string{"401 Unauthorized", "check the credentials"}},
		{name: "not allowed", secrets: other.Secret("other"), repoURL: srv.URL, chart: "ingress-nginx", revision: "4.11.0",
			sentinel: chartfetch.ErrNotAllowed, want: []string{"not rendered: repository " + srv.URL + " is not in the allowed repositories"}},
		{name: "credentials in the repoURL are not printed", secrets: allowAll, repoURL: strings.Replace(srv.URL, "http://", "http://fleet:"+password+"@", 1), chart: "ingress-nginx", revision: "4.11.0",
			// Refused, not looked up: a repoURL carries no credentials (issue 38).
			sentinel: chartfetch.ErrRefused, want: []string{"not rendered: repository " + srv.URL + ": refused: user information in a repoURL"}},
		{name: "chart name is a path", secrets: allowAll, repoURL: srv.URL, chart: "..", revision: "1.0.0",
			sentinel: chartfetch.ErrNotFound, want: []string{`chart ".."`, "not a chart name"}},
		{name: "oversized index", secrets: big.Secret("big"), repoURL: big.URL, chart: "ingress-nginx", revision: "1.0.0",
			opts: chartfetch.Options{MaxIndexBytes: 200}, sentinel: chartfetch.ErrRefused, want: []string{"index.yaml from " + big.URL, "over the cap of 200"}},
		{name: "oversized archive", secrets: big.Secret("big"), repoURL: big.URL, chart: "ingress-nginx", revision: "1.0.0",
			opts: chartfetch.Options{MaxArchiveBytes: 100}, sentinel: chartfetch.ErrRefused, want: []string{"chart ingress-nginx 1.0.0", "over the cap of 100"}},
		{name: "dot-dot entry", secrets: allowAll, repoURL: hostile.URL, chart: "dotdot", revision: "1.0.0",
			sentinel: chartfetch.ErrRefused, want: []string{"hostile-archive", "climbs out"}},
		{name: "absolute entry", secrets: allowAll, repoURL: hostile.URL, chart: "abs", revision: "1.0.0",
			sentinel: chartfetch.ErrRefused, want: []string{"hostile-archive", "absolute"}},
		{name: "symlink entry", secrets: allowAll, repoURL: hostile.URL, chart: "link", revision: "1.0.0",
			sentinel: chartfetch.ErrRefused, want: []string{"hostile-archive", "is a link"}},
		{name: "digest mismatch", secrets: allowAll, repoURL: hostile.URL, chart: "tampered", revision: "1.0.0",
			sentinel: chartfetch.ErrRefused, want: []string{"digest-mismatch"}},
		{name: "slow server", secrets: slow.Secret("slow"), repoURL: slow.URL, chart: "ingress-nginx", revision: "~1.0",
			opts: chartfetch.Options{Timeout: 300 * time.Millisecond}, sentinel: context.DeadlineExceeded, want: []string{"timeout", "no answer within 300ms"}},
		{name: "redirect to another host", secrets: redirect.Secret("redirect"), repoURL: redirect.URL, chart: "ingress-nginx", revision: "~1.0",
			sentinel: chartfetch.ErrRefused, want: []string{"redirected to another host"}},
		{name: "not a chart repository", secrets: "apiVersion: v1\nkind: Secret\nmetadata:\n  labels:\n    argocd.argoproj.io/secret-type: repository\nstringData:\n  url: ssh://git.example.com/charts\n",
			repoURL: "ssh://git.example.com/charts", chart: "x", revision: "1.0.0", sentinel: chartfetch.ErrUnsupported, want: []string{"not a Helm chart repository (http, https) or an OCI registry"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fetcher(t, tc.secrets, tc.opts)
			_, err := f.Chart(ctx, tc.repoURL, tc.chart, tc.revision)
			if err == nil {
				t.Fatal("fetched")
			}
			msg := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
			if tc.sentinel != nil && !errors.Is(err, tc.sentinel) {
				t.Errorf("error %q is not %v", msg, tc.sentinel)
			}
			if strings.Contains(msg, password) || strings.Contains(msg, "wrong-password-123") || strings.Contains(msg, "fleet:") {
				t.Errorf("error leaks a credential: %q", msg)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error spans lines: %q", msg)
			}
		})
	}
}

func TestArchiveForDependencies(t *testing.T) {
	srv := repoServer(t)
	f := fetcher(t, srv.Secret("charts"), chartfetch.Options{})
	ctx := context.Background()
	for _, repository := range []string{srv.URL, srv.URL + "/", "@charts", "alias:charts"} {
		data, v, err := f.Archive(ctx, repository, "ingress-nginx", "^4.10.0")
		if err != nil {
			t.Fatalf("%s: %v", repository, err)
		}
		if v != "4.11.0" || len(data) == 0 {
			t.Fatalf("%s: version %s, %d bytes", repository, v, len(data))
		}
	}
	if srv.Archives() != 1 {
		t.Errorf("archive downloaded %d times, want once", srv.Archives())
	}
	if _, _, err := f.Archive(ctx, "@nope", "ingress-nginx", "^4"); !errors.Is(err, chartfetch.ErrNotAllowed) {
		t.Errorf("unknown alias: %v", err)
	}
}

func TestCacheSizeBound(t *testing.T) {
	srv := repoServer(t)
	cache := t.TempDir()
	f := fetcher(t, srv.Secret("charts"), chartfetch.Options{CacheDir: cache, MaxCacheBytes: 1})
	ctx := context.Background()
	if _, err := f.Chart(ctx, srv.URL, "ingress-nginx", "4.10.0"); err != nil {
		t.Fatal(err)
	}
	// Age the first entry past the in-use grace period.
	old := time.Now().Add(-time.Hour)
	ents, _ := os.ReadDir(filepath.Join(cache, "charts"))
	for _, e := range ents {
		_ = os.Chtimes(filepath.Join(cache, "charts", e.Name()), old, old)
	}
	if _, err := f.Chart(ctx, srv.URL, "ingress-nginx", "4.11.0"); err != nil {
		t.Fatal(err)
	}
	ents, _ = os.ReadDir(filepath.Join(cache, "charts"))
	for _, e := range ents {
		if strings.Contains(e.Name(), "4.10.0") {
			t.Errorf("%s kept over the size bound", e.Name())
		}
	}
}

type entry struct{ name, body, link string }

func tgz(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		hd := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: tar.TypeReg}
		if e.link != "" {
			hd = &tar.Header{Name: e.name, Mode: 0o777, Typeflag: tar.TypeSymlink, Linkname: e.link}
		}
		if err := tw.WriteHeader(hd); err != nil {
			t.Fatal(err)
		}
		if e.link == "" {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
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

func TestConcurrentFetchesDownloadOnce(t *testing.T) {
	srv := repoServer(t)
	f := fetcher(t, srv.Secret("charts"), chartfetch.Options{})
	errs := make(chan error, 16)
	for i := 0; i < 16; i++ {
		rev := "4.11.0"
		if i%2 == 1 {
			rev = "~4.11"
		}
		go func() {
			_, err := f.Chart(context.Background(), srv.URL, "ingress-nginx", rev)
			errs <- err
		}()
	}
	for i := 0; i < 16; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if srv.Count("/index.yaml") != 1 || srv.Archives() != 1 {
		t.Errorf("16 concurrent fetches made %d index and %d archive requests, want 1 and 1", srv.Count("/index.yaml"), srv.Archives())
	}
}

func TestIndexFailureSharedWithinAPreview(t *testing.T) {
	srv := helmrepotest.New(t, "", "", ingress("1.0.0"))
	srv.Handler = func(w http.ResponseWriter, r *http.Request) bool {
		http.Error(w, "maintenance", http.StatusServiceUnavailable)
		return true
	}
	f := fetcher(t, srv.Secret("charts"), chartfetch.Options{})
	for i := 0; i < 3; i++ {
		if _, err := f.Chart(context.Background(), srv.URL, "ingress-nginx", "1.0.0"); err == nil || !strings.Contains(err.Error(), "503 Service Unavailable") {
			t.Fatalf("error %v", err)
		}
	}
	if n := srv.Count("/index.yaml"); n != 1 {
		t.Errorf("index.yaml asked %d times by three apps of one preview, want once", n)
	}
}
