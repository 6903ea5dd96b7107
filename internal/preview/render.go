package preview

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetwave/fleetwave/internal/discover"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch"
	"github.com/fleetwave/fleetwave/internal/edge/source"
	"github.com/fleetwave/fleetwave/internal/render"
)

// pipeline is one Run's state from the checkouts on: both sides, their renders, what the renders may use.
type pipeline struct {
	ignore  *ignorer // the head policy's diff.ignore; nil: none
	r       Renderer
	matcher *source.RepoMatcher
	changes []source.Change
	changed []string
	base    *side
	head    *side
	baseOut *outcomes
	headOut *outcomes
	pins    *pins // apps pinned to another revision of the repository
	// dropRenders lets pair release each app's manifests once diffed (release.go).
	dropRenders bool

	budget      time.Duration // all renders' time (Input.RenderBudget); ≤ 0: none
	budgetOnce  sync.Once
	budgetUntil time.Time // when it ends: set by the first render

	// noRemoteHead: the head side is never rendered through remote (Input.NoRemoteHead).
	noRemoteHead bool
	// repoURLs are the URLs naming this repository (Input.RepoURLs and the origin remote, full names left out).
	repoURLs []string

	conc          int              // concurrent renders (Input.Concurrency)
	headDiscovery discover.Options // how the head is discovered, reusing the base's parse

	// instances are the fleet's Argo CD instances: each app's remote renderer (nil: plugin apps are reported as
	// not rendered), live comparer and render settings are its own instance's.
	instances instances
}

// renderSides renders the base apps the change can reach while the head is discovered, then the head's affected
// apps (stages 4 and 5); only a cancelled context fails it.
func (p *pipeline) renderSides(ctx context.Context) error {
	// The head is discovered while the base renders (discovery reads only the base's parsed files, which nothing
	// changes any more); not when discovery asks Argo CD to generate ApplicationSets, which would then be asked
	// while it renders for the base.
	headInv := make(chan *discover.Inventory, 1)
	if p.headDiscovery.Generate == nil && p.headDiscovery.GenerateFor == nil {
		go func() { headInv <- discover.Discover(p.headDiscovery) }()
	} else {
		headInv <- discover.Discover(p.headDiscovery)
	}

	changed := discover.NewPaths(p.changed)
	// Base: the apps the change can reach, and the possible app-of-apps, are rendered; what each render reads
	// is the evidence of the affected-app rules. Other apps are rendered later only if they turn out affected.
	p.base.inv.Expand(ctx, func(ctx context.Context, a *discover.App) ([]*unstructured.Unstructured, error) {
		p.baseOut.forgetMoved(a)
		reach := p.base.inv.Reach(a)
		maybeParent := reach.TouchesAny(p.base.argo) && reach.TouchesAny(p.base.apps)
		if !reach.Unbounded() && !reach.TouchesAny(changed) && !maybeParent {
			return nil, nil
		}
		o := p.renderBase(ctx, a)
		return o.objs, o.err
	}, p.conc)

	p.head.inv = <-headInv
	// Head: affected apps rendered again; the others keep their base render.
	p.head.inv.Expand(ctx, func(ctx context.Context, a *discover.App) ([]*unstructured.Unstructured, error) {
		p.headOut.forgetMoved(a)
		o := p.renderHead(ctx, a)
		return o.objs, o.err
	}, p.conc)
	return ctx.Err()
}

// budgetErr is a render's error past the change's render budget.
func (p *pipeline) budgetErr(a *discover.App) error {
	return &render.Error{App: a.App.Name, Path: render.SourcesLabel(a.App), Err: fmt.Errorf("refused (pr-budget): the change's renders exceeded their %s budget", p.budget)}
}

func (p *pipeline) render(ctx context.Context, a *discover.App, s *side) *outcome {
	if a.InstanceErr != nil {
		// Rendered with no instance's settings rather than another's: the plan lists it unplaced, saying why.
		return &outcome{err: &render.Error{App: a.App.Name, Path: render.SourcesLabel(a.App), Err: a.InstanceErr}}
	}
	if p.budget > 0 {
		p.budgetOnce.Do(func() { p.budgetUntil = time.Now().Add(p.budget) })
		if !time.Now().Before(p.budgetUntil) {
			return &outcome{err: p.budgetErr(a)}
		}
		outer := ctx
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, p.budgetUntil)
		defer cancel()
		o := p.renderIn(ctx, a, s)
		if o.err != nil && outer.Err() == nil && ctx.Err() != nil {
			o = &outcome{err: p.budgetErr(a)}
		}
		return o
	}
	return p.renderIn(ctx, a, s)
}

