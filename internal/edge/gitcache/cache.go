package gitcache

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Credentials returns the HTTP basic-auth pair git uses for an installation's https clone URLs
// (internal/edge/github App.GitCredentials: "x-access-token" and an installation token). It is asked once per fetch.
type Credentials func(ctx context.Context, installationID int64) (username, password string, err error)

// Cache is a directory of bare mirrors, one per repository. It is safe for concurrent use.
type Cache struct {
	dir     string
	home    string
	git     string
	creds   Credentials
	caFile  string
	timeout time.Duration

	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

// ErrCommitNotFound is wrapped by a fetch that left a commit missing: the remote does not have it, or not yet
// (a merge commit GitHub announced before every replica serves it).
var ErrCommitNotFound = errors.New("not found")

// Option configures a Cache.
type Option func(*Cache)

// WithCredentials sets how https fetches authenticate (default: anonymously).
func WithCredentials(c Credentials) Option { return func(x *Cache) { x.creds = c } }

// WithCAFile makes https fetches trust the certificate authorities of the PEM bundle at path instead of the
// system's (git's http.sslCAInfo): GitHub Enterprise Server behind a private CA.
func WithCAFile(path string) Option { return func(x *Cache) { x.caFile = path } }

// WithTimeout bounds each git command (default 10 minutes: a first clone of a large repository).
func WithTimeout(d time.Duration) Option { return func(x *Cache) { x.timeout = d } }

// New returns a Cache keeping its mirrors under dir (created when missing).
func New(dir string, opts ...Option) (*Cache, error) {
	if dir == "" {
		return nil, errors.New("creating the clone cache: no directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("creating the clone cache %s: %w", dir, err)
	}
	gitBin, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("creating the clone cache: git is not installed: %w", err)
	}
	c := &Cache{dir: abs, home: filepath.Join(abs, ".home"), git: gitBin, timeout: 10 * time.Minute, locks: map[string]*sync.Mutex{}}
	for _, o := range opts {
		o(c)
	}
	if err := os.MkdirAll(c.home, 0o700); err != nil {
		return nil, fmt.Errorf("creating the clone cache %s: %w", dir, err)
	}
	return c, nil
}

// Dir is the cache directory.
func (c *Cache) Dir() string { return c.dir }

var (
	commitRE = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)
	unsafeRE = regexp.MustCompile(`[^A-Za-z0-9._-]+`)
)

// MirrorDir is the directory of the mirror of cloneURL (it may not exist yet).
func (c *Cache) MirrorDir(cloneURL string) string {
	sum := sha256.Sum256([]byte(cloneURL))
	name := "repo"
	if u, err := url.Parse(cloneURL); err == nil {
		segs := strings.Split(strings.Trim(strings.TrimSuffix(u.Path, ".git"), "/"), "/")
		if n := len(segs); n >= 2 {
			name = segs[n-2] + "-" + segs[n-1]
		} else if n == 1 && segs[0] != "" {
			name = segs[0]
		}
	}
	name = strings.Trim(unsafeRE.ReplaceAllString(name, "_"), "._-")
	if len(name) > 64 {
		name = name[:64]
	}
	return filepath.Join(c.dir, name+"-"+hex.EncodeToString(sum[:6])+".git")
}

// Fetch makes commits (full commit ids) present in the mirror of cloneURL (creating it on first use) and
// returns the mirror's directory, a bare repository. refs are full ref names on the remote
// ("refs/pull/7/head", "refs/heads/main"), fetched into "refs/fleetwave/…" of the mirror when a commit is
// missing. See the package documentation for the order of attempts.
func (c *Cache) Fetch(ctx context.Context, installationID int64, cloneURL string, refs, commits []string) (string, error) {
	u, err := checkURL(cloneURL)
	if err != nil {
		return "", err
	}
	if err := checkFetchArgs(u, refs, commits); err != nil {
		return "", err
	}
	dir := c.MirrorDir(cloneURL)
	unlock := c.lock(dir)
	defer unlock()

	if err := c.ensureMirror(ctx, dir, u); err != nil {
		return "", err
	}
	missing, err := c.missing(ctx, dir, commits)
	if err != nil {
		return "", err
	}
	if len(missing) == 0 {
		return dir, nil
	}
	env, secrets, err := c.authEnv(ctx, installationID, u)
	if err != nil {
		return "", err
	}
	var refErr error
	if len(refs) > 0 {
		specs := make([]string, 0, len(refs))
		for _, ref := range refs {
			specs = append(specs, "+"+ref+":refs/fleetwave/"+strings.TrimPrefix(ref, "refs/"))
		}
		if refErr = c.fetch(ctx, dir, u, env, secrets, specs); refErr == nil {
			if missing, err = c.missing(ctx, dir, missing); err != nil {
				return "", err
			}
		}
	}
	if len(missing) > 0 {
		specs := make([]string, 0, len(missing))
		for _, sha := range missing {
			specs = append(specs, sha+":refs/fleetwave/commits/"+sha)
		}
		shaErr := c.fetch(ctx, dir, u, env, secrets, specs)
		if missing, err = c.missing(ctx, dir, missing); err != nil {
			return "", err
		}
		if len(missing) > 0 {
			return "", fmt.Errorf("fetching %s: commit %s %w: %w", redactURL(u), missing[0], ErrCommitNotFound, errors.Join(refErr, shaErr))
		}
	}
	return dir, nil
}

