package render

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/chartfetch"
	"github.com/fleetwave/fleetwave/internal/edge/gitfetch"
	"github.com/fleetwave/fleetwave/internal/edge/repocreds"
	helmengine "github.com/fleetwave/fleetwave/internal/render/helm"
	kustengine "github.com/fleetwave/fleetwave/internal/render/kustomize"
	"github.com/fleetwave/fleetwave/internal/render/repofs"
)

// openSource returns the files a source renders from and its app path in them: the checkout holding a git
// source, a native OCI source's extracted artifact, or, for a chart from a Helm repository or an OCI registry, the chart extracted from its archive, which is both the
// repository root and the app path, as reposerver/repository/repository.go runManifestGenAsync hands the
// directory helm's ExtractChart returns to the generation (operationContext{chartPath}). Files of a fetched chart
// are not recorded: they are not the repository's, and the Application's targetRevision (its definition) is what
// changes them.
func (r *Renderer) openSource(ctx context.Context, app *v1alpha1.Application, src *v1alpha1.ApplicationSource,
	open func(*v1alpha1.ApplicationSource) (*repofs.FS, string, error), refs map[string]*repofs.FS, refErrs map[string]error) (*repofs.FS, string, string, error) {
	if repocreds.HasUserinfo(src.RepoURL) {
		// The repoURL is pull-request content: it neither chooses credentials nor hides a host behind an "@" that
		// a credential template would match (issue 38).
		return nil, "", "", fmt.Errorf("repoURL %s carries user information, refused: credentials come only from the allowed repositories file",
			repocreds.RedactURL(src.RepoURL))
	}
	if err := externalRef(app, src, refs, refErrs); err != nil {
		return nil, "", "", err
	}
	if !src.IsHelm() && !src.IsOCI() {
		f, commit, err := open(src)
		return f, src.Path, commit, err
	}
	if r.opts.Charts == nil {
		if src.IsOCI() {
			return nil, "", "", fmt.Errorf("%w: OCI artifact %s (fetched only from an allowed repositories file)", ErrExternalSource, repocreds.RedactURL(src.RepoURL))
		}
		return nil, "", "", fmt.Errorf("%w: chart %q from %s (fetched only from an allowed repositories file)",
			ErrExternalSource, src.Chart, repocreds.RedactURL(src.RepoURL))
	}
	if src.IsOCI() {
		// A native OCI source (oci://, chart ignored as Argo CD ignores it): the artifact's extracted root is the
		// repository, src.Path the app path in it and the manifest digest its revision, as runManifestGenAsync
		// hands ociClient.Extract's directory and the resolved digest to the generation.
		ch, err := r.opts.Charts.Chart(ctx, src.RepoURL, "", src.TargetRevision)
		if err != nil {
			return nil, "", "", err
		}
		f, err := repofs.New(ch.Dir, r.opts.Limits.MaxFileBytes)
		if err != nil {
			return nil, "", "", err
		}
		return f, src.Path, ch.Digest, nil
	}
	ch, err := r.opts.Charts.Chart(ctx, src.RepoURL, src.Chart, src.TargetRevision)
	if err != nil {
		if errors.Is(err, chartfetch.ErrUnsupported) {
			return nil, "", "", fmt.Errorf("%w: %v", ErrExternalSource, err)
		}
		return nil, "", "", err
	}
	f, err := repofs.New(ch.Dir, r.opts.Limits.MaxFileBytes)
	if err != nil {
		return nil, "", "", err
	}
	return f, ".", "", nil
}

// gitTree fetches repoURL at revision (resolved among the tags with tagPrefix, "" for all) through the allowed
// repositories (Options.Git). Without a fetcher, or for a repository that is not allowed, the source is external:
// one line saying which.
func (r *Renderer) gitTree(ctx context.Context, repoURL, revision, tagPrefix string) (*gitfetch.Tree, error) {
	if r.opts.Git == nil {
		return nil, fmt.Errorf("%w: %s", ErrExternalSource, repocreds.RedactURL(repoURL))
	}
	tree, err := r.opts.Git.Checkout(ctx, repoURL, revision, tagPrefix)
	switch {
	case err == nil:
		return tree, nil
	case errors.Is(err, ErrExternalSource): // said so by a worker's parent (internal/render/isolate)
		return nil, err
	case errors.Is(err, gitfetch.ErrNotAllowed):
		return nil, NotAllowedError(err)
	}
	return nil, err
}

