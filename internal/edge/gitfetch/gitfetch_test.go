package gitfetch_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/gitfetch"
	"github.com/fleetwave/fleetwave/internal/edge/gitfetch/gitfetchtest"
	"github.com/fleetwave/fleetwave/internal/edge/repocreds"
	"github.com/fleetwave/fleetwave/internal/edge/source"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

const (
	user     = "reader"
	password = "s3cret-GIT-pass-0123"
)

// upstream builds the "platform" repository: main with two commits, an annotated tag v1.0.0 and a branch release
// on the first, a lightweight tag v1.1.0 on the second.
func upstream(t *testing.T) (root, first, second string) {
	t.Helper()
	root = t.TempDir()
	dir := filepath.Join(root, "platform.git")
	work := filepath.Join(t.TempDir(), "work")
	if err := os.MkdirAll(filepath.Join(work, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, work, "init", "-q", "-b", "main")
	write := func(v string) {
		if err := os.WriteFile(filepath.Join(work, "app", "version.txt"), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("one\n")
	gittest.Run(t, work, "add", "-A")
	gittest.Run(t, work, "commit", "-q", "-m", "one")
	first = gittest.Run(t, work, "rev-parse", "HEAD")
	gittest.Run(t, work, "tag", "-a", "-m", "v1.0.0", "v1.0.0")
	gittest.Run(t, work, "tag", "svc/v1.5.0") // a tag of one component of the repository (tagPrefix "svc/")
	gittest.Run(t, work, "branch", "release")
	write("two\n")
	gittest.Run(t, work, "commit", "-q", "-am", "two")
	second = gittest.Run(t, work, "rev-parse", "HEAD")
	gittest.Run(t, work, "tag", "v1.1.0")
	gittest.Run(t, work, "tag", "svc/v1.6.0")
	gittest.Run(t, root, "clone", "-q", "--bare", work, dir)
	return root, first, second
}

func allowed(t *testing.T, url, pass string, extra string) *repocreds.Set {
	t.Helper()
	set, err := repocreds.Parse("repositories.yaml", []byte(fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: platform
  labels:
    argocd.argoproj.io/secret-type: repository
stringData:
  url: %s
  type: git
  username: %s
  password: %s
%s`, url, user, pass, extra)))
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func newFetcher(t *testing.T, srv *gitfetchtest.Server, set *repocreds.Set, opts gitfetch.Options) *gitfetch.Fetcher {
	t.Helper()
	opts.Repos, opts.CAFile = set, srv.CAFile
	if opts.CacheDir == "" {
		opts.CacheDir = t.TempDir()
	}
	f, err := gitfetch.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func read(t *testing.T, tree *gitfetch.Tree) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(tree.Dir, "app", "version.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestResolveAsArgoCD(t *testing.T) {
	root, first, second := upstream(t)
	srv := gitfetchtest.Start(t, root, user, password)
	url := srv.URL + "/platform.git"
	f := newFetcher(t, srv, allowed(t, url, password, ""), gitfetch.Options{})
	for _, tc := range []struct {
		revision, commit, content string
	}{
		{"", second, "two\n"},
		{"HEAD", second, "two\n"},
		{"main", second, "two\n"},
		{"refs/heads/main", second, "two\n"},
		{"release", first, "one\n"},
		{"v1.0.0", first, "one\n"},  // an annotated tag: its commit
		{"v1.1.0", second, "two\n"}, // a lightweight tag
		{"^1.0.0", second, "two\n"}, // a constraint: the highest matching tag
		{">=1.0.0 <1.1.0", first, "one\n"},
		{first, first, "one\n"},     // a commit id
		{first[:9], first, "one\n"}, // an abbreviated one
	} {
		t.Run(tc.revision, func(t *testing.T) {
			tree, err := f.Checkout(context.Background(), url, tc.revision, "")
			if err != nil {
				t.Fatal(err)
			}
			if tree.Commit != tc.commit {
				t.Errorf("commit %s, want %s", tree.Commit, tc.commit)
			}
			if got := read(t, tree); got != tc.content {
				t.Errorf("app/version.txt = %q, want %q", got, tc.content)
			}
		})
	}
}

// A source's tagPrefix (Argo CD 3.6) scopes a semver revision to the tags that carry it, compared without it; a
// revision that is no version or constraint is resolved as written (util/git/client.go lsRemote ignores
// MaxVersion's error).
func TestTagPrefixAsArgoCD(t *testing.T) {
	root, first, second := upstream(t)
	srv := gitfetchtest.Start(t, root, user, password)
	url := srv.URL + "/platform.git"
	f := newFetcher(t, srv, allowed(t, url, password, ""), gitfetch.Options{})
	for _, tc := range []struct {
		revision, prefix, commit string
	}{
		{"^1.5.0", "svc/", second},        // svc/v1.6.0
		{">=1.0.0 <1.6.0", "svc/", first}, // svc/v1.5.0, not v1.1.0: the other tags are not candidates
		{"v1.5.0", "svc/", first},         // an exact version: the prefixed tag
		{"main", "svc/", second},          // no constraint: the branch
		{">=1.0.0 <1.6.0", "", second},    // without the prefix: v1.1.0
	} {
		t.Run(tc.prefix+tc.revision, func(t *testing.T) {
			tree, err := f.Checkout(context.Background(), url, tc.revision, tc.prefix)
			if err != nil {
				t.Fatal(err)
			}
			if tree.Commit != tc.commit {
				t.Errorf("commit %s, want %s", tree.Commit, tc.commit)
			}
		})
	}
	_, err := f.Checkout(context.Background(), url, "^3.0.0", "svc/")
	if err == nil || !strings.Contains(err.Error(), `tagPrefix "svc/"`) {
		t.Errorf("no svc/ tag matches ^3.0.0: got %v, want an error naming the prefix", err)
	}
}

func TestSecondUseAsksNothing(t *testing.T) {
	root, first, _ := upstream(t)
	srv := gitfetchtest.Start(t, root, user, password)
	url := srv.URL + "/platform.git"
	cache := t.TempDir()
	f := newFetcher(t, srv, allowed(t, url, password, ""), gitfetch.Options{CacheDir: cache})
	ctx := context.Background()
	for _, rev := range []string{"v1.0.0", "main", first, first[:9]} {
		if _, err := f.Checkout(ctx, url, rev, ""); err != nil {
			t.Fatal(err)
		}
	}
	n := len(srv.Requests())
	if n == 0 {
		t.Fatal("the server saw no request")
	}
	// A second pull request on the same revisions: everything is known.
	for _, rev := range []string{"v1.0.0", "main", first, first[:9]} {
		if _, err := f.Checkout(ctx, url, rev, ""); err != nil {
			t.Fatal(err)
		}
	}
	if got := srv.Requests()[n:]; len(got) != 0 {
		t.Errorf("second use made %d requests: %v", len(got), got)
	}
	// After a restart, a commit id is found in the mirror kept on disk.
	f2 := newFetcher(t, srv, allowed(t, url, password, ""), gitfetch.Options{CacheDir: cache})
	if tree, err := f2.Checkout(ctx, url, first, ""); err != nil || read(t, tree) != "one\n" {
		t.Fatalf("after restart: %v", err)
	}
	if got := srv.Requests()[n:]; len(got) != 0 {
		t.Errorf("after a restart a known commit made %d requests: %v", len(got), got)
	}
}

func TestFailures(t *testing.T) {
	root, _, _ := upstream(t)
	srv := gitfetchtest.Start(t, root, user, password)
	url := srv.URL + "/platform.git"
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		set      *repocreds.Set
		url, rev string
		opts     gitfetch.Options
		is       error
		want     string
	}{
		{name: "not allowed", set: allowed(t, srv.URL+"/other.git", password, ""), url: url, rev: "main",
			is: gitfetch.ErrNotAllowed, want: "platform.git is not in the allowed repositories"},
		{name: "helm type", set: allowed(t, url, password, "  type: helm\n"), url: url, rev: "main", is: gitfetch.ErrNotAllowed},
		{name: "wrong password", set: allowed(t, url, "wrong-"+password, ""), url: url, rev: "main", is: gitfetch.ErrUnauthorized, want: "HTTP 401"},
		{name: "unknown revision", set: allowed(t, url, password, ""), url: url, rev: "relase",
			is: gitfetch.ErrUnknownRevision, want: `unable to resolve "relase" to a commit SHA (nearest refs: release, main, svc/v1.5.0, svc/v1.6.0, v1.0.0)`},
		{name: "oversized tree", set: allowed(t, url, password, ""), url: url, rev: "main", opts: gitfetch.Options{Limits: sourceLimits(1)},
			is: gitfetch.ErrRefused, want: "tree-size"},
		{name: "oversized repository", set: allowed(t, url, password, ""), url: url, rev: "main", opts: gitfetch.Options{MaxRepoBytes: 1},
			is: gitfetch.ErrRefused, want: "repository-size"},
		{name: "unreachable", set: allowed(t, "https://127.0.0.1:1/platform.git", password, ""), url: "https://127.0.0.1:1/platform.git", rev: "main",
			want: "127.0.0.1:1"},
		{name: "plain http", set: allowed(t, "http://127.0.0.1:1/platform.git", password, ""), url: "http://127.0.0.1:1/platform.git", rev: "main",
			want: `scheme "http" refused`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFetcher(t, srv, tc.set, tc.opts)
			_, err := f.Checkout(ctx, tc.url, tc.rev, "")
			if err == nil {
				t.Fatal("no error")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v, want %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			if strings.Contains(err.Error(), password) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error shows the password or is not one line: %q", err)
			}
		})
	}
}

// TestRedirectIsNotFollowed: a repository that redirects to another host (the same repository, served elsewhere)
// is refused: git does not follow it, so credentials never reach another host.
func TestRedirectIsNotFollowed(t *testing.T) {
	root, _, _ := upstream(t)
	srv := gitfetchtest.Start(t, root, user, password)
	var mu sync.Mutex
	seen := 0
	redirector := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen++
		mu.Unlock()
		http.Redirect(w, r, srv.URL+r.URL.RequestURI(), http.StatusFound)
	}))
	defer redirector.Close()
	url := redirector.URL + "/platform.git"
	f := newFetcher(t, srv, allowed(t, url, password, "  insecure: \"true\"\n"), gitfetch.Options{})
	_, err := f.Checkout(context.Background(), url, "main", "")
	if err == nil || strings.Contains(err.Error(), password) {
		t.Fatalf("error %v, want a refusal without the password", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if seen == 0 {
		t.Fatal("the redirecting server saw no request")
	}
	for _, r := range srv.Requests() {
		t.Errorf("the redirect was followed: %s", r)
	}
}

func TestSlowServerIsCutOff(t *testing.T) {
	root, _, _ := upstream(t)
	srv := gitfetchtest.Start(t, root, user, password)
	url := srv.URL + "/platform.git"
	srv.SetDelay(5 * time.Second)
	f := newFetcher(t, srv, allowed(t, url, password, ""), gitfetch.Options{Timeout: time.Second})
	start := time.Now()
	_, err := f.Checkout(context.Background(), url, "main", "")
	if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Fatalf("error %v, want a timeout", err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("took %s", d)
	}
}

// TestCredentialsStayOutOfTheCache checks every file the fetcher wrote for the password, plain or encoded.
func TestCredentialsStayOutOfTheCache(t *testing.T) {
	root, _, _ := upstream(t)
	srv := gitfetchtest.Start(t, root, user, password)
	url := srv.URL + "/platform.git"
	cache := t.TempDir()
	f := newFetcher(t, srv, allowed(t, url, password, ""), gitfetch.Options{CacheDir: cache})
	if _, err := f.Checkout(context.Background(), url, "main", ""); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(cache, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(data), password) || strings.Contains(string(data), "czNjcmV0LUdJVC1wYXNzLTAxMjM") {
			t.Errorf("%s holds the password", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func sourceLimits(bytes int64) source.Limits { return source.Limits{MaxBytes: bytes} }

// A repo-creds template allows, and lends its credentials to, only URLs of its own scheme, host and port under
// its path: never a look-alike host, nor a host hidden behind "@" (issue 38 item 4).
func TestTemplateCoversNoLookAlikeHost(t *testing.T) {
	set, err := repocreds.Parse("repositories.yaml", []byte(`apiVersion: v1
kind: Secret
metadata:
  labels: {argocd.argoproj.io/secret-type: repo-creds}
stringData: {url: "https://git.example.com/org", username: reader, password: "`+password+`"}
`))
	if err != nil {
		t.Fatal(err)
	}
	f, err := gitfetch.New(gitfetch.Options{Repos: set, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for u, want := range map[string]bool{
		"https://git.example.com/org/platform.git":      true,
		"https://git.example.com.evil.io/org/platform":  false,
		"https://git.example.com/org@evil.io/platform":  false,
		"https://git.example.com/org-evil/platform.git": false,
		"https://reader:x@git.example.com/org/platform": false,
	} {
		if got := f.Allows(u); got != want {
			t.Errorf("Allows(%s) = %v, want %v", u, got, want)
		}
	}
}
