// Package chartfetch downloads charts from the Helm chart repositories an operator allows (internal/edge/repocreds)
// the way Argo CD's repo-server fetches them, and keeps them in a bounded cache on disk.
//
// A chart source (repoURL + chart + targetRevision) is resolved as reposerver/repository/repository.go
// newHelmClientResolveRevision resolves it (argo-cd v3.2.11): an exact version (util/versions IsVersion) is used
// as written; otherwise the repository's index.yaml is read, the chart's entries listed (util/helm/index.go
// GetEntries) and the highest version satisfying the constraint chosen (util/versions/tags.go MaxVersion). The
// version is then looked up as `helm pull --version` does (helm's pkg/repo IndexFile.Get, which also accepts a
// "v" prefix) and its first URL resolved against the repository URL (repo.ResolveReferenceURL). The archive is
// checked against the index's digest when it has one, and kept on disk keyed by repository, chart, version and
// digest (Argo CD's chart cache is keyed by url, chart and version: util/helm/client.go getCachedChartPath).
//
// Every response is bounded (index size, archive size, a per-request timeout); a redirect to another host is
// refused and credentials are only ever sent to the repository's own host. Archives are extracted as
// util/helm/client.go untarChart does, stricter: an entry that is absolute, climbs out with "..", or is a
// symbolic or hard link is refused (helm's loader.LoadArchiveFiles refuses the first two but reads a link as an
// empty file). The extracted chart is what the in-process Helm engine renders, as repo-server renders the
// directory it extracts to.
//
// index.yaml is fetched at most once per repository within IndexTTL (one preview renders base and head within
// it), and revalidated with If-None-Match / If-Modified-Since against its copy on disk after that.
//
// No error carries a credential: URLs are printed without user information and every message is passed
// through config.Redact with the repositories' secrets.
package chartfetch

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/repo"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/argoproj/argo-cd/v3/util/versions"

	"github.com/fleetwave/fleetwave/internal/config"
	"github.com/fleetwave/fleetwave/internal/edge/repocreds"
)

// Defaults of Options.
const (
	DefaultMaxIndexBytes   = 64 << 20
	DefaultMaxArchiveBytes = 32 << 20
	DefaultMaxCacheBytes   = 2 << 30
	DefaultTimeout         = 60 * time.Second
	DefaultIndexTTL        = 2 * time.Minute
)

// Options configure a Fetcher.
type Options struct {
	// Repos are the allowed repositories; nil allows none.
	Repos *repocreds.Set
	// CacheDir keeps downloaded indexes and charts across runs; "" uses a temporary directory for the Fetcher's life.
	CacheDir string
	// MaxCacheBytes bounds the chart archives and extracted charts kept in CacheDir (least recently used go first).
	MaxCacheBytes int64
	// MaxIndexBytes caps an index.yaml; MaxArchiveBytes a chart archive (compressed; extracted charts are capped by
	// helm's loader.MaxDecompressedChartSize).
	MaxIndexBytes, MaxArchiveBytes int64
	// Timeout caps each request (headers and body).
	Timeout time.Duration
	// IndexTTL is how long a fetched index.yaml is used without asking the repository again.
	IndexTTL time.Duration
	// Transport replaces http.DefaultTransport's dialing (tests); TLS settings of the repository still apply when
	// it is an *http.Transport.
	Transport *http.Transport
	// MaxManifestBytes caps an OCI manifest and a page of tags; MaxExtractedBytes what a native OCI source's layer
	// decompresses to (the layer itself is capped by MaxArchiveBytes).
	MaxManifestBytes, MaxExtractedBytes int64
	// OCILayerMediaTypes are the content-layer media types a native OCI source may have (default
	// DefaultOCILayerMediaTypes, argocd-repo-server's --oci-layer-media-types).
	OCILayerMediaTypes []string
}

// errorTTL is how long a failed index fetch is remembered.
const errorTTL = 15 * time.Second

// Sentinel errors (errors.Is).
var (
	// ErrNotAllowed: the repository is not in the allowed repositories.
	ErrNotAllowed = errors.New("not in the allowed repositories")
	// ErrNotFound: the chart, or a version of it satisfying the revision, is not in the repository's index.
	ErrNotFound = errors.New("chart not found")
	// ErrRefused: a response broke a rule (size cap, redirect to another host, digest mismatch, hostile archive).
	ErrRefused = errors.New("refused")
	// ErrUnsupported: a kind of repository this fetcher does not read (OCI registries).
	ErrUnsupported = errors.New("repository kind not supported")
)

