// Package gitfetch fetches revisions of the git repositories an operator allows (the repositories file of
// internal/edge/repocreds), so that an Application whose source lives in another repository than the pull request's
// is rendered at the targetRevision it names, as Argo CD's repo-server renders it.
//
// # Resolution
//
// A targetRevision is resolved as util/git/client.go nativeGitClient.lsRemote resolves it (argo-cd v3.2.11): a
// 40-hex commit id is used as is; otherwise the remote's refs are listed (`git ls-remote`), "" means HEAD, a semver
// constraint is resolved to the highest matching tag (util/versions/tags.go MaxVersion), then a ref whose full or
// short name equals the revision names its commit (a symbolic ref such as HEAD its target's), and a 7+-hex string
// is taken as an abbreviated commit id. Anything else is an error naming the nearest refs.
//
// # Fetching and caching
//
// Objects are fetched into the bare mirrors of internal/edge/gitcache (one per repository, surviving restarts), with
// the repository's own credentials handed to git as an Authorization header in the environment: never on a
// command line, in a URL stored on disk, in a log or an error. Redirects are not followed; slow servers and every
// git command are bounded in time; the number of fetches at once is bounded. A resolved revision is exported once
// (internal/source's hardened export, capped in files and bytes) into a tree kept under the cache directory and
// shared by every render that names it; the refs a revision resolved against are reused for RefsTTL (as Argo CD
// caches ls-remote answers), so a second pull request on the same revisions contacts no server.
package gitfetch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/argoproj/argo-cd/v3/util/versions"

	"github.com/fleetwave/fleetwave/internal/edge/gitcache"
	"github.com/fleetwave/fleetwave/internal/edge/repocreds"
	"github.com/fleetwave/fleetwave/internal/edge/source"
)

// Defaults of Options.
const (
	DefaultTimeout      = 2 * time.Minute
	DefaultRefsTTL      = 3 * time.Minute // argocd-repo-server --revision-cache-expiration's default
	DefaultConcurrency  = 4
	DefaultMaxFiles     = 50_000
	DefaultMaxBytes     = 512 << 20
	DefaultMaxRepoBytes = 2 << 30
	DefaultMaxTrees     = 64
)

// Options configure a Fetcher.
type Options struct {
	// Repos are the allowed repositories; nil allows none. Entries of type git (or no type) allow a git source.
	Repos *repocreds.Set
	// CacheDir holds the mirrors (mirrors/, kept across runs) and the exported trees (trees/, remade per process).
	CacheDir string
	// CAFile makes https fetches trust this PEM bundle instead of the system's certificate authorities.
	CAFile string
	// Timeout bounds each git command (ls-remote, fetch).
	Timeout time.Duration
	// RefsTTL is how long a repository's listed refs resolve revisions without asking it again.
	RefsTTL time.Duration
	// Concurrency bounds the git commands talking to servers at once.
	Concurrency int
	// Limits cap one exported tree (files and bytes); MaxRepoBytes a repository's mirror.
	Limits       source.Limits
	MaxRepoBytes int64
	// MaxTrees is how many exported trees are kept (least recently used go first, none used in the last minutes).
	MaxTrees int
}

// Sentinel errors (errors.Is).
var (
	// ErrNotAllowed: the repository is not a git repository of the allowed repositories.
	ErrNotAllowed = errors.New("is not in the allowed repositories")
	// ErrUnknownRevision: the revision names no ref nor commit of the repository.
	ErrUnknownRevision = errors.New("unknown revision")
	// ErrRefused: the repository broke a rule (size cap, scheme).
	ErrRefused = errors.New("refused")
)

// Tree is one revision of a repository, exported. Dir is shared and read-only by contract.
type Tree struct {
	Dir    string `json:"dir"`
	Commit string `json:"commit"`
}

// Fetcher fetches and exports revisions. It is safe for concurrent use.
type Fetcher struct {
	opts    Options
	cache   *gitcache.Cache
	trees   string
	sem     chan struct{}
	secrets []string

	mu      sync.Mutex
	refs    map[string]*refsMemo   // by mirror directory
	exports map[string]*treeMemo   // by mirror directory + commit
	calls   map[string]*sync.Mutex // one resolution or export per key at once
}

type refsMemo struct {
	at   time.Time
	refs []gitcache.RemoteRef
}

type treeMemo struct {
	tree *Tree
	used time.Time
}

