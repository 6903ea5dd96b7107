// Package chartserver serves the example fleet's vendor charts for the demo and the tests, without network: the
// charts (directories of chart sources, examples/vendor-charts/<name>/<version>) are packaged with Helm's
// chartutil, served as a Helm chart repository (index.yaml from Helm's repo.IndexDirectory) and pushed with Helm's
// registry client into an in-process CNCF distribution registry (ocitest). Both listen on 127.0.0.1 over TLS, and
// are reached under the example's fixed host names (HelmHost, RegistryHost, which never resolve: .example is
// reserved) through a CONNECT proxy on 127.0.0.1: a client given the proxy (HTTPS_PROXY for the fleetwave CLI,
// Transport.Proxy in tests) reaches them as the example's Applications name them. Repositories writes the Argo CD
// repository Secrets that allow them.
package chartserver

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"

	"github.com/fleetwave/fleetwave/internal/edge/chartfetch"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch/ocitest"
	"github.com/fleetwave/fleetwave/internal/edge/repocreds"
)

// The example's host names.
const (
	HelmHost     = "charts.fleet.example"
	RegistryHost = "registry.fleet.example"
	// RegistryPassword is the demo registry's password: fake, and checked absent from every output.
	RegistryUser     = "fleet-demo"
	RegistryPassword = "demo-registry-password-not-a-secret"
)

// Server is the running chart repository, registry and proxy.
type Server struct {
	// ProxyURL is the CONNECT proxy's URL (http://127.0.0.1:port).
	ProxyURL string
	// Charts lists the served charts as name@version.
	Charts []string
	// HelmURL and RegistryAddr are the chart repository's and the registry's own addresses (https://127.0.0.1:port,
	// 127.0.0.1:port), for a client that does not take the proxy (Argo CD's repo-server in the end-to-end test).
	HelmURL, RegistryAddr string

	helm     *httptest.Server
	registry *ocitest.Registry
	proxy    *httptest.Server
	dir      string

	mu    sync.Mutex
	count map[string]int
}

