package gitcache_test

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"io/fs"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/fleetwave/fleetwave/internal/edge/gitcache"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

// origin builds a repository like a GitHub one: main with one commit, a pull request head under
// refs/pull/1/head only (as for a fork), and a commit reachable from no ref at all.
func origin(t *testing.T) (dir, base, head, dangling string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "origin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, dir, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("a: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "base")
	base = gittest.Run(t, dir, "rev-parse", "HEAD")
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("a: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, dir, "commit", "-q", "-am", "head")
	head = gittest.Run(t, dir, "rev-parse", "HEAD")
	gittest.Run(t, dir, "update-ref", "refs/pull/1/head", head)
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("a: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, dir, "commit", "-q", "-am", "dangling")
	dangling = gittest.Run(t, dir, "rev-parse", "HEAD")
	gittest.Run(t, dir, "reset", "-q", "--hard", base)
	return dir, base, head, dangling
}

func TestFetchByRefThenFromCache(t *testing.T) {
	src, base, head, _ := origin(t)
	c, err := gitcache.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	refs, commits := []string{"refs/pull/1/head", "refs/heads/main"}, []string{base, head}
	dir, err := c.Fetch(ctx, 1, "file://"+src, refs, commits)
	if err != nil {
		t.Fatal(err)
	}
	if got := gittest.Run(t, dir, "rev-parse", "refs/fleetwave/pull/1/head"); got != head {
		t.Errorf("refs/fleetwave/pull/1/head = %s, want %s", got, head)
	}
	if got := gittest.Run(t, dir, "config", "core.hooksPath"); got != "/dev/null" {
		t.Errorf("core.hooksPath = %q", got)
	}
	data, err := c.ReadFile(ctx, dir, head, "a.yaml")
	if err != nil || string(data) != "a: 2\n" {
		t.Fatalf("ReadFile = %q, %v", data, err)
	}
	if _, err := c.ReadFile(ctx, dir, head, "nope.yaml"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a missing file: %v, want fs.ErrNotExist", err)
	}

	// Everything is present: no network (the origin is gone).
	if err := os.RemoveAll(src); err != nil {
		t.Fatal(err)
	}
	again, err := c.Fetch(ctx, 1, "file://"+src, refs, commits)
	if err != nil || again != dir {
		t.Fatalf("second fetch = %s, %v; want %s from the cache", again, err, dir)
	}
}

func TestFetchByCommitWhenNoRefHasIt(t *testing.T) {
	src, base, _, dangling := origin(t)
	gittest.Run(t, src, "config", "uploadpack.allowAnySHA1InWant", "true") // as GitHub serves any reachable commit
	c, err := gitcache.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir, err := c.Fetch(context.Background(), 1, "file://"+src, []string{"refs/heads/gone"}, []string{base, dangling})
	if err != nil {
		t.Fatal(err)
	}
	if got := gittest.Run(t, dir, "rev-parse", "refs/fleetwave/commits/"+dangling); got != dangling {
		t.Errorf("kept ref = %s", got)
	}
}

func TestFetchMissingCommitNamesIt(t *testing.T) {
	src, base, _, _ := origin(t)
	c, err := gitcache.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const absent = "0123456789abcdef0123456789abcdef01234567"
	_, err = c.Fetch(context.Background(), 1, "file://"+src, []string{"refs/heads/main"}, []string{base, absent})
	if err == nil || !strings.Contains(err.Error(), absent) || !errors.Is(err, gitcache.ErrCommitNotFound) {
		t.Fatalf("err = %v, want one naming %s and wrapping ErrCommitNotFound", err, absent)
	}
}

func TestFetchRefusesBadInput(t *testing.T) {
	c, err := gitcache.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sha := strings.Repeat("a", 40)
	for name, tc := range map[string]struct {
		url           string
		refs, commits []string
	}{
		"ssh":                 {"ssh://git@github.com/o/r.git", nil, []string{sha}},
		"plain http":          {"http://github.com/o/r.git", nil, []string{sha}},
		"credentials in URL":  {"https://x-access-token:tok@github.com/o/r.git", nil, []string{sha}},
		"short sha":           {"https://github.com/o/r.git", nil, []string{"abc123"}},
		"refspec as ref":      {"https://github.com/o/r.git", []string{"refs/heads/a:refs/heads/b"}, nil},
		"option as ref":       {"https://github.com/o/r.git", []string{"--upload-pack=x"}, nil},
		"not a URL":           {"github.com/o/r", nil, []string{sha}},
		"traversal in a ref":  {"https://github.com/o/r.git", []string{"refs/../x"}, nil},
		"newline in a ref":    {"https://github.com/o/r.git", []string{"refs/heads/a\nb"}, nil},
		"commit with newline": {"https://github.com/o/r.git", nil, []string{sha + "\n"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := c.Fetch(context.Background(), 1, tc.url, tc.refs, tc.commits)
			if err == nil {
				t.Fatal("accepted")
			}
			if strings.Contains(err.Error(), "tok@") {
				t.Errorf("error shows the credentials: %v", err)
			}
		})
	}
}

func TestConcurrentFetchesOfOneRepository(t *testing.T) {
	src, base, head, _ := origin(t)
	c, err := gitcache.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Fetch(context.Background(), 1, "file://"+src, []string{"refs/pull/1/head"}, []string{base, head})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestHTTPSFetchSendsTheTokenOnlyAsAHeader serves the origin with git's own smart-HTTP backend over TLS and
// checks that the installation token reaches it as basic auth and is written nowhere: not in the mirror's
// files (config, remote URL), not in an error.
func TestHTTPSFetchSendsTheTokenOnlyAsAHeader(t *testing.T) {
	src, base, head, _ := origin(t)
	parent := filepath.Dir(src)
	gittest.Run(t, src, "config", "http.receivepack", "false")
	backend, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	const token = "ghs_TESTTOKEN0123456789"
	var mu sync.Mutex
	var auths []string
	cgiHandler := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(backend)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + parent, "GIT_HTTP_EXPORT_ALL=1"},
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Header.Get("Authorization") != "Basic "+base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token)) {
			w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		cgiHandler.ServeHTTP(w, r)
	}))
	defer srv.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}

	cacheDir := t.TempDir()
	creds := func(_ context.Context, id int64) (string, string, error) {
		if id != 42 {
			t.Errorf("credentials asked for installation %d", id)
		}
		return "x-access-token", token, nil
	}
	c, err := gitcache.New(cacheDir, gitcache.WithCredentials(creds), gitcache.WithCAFile(caFile))
	if err != nil {
		t.Fatal(err)
	}
	cloneURL := srv.URL + "/origin"
	dir, err := c.Fetch(context.Background(), 42, cloneURL, []string{"refs/pull/1/head", "refs/heads/main"}, []string{base, head})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(auths) == 0 {
		t.Error("the server saw no request")
	}
	mu.Unlock()
	if got := gittest.Run(t, dir, "config", "remote.origin.url"); got != cloneURL {
		t.Errorf("remote.origin.url = %q, want %q", got, cloneURL)
	}
	b64 := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token))
	err = filepath.WalkDir(cacheDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(data), token) || strings.Contains(string(data), b64) {
			t.Errorf("%s holds the token", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// A wrong token fails with an error that does not show it.
	bad, err := gitcache.New(t.TempDir(), gitcache.WithCAFile(caFile), gitcache.WithCredentials(func(context.Context, int64) (string, string, error) {
		return "x-access-token", "ghs_WRONG", nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Fetch(context.Background(), 42, cloneURL, []string{"refs/heads/main"}, []string{base})
	if err == nil {
		t.Fatal("a wrong token fetched")
	}
	if strings.Contains(err.Error(), "ghs_WRONG") {
		t.Errorf("error shows the token: %v", err)
	}
}