// New returns a Fetcher; the trees of an earlier process are removed (the mirrors are kept).
func New(opts Options) (*Fetcher, error) {
	if opts.CacheDir == "" {
		return nil, errors.New("git fetcher: no cache directory")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.RefsTTL <= 0 {
		opts.RefsTTL = DefaultRefsTTL
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.Limits.MaxFiles <= 0 {
		opts.Limits.MaxFiles = DefaultMaxFiles
	}
	if opts.Limits.MaxBytes <= 0 {
		opts.Limits.MaxBytes = DefaultMaxBytes
	}
	if opts.MaxRepoBytes <= 0 {
		opts.MaxRepoBytes = DefaultMaxRepoBytes
	}
	if opts.MaxTrees <= 0 {
		opts.MaxTrees = DefaultMaxTrees
	}
	copts := []gitcache.Option{gitcache.WithTimeout(opts.Timeout)}
	if opts.CAFile != "" {
		copts = append(copts, gitcache.WithCAFile(opts.CAFile))
	}
	cache, err := gitcache.New(filepath.Join(opts.CacheDir, "mirrors"), copts...)
	if err != nil {
		return nil, fmt.Errorf("git fetcher: %w", err)
	}
	trees := filepath.Join(opts.CacheDir, "trees")
	if err := os.RemoveAll(trees); err != nil {
		return nil, fmt.Errorf("git fetcher: %w", err)
	}
	if err := os.MkdirAll(trees, 0o755); err != nil {
		return nil, fmt.Errorf("git fetcher: %w", err)
	}
	return &Fetcher{opts: opts, cache: cache, trees: trees, sem: make(chan struct{}, opts.Concurrency),
		secrets: opts.Repos.Secrets(), refs: map[string]*refsMemo{}, exports: map[string]*treeMemo{}, calls: map[string]*sync.Mutex{}}, nil
}

// Allows reports whether repoURL is a git repository of the allowed repositories.
func (f *Fetcher) Allows(repoURL string) bool {
	_, err := f.repository(repoURL)
	return err == nil
}

func (f *Fetcher) repository(repoURL string) (repocreds.Repository, error) {
	if f == nil {
		return repocreds.Repository{}, fmt.Errorf("repository %s %w", repocreds.RedactURL(repoURL), ErrNotAllowed)
	}
	r, ok := f.opts.Repos.Lookup(repoURL)
	if !ok || (r.Type != "" && r.Type != "git") {
		return repocreds.Repository{}, fmt.Errorf("repository %s %w", repocreds.RedactURL(repoURL), ErrNotAllowed)
	}
	return r, nil
}

// Checkout returns repoURL's tree at revision (a targetRevision as an Application writes it). tagPrefix is the
// source's tagPrefix (Argo CD 3.6; "" for none): a semver revision is resolved among the tags that carry it.
func (f *Fetcher) Checkout(ctx context.Context, repoURL, revision, tagPrefix string) (*Tree, error) {
	t, err := f.checkout(ctx, repoURL, revision, tagPrefix)
	if err != nil {
		return nil, f.redact(err)
	}
	return t, nil
}

func (f *Fetcher) checkout(ctx context.Context, repoURL, revision, tagPrefix string) (*Tree, error) {
	repo, err := f.repository(repoURL)
	if err != nil {
		return nil, err
	}
	if repo.TLSClientCertData != "" || repo.TLSClientCertKey != "" {
		return nil, fmt.Errorf("repository %s: TLS client certificates are not supported for git repositories: %w", repo, ErrRefused)
	}
	remote := gitcache.Remote{URL: strings.TrimSpace(repoURL), Username: repo.Username, Password: repo.Password, Insecure: repo.Insecure}
	if strings.Contains(remote.URL, "@") {
		return nil, fmt.Errorf("repository %s: credentials in the repoURL are refused: %w", repocreds.RedactURL(repoURL), ErrRefused)
	}
	mirror := f.cache.MirrorDir(remote.URL)
	label := fmt.Sprintf("repository %s at %q", repocreds.RedactURL(repoURL), revision)
	if tagPrefix != "" {
		label += fmt.Sprintf(" (tagPrefix %q)", tagPrefix)
	}

	commit, ref, err := f.resolve(ctx, remote, mirror, revision, tagPrefix)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, explain(err))
	}
	key := mirror + "@" + commit
	unlock := f.lockKey(key)
	defer unlock()
	f.mu.Lock()
	if m, ok := f.exports[key]; ok {
		if _, err := os.Stat(m.tree.Dir); err == nil {
			m.used = time.Now()
			f.mu.Unlock()
			return m.tree, nil
		}
	}
	f.mu.Unlock()

	var refs, commits []string
	if ref != "" {
		refs = []string{ref}
	}
	if !source.IsFullSHA(commit) {
		// An abbreviated id: the mirror may know it already (no fetch of every branch and tag then).
		if known, err := source.Open(ctx, mirror); err == nil {
			if sha, err := known.Resolve(ctx, commit); err == nil {
				commit = sha
			}
		}
	}
	full := source.IsFullSHA(commit)
	if full {
		commits = []string{commit}
	}
	if err := f.fetch(ctx, remote, refs, commits); err != nil {
		return nil, fmt.Errorf("%s: %w", label, explain(err))
	}
	repo2, err := source.Open(ctx, mirror)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	resolved, err := repo2.Resolve(ctx, commit)
	if err != nil {
		return nil, fmt.Errorf("%s: commit %s %w", label, commit, ErrUnknownRevision)
	}
	if size, err := f.cache.SizeBytes(ctx, mirror); err == nil && size > f.opts.MaxRepoBytes {
		return nil, fmt.Errorf("%s: %w (repository-size): %d MiB of objects, over the cap of %d MiB", label, ErrRefused, size>>20, f.opts.MaxRepoBytes>>20)
	}
	if resolved != commit {
		key = mirror + "@" + resolved // an abbreviated id or an annotated tag: keyed by the commit
		f.mu.Lock()
		m, ok := f.exports[key]
		f.mu.Unlock()
		if ok {
			return m.tree, nil
		}
	}
	tree, err := f.export(ctx, repo2, mirror, resolved)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	f.mu.Lock()
	f.exports[key] = &treeMemo{tree: tree, used: time.Now()}
	f.evictLocked()
	f.mu.Unlock()
	return tree, nil
}