// ReadFile returns the content of path at commit in the mirror dir; an error wrapping fs.ErrNotExist when the
// commit has no such file.
func (c *Cache) ReadFile(ctx context.Context, dir, commit, path string) ([]byte, error) {
	if !commitRE.MatchString(commit) {
		return nil, fmt.Errorf("reading %s: %q is not a full commit id", path, commit)
	}
	if path == "" || strings.ContainsAny(path, "\n\x00") {
		return nil, fmt.Errorf("reading %q at %s: invalid path", path, commit[:7])
	}
	out, err := c.run(ctx, dir, nil, nil, strings.NewReader(commit+":"+path+"\n"), "cat-file", "--batch")
	if err != nil {
		return nil, fmt.Errorf("reading %s at %s: %w", path, commit[:7], err)
	}
	header, body, _ := bytes.Cut(out, []byte("\n"))
	fields := strings.Fields(string(header))
	if len(fields) == 2 && fields[1] == "missing" {
		return nil, fmt.Errorf("reading %s at %s: %w", path, commit[:7], fs.ErrNotExist)
	}
	if len(fields) != 3 || fields[1] != "blob" {
		return nil, fmt.Errorf("reading %s at %s: not a file", path, commit[:7])
	}
	var size int
	if _, err := fmt.Sscan(fields[2], &size); err != nil || size > len(body) {
		return nil, fmt.Errorf("reading %s at %s: short read", path, commit[:7])
	}
	return body[:size], nil
}