// Fetcher fetches charts. It is safe for concurrent use.
type Fetcher struct {
	opts    Options
	secrets []string
	dir     string

	mu      sync.Mutex
	indexes map[string]*indexMemo // by normalised repository URL
	keys    map[string]*sync.Mutex
	clients map[string]*http.Client
	oci     map[string]*ociMemo   // OCI tags and manifests, by kind and reference
	ociAuth map[string]auth.Cache // OCI tokens, by repository and user

	requests sync.Map // counters by kind, for tests and metrics
}

type indexMemo struct {
	mu      sync.Mutex
	at      time.Time
	idx     *repo.IndexFile
	err     error
	fetched bool
}

// Chart is a fetched chart, extracted.
type Chart struct {
	// Dir is the extracted chart directory (Chart.yaml at its top); it stays valid while the cache keeps it.
	Dir     string
	Name    string
	Version string
	Digest  string
}

// New returns a Fetcher.
func New(opts Options) (*Fetcher, error) {
	if opts.MaxIndexBytes <= 0 {
		opts.MaxIndexBytes = DefaultMaxIndexBytes
	}
	if opts.MaxArchiveBytes <= 0 {
		opts.MaxArchiveBytes = DefaultMaxArchiveBytes
	}
	if opts.MaxCacheBytes <= 0 {
		opts.MaxCacheBytes = DefaultMaxCacheBytes
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.IndexTTL <= 0 {
		opts.IndexTTL = DefaultIndexTTL
	}
	if opts.MaxManifestBytes <= 0 {
		opts.MaxManifestBytes = DefaultMaxManifestBytes
	}
	if opts.MaxExtractedBytes <= 0 {
		opts.MaxExtractedBytes = DefaultMaxExtractedBytes
	}
	if len(opts.OCILayerMediaTypes) == 0 {
		opts.OCILayerMediaTypes = DefaultOCILayerMediaTypes
	}
	dir := opts.CacheDir
	if dir == "" {
		d, err := os.MkdirTemp("", "fleetwave-charts-")
		if err != nil {
			return nil, fmt.Errorf("chart cache: %w", err)
		}
		dir = d
	}
	for _, sub := range []string{"index", "charts"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, fmt.Errorf("chart cache: %w", err)
		}
	}
	return &Fetcher{
		opts: opts, secrets: opts.Repos.Secrets(), dir: dir,
		indexes: map[string]*indexMemo{}, keys: map[string]*sync.Mutex{}, clients: map[string]*http.Client{},
	}, nil
}

// Requests returns how many HTTP requests of a kind ("index", "archive"; for OCI registries "oci-tags",
// "oci-manifest", "oci-blob") the Fetcher made, how many of the index requests were answered 304 Not Modified
// ("index-304"), and how many charts, archives and artifacts the cache served without a download ("cache-hit").
func (f *Fetcher) Requests(kind string) int {
	v, _ := f.requests.Load(kind)
	n, _ := v.(int)
	return n
}

func (f *Fetcher) count(kind string) {
	f.mu.Lock()
	v, _ := f.requests.Load(kind)
	n, _ := v.(int)
	f.requests.Store(kind, n+1)
	f.mu.Unlock()
}

// Repository returns the allowed repository repoURL is, or an error saying it is not allowed: a Helm chart
// repository over http(s), an OCI registry holding Helm charts (enableOCI, or a repoURL without a scheme) or a
// native OCI source (oci://).
func (f *Fetcher) Repository(repoURL string) (repocreds.Repository, error) {
	if repocreds.HasUserinfo(repoURL) {
		// The URL is pull-request content: credentials come only from the repository Secrets, and an "@" must not
		// hide the host a template's credentials would go to (issue 38).
		return repocreds.Repository{}, &Error{Repo: repoURL, Err: fmt.Errorf("not rendered: repository %s: %w: user information in a repoURL (credentials come only from the allowed repositories file)",
			repocreds.RedactURL(repoURL), ErrRefused)}
	}
	r, ok := f.opts.Repos.Lookup(repoURL)
	if !ok {
		return r, &Error{Repo: repoURL, Err: fmt.Errorf("not rendered: repository %s is %w", repocreds.RedactURL(repoURL), ErrNotAllowed)}
	}
	if isNativeOCI(repoURL) || r.EnableOCI || isHelmOCIRepo(repoURL) {
		return r, nil
	}
	u, err := url.Parse(repoURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return r, &Error{Repo: repoURL, Err: fmt.Errorf("repository %s: %w: not a Helm chart repository (http, https) or an OCI registry",
			repocreds.RedactURL(repoURL), ErrUnsupported)}
	}
	return r, nil
}

// Error is a fetch failure: its message names the repository without credentials and is redacted.
type Error struct {
	Repo string
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func (f *Fetcher) fail(repoURL string, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	msg := config.Redact(err.Error(), f.secrets...)
	if msg == err.Error() {
		return &Error{Repo: repoURL, Err: err}
	}
	return &Error{Repo: repoURL, Err: &redacted{msg: msg, err: err}}
}

type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }

