package chartfetch

// OCI registries, read the way Argo CD v3.2.11's repo-server reads them:
//
//   - Helm charts in an OCI registry (an `enableOCI` repository, or any repoURL without a scheme:
//     util/helm/client.go IsHelmOciRepo, reposerver/repository/repository.go newHelmClientResolveRevision). An exact
//     version (util/versions IsVersion) is pulled as written; otherwise the repository's tags are listed
//     (util/helm/client.go GetTags: `_` read back as `+`) and the highest satisfying the constraint is chosen
//     (util/versions/tags.go MaxVersion). The chart is then pulled as `helm pull oci://<repoURL>/<chart> --version`
//     pulls it (util/helm/cmd.go PullOCI; helm's pkg/registry Client.Pull): the manifest's config must be Helm's,
//     and its one chart layer is the chart archive. Always over HTTPS: Argo CD passes no --plain-http for Helm
//     OCI repositories, only --insecure-skip-tls-verify for `insecure`.
//   - Dependencies on `oci://` repositories, as `helm dependency build` resolves them (helm's pkg/registry
//     ValidateReference and GetTagMatchingVersionOrConstraint).
//   - Native OCI sources (`repoURL: oci://…` with a path, util/oci/client.go): the revision is resolved as a tag or
//     digest, else as a semver constraint over the tags (ResolveRevision); the manifest may have at most 10 layers,
//     exactly one content layer (a tar, tar+gzip or tar.gzip media type) whose media type is one of the allowed
//     ones (argocd-repo-server --oci-layer-media-types), extracted as the source's root; a Helm chart layer's single
//     top directory becomes the root (compressedLayerExtracterStore.Push). `insecureOCIForceHttp` reaches the
//     registry over plain HTTP (GetOCICreds InsecureHTTPOnly).
//
// Everything is cached by manifest digest. A tag is resolved to its manifest at most once per IndexTTL, and the
// tags of a repository listed at most once per IndexTTL, so the renders of one preview ask once; a chart whose
// manifest digest is on disk is not downloaded again. Stricter than Argo CD: links in a layer are refused (Argo CD
// keeps links that stay inside the directory), and a blob redirected to another host (registries serve blobs from
// storage hosts) is fetched without credentials (net/http drops Authorization on a redirect to another host) and
// checked against its digest; any other redirect to another host is refused.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/argoproj/argo-cd/v3/util/versions"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/repo"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"

	"github.com/fleetwave/fleetwave/internal/edge/repocreds"
)

// Defaults of the OCI options.
const (
	// DefaultMaxManifestBytes caps a manifest or a page of tags (oras-go's default MaxMetadataBytes).
	DefaultMaxManifestBytes = 4 << 20
	// DefaultMaxExtractedBytes caps what a native OCI source's layer decompresses to (argocd-repo-server
	// --oci-manifest-max-extracted-size, default 1G).
	DefaultMaxExtractedBytes = 1 << 30
	// maxOCILayers is util/oci/client.go Extract's guard.
	maxOCILayers = 10
	// maxTags bounds the tags read from one repository.
	maxTags = 100000
)

// DefaultOCILayerMediaTypes are argocd-repo-server's default --oci-layer-media-types.
var DefaultOCILayerMediaTypes = []string{
	"application/vnd.oci.image.layer.v1.tar",
	"application/vnd.oci.image.layer.v1.tar+gzip",
	"application/vnd.cncf.helm.chart.content.v1.tar+gzip",
}

// isHelmOCIRepo is util/helm/client.go IsHelmOciRepo: a repoURL without a scheme names an OCI registry.
func isHelmOCIRepo(repoURL string) bool {
	if repoURL == "" {
		return false
	}
	u, err := url.Parse(repoURL)
	return err == nil && u.Host == ""
}

// isNativeOCI is v1alpha1.ApplicationSource.IsOCI.
func isNativeOCI(repoURL string) bool { return strings.HasPrefix(repoURL, "oci://") }