// remoteBases fetches Kustomize remote bases from the allowed git repositories (nil without Options.Git: they stay
// refused). Argo CD lets kustomize clone them with git, handing it the credentials of the app's own repository
// (util/kustomize/kustomize.go Build: k.creds.Environ()); here a base's repository must itself be allowed, is
// fetched with its own credentials through the same cache as git sources, and its files are not recorded as the
// checkout's.
func (r *Renderer) remoteBases() kustengine.RemoteFetcher {
	if r.opts.Git == nil {
		return nil
	}
	return func(ctx context.Context, repoURL, revision string) (*repofs.FS, error) {
		tree, err := r.gitTree(ctx, repoURL, revision, "") // a kustomize base's ?ref= names no tag prefix
		if err != nil {
			return nil, err
		}
		return repofs.New(tree.Dir, r.opts.Limits.MaxFileBytes)
	}
}

// refRev is a ref source of a multi-source app as opened: its repository, targetRevision and the commit it resolved
// to ("" for the checkout).
type refRev struct {
	repoURL, targetRevision, commit string
}

// refCandidates are the value files and file parameters of src that may name a ref source ("$ref/..."), in the
// order Argo CD reads them (reposerver/repository/repository.go resolveReferencedSources and runManifestGenAsync).
func refCandidates(src *v1alpha1.ApplicationSource) []string {
	candidates := append([]string(nil), src.Helm.ValueFiles...)
	for _, p := range src.Helm.FileParameters {
		candidates = append(candidates, p.Path)
	}
	return candidates
}

// firstRefOnRepo maps each ref key src uses to the first key src uses on the same repository, as
// resolveReferencedSources (argo-cd v3.6.1) resolves one ref per repository: the one whose commit the manifest cache
// key then writes into every ref on that repository (target.RefRevisionsResolved).
func firstRefOnRepo(src *v1alpha1.ApplicationSource, refRevs map[string]refRev) map[string]string {
	first := map[string]string{}
	byRepo := map[string]string{}
	for _, p := range refCandidates(src) {
		if !strings.HasPrefix(p, "$") {
			continue
		}
		key, _, _ := strings.Cut(p, "/")
		rr, ok := refRevs[key]
		if !ok {
			continue
		}
		norm := repocreds.NormalizeURL(rr.repoURL)
		if _, ok := byRepo[norm]; !ok {
			byRepo[norm] = key
		}
		first[key] = byRepo[norm]
	}
	return first
}

// refsAsResolved is refs as src's Helm reads them when the target resolves ref revisions (target.RefRevisionsResolved):
// every ref on a repository reads the checkout of the first ref src uses on it (runManifestGenAsync checks out that
// commit once per repository). Otherwise refs as they are.
func refsAsResolved(app *v1alpha1.Application, src *v1alpha1.ApplicationSource, resolved bool, refs map[string]*repofs.FS, refRevs map[string]refRev) map[string]*repofs.FS {
	if !resolved || !app.Spec.HasMultipleSources() || src.Helm == nil {
		return refs
	}
	out := make(map[string]*repofs.FS, len(refs))
	for k, f := range refs {
		out[k] = f
	}
	for key, first := range firstRefOnRepo(src, refRevs) {
		if f := refs[first]; f != nil {
			out[key] = f
		}
	}
	return out
}

// refConflict is runManifestGenAsync's check of a multi-source Helm source's "$ref/..." value files and file
// parameters (reposerver/repository/repository.go, argo-cd v3.2.11): the refs it uses on one repository must name
// the same targetRevision, and a ref on the source's own repository must resolve to the source's commit (Argo CD
// checks out one revision of a repository per render). commit is the source's ("" for the checkout, where both
// sides read the same files). With resolved (target.RefRevisionsResolved, 3.6) each ref's targetRevision is first
// replaced by the commit of the first ref on its repository, as the v3.6.1 repo-server's cache key does: two refs
// on one repository never conflict, and the message names that commit.
func refConflict(app *v1alpha1.Application, src *v1alpha1.ApplicationSource, commit string, refRevs map[string]refRev, resolved bool) error {
	if !app.Spec.HasMultipleSources() || src.Helm == nil {
		return nil
	}
	var first map[string]string
	if resolved {
		first = firstRefOnRepo(src, refRevs)
	}
	type used struct{ key, revision string }
	byRepo := map[string]used{}
	for _, p := range refCandidates(src) {
		if !strings.HasPrefix(p, "$") {
			continue
		}
		key, _, _ := strings.Cut(p, "/")
		rr, ok := refRevs[key]
		if !ok {
			continue
		}
		if resolved {
			c := refRevs[first[key]].commit
			rr.targetRevision, rr.commit = c, c
		}
		norm := repocreds.NormalizeURL(rr.repoURL)
		if prev, ok := byRepo[norm]; ok {
			if prev.revision != rr.targetRevision {
				return fmt.Errorf("cannot reference multiple revisions for the same repository (%s references %q while %s references %q)", key, rr.targetRevision, prev.key, prev.revision)
			}
			continue
		}
		byRepo[norm] = used{key: key, revision: rr.targetRevision}
		if repocreds.NormalizeURL(src.RepoURL) == norm && commit != rr.commit {
			return fmt.Errorf("cannot reference a different revision of the same repository (%s references %q which resolves to %q while the application references %q which resolves to %q)",
				key, rr.targetRevision, rr.commit, src.TargetRevision, commit)
		}
	}
	return nil
}