// export writes commit's files into a new tree directory (atomically: a tree directory is complete or absent).
func (f *Fetcher) export(ctx context.Context, repo *source.Repo, mirror, commit string) (*Tree, error) {
	sum := sha256.Sum256([]byte(mirror))
	dir := filepath.Join(f.trees, hex.EncodeToString(sum[:6])+"-"+commit)
	if _, err := os.Stat(dir); err == nil {
		return &Tree{Dir: dir, Commit: commit}, nil
	}
	tmp, err := os.MkdirTemp(f.trees, ".export-")
	if err != nil {
		return nil, err
	}
	if err := repo.Export(ctx, commit, tmp, f.opts.Limits); err != nil {
		_ = os.RemoveAll(tmp)
		if errors.Is(err, source.ErrTooLarge) {
			return nil, fmt.Errorf("%w (tree-size): %v", ErrRefused, err)
		}
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		_ = os.RemoveAll(tmp)
		if _, statErr := os.Stat(dir); statErr != nil {
			return nil, err
		}
	}
	return &Tree{Dir: dir, Commit: commit}, nil
}

// evictLocked removes the least recently used trees over MaxTrees that no render used in the last minutes.
func (f *Fetcher) evictLocked() {
	if len(f.exports) <= f.opts.MaxTrees {
		return
	}
	keys := make([]string, 0, len(f.exports))
	for k := range f.exports {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return f.exports[keys[i]].used.Before(f.exports[keys[j]].used) })
	for _, k := range keys[:len(keys)-f.opts.MaxTrees] {
		m := f.exports[k]
		if time.Since(m.used) < 10*time.Minute {
			break
		}
		delete(f.exports, k)
		_ = os.RemoveAll(m.tree.Dir)
	}
}

func (f *Fetcher) fetch(ctx context.Context, remote gitcache.Remote, refs, commits []string) error {
	select {
	case f.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-f.sem }()
	_, err := f.cache.FetchRemote(ctx, remote, refs, commits)
	return err
}

var (
	fullSHA      = regexp.MustCompile(`^[0-9A-Fa-f]{40}$`)
	truncatedSHA = regexp.MustCompile(`^[0-9A-Fa-f]{7,}$`)
)

// resolve is nativeGitClient.lsRemote: the commit revision names, and the ref it was found as ("" for an id).
func (f *Fetcher) resolve(ctx context.Context, remote gitcache.Remote, mirror, revision, tagPrefix string) (commit, ref string, err error) {
	revision = strings.TrimSpace(revision)
	if fullSHA.MatchString(revision) {
		return strings.ToLower(revision), "", nil
	}
	refs, err := f.listRefs(ctx, remote, mirror)
	if err != nil {
		return "", "", err
	}
	if revision == "" {
		revision = "HEAD"
	}
	var tags []string
	for _, r := range refs {
		if t, ok := strings.CutPrefix(r.Name, "refs/tags/"); ok {
			tags = append(tags, t)
		}
	}
	// argo-cd v3.6 util/git/client.go lsRemote: the source's tagPrefix scopes and is stripped from the tags, and
	// the version found keeps it; an error (no match, or a prefix with a revision that is no constraint) leaves
	// the revision as written.
	if v, err := versions.MaxVersion(revision, tags, tagPrefix); err == nil {
		revision = v
	}
	byName := map[string]gitcache.RemoteRef{}
	for _, r := range refs {
		byName[r.Name] = r
	}
	target := ""
	for _, r := range refs {
		if shortName(r.Name) != revision && r.Name != revision {
			continue
		}
		if r.Target == "" {
			return commitOf(r), r.Name, nil
		}
		target = r.Target
	}
	if t, ok := byName[target]; ok && target != "" {
		return commitOf(t), t.Name, nil
	}
	if truncatedSHA.MatchString(revision) {
		return strings.ToLower(revision), "", nil
	}
	return "", "", fmt.Errorf("%w: unable to resolve %q to a commit SHA (nearest refs: %s)", ErrUnknownRevision, revision, nearest(revision, refs))
}

