// Package gitfetchtest serves git repositories over HTTPS for tests: Debian's (or any) `git http-backend` behind
// net/http/cgi in the test process, on loopback, with HTTP basic auth and a count of the requests it served.
// It is imported by tests only.
package gitfetchtest

import (
	"crypto/subtle"
	"encoding/pem"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server serves the repositories under Root at URL + "/<name>".
type Server struct {
	URL    string // https://127.0.0.1:port
	Root   string // GIT_PROJECT_ROOT: the repositories' parent directory
	CAFile string // the server's certificate, PEM, for gitfetch.Options.CAFile

	mu       sync.Mutex
	requests []string // "METHOD path?query" of every request, authorised or not
	delay    time.Duration
}

// Start serves root's repositories; a non-empty user requires that user and password (401 otherwise).
func Start(tb testing.TB, root, user, password string) *Server {
	tb.Helper()
	exe, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		tb.Fatalf("git --exec-path: %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(exe)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		tb.Fatalf("git http-backend: %v", err)
	}
	s := &Server{Root: root}
	h := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + root}}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.Method+" "+r.URL.RequestURI())
		delay := s.delay
		s.mu.Unlock()
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		if user != "" {
			u, p, ok := r.BasicAuth()
			if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(user)) != 1 || subtle.ConstantTimeCompare([]byte(p), []byte(password)) != 1 {
				w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
	tb.Cleanup(srv.Close)
	s.URL = srv.URL
	s.CAFile = filepath.Join(tb.TempDir(), "ca.pem")
	if err := os.WriteFile(s.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		tb.Fatal(err)
	}
	return s
}

// Requests returns the requests served so far.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

// SetDelay makes every later request wait d before it is answered (a slow server).
func (s *Server) SetDelay(d time.Duration) {
	s.mu.Lock()
	s.delay = d
	s.mu.Unlock()
}
