package chartfetch_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"helm.sh/helm/v3/pkg/repo"

	"github.com/fleetwave/fleetwave/internal/edge/chartfetch"
)

// otherHost is a listener on another loopback address (127.0.0.12) that serves the files of dir and records
// every Authorization header it is sent: none may reach it (issue 38 items 4 and 7).
type otherHost struct {
	URL  string
	mu   sync.Mutex
	auth []string
	hits int
}

func listenOtherHost(t *testing.T, dir string) *otherHost {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.12:0")
	if err != nil {
		t.Skipf("no second loopback address (127.0.0.12) to listen on: %v", err)
	}
	h := &otherHost{URL: "http://" + ln.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.hits++
		if a := r.Header.Get("Authorization"); a != "" {
			h.auth = append(h.auth, a)
		}
		h.mu.Unlock()
		http.ServeFile(w, r, filepath.Join(dir, filepath.Base(r.URL.Path)))
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return h
}

func (h *otherHost) authorizations() ([]string, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.auth...), h.hits
}

// Item 4: a repo-creds template for http://127.0.0.1 covers neither a look-alike host nor a URL hiding another
// host behind "@": the pull request's URL gets no credential and is not allowed.
func TestTemplateCredentialsNeverGoToALookAlikeHost(t *testing.T) {
	srv := repoServer(t)
	evil := listenOtherHost(t, srv.Dir)
	template := `apiVersion: v1
kind: Secret
metadata:
  name: loopback-creds
  labels: {argocd.argoproj.io/secret-type: repo-creds}
stringData: {url: "http://127.0.0.1", type: helm, username: fleet, password: ` + password + `}
`
	f := fetcher(t, template, chartfetch.Options{})
	port := evil.URL[strings.LastIndex(evil.URL, ":"):]
	for _, u := range []string{
		evil.URL,                               // http://127.0.0.12:port: a string prefix of the template
		"http://127.0.0.1@127.0.0.12" + port,   // the template's host as user information
		"http://127.0.0.1:x@127.0.0.12" + port, // and as user:password
	} {
		_, err := f.Chart(context.Background(), u, "ingress-nginx", "4.11.0")
		if err == nil {
			t.Errorf("%s: fetched with the template of http://127.0.0.1", u)
		} else if strings.Contains(err.Error(), password) || strings.Contains(err.Error(), "127.0.0.1:x") {
			t.Errorf("%s: the error shows a credential: %v", u, err)
		}
	}
	if auth, hits := evil.authorizations(); len(auth) > 0 || hits > 0 {
		t.Fatalf("the look-alike host got %d requests, Authorization %q", hits, auth)
	}
	// User information in a repoURL is refused in words, not only "not allowed".
	_, err := f.Chart(context.Background(), "http://127.0.0.1@127.0.0.12"+port, "ingress-nginx", "4.11.0")
	if !errors.Is(err, chartfetch.ErrRefused) || !strings.Contains(err.Error(), "user information") {
		t.Errorf("userinfo: %v", err)
	}
}

// Item 7: an allowed repository's index.yaml that places the archive on another host gets the archive fetched
// without the repository's credentials, unless its Secret opts in with passCredentials: "true" (helm's
// --pass-credentials).
func TestArchiveOnAnotherHostGetsNoCredentials(t *testing.T) {
	for _, pass := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "passCredentials"}[pass], func(t *testing.T) {
			srv := repoServer(t)
			evil := listenOtherHost(t, srv.Dir)
			idx, err := repo.LoadIndexFile(filepath.Join(srv.Dir, "index.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			for _, cv := range idx.Entries["ingress-nginx"] {
				cv.URLs = []string{evil.URL + "/" + filepath.Base(cv.URLs[0])}
			}
			if err := idx.WriteFile(filepath.Join(srv.Dir, "index.yaml"), 0o644); err != nil {
				t.Fatal(err)
			}
			secret := srv.Secret("charts")
			if pass {
				secret += "  passCredentials: \"true\"\n"
			}
			f := fetcher(t, secret, chartfetch.Options{})
			ch, err := f.Chart(context.Background(), srv.URL, "ingress-nginx", "4.11.0")
			if err != nil {
				t.Fatal(err)
			}
			if ch.Version != "4.11.0" {
				t.Fatalf("version %s", ch.Version)
			}
			auth, hits := evil.authorizations()
			if hits != 1 {
				t.Fatalf("the archive host got %d requests, want 1", hits)
			}
			if !pass && len(auth) > 0 {
				t.Fatalf("the archive's host got the repository's credentials: Authorization %q", auth)
			}
			if pass && len(auth) != 1 {
				t.Fatalf("passCredentials: the archive's host got Authorization %q, want the repository's", auth)
			}
		})
	}
}