// commitOf is the commit a listed ref names: an annotated tag's peeled commit.
func commitOf(r gitcache.RemoteRef) string {
	if r.Peeled != "" {
		return r.Peeled
	}
	return r.Hash
}

// shortName is go-git's ReferenceName.Short for the refs listed: the name without refs/heads/ or refs/tags/.
func shortName(name string) string {
	for _, p := range []string{"refs/heads/", "refs/tags/", "refs/remotes/", "refs/"} {
		if s, ok := strings.CutPrefix(name, p); ok {
			return s
		}
	}
	return name
}

// nearest names up to five refs closest to revision (shared prefix first, then name order).
func nearest(revision string, refs []gitcache.RemoteRef) string {
	names := make([]string, 0, len(refs))
	for _, r := range refs {
		if r.Name != "HEAD" {
			names = append(names, shortName(r.Name))
		}
	}
	if len(names) == 0 {
		return "the repository has no branches or tags"
	}
	common := func(s string) int {
		n := 0
		for n < len(s) && n < len(revision) && s[n] == revision[n] {
			n++
		}
		return n
	}
	sort.SliceStable(names, func(i, j int) bool {
		ci, cj := common(names[i]), common(names[j])
		if ci != cj {
			return ci > cj
		}
		return names[i] < names[j]
	})
	if len(names) > 5 {
		names = names[:5]
	}
	return strings.Join(names, ", ")
}

// listRefs returns the repository's refs, listed at most once per RefsTTL.
func (f *Fetcher) listRefs(ctx context.Context, remote gitcache.Remote, mirror string) ([]gitcache.RemoteRef, error) {
	unlock := f.lockKey("refs:" + mirror)
	defer unlock()
	f.mu.Lock()
	m, ok := f.refs[mirror]
	f.mu.Unlock()
	if ok && time.Since(m.at) < f.opts.RefsTTL {
		return m.refs, nil
	}
	select {
	case f.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	refs, err := f.cache.LsRemote(ctx, remote)
	<-f.sem
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.refs[mirror] = &refsMemo{at: time.Now(), refs: refs}
	f.mu.Unlock()
	return refs, nil
}

func (f *Fetcher) lockKey(key string) func() {
	f.mu.Lock()
	l, ok := f.calls[key]
	if !ok {
		l = &sync.Mutex{}
		f.calls[key] = l
	}
	f.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// ErrUnauthorized: the server refused the repository's credentials.
var ErrUnauthorized = errors.New("the server refused the credentials of the allowed repositories file (HTTP 401/403)")

// explain turns git's answer to a refused authentication (it then asks for a username, which it may not) into
// one line saying so.
func explain(err error) error {
	msg := err.Error()
	if strings.Contains(msg, "could not read Username") || strings.Contains(msg, "Authentication failed") ||
		strings.Contains(msg, "error: 403") || strings.Contains(msg, "returned error: 401") {
		return ErrUnauthorized
	}
	return err
}

// redact removes every credential of the allowed repositories from err's message (git's own messages are
// redacted by gitcache already; this is the last guard).
func (f *Fetcher) redact(err error) error {
	msg := err.Error()
	clean := msg
	for _, s := range f.secrets {
		if s != "" {
			clean = strings.ReplaceAll(clean, s, "[redacted]")
		}
	}
	if clean == msg {
		return err
	}
	return &redacted{msg: clean, err: err}
}

type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }

// Unwrap keeps the sentinels matchable; the wrapped error's text is never printed.
func (e *redacted) Unwrap() error {
	for _, s := range []error{ErrNotAllowed, ErrUnknownRevision, ErrRefused, ErrUnauthorized} {
		if errors.Is(e.err, s) {
			return s
		}
	}
	return nil
}