func (p *pipeline) renderIn(ctx context.Context, a *discover.App, s *side) *outcome {
	if err := p.materialise(ctx, a, s); err != nil {
		return &outcome{err: err}
	}
	o := p.renderOnce(ctx, a, s)
	// The reach is a superset of what a render reads; should a render still miss a file, the whole revision is
	// written and the app rendered again, so that a gap in the reach rules costs time, never a wrong diff.
	if o.err != nil && !s.co.Complete() && ctx.Err() == nil && missingFile(o.err) {
		if err := s.co.MaterialiseAll(ctx); err != nil {
			return &outcome{err: err}
		}
		o = p.renderOnce(ctx, a, s)
	}
	return o
}

// materialise writes the part of the side's revision an app's render can read: its reach, or all of it when the
// reach is unbounded.
func (p *pipeline) materialise(ctx context.Context, a *discover.App, s *side) error {
	reach := s.inv.Reach(a)
	if reach.Unbounded() {
		return s.co.MaterialiseAll(ctx)
	}
	dirs, globs := reach.Paths()
	return s.co.Materialise(ctx, dirs, globs)
}

// missingFile tells a render error that may come from a file not written (also across a worker process, where
// only the message is left).
func missingFile(err error) bool {
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "no such file or directory") || strings.Contains(msg, "not found") || strings.Contains(msg, "does not exist")
}

func (p *pipeline) renderOnce(ctx context.Context, a *discover.App, s *side) *outcome {
	root, settings := s.co.Dir, clusterContext(p.settings(a, s), a)
	pinned, mixed := p.pins.pinnedRevision(ctx, a, p.matcher.Match)
	if mixed {
		return &outcome{err: &render.Error{App: a.App.Name, Path: render.SourcesLabel(a.App), Err: fmt.Errorf("%w: sources of this repository at %s and at the change's branch: fleetwave renders one revision of a repository per app",
			render.ErrExternalSource, pinned)}}
	}
	var tree *pinnedTree
	if pinned != "" {
		// Rendered at its own revision, the same on both sides: the change's files are not what it reads.
		if tree = p.pins.tree(ctx, pinned); tree.err != nil {
			return &outcome{err: tree.err}
		}
		root, settings.Revision = "", tree.commit
		if tree.co != nil {
			root = tree.co.Dir
		}
	}
	res, err := p.r.Render(ctx, render.Request{
		App: a.App,
		Repos: func(repoURL string) (string, bool) {
			if p.matcher.Match(repoURL) && root != "" {
				return root, true
			}
			return "", false
		},
		Settings: settings,
	})
	if err != nil {
		if onlyArgoCDRenders(err) && p.instances.of(a).argocd.Remote != nil {
			if s == p.head && p.noRemoteHead {
				return &outcome{err: fmt.Errorf("%w (not rendered through Argo CD: rendering a pull request's head remotely is off for this repository, and never done for a fork)", err)}
			}
			return p.renderRemote(ctx, a, s, err)
		}
		if pinned != "" && tree.co == nil && errors.Is(err, render.ErrExternalSource) {
			err = fmt.Errorf("%w (%s)", err, pinnedNotHeld(pinned))
		}
		return &outcome{err: err}
	}
	if pinned != "" {
		return &outcome{objs: res.Objects}
	}
	return &outcome{objs: res.Objects, readFiles: res.ReadFiles, readDirs: res.ReadDirs}
}

// renderRemote renders through Argo CD an app that cannot be rendered here (local: why): a config-management
// plugin, or a source fleetwave does not fetch (a repository or registry not in the allowed repositories, one only
// Argo CD can reach). Argo CD renders the Application it holds with the revisions given here, one per source: the
// side's commit for a source in this repository, the targetRevision this side's Application names for any other
// (so a PR that bumps an external chart's version shows the chart's diff). Which changes affect the app is decided
// by the static rules (its Application and source paths), as no read set is known.
func (p *pipeline) renderRemote(ctx context.Context, a *discover.App, s *side, local error) *outcome {
	sources := a.App.Spec.GetSources()
	revisions := make([]string, len(sources))
	var why string
	for i, src := range sources {
		if p.matcher.Match(src.RepoURL) {
			revisions[i] = s.settings.Revision
			if !p.pins.followsChange(ctx, src.TargetRevision) {
				revisions[i] = src.TargetRevision // pinned: Argo CD renders it at its own revision
			}
			if src.Plugin != nil || errors.Is(local, render.ErrPluginSource) {
				why = "config-management plugin"
			}
			continue
		}
		revisions[i] = src.TargetRevision
		if why == "" {
			why = "source " + src.RepoURL + " is not fetched by fleetwave"
		}
	}
	if why == "" {
		why = "config-management plugin"
	}
	rr, err := p.instances.of(a).argocd.Remote.RenderRemote(ctx, a.App, revisions, p.repoURLs)
	switch {
	case errors.Is(err, ErrNotInArgoCD):
		return &outcome{err: fmt.Errorf("%w (Argo CD has no app %s to render it with yet)", local, a.App.Name)}
	case errors.Is(err, ErrNotManagedHere):
		return &outcome{err: fmt.Errorf("%w (not rendered through Argo CD: the app %s %v)", local, a.App.Name, ErrNotManagedHere)}
	case err != nil:
		return &outcome{err: fmt.Errorf("rendering through Argo CD at %s: %w", strings.Join(shortAll(revisions), ", "), err)}
	}
	warning := "rendered by Argo CD's repo-server at " + strings.Join(shortAll(revisions), ", ") + " (" + why + ")"
	return &outcome{objs: rr.Objects, remoteWarning: joinNonEmpty(warning, rr.Warning)}
}

