package instances

import (
	"context"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
)

const appJSON = `{"metadata":{"name":"web","namespace":"argocd"},"spec":{"project":"default"}}`

// authServer is a loopback Argo CD answering every request with one Application, recording the bearer tokens.
type authServer struct {
	mu    sync.Mutex
	auths []string
}

func (a *authServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.auths = append(a.auths, r.Header.Get("Authorization"))
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(appJSON))
}

func (a *authServer) seen() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.auths...)
}

// TestTokenFileRotates: a token read from a file follows the file: rewritten in place or replaced by a rename
// (Kubernetes' projected volumes), the next request carries the new token; gone, the request fails with one line
// naming the file and not the old token, and nothing is sent.
func TestTokenFileRotates(t *testing.T) {
	as := &authServer{}
	srv := httptest.NewServer(as)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	tokFile := writeFile(t, dir, "token", "old-token-one\n")
	data := "instances:\n  - name: eu\n    url: " + srv.URL + "\n    token: {file: " + tokFile + "}\n    owns: [{paths: ['**']}]\n"
	s, err := Parse("instances.yaml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	clients, err := s.Clients(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := clients["eu"]
	ctx := context.Background()
	get := func() error { _, err := c.GetApplication(ctx, "web", ""); return err }

	if err := get(); err != nil {
		t.Fatal(err)
	}
	// In place, another length.
	if err := os.WriteFile(tokFile, []byte("rotated-token-two\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := get(); err != nil {
		t.Fatal(err)
	}
	// Renamed over it, the same length and modification time: a new file all the same.
	fi, _ := os.Stat(tokFile)
	next := writeFile(t, dir, "token.new", "rotated-token-333\n")
	if err := os.Chtimes(next, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, tokFile); err != nil {
		t.Fatal(err)
	}
	if err := get(); err != nil {
		t.Fatal(err)
	}
	if err := get(); err != nil { // unchanged: the cached token
		t.Fatal(err)
	}
	want := []string{"Bearer old-token-one", "Bearer rotated-token-two", "Bearer rotated-token-333", "Bearer rotated-token-333"}
	if got := as.seen(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("tokens sent %q, want %q", got, want)
	}

	if err := os.Remove(tokFile); err != nil {
		t.Fatal(err)
	}
	err = get()
	if err == nil {
		t.Fatal("a request with the token file gone succeeded")
	}
	if msg := err.Error(); strings.Contains(msg, "rotated-token") || strings.Contains(msg, "\n") ||
		!strings.HasSuffix(msg, ": argo cd token: token file "+tokFile+": no such file or directory") {
		t.Errorf("error %q: want one line naming the file, without the token", msg)
	}
	if n := len(as.seen()); n != 4 {
		t.Errorf("%d requests, want 4: nothing sent without a token", n)
	}
}

// TestClients: one client per instance, each with its own URL, TLS options and token; wrap is told the instance.
func TestClients(t *testing.T) {
	euSrv := quietTLSServer(t, &authServer{})
	usAuth := &authServer{}
	usSrv := quietTLSServer(t, usAuth)
	dir := t.TempDir()
	ca := writeFile(t, dir, "ca.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: euSrv.Certificate().Raw})))
	data := `instances:
  - name: eu
    url: ` + euSrv.URL + `
    token: {env: EU_TOKEN}
    tls: {caFile: ` + ca + `}
    owns: [{paths: ["clusters/eu/**"]}]
  - name: us
    url: ` + usSrv.URL + `
    token: {env: US_TOKEN}
    tls: {insecure: true}
    owns: [{paths: ["clusters/us/**"]}]
  - name: ap
    url: ` + usSrv.URL + `
    token: {env: US_TOKEN}
    owns: [{paths: ["clusters/ap/**"]}]
`
	s, err := ParseWith("instances.yaml", []byte(data), Options{Getenv: getenv("EU_TOKEN", "eu-tok", "US_TOKEN", "us-tok")})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	wrapped := map[string]int{}
	clients, err := s.Clients(func(instance string, rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			wrapped[instance]++
			mu.Unlock()
			return rt.RoundTrip(r)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(clients) != 3 {
		t.Fatalf("%d clients", len(clients))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := clients["eu"].GetApplication(ctx, "web", ""); err != nil {
		t.Errorf("eu (its CA file trusted): %v", err)
	}
	if _, err := clients["us"].GetApplication(ctx, "web", ""); err != nil {
		t.Errorf("us (TLS not verified): %v", err)
	}
	if got := usAuth.seen(); len(got) != 1 || got[0] != "Bearer us-tok" {
		t.Errorf("us saw %q", got)
	}
	// ap's certificate is not trusted: neither its CA nor insecure (one attempt: a TLS error is retried).
	ap, _ := s.Get("ap")
	o := ap.Options(nil)
	o.MaxRetries = -1
	apClient, err := argocd.New(o)
	if err != nil {
		t.Fatal(err)
	}
	_, err = apClient.GetApplication(ctx, "web", "")
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("ap (untrusted certificate): %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(wrapped) != 2 || wrapped["eu"] != 1 || wrapped["us"] != 1 {
		t.Errorf("wrap saw %v", wrapped)
	}
}

// quietTLSServer is httptest.NewTLSServer without the log lines of refused handshakes.
func quietTLSServer(t *testing.T, h http.Handler) *httptest.Server {
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestClientsError(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	s := Single("https://argocd.example.com", "", false, ca)
	if _, err := s.Clients(nil); err == nil || !strings.Contains(err.Error(), "reading CA file") {
		t.Errorf("Clients with a missing CA file: %v", err)
	}
}