func (c *Cache) lock(dir string) func() {
	c.mu.Lock()
	l, ok := c.locks[dir]
	if !ok {
		l = &sync.Mutex{}
		c.locks[dir] = l
	}
	c.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// ensureMirror creates the bare mirror of u at dir, atomically (a crash leaves no half-made mirror).
func (c *Cache) ensureMirror(ctx context.Context, dir string, u *url.URL) error {
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err == nil {
		// The remote URL is (re)written each time: a repository's clone URL could change case, not its mirror.
		_, err := c.run(ctx, dir, nil, nil, nil, "config", "remote.origin.url", u.String())
		return err
	}
	tmp, err := os.MkdirTemp(c.dir, ".init-")
	if err != nil {
		return fmt.Errorf("creating the mirror of %s: %w", redactURL(u), err)
	}
	defer os.RemoveAll(tmp)
	steps := [][]string{
		{"init", "--bare", "--quiet", tmp},
		{"-C", tmp, "config", "core.hooksPath", "/dev/null"},
		{"-C", tmp, "config", "remote.origin.url", u.String()},
		{"-C", tmp, "config", "gc.autoDetach", "false"},
		{"-C", tmp, "config", "fetch.recurseSubmodules", "false"},
	}
	for _, args := range steps {
		if _, err := c.run(ctx, "", nil, nil, nil, args...); err != nil {
			return fmt.Errorf("creating the mirror of %s: %w", redactURL(u), err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil && !errors.Is(err, fs.ErrExist) {
		if _, statErr := os.Stat(filepath.Join(dir, "HEAD")); statErr != nil {
			return fmt.Errorf("creating the mirror of %s: %w", redactURL(u), err)
		}
	}
	return nil
}

// missing returns the commits of shas absent from the mirror.
func (c *Cache) missing(ctx context.Context, dir string, shas []string) ([]string, error) {
	if len(shas) == 0 {
		return nil, nil
	}
	var in strings.Builder
	for _, s := range shas {
		in.WriteString(s + "^{commit}\n")
	}
	out, err := c.run(ctx, dir, nil, nil, strings.NewReader(in.String()), "cat-file", "--batch-check")
	if err != nil {
		return nil, fmt.Errorf("checking commits in %s: %w", filepath.Base(dir), err)
	}
	var miss []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for i := 0; sc.Scan() && i < len(shas); i++ {
		if strings.HasSuffix(sc.Text(), " missing") || strings.HasSuffix(sc.Text(), " ambiguous") {
			miss = append(miss, shas[i])
		}
	}
	return miss, nil
}

// fetch runs one git fetch of refspecs from origin.
func (c *Cache) fetch(ctx context.Context, dir string, u *url.URL, env, secrets []string, specs []string) error {
	args := append([]string{"fetch", "--quiet", "--no-tags", "--no-recurse-submodules", "--no-write-fetch-head", "origin"}, specs...)
	if _, err := c.run(ctx, dir, env, secrets, nil, args...); err != nil {
		return fmt.Errorf("fetching %s: %w", redactURL(u), err)
	}
	return nil
}

// authEnv returns the environment carrying the installation's credentials for u (none for file://), and the
// strings to redact from git's messages.
func (c *Cache) authEnv(ctx context.Context, installationID int64, u *url.URL) (env, secrets []string, err error) {
	if u.Scheme != "https" || c.creds == nil {
		return nil, nil, nil
	}
	user, pass, err := c.creds(ctx, installationID)
	if err != nil {
		return nil, nil, fmt.Errorf("getting git credentials for %s: %w", redactURL(u), err)
	}
	if pass == "" {
		return nil, nil, nil
	}
	basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	scope := "http." + u.Scheme + "://" + u.Host + "/.extraHeader"
	env = []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=" + scope, "GIT_CONFIG_VALUE_0=Authorization: Basic " + basic}
	return env, []string{pass, basic}, nil
}

// run runs git in dir ("" for none) with the safe environment plus extra, redacting secrets from errors.
func (c *Cache) run(ctx context.Context, dir string, extra, secrets []string, stdin *strings.Reader, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	full := []string{
		"-c", "core.hooksPath=/dev/null",
		"-c", "core.fsmonitor=false",
		"-c", "credential.helper=",
		"-c", "protocol.allow=never",
		"-c", "protocol.https.allow=always",
		"-c", "protocol.file.allow=always",
		"-c", "submodule.recurse=false",
		"--no-replace-objects",
	}
	if c.caFile != "" {
		full = append(full, "-c", "http.sslCAInfo="+c.caFile)
	}
	if dir != "" {
		full = append(full, "-C", dir)
	}
	full = append(full, args...)
	cmd := exec.CommandContext(ctx, c.git, full...)
	cmd.Env = append(c.env(), extra...)
	// git's helpers (git-remote-https) inherit the pipes: do not wait for them past the kill.
	cmd.WaitDelay = time.Second
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		for _, s := range secrets {
			if s != "" {
				msg = strings.ReplaceAll(msg, s, "[redacted]")
			}
		}
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 && len(msg) > 500 {
			msg = msg[i+1:]
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("git %s: %w", args[0], ctx.Err())
		}
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("git %s: %s", args[0], strings.ReplaceAll(msg, "\n", "; "))
	}
	return stdout.Bytes(), nil
}

// env is the process environment without GIT_* variables nor the user's configuration.
func (c *Cache) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "GIT_"), k == "HOME", k == "XDG_CONFIG_HOME", k == "SSH_ASKPASS":
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"HOME="+c.home,
		"XDG_CONFIG_HOME="+c.home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=",
		"GIT_ALLOW_PROTOCOL=https:file",
		"GIT_CEILING_DIRECTORIES="+c.dir,
	)
}

// checkURL accepts https and file clone URLs without credentials in them.
func checkURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return nil, fmt.Errorf("fetching %q: not a URL", raw)
	}
	switch u.Scheme {
	case "https":
		if u.Host == "" {
			return nil, fmt.Errorf("fetching %s: no host", redactURL(u))
		}
	case "file":
	default:
		return nil, fmt.Errorf("fetching %s: scheme %q refused (https or file)", redactURL(u), u.Scheme)
	}
	if u.User != nil {
		return nil, fmt.Errorf("fetching %s: credentials in the clone URL are refused", redactURL(u))
	}
	return u, nil
}

// redactURL prints u without any user information.
func redactURL(u *url.URL) string {
	v := *u
	v.User = nil
	return v.String()
}

// validRef accepts the full ref names git check-ref-format accepts, minus anything that would read as a refspec
// or an option.
func validRef(ref string) bool {
	if !strings.HasPrefix(ref, "refs/") || strings.HasSuffix(ref, "/") || strings.HasSuffix(ref, ".lock") ||
		strings.Contains(ref, "..") || strings.Contains(ref, "//") || strings.Contains(ref, "@{") {
		return false
	}
	for _, r := range ref {
		if r <= ' ' || r == 0x7f || strings.ContainsRune(":?*[\\^~", r) {
			return false
		}
	}
	return true
}

// checkFetchArgs refuses commits that are not full ids and refs that are not ref names, before git sees them.
func checkFetchArgs(u *url.URL, refs, commits []string) error {
	for _, sha := range commits {
		if !commitRE.MatchString(sha) {
			return fmt.Errorf("fetching %s: %q is not a full commit id", redactURL(u), sha)
		}
	}
	for _, ref := range refs {
		if !validRef(ref) {
			return fmt.Errorf("fetching %s: %q is not a ref name", redactURL(u), ref)
		}
	}
	return nil
}