// ociMemo remembers a tag's manifest or a repository's tags for IndexTTL.
type ociMemo struct {
	mu       sync.Mutex
	at       time.Time
	manifest []byte
	desc     ocispec.Descriptor
	tags     []string
	err      error
	fetched  bool
}

func (f *Fetcher) ociMemo(key string) *ociMemo {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.oci == nil {
		f.oci = map[string]*ociMemo{}
	}
	m, ok := f.oci[key]
	if !ok {
		if len(f.oci) >= maxOCIMemos {
			f.sweepOCIMemos()
		}
		m = &ociMemo{}
		f.oci[key] = m
	}
	return m
}

// maxOCIMemos is how many tag lists and manifests are remembered before stale ones are dropped: the references
// come from pull requests, so their number is not the operator's.
const maxOCIMemos = 4096

// sweepOCIMemos drops the memos older than IndexTTL that no fetch is using (f.mu held).
func (f *Fetcher) sweepOCIMemos() {
	for k, m := range f.oci {
		if !m.mu.TryLock() {
			continue
		}
		stale := !m.fetched || time.Since(m.at) >= f.opts.IndexTTL
		m.mu.Unlock()
		if stale {
			delete(f.oci, k)
		}
	}
}

func (m *ociMemo) fresh(ttl time.Duration) bool {
	if m.err != nil {
		ttl = min(ttl, errorTTL)
	}
	return m.fetched && time.Since(m.at) < ttl
}

// ociRepository returns the oras client of one repository (registry host + path) with the repository's TLS
// settings and credentials.
func (f *Fetcher) ociRepository(r repocreds.Repository, ref string, plainHTTP bool) (*remote.Repository, error) {
	rr, err := remote.NewRepository(ref)
	if err != nil {
		return nil, fmt.Errorf("%q is not an OCI repository reference", ref)
	}
	client, err := f.client(r, true)
	if err != nil {
		return nil, err
	}
	rr.PlainHTTP = plainHTTP
	rr.MaxMetadataBytes = f.opts.MaxManifestBytes
	username, password := r.Username, r.Password
	rr.Client = &auth.Client{
		Client: client,
		Header: http.Header{"User-Agent": {"fleetwave (Helm/v3)"}},
		Cache:  f.ociAuthCache(r),
		// util/oci/client.go NewClientWithLock: the repository's credentials for its registry only.
		Credential: auth.StaticCredential(rr.Reference.Registry, auth.Credential{Username: username, Password: password}),
	}
	return rr, nil
}

func (f *Fetcher) ociAuthCache(r repocreds.Repository) auth.Cache {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := repocreds.NormalizeURL(r.URL) + "\x00" + r.Username
	if f.ociAuth == nil {
		f.ociAuth = map[string]auth.Cache{}
	}
	c, ok := f.ociAuth[key]
	if !ok {
		c = auth.NewCache()
		f.ociAuth[key] = c
	}
	return c
}

// ociRef is the registry reference of a Helm OCI chart: util/helm/client.go GetTags's
// `<repoURL>/<chart>` with an "https://" removed.
func ociRef(repoURL, chart string) string {
	base := strings.TrimSuffix(strings.Replace(strings.TrimPrefix(repoURL, "oci://"), "https://", "", 1), "/")
	if chart == "" {
		return base
	}
	return base + "/" + chart
}

// ociTags lists a repository's tags once per IndexTTL, `_` read back as `+` (GetTags).
func (f *Fetcher) ociTags(ctx context.Context, r repocreds.Repository, rr *remote.Repository, ref string) ([]string, error) {
	m := f.ociMemo("tags\x00" + ref)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fresh(f.opts.IndexTTL) {
		return m.tags, m.err
	}
	f.count("oci-tags")
	var tags []string
	err := rr.Tags(ctx, "", func(page []string) error {
		for _, t := range page {
			tags = append(tags, strings.ReplaceAll(t, "_", "+"))
		}
		if len(tags) > maxTags {
			return fmt.Errorf("%w (size): more than %d tags", ErrRefused, maxTags)
		}
		return nil
	})
	if err != nil {
		err = f.ociFail(r, ref, "listing the tags", err)
		if ctx.Err() != nil {
			return nil, err
		}
	}
	m.tags, m.err, m.at, m.fetched = tags, err, time.Now(), true
	return tags, err
}