// onlyArgoCDRenders tells the render errors Argo CD can do better than: a plugin, a source not fetched here, a
// repository the operator did not allow fleetwave to fetch (Argo CD has its own repository credentials).
func onlyArgoCDRenders(err error) bool {
	return errors.Is(err, render.ErrPluginSource) || errors.Is(err, render.ErrExternalSource) || errors.Is(err, chartfetch.ErrNotAllowed)
}

// urlsOnly keeps the URLs of a repository's names (an "owner/name" full name is no URL: Argo CD compares
// URLs).
func urlsOnly(names []string) []string {
	var out []string
	for _, n := range names {
		if n = strings.TrimSpace(n); strings.Contains(n, "://") || strings.Contains(n, "@") {
			out = append(out, n)
		}
	}
	return out
}

func shortAll(revs []string) []string {
	out := make([]string, len(revs))
	for i, r := range revs {
		if len(r) == 40 && strings.Trim(r, "0123456789abcdef") == "" {
			r = r[:7] // a commit; a tag or chart version stays whole
		}
		out[i] = r
	}
	return out
}

// renderBase renders an app of the base revision (once).
func (p *pipeline) renderBase(ctx context.Context, a *discover.App) *outcome {
	return p.baseOut.get(a, func() *outcome { return p.render(ctx, a, p.base) })
}

// renderHead decides whether a head app is affected and renders it if so; an unaffected app keeps its base
// render (or none, when the base had no need of one).
func (p *pipeline) renderHead(ctx context.Context, a *discover.App) *outcome {
	return p.headOut.get(a, func() *outcome {
		ev := discover.Evidence{Head: a.App}
		b, inBase := p.base.inv.Get(a.Key)
		bo := p.baseOut.peek(a.Key)
		if inBase {
			ev.Base = b.App
		}
		if bo != nil {
			ev.BaseRenderFailed = bo.failed()
			ev.ReadFiles, ev.ReadDirs = bo.readFiles, bo.readDirs
		}
		v := discover.Affected(ev, p.changes, p.matcher.Match)
		if pinned, _ := p.pins.pinnedRevision(ctx, a, p.matcher.Match); pinned != "" && inBase && !ev.BaseRenderFailed && discover.DefinitionEqual(b.App, a.App) {
			v = discover.Verdict{} // rendered at its own revision: the change's files do not reach it
		}
		var o *outcome
		switch {
		case !v.Affected && bo != nil:
			o = &outcome{objs: bo.objs, readFiles: bo.readFiles, readDirs: bo.readDirs, err: bo.err, reused: true}
		case !v.Affected:
			o = &outcome{reused: true, notRendered: true}
		default:
			if inBase && bo == nil {
				bo = p.renderBase(ctx, b) // the diff needs the base side
			}
			if inBase {
				o = p.repeatRefusal(b, a, bo) // a bomb already at base costs this change one cap, not two (caprepeat.go)
			}
			if o == nil {
				o = p.render(ctx, a, p.head)
			}
		}
		o.verdict = v
		return o
	})
}

// settings are the render settings of a's instance at side s's revision.
func (p *pipeline) settings(a *discover.App, s *side) render.Settings {
	st := p.instances.of(a).settings
	st.Revision = s.settings.Revision
	return st
}

// clusterContext is the render settings for an app's destination cluster: its Kubernetes version and API list
// when known (Argo CD's cluster info, or declared per cluster), as Argo CD's controller passes each
// destination's own to the repo-server (controller/state.go); else the global settings.
func clusterContext(s render.Settings, a *discover.App) render.Settings {
	if !a.ClusterKnown {
		return s
	}
	if a.Cluster.KubeVersion != "" {
		s.KubeVersion = a.Cluster.KubeVersion
	}
	if len(a.Cluster.APIVersions) > 0 {
		s.APIVersions = a.Cluster.APIVersions
	}
	return s
}
