// Package helmrepotest serves a real Helm chart repository on loopback for tests: charts are packaged by helm's
// own chartutil.Save and indexed by its repo.IndexDirectory (digests included), and files are served with
// http.ServeFile (Last-Modified, If-Modified-Since) behind HTTP basic auth. It counts the requests of each path,
// so tests can prove what was downloaded.
package helmrepotest

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"
)

// Chart describes a chart to package.
type Chart struct {
	Name, Version string
	// Templates maps a file name under templates/ to its content.
	Templates map[string]string
	// Values is values.yaml.
	Values string
	// Dependencies are Chart.yaml dependencies (not vendored).
	Dependencies []*chart.Dependency
}

// Server is a chart repository.
type Server struct {
	*httptest.Server
	Dir                string
	Username, Password string
	// CAFile is the server's certificate, PEM, when it serves HTTPS (NewTLS).
	CAFile string
	// Handler, when set, answers a request instead of the repository when it returns true.
	Handler func(w http.ResponseWriter, r *http.Request) bool

	mu     sync.Mutex
	counts map[string]int
}

// New starts a repository over plain HTTP with the given basic-auth credentials (none when username is "")
// holding charts.
func New(t testing.TB, username, password string, charts ...Chart) *Server {
	t.Helper()
	return start(t, false, username, password, nil, charts)
}

// NewTLS is New over HTTPS, with httptest's certificate (Client and CAFile trust it; a repository Secret with
// insecure: true skips its verification, as Argo CD does).
func NewTLS(t testing.TB, username, password string, charts ...Chart) *Server {
	t.Helper()
	return start(t, true, username, password, nil, charts)
}

// NewTLSClientAuth is NewTLS without basic auth that requires a client certificate signed by clientCAs (a
// repository Secret's tlsClientCertData and tlsClientCertKey).
func NewTLSClientAuth(t testing.TB, clientCAs *x509.CertPool, charts ...Chart) *Server {
	t.Helper()
	return start(t, true, "", "", clientCAs, charts)
}

func start(t testing.TB, useTLS bool, username, password string, clientCAs *x509.CertPool, charts []Chart) *Server {
	t.Helper()
	s := &Server{Dir: t.TempDir(), Username: username, Password: password, counts: map[string]int{}}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	if clientCAs != nil {
		s.Server.TLS = &tls.Config{ClientCAs: clientCAs, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
	}
	if useTLS {
		s.Server.StartTLS()
		s.CAFile = filepath.Join(t.TempDir(), "ca.pem")
		if err := os.WriteFile(s.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Server.Certificate().Raw}), 0o644); err != nil {
			t.Fatal(err)
		}
	} else {
		s.Server.Start()
	}
	t.Cleanup(s.Close)
	s.Add(t, charts...)
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.counts[r.URL.Path]++
	h := s.Handler
	s.mu.Unlock()
	if s.Username != "" {
		u, p, ok := r.BasicAuth()
		if !ok || u != s.Username || p != s.Password {
			w.Header().Set("WWW-Authenticate", `Basic realm="charts"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
	}
	if h != nil && h(w, r) {
		return
	}
	name := path.Base(r.URL.Path)
	if name == "/" || name == "." || strings.HasPrefix(name, ".") {
		http.NotFound(w, r)
		return
	}
	http.ServeFile(w, r, filepath.Join(s.Dir, name))
}

// Add packages charts into the repository and rewrites its index.yaml (URLs relative to the repository).
func (s *Server) Add(t testing.TB, charts ...Chart) {
	t.Helper()
	for _, c := range charts {
		Package(t, c, s.Dir)
	}
	s.Reindex(t)
}

// Package packages c with helm's chartutil.Save into dir and returns the archive's path.
func Package(t testing.TB, c Chart, dir string) string {
	t.Helper()
	ch := &chart.Chart{Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: c.Name, Version: c.Version, Dependencies: c.Dependencies}}
	names := make([]string, 0, len(c.Templates))
	for n := range c.Templates {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		ch.Templates = append(ch.Templates, &chart.File{Name: "templates/" + n, Data: []byte(c.Templates[n])})
	}
	if c.Values != "" {
		ch.Raw = append(ch.Raw, &chart.File{Name: "values.yaml", Data: []byte(c.Values)})
		vals, err := chartutil.ReadValues([]byte(c.Values))
		if err != nil {
			t.Fatal(err)
		}
		ch.Values = vals
	}
	file, err := chartutil.Save(ch, dir)
	if err != nil {
		t.Fatal(err)
	}
	return file
}

// Reindex rewrites index.yaml from the archives in the repository (repo.IndexDirectory).
func (s *Server) Reindex(t testing.TB) {
	t.Helper()
	idx, err := repo.IndexDirectory(s.Dir, "")
	if err != nil {
		t.Fatal(err)
	}
	idx.SortEntries()
	if err := idx.WriteFile(filepath.Join(s.Dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// WriteFile puts a file into the repository as is (a hostile archive, a broken index).
func (s *Server) WriteFile(t testing.TB, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(s.Dir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Count returns the number of requests for a path ("/index.yaml", "/demo-1.0.0.tgz").
func (s *Server) Count(p string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[p]
}

// Archives returns the number of requests for chart archives.
func (s *Server) Archives() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for p, c := range s.counts {
		if strings.HasSuffix(p, ".tgz") {
			n += c
		}
	}
	return n
}

// Secret returns an Argo CD repository Secret allowing the server, with its credentials, as YAML.
func (s *Server) Secret(name string) string {
	return "apiVersion: v1\nkind: Secret\nmetadata:\n  name: " + name + "\n  namespace: argocd\n  labels:\n    argocd.argoproj.io/secret-type: repository\n" +
		"stringData:\n  type: helm\n  name: " + name + "\n  url: " + s.URL + "\n  username: " + s.Username + "\n  password: " + s.Password + "\n"
}