// ociManifest resolves a tag (or digest) to its manifest, once per IndexTTL.
func (f *Fetcher) ociManifest(ctx context.Context, r repocreds.Repository, rr *remote.Repository, ref, tag string) (ocispec.Descriptor, *ocispec.Manifest, error) {
	m := f.ociMemo("manifest\x00" + ref + "\x00" + tag)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.fresh(f.opts.IndexTTL) {
		f.count("oci-manifest")
		desc, rc, err := rr.Manifests().FetchReference(ctx, tag)
		var body []byte
		if err == nil {
			// oras checks MaxMetadataBytes when fetching by digest, not by tag: the size is checked here.
			if desc.Size > f.opts.MaxManifestBytes {
				err = fmt.Errorf("%w (size): %d bytes, over the cap of %d bytes", ErrRefused, desc.Size, f.opts.MaxManifestBytes)
			} else {
				body, err = content.ReadAll(rc, desc)
			}
			rc.Close()
		}
		if err != nil {
			err = f.ociFail(r, ref, "manifest "+tag, err)
			if ctx.Err() != nil {
				return ocispec.Descriptor{}, nil, err
			}
		}
		m.desc, m.manifest, m.err, m.at, m.fetched = desc, body, err, time.Now(), true
	}
	if m.err != nil {
		return ocispec.Descriptor{}, nil, m.err
	}
	var man ocispec.Manifest
	if err := json.Unmarshal(m.manifest, &man); err != nil {
		return ocispec.Descriptor{}, nil, f.fail(r.URL, "%s:%s from %s: the manifest is not an OCI image manifest", ref, tag, repocreds.RedactURL(r.URL))
	}
	return m.desc, &man, nil
}

// ociFail turns a registry error into one line without credentials or request URLs.
func (f *Fetcher) ociFail(r repocreds.Repository, ref, what string, err error) error {
	var er *errcode.ErrorResponse
	switch {
	case errors.Is(err, ErrRefused):
		return f.fail(r.URL, "%s %s: %w", ref, what, err)
	case errors.Is(err, errOtherHost):
		return f.fail(r.URL, "%s %s: %w (redirect): %v", ref, what, ErrRefused, errOtherHost)
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return f.fail(r.URL, "%s %s: %w (timeout): no answer within %s", ref, what, context.DeadlineExceeded, f.opts.Timeout)
	case errors.As(err, &er):
		switch er.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			return f.fail(r.URL, "%s %s: the registry answered %d %s (check the credentials of its repository Secret)",
				ref, what, er.StatusCode, http.StatusText(er.StatusCode))
		case http.StatusNotFound:
			return f.fail(r.URL, "%s %s: %w: the registry answered 404 Not Found", ref, what, ErrNotFound)
		}
		return f.fail(r.URL, "%s %s: the registry answered %d %s", ref, what, er.StatusCode, http.StatusText(er.StatusCode))
	case strings.Contains(err.Error(), "exceeds limit") || strings.Contains(err.Error(), "size limit"):
		return f.fail(r.URL, "%s %s: %w (size): over the cap of %d bytes", ref, what, ErrRefused, f.opts.MaxManifestBytes)
	}
	if strings.Contains(err.Error(), ": not found") {
		return f.fail(r.URL, "%s %s: %w", ref, what, ErrNotFound)
	}
	return f.fail(r.URL, "%s %s: %v", ref, what, stripURL(err))
}

func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