// Start packages every chart under chartsDir (<name>/<version>/Chart.yaml) and serves them.
func Start(chartsDir string) (*Server, error) {
	dir, err := os.MkdirTemp("", "fleetwave-charts-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, count: map[string]int{}}
	ok := false
	defer func() {
		if !ok {
			s.Close()
		}
	}()
	repoDir := filepath.Join(dir, "repo")
	if err := os.MkdirAll(repoDir, 0o755); err != nil {
		return nil, err
	}
	charts, err := filepath.Glob(filepath.Join(chartsDir, "*", "*", "Chart.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(charts)
	if len(charts) == 0 {
		return nil, fmt.Errorf("no charts under %s (<name>/<version>/Chart.yaml)", chartsDir)
	}
	s.registry, err = ocitest.Start(RegistryUser, RegistryPassword, false)
	if err != nil {
		return nil, err
	}
	for _, c := range charts {
		ch, err := loader.LoadDir(filepath.Dir(c))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Dir(c), err)
		}
		file, err := chartutil.Save(ch, repoDir)
		if err != nil {
			return nil, err
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		if _, err := s.registry.PushChart(data, "charts"); err != nil {
			return nil, err
		}
		s.Charts = append(s.Charts, ch.Name()+"@"+ch.Metadata.Version)
	}
	idx, err := repo.IndexDirectory(repoDir, "")
	if err != nil {
		return nil, err
	}
	idx.SortEntries()
	// A fixed generation time: the index is the same bytes on every run.
	idx.Generated = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, vs := range idx.Entries {
		for _, v := range vs {
			v.Created = idx.Generated
		}
	}
	if err := idx.WriteFile(filepath.Join(repoDir, "index.yaml"), 0o644); err != nil {
		return nil, err
	}
	s.helm = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := filepath.Base(r.URL.Path)
		if strings.HasPrefix(name, ".") || strings.ContainsAny(name, `/\`) {
			http.NotFound(w, r)
			return
		}
		s.counted("helm " + name)
		http.ServeFile(w, r, filepath.Join(repoDir, name))
	}))
	s.proxy = httptest.NewServer(http.HandlerFunc(s.connect))
	s.ProxyURL = s.proxy.URL
	s.HelmURL, s.RegistryAddr = s.helm.URL, s.registry.Host
	ok = true
	return s, nil
}

func (s *Server) counted(what string) {
	s.mu.Lock()
	s.count[what]++
	s.mu.Unlock()
}

// Downloads returns how many chart archives and registry blobs were served.
func (s *Server) Downloads() int {
	s.mu.Lock()
	n := 0
	for k, c := range s.count {
		if strings.HasSuffix(k, ".tgz") {
			n += c
		}
	}
	s.mu.Unlock()
	return n + s.registry.Count("blob")
}

// connect tunnels CONNECT requests for the example's hosts to the local servers and refuses anything else.
func (s *Server) connect(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "this proxy only tunnels to "+HelmHost+" and "+RegistryHost, http.StatusForbidden)
		return
	}
	var target string
	switch r.Host {
	case HelmHost + ":443":
		target = s.helm.Listener.Addr().String()
	case RegistryHost + ":443":
		target = s.registry.Listener.Addr().String()
	default:
		http.Error(w, "this proxy only tunnels to "+HelmHost+" and "+RegistryHost, http.StatusForbidden)
		return
	}
	up, err := net.Dial("tcp", target)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "no hijacking", http.StatusInternalServerError)
		return
	}
	down, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if _, err := down.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		up.Close()
		down.Close()
		return
	}
	if n := buf.Reader.Buffered(); n > 0 {
		b, _ := buf.Reader.Peek(n)
		_, _ = up.Write(b)
	}
	go func() {
		_, _ = io.Copy(up, down)
		up.Close()
	}()
	_, _ = io.Copy(down, up)
	down.Close()
}

// Transport returns a transport that reaches the example's hosts through the proxy (for tests; the CLI takes
// HTTPS_PROXY).
func (s *Server) Transport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	u, _ := url.Parse(s.ProxyURL)
	tr.Proxy = http.ProxyURL(u)
	return tr
}

// Fetcher returns a chart fetcher that reaches the server through its proxy with the repositories file it writes,
// as the bot does with FLEETWAVE_REPOSITORIES_FILE and HTTPS_PROXY; cacheDir "" takes chartfetch's default.
func (s *Server) Fetcher(cacheDir string) (*chartfetch.Fetcher, error) {
	set, err := repocreds.Parse("repositories.yaml", []byte(s.Repositories()))
	if err != nil {
		return nil, err
	}
	return chartfetch.New(chartfetch.Options{Repos: set, CacheDir: cacheDir, Transport: s.Transport()})
}

// Repositories returns the Argo CD repository Secrets allowing the chart repository and the registry: both
// `insecure` (their certificates are self-signed, for 127.0.0.1), the registry with its credentials.
func (s *Server) Repositories() string {
	return fmt.Sprintf(`# The demo's chart repositories (written by hack/chartserve): Argo CD declarative repository Secrets.
apiVersion: v1
kind: Secret
metadata:
  name: fleet-charts
  namespace: argocd
  labels:
    argocd.argoproj.io/secret-type: repository
stringData:
  type: helm
  name: fleet-charts
  url: https://%s
  insecure: "true"
---
apiVersion: v1
kind: Secret
metadata:
  name: fleet-registry
  namespace: argocd
  labels:
    argocd.argoproj.io/secret-type: repository
stringData:
  type: helm
  name: fleet-registry
  url: %s/charts
  enableOCI: "true"
  insecure: "true"
  username: %s
  password: %s
`, HelmHost, RegistryHost, RegistryUser, RegistryPassword)
}

// Close stops everything.
func (s *Server) Close() {
	if s.proxy != nil {
		s.proxy.Close()
	}
	if s.helm != nil {
		s.helm.Close()
	}
	if s.registry != nil {
		s.registry.Close()
	}
	_ = os.RemoveAll(s.dir)
}