// Unwrap keeps sentinels (errors.Is) reachable; the wrapped error's text is never printed.
func (e *redacted) Unwrap() error { return sentinelOf(e.err) }

func sentinelOf(err error) error {
	for _, s := range []error{ErrNotAllowed, ErrNotFound, ErrRefused, ErrUnsupported, context.DeadlineExceeded, context.Canceled} {
		if errors.Is(err, s) {
			return s
		}
	}
	return nil
}

// Chart fetches chart at revision (an exact version or a semver constraint) from repoURL and returns it extracted.
// For a native OCI source (repoURL oci://…) chart is ignored, as Argo CD ignores it, and Dir is the artifact's
// extracted root.
func (f *Fetcher) Chart(ctx context.Context, repoURL, chart, revision string) (*Chart, error) {
	r, err := f.Repository(repoURL)
	if err != nil {
		return nil, err
	}
	if isNativeOCI(repoURL) {
		return f.ociArtifact(ctx, r, repoURL, revision)
	}
	// The chart name comes from the pull request: it names a directory of the archive, never a path.
	if base := normalizeChartName(chart); base == "" || base == "." || base == ".." || strings.ContainsAny(base, `/\`) {
		return nil, &Error{Repo: repoURL, Err: fmt.Errorf("chart %q: %w: not a chart name", chart, ErrNotFound)}
	}
	if r.EnableOCI || isHelmOCIRepo(repoURL) {
		return f.ociChart(ctx, r, repoURL, chart, revision)
	}
	cv, err := f.resolve(ctx, r, chart, revision)
	if err != nil {
		return nil, err
	}
	key := cacheKey(r.URL, chart, cv.Version, cv.Digest)
	lock := f.keyLock(key)
	lock.Lock()
	defer lock.Unlock()

	base := normalizeChartName(chart)
	dir := filepath.Join(f.dir, "charts", key)
	if st, err := os.Stat(filepath.Join(dir, base, "Chart.yaml")); err == nil && st.Mode().IsRegular() {
		f.count("cache-hit") // served from the cache: no download
		touch(dir)
		return &Chart{Dir: filepath.Join(dir, base), Name: chart, Version: cv.Version, Digest: cv.Digest}, nil
	}
	data, err := f.archive(ctx, r, cv, key)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(filepath.Join(f.dir, "charts"), ".extract-")
	if err != nil {
		return nil, fmt.Errorf("chart cache: %w", err)
	}
	if err := extract(tmp, data); err != nil {
		os.RemoveAll(tmp)
		return nil, f.fail(r.URL, "chart %s %s from %s: %w", chart, cv.Version, repocreds.RedactURL(r.URL), err)
	}
	if _, err := os.Stat(filepath.Join(tmp, base, "Chart.yaml")); err != nil {
		os.RemoveAll(tmp)
		return nil, f.fail(r.URL, "chart %s %s from %s: the archive has no %s/Chart.yaml", chart, cv.Version, repocreds.RedactURL(r.URL), base)
	}
	os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("chart cache: %w", err)
	}
	f.evict()
	return &Chart{Dir: filepath.Join(dir, base), Name: chart, Version: cv.Version, Digest: cv.Digest}, nil
}

// Archive returns the archive of chart at a version satisfying constraint from repository (a URL, or "@name" /
// "alias:name" naming an allowed repository), as `helm dependency build` downloads a dependency; and the version.
func (f *Fetcher) Archive(ctx context.Context, repository, chart, constraint string) ([]byte, string, error) {
	if isNativeOCI(repository) {
		return f.ociDependency(ctx, repository, chart, constraint)
	}
	repoURL := repository
	if name, ok := repoAlias(repository); ok {
		r, found := f.opts.Repos.ByName(name)
		if !found {
			return nil, "", &Error{Repo: repository, Err: fmt.Errorf("not rendered: repository %s names no repository in the allowed repositories: %w", repository, ErrNotAllowed)}
		}
		repoURL = r.URL
	} else if _, ok := f.opts.Repos.Lookup(repoURL); !ok {
		// helm's downloader compares repository URLs without a trailing slash (internal/urlutil Equal).
		repoURL = strings.TrimSuffix(repoURL, "/")
	}
	r, err := f.Repository(repoURL)
	if err != nil {
		return nil, "", err
	}
	cv, err := f.resolveConstraint(ctx, r, chart, constraint)
	if err != nil {
		return nil, "", err
	}
	key := cacheKey(r.URL, chart, cv.Version, cv.Digest)
	lock := f.keyLock(key)
	lock.Lock()
	defer lock.Unlock()
	data, err := f.archive(ctx, r, cv, key)
	if err != nil {
		return nil, "", err
	}
	if err := scanArchive(data, nil); err != nil {
		return nil, "", f.fail(r.URL, "chart %s %s from %s: %w", chart, cv.Version, repocreds.RedactURL(r.URL), err)
	}
	f.evict()
	return data, cv.Version, nil
}

func repoAlias(repository string) (string, bool) {
	if n, ok := strings.CutPrefix(repository, "@"); ok {
		return n, true
	}
	if n, ok := strings.CutPrefix(repository, "alias:"); ok {
		return n, true
	}
	return "", false
}

func (f *Fetcher) keyLock(key string) *sync.Mutex {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.keys[key]
	if !ok {
		l = &sync.Mutex{}
		f.keys[key] = l
	}
	return l
}

// normalizeChartName is util/helm/client.go normalizeChartName: the directory the chart extracts to.
func normalizeChartName(chart string) string {
	_, nc := path.Split(chart)
	if nc == "" || nc == "." || nc == ".." {
		return chart
	}
	return nc
}

var versionIn = regexp.MustCompile(`\d+(\.\d+){0,2}`)

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// cacheKey names a chart's cache entry: readable chart name and version, then a hash of everything that
// identifies it (the chart name comes from pull-request content, so it never forms a path by itself).
func cacheKey(repoURL, chart, version, digest string) string {
	h := sha256.Sum256([]byte(repocreds.NormalizeURL(repoURL) + "\x00" + chart + "\x00" + version + "\x00" + digest))
	label := unsafeName.ReplaceAllString(normalizeChartName(chart)+"-"+version, "_")
	if len(label) > 64 {
		label = label[:64]
	}
	return strings.TrimLeft(label, ".") + "-" + hex.EncodeToString(h[:12])
}

// resolve is newHelmClientResolveRevision followed by helm pull's lookup.
func (f *Fetcher) resolve(ctx context.Context, r repocreds.Repository, chart, revision string) (*repo.ChartVersion, error) {
	if revision == "" {
		// An empty targetRevision is helm pull without --version: the latest stable version.
		return f.resolveConstraint(ctx, r, chart, "")
	}
	if _, err := semver.NewVersion(revision); err == nil {
		return f.resolveConstraint(ctx, r, chart, revision)
	}
	idx, err := f.index(ctx, r)
	if err != nil {
		return nil, err
	}
	entries, ok := idx.Entries[chart]
	if !ok || len(entries) == 0 {
		return nil, f.fail(r.URL, "chart %q not found in repository %s (%s): %w", chart, repocreds.RedactURL(r.URL), nearestCharts(idx, chart), ErrNotFound)
	}
	tags := make([]string, 0, len(entries))
	for _, e := range entries {
		tags = append(tags, e.Version)
	}
	v, err := versions.MaxVersion(revision, tags, "") // no tag prefix for charts (reposerver/repository/repository.go, v3.6)
	if err != nil {
		return nil, f.fail(r.URL, "chart %q: no version matching %q in repository %s (%s): %w", chart, revision, repocreds.RedactURL(r.URL), nearestVersions(entries, revision), ErrNotFound)
	}
	return f.resolveConstraint(ctx, r, chart, v)
}

// resolveConstraint is helm's pkg/repo IndexFile.Get on the repository's index: an exact version, or the highest
// satisfying a constraint ("" = the latest without a prerelease).
func (f *Fetcher) resolveConstraint(ctx context.Context, r repocreds.Repository, chart, version string) (*repo.ChartVersion, error) {
	idx, err := f.index(ctx, r)
	if err != nil {
		return nil, err
	}
	entries, ok := idx.Entries[chart]
	if !ok || len(entries) == 0 {
		return nil, f.fail(r.URL, "chart %q not found in repository %s (%s): %w", chart, repocreds.RedactURL(r.URL), nearestCharts(idx, chart), ErrNotFound)
	}
	cv, err := idx.Get(chart, version)
	if err != nil || len(cv.URLs) == 0 {
		what := "version " + version
		if version == "" {
			what = "a stable version"
		}
		return nil, f.fail(r.URL, "chart %q: %s not found in repository %s (%s): %w", chart, what, repocreds.RedactURL(r.URL), nearestVersions(entries, version), ErrNotFound)
	}
	return cv, nil
}

// nearestVersions names up to 3 versions on each side of the requested one (of a constraint's first version;
// the newest 5 when there is none).
func nearestVersions(entries repo.ChartVersions, requested string) string {
	type ver struct {
		s string
		v *semver.Version
	}
	var vs []ver
	for _, e := range entries {
		if v, err := semver.NewVersion(e.Version); err == nil {
			vs = append(vs, ver{e.Version, v})
		}
	}
	if len(vs) == 0 {
		return "no versions available"
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i].v.LessThan(vs[j].v) })
	var pick []ver
	pivot := requested
	if _, err := semver.NewVersion(pivot); err != nil {
		pivot = versionIn.FindString(requested) // a constraint: around its first version
	}
	if want, err := semver.NewVersion(pivot); err == nil {
		i := sort.Search(len(vs), func(i int) bool { return !vs[i].v.LessThan(want) })
		lo, hi := max(i-3, 0), min(i+3, len(vs))
		pick = vs[lo:hi]
	} else {
		pick = vs[max(len(vs)-5, 0):]
	}
	names := make([]string, len(pick))
	for i, p := range pick {
		names[i] = p.s
	}
	return "nearest available versions: " + strings.Join(names, ", ")
}

// nearestCharts names charts of the index whose names share the requested one's prefix, or say how many there are.
func nearestCharts(idx *repo.IndexFile, chart string) string {
	var names []string
	for n := range idx.Entries {
		if strings.Contains(n, chart) || strings.Contains(chart, n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	if len(names) > 5 {
		names = names[:5]
	}
	if len(names) == 0 {
		return fmt.Sprintf("the index lists %d charts", len(idx.Entries))
	}
	return "similar charts: " + strings.Join(names, ", ")
}

// index returns the repository's index, fetched at most once per IndexTTL.
func (f *Fetcher) index(ctx context.Context, r repocreds.Repository) (*repo.IndexFile, error) {
	norm := repocreds.NormalizeURL(r.URL)
	f.mu.Lock()
	m, ok := f.indexes[norm]
	if !ok {
		m = &indexMemo{}
		f.indexes[norm] = m
	}
	f.mu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	ttl := f.opts.IndexTTL
	if m.err != nil {
		// A failure is remembered briefly: the apps of one preview share it instead of each waiting for the
		// same timeout, and the next preview asks again.
		ttl = min(ttl, errorTTL)
	}
	if m.fetched && time.Since(m.at) < ttl {
		return m.idx, m.err
	}
	idx, err := f.fetchIndex(ctx, r)
	if err != nil && ctx.Err() != nil {
		return nil, err // not memoised: the next render may have more time
	}
	m.idx, m.err, m.at, m.fetched = idx, err, time.Now(), true
	return idx, err
}

// fetchIndex downloads <repo>/index.yaml (helm's ChartRepository.DownloadIndexFile), revalidating the copy on
// disk, and parses it with helm's repo.LoadIndexFile.
func (f *Fetcher) fetchIndex(ctx context.Context, r repocreds.Repository) (*repo.IndexFile, error) {
	indexURL, err := repo.ResolveReferenceURL(r.URL, "index.yaml")
	if err != nil {
		return nil, f.fail(r.URL, "repository %s: %v", repocreds.RedactURL(r.URL), err)
	}
	h := sha256.Sum256([]byte(repocreds.NormalizeURL(r.URL)))
	file := filepath.Join(f.dir, "index", hex.EncodeToString(h[:16])+".yaml")
	validators, _ := os.ReadFile(file + ".etag")
	header := http.Header{}
	if len(validators) > 0 {
		if _, err := os.Stat(file); err == nil {
			etag, modified, _ := strings.Cut(string(validators), "\n")
			if etag != "" {
				header.Set("If-None-Match", etag)
			}
			if modified != "" {
				header.Set("If-Modified-Since", modified)
			}
		}
	}
	f.count("index")
	body, resp, err := f.get(ctx, r, indexURL, header, f.opts.MaxIndexBytes, "index.yaml")
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusNotModified {
		f.count("index-304")
	} else {
		tmp := file + ".tmp"
		if err := os.WriteFile(tmp, body, 0o600); err != nil {
			return nil, fmt.Errorf("chart cache: %w", err)
		}
		if err := os.Rename(tmp, file); err != nil {
			return nil, fmt.Errorf("chart cache: %w", err)
		}
		v := resp.Header.Get("ETag") + "\n" + resp.Header.Get("Last-Modified")
		if strings.TrimSpace(v) != "" {
			_ = os.WriteFile(file+".etag", []byte(v), 0o600)
		} else {
			_ = os.Remove(file + ".etag")
		}
	}
	idx, err := repo.LoadIndexFile(file)
	if err != nil {
		return nil, f.fail(r.URL, "repository %s: index.yaml: %v", repocreds.RedactURL(r.URL), err)
	}
	return idx, nil
}

// archive downloads the chart archive of cv (or reads it from the cache) and checks its digest.
func (f *Fetcher) archive(ctx context.Context, r repocreds.Repository, cv *repo.ChartVersion, key string) ([]byte, error) {
	file := filepath.Join(f.dir, "charts", key+".tgz")
	if data, err := os.ReadFile(file); err == nil && digestOK(data, cv.Digest) {
		f.count("cache-hit") // served from the cache: no download
		touch(file)
		return data, nil
	}
	u, err := repo.ResolveReferenceURL(r.URL, cv.URLs[0])
	if err != nil {
		return nil, f.fail(r.URL, "chart %s %s: %v", cv.Name, cv.Version, err)
	}
	f.count("archive")
	data, _, err := f.get(ctx, r, u, nil, f.opts.MaxArchiveBytes, fmt.Sprintf("chart %s %s", cv.Name, cv.Version))
	if err != nil {
		return nil, err
	}
	if !digestOK(data, cv.Digest) {
		return nil, f.fail(r.URL, "chart %s %s from %s: %w (digest-mismatch): the archive's sha256 is not the index's %s",
			cv.Name, cv.Version, repocreds.RedactURL(r.URL), ErrRefused, cv.Digest)
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err == nil {
		_ = os.Rename(tmp, file)
	}
	return data, nil
}

func digestOK(data []byte, digest string) bool {
	if digest == "" {
		return true
	}
	sum := sha256.Sum256(data)
	return strings.EqualFold(strings.TrimPrefix(digest, "sha256:"), hex.EncodeToString(sum[:]))
}

// get makes one bounded GET; the body is refused beyond limit bytes. 304 returns no body.
func (f *Fetcher) get(ctx context.Context, r repocreds.Repository, rawURL string, header http.Header, limit int64, what string) ([]byte, *http.Response, error) {
	client, err := f.client(r, false)
	if err != nil {
		return nil, nil, f.fail(r.URL, "repository %s: %v", repocreds.RedactURL(r.URL), err)
	}
	ctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, nil, f.fail(r.URL, "repository %s: %v", repocreds.RedactURL(r.URL), err)
	}
	shown := repocreds.RedactURL(rawURL)
	if req.URL.User != nil { // user information in an index's archive URL: never sent, never printed
		req.URL.User = nil
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("User-Agent", "fleetwave (Helm/v3)")
	if !r.PassCredentials && !repocreds.SameHost(r.URL, rawURL) {
		// An index.yaml may place an archive on any host: helm sends the repository's credentials there only with
		// --pass-credentials (helm.sh/helm/v3 pkg/getter/httpgetter.go get: basic auth only when scheme and host
		// equal the repository URL's, unless passCredentialsAll). Neither basic auth nor the client certificate
		// goes there unless the repository Secret says passCredentials: "true".
		r = withoutCredentials(r)
		if client, err = f.client(r, false); err != nil {
			return nil, nil, f.fail(r.URL, "repository %s: %v", repocreds.RedactURL(r.URL), err)
		}
	}
	if r.Username != "" || r.Password != "" {
		req.SetBasicAuth(r.Username, r.Password)
	} else if u, err := url.Parse(r.URL); err == nil && u.User != nil {
		p, _ := u.User.Password()
		req.SetBasicAuth(u.User.Username(), p)
	}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, errOtherHost) {
			return nil, nil, f.fail(r.URL, "%s from %s: %w (redirect): %v", what, shown, ErrRefused, errOtherHost)
		}
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, nil, f.fail(r.URL, "%s from %s: %w (timeout): no answer within %s", what, shown, context.DeadlineExceeded, f.opts.Timeout)
		}
		return nil, nil, f.fail(r.URL, "%s from %s: %v", what, shown, stripURL(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotModified && header != nil {
		return nil, resp, nil
	}
	if resp.StatusCode != http.StatusOK {
		hint := ""
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			hint = " (check the credentials of its repository Secret)"
		}
		return nil, nil, f.fail(r.URL, "%s from %s: the repository answered %s%s", what, shown, resp.Status, hint)
	}
	if resp.ContentLength > limit {
		return nil, nil, f.fail(r.URL, "%s from %s: %w (size): %d bytes, over the cap of %d", what, shown, ErrRefused, resp.ContentLength, limit)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, f.fail(r.URL, "%s from %s: %w (timeout): not read within %s", what, shown, context.DeadlineExceeded, f.opts.Timeout)
		}
		return nil, nil, f.fail(r.URL, "%s from %s: %v", what, shown, stripURL(err))
	}
	if int64(len(body)) > limit {
		return nil, nil, f.fail(r.URL, "%s from %s: %w (size): over the cap of %d bytes", what, shown, ErrRefused, limit)
	}
	return body, resp, nil
}

// withoutCredentials is r with no credential of any kind (basic auth, user information in its URL, client
// certificate).
func withoutCredentials(r repocreds.Repository) repocreds.Repository {
	r.Username, r.Password, r.TLSClientCertData, r.TLSClientCertKey = "", "", "", ""
	r.URL = repocreds.RedactURL(r.URL)
	return r
}

// stripURL drops the URL net/http puts in its errors (printed already, without credentials).
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

var errOtherHost = errors.New("the repository redirected to another host")

// client returns the HTTP client of a repository: its TLS settings, no redirect to another host (helm sends
// credentials only to the repository's host unless passCredentials; refusing the redirect keeps them there). An
// OCI registry's client may follow a blob download to another host (without credentials: net/http drops
// Authorization across hosts), and caps each request at Timeout.
func (f *Fetcher) client(r repocreds.Repository, oci bool) (*http.Client, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := repocreds.NormalizeURL(r.URL)
	if oci {
		key = "oci\x00" + key
	}
	if r.HasCredentials() { // its credential-less twin (withoutCredentials) is another client
		key += "\x00credentials"
	}
	if c, ok := f.clients[key]; ok {
		return c, nil
	}
	var tr *http.Transport
	if f.opts.Transport != nil {
		tr = f.opts.Transport.Clone()
	} else {
		tr = http.DefaultTransport.(*http.Transport).Clone()
	}
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	if tr.TLSClientConfig != nil {
		tlsConf = tr.TLSClientConfig.Clone()
	}
	if r.Insecure {
		tlsConf.InsecureSkipVerify = true //nolint:gosec // the operator's repository Secret says insecure: true, as Argo CD honours it
	}
	// argocd-tls-certs-cm's certificate authorities for the host replace the system's, as util/helm/client.go and
	// util/oci/client.go newTLSConfig set RootCAs to them alone (and helm pull gets them as --ca-file).
	if pem := f.opts.Repos.CertificateAuthorities(r.URL); pem != nil {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		tlsConf.RootCAs = pool
	}
	// A client certificate needs both halves, as newTLSConfig applies one only when both are set.
	if r.TLSClientCertData != "" && r.TLSClientCertKey != "" {
		cert, err := tls.X509KeyPair([]byte(r.TLSClientCertData), []byte(r.TLSClientCertKey))
		if err != nil {
			return nil, errors.New("the repository Secret's tlsClientCertData/tlsClientCertKey are not a valid certificate and key")
		}
		tlsConf.Certificates = []tls.Certificate{cert}
	}
	tr.TLSClientConfig = tlsConf
	host, err := repositoryHost(r.URL)
	if err != nil {
		return nil, err
	}
	c := &http.Client{
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			if !strings.EqualFold(req.URL.Host, host) && !(oci && isBlobRequest(via[0])) {
				return errOtherHost
			}
			return nil
		},
	}
	if oci {
		c.Timeout = f.opts.Timeout
	}
	f.clients[key] = c
	return c, nil
}

// scanArchive checks every entry of a chart archive, and hands each regular file to fn (name without the top
// directory's prefix removed). It refuses what util/helm/client.go untarChart (util/io/files Untgz) and helm's
// loader.LoadArchiveFiles refuse, and more: absolute names, names that climb out with "..", links of any kind,
// devices and fifos, a decompressed size over loader.MaxDecompressedChartSize or a file over
// loader.MaxDecompressedFileSize.
func scanArchive(data []byte, fn func(name string, mode fs.FileMode, body []byte) error) error {
	return scanTar(data, true, loader.MaxDecompressedChartSize, loader.MaxDecompressedFileSize, fn)
}

// scanTar is scanArchive for a tar archive, gzipped or not, decompressing to at most maxTotal bytes with no file
// over maxFile.
func scanTar(data []byte, gzipped bool, maxTotal, maxFile int64, fn func(name string, mode fs.FileMode, body []byte) error) error {
	var in io.Reader = bytes.NewReader(data)
	if gzipped {
		zr, err := gzip.NewReader(in)
		if err != nil {
			return fmt.Errorf("the archive is not gzip: %v", err)
		}
		defer zr.Close()
		in = zr
	}
	tr := tar.NewReader(in)
	remaining := maxTotal
	for {
		hd, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("the archive is not a valid tar: %v", err)
		}
		name := strings.ReplaceAll(hd.Name, "\\", "/")
		switch {
		case path.IsAbs(name) || filepath.IsAbs(hd.Name) || (len(name) > 1 && name[1] == ':'):
			return fmt.Errorf("%w (hostile-archive): entry %q is an absolute path", ErrRefused, hd.Name)
		case name == ".." || strings.HasPrefix(name, "../") || strings.Contains(name, "/../") || strings.HasSuffix(name, "/.."):
			return fmt.Errorf("%w (hostile-archive): entry %q climbs out of the chart (..)", ErrRefused, hd.Name)
		}
		switch hd.Typeflag {
		case tar.TypeDir, tar.TypeXGlobalHeader, tar.TypeXHeader:
			continue
		case tar.TypeReg: // the reader reports old TypeRegA entries as TypeReg
		case tar.TypeSymlink, tar.TypeLink:
			return fmt.Errorf("%w (hostile-archive): entry %q is a link", ErrRefused, hd.Name)
		default:
			return fmt.Errorf("%w (hostile-archive): entry %q is not a regular file", ErrRefused, hd.Name)
		}
		if hd.Size > maxFile {
			return fmt.Errorf("%w (size): entry %q is larger than %d bytes", ErrRefused, hd.Name, maxFile)
		}
		if hd.Size > remaining {
			return fmt.Errorf("%w (size): the archive decompresses to more than %d bytes", ErrRefused, maxTotal)
		}
		body, err := io.ReadAll(io.LimitReader(tr, hd.Size+1))
		if err != nil {
			return fmt.Errorf("the archive is not a valid tar: %v", err)
		}
		if int64(len(body)) > hd.Size {
			return fmt.Errorf("the archive is not a valid tar: entry %q is longer than its header says", hd.Name)
		}
		remaining -= int64(len(body))
		if fn != nil {
			if err := fn(path.Clean(name), hd.FileInfo().Mode(), body); err != nil {
				return err
			}
		}
	}
}

// extract writes the archive's regular files under dir, after scanArchive's checks.
func extract(dir string, data []byte) error {
	return scanArchive(data, writeUnder(dir))
}

// writeUnder returns the scanTar callback that writes each file under dir.
func writeUnder(dir string) func(name string, mode fs.FileMode, body []byte) error {
	return func(name string, mode fs.FileMode, body []byte) error {
		target := filepath.Join(dir, filepath.FromSlash(name))
		if rel, err := filepath.Rel(dir, target); err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			return fmt.Errorf("%w (hostile-archive): entry %q resolves outside the chart", ErrRefused, name)
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
			return err
		}
		perm := mode.Perm()&0o755 | 0o600
		return os.WriteFile(target, body, perm)
	}
}

func touch(p string) {
	now := time.Now()
	_ = os.Chtimes(p, now, now)
}

// evict removes the least recently used charts (archive and extracted directory) until the cache holds at most
// MaxCacheBytes. Entries used within the last minute stay, as a render may be reading them.
func (f *Fetcher) evict() {
	root := filepath.Join(f.dir, "charts")
	ents, err := os.ReadDir(root)
	if err != nil {
		return
	}
	type entry struct {
		paths []string
		size  int64
		used  time.Time
	}
	byKey := map[string]*entry{}
	var total int64
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		key := strings.TrimSuffix(name, ".tgz")
		p := filepath.Join(root, name)
		var size int64
		_ = filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if fi, err := d.Info(); err == nil {
					size += fi.Size()
				}
			}
			return nil
		})
		fi, err := e.Info()
		if err != nil {
			continue
		}
		en := byKey[key]
		if en == nil {
			en = &entry{}
			byKey[key] = en
		}
		en.paths = append(en.paths, p)
		en.size += size
		if fi.ModTime().After(en.used) {
			en.used = fi.ModTime()
		}
		total += size
	}
	if total <= f.opts.MaxCacheBytes {
		return
	}
	list := make([]*entry, 0, len(byKey))
	for _, e := range byKey {
		list = append(list, e)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].used.Before(list[j].used) })
	for _, e := range list {
		if total <= f.opts.MaxCacheBytes {
			return
		}
		if time.Since(e.used) < time.Minute {
			continue
		}
		for _, p := range e.paths {
			_ = os.RemoveAll(p)
		}
		total -= e.size
	}
}

// repositoryHost is the host credentials may be sent to: the URL's, or for an OCI reference without a scheme its
// first element.
func repositoryHost(repoURL string) (string, error) {
	if isNativeOCI(repoURL) || !strings.Contains(repoURL, "://") {
		h, _, _ := strings.Cut(strings.TrimPrefix(repoURL, "oci://"), "/")
		return h, nil
	}
	u, err := url.Parse(repoURL)
	if err != nil {
		return "", errors.New("the repository URL does not parse")
	}
	return u.Host, nil
}

// isBlobRequest reports a registry's blob download (GET /v2/<name>/blobs/<digest>), which registries redirect to
// their storage.
func isBlobRequest(req *http.Request) bool {
	return req.Method == http.MethodGet && strings.HasPrefix(req.URL.Path, "/v2/") && strings.Contains(req.URL.Path, "/blobs/")
}