// nearestTags is nearestVersions over a repository's tags.
func nearestTags(tags []string, requested string) string {
	entries := make(repo.ChartVersions, 0, len(tags))
	for _, t := range tags {
		entries = append(entries, &repo.ChartVersion{Metadata: &chart.Metadata{Version: t}})
	}
	return nearestVersions(entries, requested)
}

// ociChart fetches a Helm chart from an OCI registry (Chart for an enableOCI or scheme-less repository).
func (f *Fetcher) ociChart(ctx context.Context, r repocreds.Repository, repoURL, chart, revision string) (*Chart, error) {
	ref := ociRef(repoURL, chart)
	rr, err := f.ociRepository(r, ref, false)
	if err != nil {
		return nil, f.fail(r.URL, "repository %s: %v", repocreds.RedactURL(r.URL), err)
	}
	version := revision
	// newHelmClientResolveRevision: a version is used as written, anything else resolved over the tags.
	if _, err := semver.NewVersion(revision); err != nil {
		tags, err := f.ociTags(ctx, r, rr, ref)
		if err != nil {
			return nil, err
		}
		if version, err = versions.MaxVersion(revision, tags, ""); err != nil {
			return nil, f.fail(r.URL, "chart %q: no version matching %q in registry %s (%s): %w", chart, revision, ref, nearestTags(tags, revision), ErrNotFound)
		}
	}
	data, digest, err := f.ociChartArchive(ctx, r, rr, ref, chart, version)
	if err != nil {
		return nil, err
	}
	key := cacheKey(ref, chart, version, digest)
	// The extraction is one at a time per key (the archive's own lock is ociBlob's, already released).
	lock := f.keyLock(key + "/dir")
	lock.Lock()
	defer lock.Unlock()
	base := normalizeChartName(chart)
	dir := filepath.Join(f.dir, "charts", key)
	if st, err := os.Stat(filepath.Join(dir, base, "Chart.yaml")); err == nil && st.Mode().IsRegular() {
		f.count("cache-hit") // served from the cache: no download
		touch(dir)
		return &Chart{Dir: filepath.Join(dir, base), Name: chart, Version: version, Digest: digest}, nil
	}
	tmp, err := os.MkdirTemp(filepath.Join(f.dir, "charts"), ".extract-")
	if err != nil {
		return nil, fmt.Errorf("chart cache: %w", err)
	}
	if err := extract(tmp, data); err != nil {
		os.RemoveAll(tmp)
		return nil, f.fail(r.URL, "chart %s %s from %s: %w", chart, version, ref, err)
	}
	if _, err := os.Stat(filepath.Join(tmp, base, "Chart.yaml")); err != nil {
		os.RemoveAll(tmp)
		return nil, f.fail(r.URL, "chart %s %s from %s: the archive has no %s/Chart.yaml", chart, version, ref, base)
	}
	return f.install(tmp, dir, filepath.Join(dir, base), chart, version, digest)
}

// install moves an extracted tree into the cache.
func (f *Fetcher) install(tmp, dir, chartDir, name, version, digest string) (*Chart, error) {
	os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("chart cache: %w", err)
	}
	f.evict()
	return &Chart{Dir: chartDir, Name: name, Version: version, Digest: digest}, nil
}