// NotAllowedError is the error of a git source whose repository is not allowed (err wraps gitfetch.ErrNotAllowed):
// external, with gitfetch's line.
func NotAllowedError(err error) error { return fmt.Errorf("%w: %s", ErrExternalSource, err.Error()) }

// externalRef reports a "$name/..." value file or file parameter of src whose ref source could not be opened: in
// another repository that is not fetched it is external (as the source itself would be), not a missing file; a
// fetch that failed fails the source with its cause.
func externalRef(app *v1alpha1.Application, src *v1alpha1.ApplicationSource, refs map[string]*repofs.FS, refErrs map[string]error) error {
	if src.Helm == nil || !app.Spec.HasMultipleSources() {
		return nil
	}
	paths := append([]string(nil), src.Helm.ValueFiles...)
	for _, p := range src.Helm.FileParameters {
		paths = append(paths, p.Path)
	}
	for _, p := range paths {
		name, _, _ := strings.Cut(p, "/")
		if !strings.HasPrefix(name, "$") || refs[name] != nil {
			continue
		}
		for _, other := range app.Spec.GetSources() {
			if other.Ref != "" && "$"+other.Ref == name {
				if err := refErrs[name]; err != nil {
					return fmt.Errorf("ref source %s (for %s): %w", other.Ref, p, err)
				}
				return fmt.Errorf("%w: ref source %s (%s, for %s) is not in the checkout", ErrExternalSource, other.Ref, repocreds.RedactURL(other.RepoURL), p)
			}
		}
	}
	return nil
}

// chartSource is the fetcher as the Helm engine's dependency source (nil when there is none: a typed nil in an
// interface would not be).
func (r *Renderer) chartSource() helmengine.ChartSource {
	if r.opts.Charts == nil {
		return nil
	}
	return r.opts.Charts
}

// Fetches reports whether the renderer fetches src itself although it is not in a checkout: a chart from a Helm
// repository or an OCI registry, or a native OCI source, that the operator allows. What such a source renders is
// fixed by the Application (repoURL, chart, path, targetRevision), so a change that leaves the Application and this repository's files alone cannot alter it.
func (r *Renderer) Fetches(src *v1alpha1.ApplicationSource) bool {
	return Fetches(r.opts.Charts, src) || FetchesGit(r.opts.Git, src)
}

// FetchesGit reports whether git fetches src itself: a git source (or ref source) in a repository of the allowed
// repositories. What it renders is fixed by the Application (repoURL, path, targetRevision).
func FetchesGit(git GitFetcher, src *v1alpha1.ApplicationSource) bool {
	if git == nil || src == nil || src.IsHelm() || src.IsOCI() {
		return false
	}
	allows, ok := git.(interface{ Allows(repoURL string) bool })
	return ok && allows.Allows(src.RepoURL)
}

// Fetches is Renderer.Fetches for a renderer built with charts (for renderers that wrap Options, such as the
// worker pool of internal/render/isolate).
func Fetches(charts ChartFetcher, src *v1alpha1.ApplicationSource) bool {
	if f, ok := charts.(*chartfetch.Fetcher); ok && f == nil {
		return false
	}
	if charts == nil || src == nil || (!src.IsHelm() && !src.IsOCI()) {
		return false
	}
	allows, ok := charts.(interface {
		Repository(repoURL string) (repocreds.Repository, error)
	})
	if !ok {
		return false // a fetcher that cannot say (a worker's proxy): not known, so not counted as unchanged
	}
	_, err := allows.Repository(src.RepoURL)
	return err == nil
}