// ociChartArchive pulls the chart archive tagged version (helm's Client.Pull with the tag's `+` written `_`), from
// the cache when its manifest digest is there; it returns the archive and the manifest digest.
func (f *Fetcher) ociChartArchive(ctx context.Context, r repocreds.Repository, rr *remote.Repository, ref, chart, version string) ([]byte, string, error) {
	tag := strings.ReplaceAll(version, "+", "_")
	desc, man, err := f.ociManifest(ctx, r, rr, ref, tag)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			tags, terr := f.ociTags(ctx, r, rr, ref)
			if terr == nil {
				return nil, "", f.fail(r.URL, "chart %q: version %s not found in registry %s (%s): %w", chart, version, ref, nearestTags(tags, version), ErrNotFound)
			}
			if errors.Is(terr, ErrNotFound) {
				return nil, "", f.fail(r.URL, "chart %q not found: the registry has no repository %s: %w", chart, ref, ErrNotFound)
			}
		}
		return nil, "", err
	}
	if man.Config.MediaType != registry.ConfigMediaType {
		return nil, "", f.fail(r.URL, "%s:%s: %w: the manifest's config is %q, not a Helm chart's (%s)", ref, tag, ErrRefused, man.Config.MediaType, registry.ConfigMediaType)
	}
	var layer *ocispec.Descriptor
	for i, l := range man.Layers {
		if l.MediaType == registry.ChartLayerMediaType || l.MediaType == registry.LegacyChartLayerMediaType {
			if layer != nil {
				return nil, "", f.fail(r.URL, "%s:%s: %w: the manifest has more than one chart layer", ref, tag, ErrRefused)
			}
			layer = &man.Layers[i]
		}
	}
	if layer == nil {
		return nil, "", f.fail(r.URL, "%s:%s: %w: the manifest has no chart layer (%s)", ref, tag, ErrRefused, registry.ChartLayerMediaType)
	}
	data, err := f.ociBlob(ctx, r, rr, ref, tag, *layer, cacheKey(ref, chart, version, desc.Digest.String()))
	if err != nil {
		return nil, "", err
	}
	return data, desc.Digest.String(), nil
}

// ociBlob downloads a layer (or reads it from the cache), bounded by MaxArchiveBytes and checked against its digest.
func (f *Fetcher) ociBlob(ctx context.Context, r repocreds.Repository, rr *remote.Repository, ref, tag string, layer ocispec.Descriptor, key string) ([]byte, error) {
	if layer.Size > f.opts.MaxArchiveBytes || layer.Size < 0 {
		return nil, f.fail(r.URL, "%s:%s: %w (size): the layer is %d bytes, over the cap of %d", ref, tag, ErrRefused, layer.Size, f.opts.MaxArchiveBytes)
	}
	lock := f.keyLock(key)
	lock.Lock()
	defer lock.Unlock()
	file := filepath.Join(f.dir, "charts", key+".tgz")
	if data, err := os.ReadFile(file); err == nil && layer.Digest.Validate() == nil && layer.Digest.Verifier() != nil {
		v := layer.Digest.Verifier()
		_, _ = v.Write(data)
		if v.Verified() && int64(len(data)) == layer.Size {
			f.count("cache-hit") // served from the cache: no download
			touch(file)
			return data, nil
		}
	}
	f.count("oci-blob")
	rc, err := rr.Blobs().Fetch(ctx, layer)
	if err != nil {
		return nil, f.ociFail(r, ref, "layer of "+tag, err)
	}
	defer rc.Close()
	data, err := content.ReadAll(rc, layer) // size and digest verified
	if err != nil {
		if ctx.Err() != nil || isTimeout(err) {
			return nil, f.ociFail(r, ref, "layer of "+tag, err)
		}
		return nil, f.fail(r.URL, "%s:%s: %w (digest-mismatch): the layer is not the manifest's %s: %v", ref, tag, ErrRefused, layer.Digest, err)
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err == nil {
		_ = os.Rename(tmp, file)
	}
	return data, nil
}

// ociDependency is Archive for a dependency on an `oci://` repository: `helm dependency build` resolves an exact
// version as the tag and anything else over the tags (ValidateReference, GetTagMatchingVersionOrConstraint).
func (f *Fetcher) ociDependency(ctx context.Context, repository, chart, constraint string) ([]byte, string, error) {
	r, err := f.ociDependencyRepository(repository)
	if err != nil {
		return nil, "", err
	}
	ref := ociRef(repository, chart)
	rr, err := f.ociRepository(r, ref, false)
	if err != nil {
		return nil, "", f.fail(r.URL, "repository %s: %v", repocreds.RedactURL(r.URL), err)
	}
	version := constraint
	if _, err := semver.NewVersion(constraint); err != nil {
		tags, err := f.ociTags(ctx, r, rr, ref)
		if err != nil {
			return nil, "", err
		}
		// helm's Client.Tags: strict semver tags only, highest first.
		var vs semver.Collection
		for _, t := range tags {
			if v, err := semver.StrictNewVersion(t); err == nil {
				vs = append(vs, v)
			}
		}
		slices.SortFunc(vs, func(a, b *semver.Version) int { return b.Compare(a) })
		sorted := make([]string, len(vs))
		for i, v := range vs {
			sorted[i] = v.String()
		}
		if version, err = registry.GetTagMatchingVersionOrConstraint(sorted, constraint); err != nil {
			return nil, "", f.fail(r.URL, "dependency %q: no version matching %q in registry %s (%s): %w", chart, constraint, ref, nearestTags(tags, constraint), ErrNotFound)
		}
	}
	data, _, err := f.ociChartArchive(ctx, r, rr, ref, chart, version)
	if err != nil {
		return nil, "", err
	}
	if err := scanArchive(data, nil); err != nil {
		return nil, "", f.fail(r.URL, "chart %s %s from %s: %w", chart, version, ref, err)
	}
	f.evict()
	return data, version, nil
}

// ociDependencyRepository finds the allowed repository of an `oci://` dependency as
// reposerver/repository/repository.go getHelmDependencyRepos does: by URL with "oci://" trimmed from both, then the
// credential templates by prefix, then an OCI repository whose URL prefixes the dependency's or is prefixed by it
// (repocreds.Set.OCIDependency).
func (f *Fetcher) ociDependencyRepository(repository string) (repocreds.Repository, error) {
	trimmed := strings.TrimPrefix(repository, "oci://")
	for _, u := range []string{trimmed, repository, strings.TrimSuffix(trimmed, "/"), strings.TrimSuffix(repository, "/")} {
		if r, ok := f.opts.Repos.Lookup(u); ok {
			return r, nil
		}
	}
	if r, ok := f.opts.Repos.OCIDependency(trimmed); ok {
		return r, nil
	}
	return repocreds.Repository{}, &Error{Repo: repository, Err: fmt.Errorf("not rendered: repository %s is %w", repocreds.RedactURL(repository), ErrNotAllowed)}
}

var digestRef = regexp.MustCompile(`^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$`)

// ociArtifact fetches a native OCI source (repoURL oci://…) at revision and returns its extracted root.
func (f *Fetcher) ociArtifact(ctx context.Context, r repocreds.Repository, repoURL, revision string) (*Chart, error) {
	ref := ociRef(repoURL, "")
	rr, err := f.ociRepository(r, ref, r.InsecureOCIForceHTTP)
	if err != nil {
		return nil, f.fail(r.URL, "repository %s: %v", repocreds.RedactURL(r.URL), err)
	}
	// ResolveRevision: the revision as a tag or digest; failing that, a constraint over the tags.
	resolved := revision
	desc, man, err := f.ociManifest(ctx, r, rr, ref, revision)
	switch {
	case err != nil && versions.IsConstraint(revision):
		tags, terr := f.ociTags(ctx, r, rr, ref)
		if terr != nil {
			return nil, terr
		}
		v, verr := versions.MaxVersion(revision, tags, "") // no tag prefix for OCI (util/oci/client.go, v3.6)
		if verr != nil {
			return nil, f.fail(r.URL, "%s: no version matching %q (%s): %w", ref, revision, nearestTags(tags, revision), ErrNotFound)
		}
		resolved = v
		desc, man, err = f.ociManifest(ctx, r, rr, ref, v)
	case err != nil && errors.Is(err, ErrNotFound) && !digestRef.MatchString(revision):
		if tags, terr := f.ociTags(ctx, r, rr, ref); terr == nil {
			return nil, f.fail(r.URL, "%s: revision %q not found (%s): %w", ref, revision, nearestTags(tags, revision), ErrNotFound)
		}
	}
	if err != nil {
		return nil, err
	}
	// util/oci/client.go Extract's rules.
	if len(man.Layers) > maxOCILayers {
		return nil, f.fail(r.URL, "%s@%s: %w: expected no more than %d oci layers, got %d", ref, resolved, ErrRefused, maxOCILayers, len(man.Layers))
	}
	var layer *ocispec.Descriptor
	contentLayers := 0
	for i, l := range man.Layers {
		if !isContentLayer(l.MediaType) {
			continue
		}
		if !slices.Contains(f.opts.OCILayerMediaTypes, l.MediaType) {
			return nil, f.fail(r.URL, "%s@%s: %w: oci layer media type %s is not in the list of allowed media types", ref, resolved, ErrRefused, l.MediaType)
		}
		contentLayers++
		layer = &man.Layers[i]
	}
	if contentLayers != 1 {
		return nil, f.fail(r.URL, "%s@%s: %w: expected only a single oci content layer, got %d", ref, resolved, ErrRefused, contentLayers)
	}
	digest := desc.Digest.String()
	key := cacheKey(ref, "oci", "", digest)
	dir := filepath.Join(f.dir, "charts", key)
	lock := f.keyLock(key + "/dir") // ociBlob holds key's own lock while it downloads
	lock.Lock()
	defer lock.Unlock()
	if st, err := os.Stat(filepath.Join(dir, ".fleetwave-oci")); err == nil && st.Mode().IsRegular() {
		f.count("cache-hit") // served from the cache: no download
		touch(dir)
		return &Chart{Dir: filepath.Join(dir, "content"), Version: resolved, Digest: digest}, nil
	}
	data, err := f.ociBlob(ctx, r, rr, ref, resolved, *layer, key)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(filepath.Join(f.dir, "charts"), ".extract-")
	if err != nil {
		return nil, fmt.Errorf("chart cache: %w", err)
	}
	root := filepath.Join(tmp, "root")
	gz := strings.HasSuffix(layer.MediaType, "tar+gzip") || strings.HasSuffix(layer.MediaType, "tar.gzip")
	if err := scanTar(data, gz, f.opts.MaxExtractedBytes, f.opts.MaxExtractedBytes, writeUnder(root)); err != nil {
		os.RemoveAll(tmp)
		return nil, f.fail(r.URL, "%s@%s: %w", ref, resolved, err)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("chart cache: %w", err)
	}
	top := root
	if layer.MediaType == registry.ChartLayerMediaType {
		// For a Helm chart the single top directory is the root.
		ents, err := os.ReadDir(root)
		if err != nil || len(ents) != 1 || !ents[0].IsDir() {
			os.RemoveAll(tmp)
			return nil, f.fail(r.URL, "%s@%s: %w: a Helm chart layer must hold one directory, found %d entries", ref, resolved, ErrRefused, len(ents))
		}
		top = filepath.Join(root, ents[0].Name())
	}
	if err := os.Rename(top, filepath.Join(tmp, "content")); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("chart cache: %w", err)
	}
	_ = os.RemoveAll(root)
	// The marker is written last: a directory without it is an interrupted extraction.
	if err := os.WriteFile(filepath.Join(tmp, ".fleetwave-oci"), []byte(digest+"\n"), 0o600); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("chart cache: %w", err)
	}
	ch, err := f.install(tmp, dir, filepath.Join(dir, "content"), "", resolved, digest)
	if err != nil {
		return nil, err
	}
	return ch, nil
}

// isContentLayer is util/oci/client.go isContentLayer (isCompressedLayer).
func isContentLayer(mediaType string) bool {
	return strings.HasSuffix(mediaType, "tar+gzip") || strings.HasSuffix(mediaType, "tar.gzip") || strings.HasSuffix(mediaType, "tar")
}
