package preview

import (
	"context"
	"errors"
	"runtime"
	"sync"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetwave/fleetwave/internal/discover"
	"github.com/fleetwave/fleetwave/internal/edge/source"
	"github.com/fleetwave/fleetwave/internal/render"
)

// outcome is one render of one app.
type outcome struct {
	objs      []*unstructured.Unstructured
	readFiles []string
	readDirs  []string
	err       error
	reused    bool // head: the base render, the app being unaffected
	// notRendered marks an app that was rendered on neither side: the change cannot reach it.
	notRendered bool
	// remoteWarning says the render was made by Argo CD (a plugin source), with its caveats.
	remoteWarning string
	verdict       discover.Verdict
}

// external reports a render that could not run locally because a source is outside the checkout, or is a
// config-management plugin.
func (o *outcome) external() bool {
	return o != nil && o.err != nil && (errors.Is(o.err, render.ErrExternalSource) || errors.Is(o.err, render.ErrPluginSource))
}

func (o *outcome) failed() bool { return o != nil && o.err != nil && !o.external() }

// lazy is an app's render on one side, made at most once, when first needed.
type lazy struct {
	mu   sync.Mutex
	done bool
	o    *outcome
	// at is where the app was placed when o was made: its instance, or why it had none.
	at placedAt
}

// placedAt is an app's placement among the fleet's Argo CD instances.
type placedAt struct {
	instance string
	none     bool // discover.App.InstanceErr
}

func placement(a *discover.App) placedAt {
	return placedAt{instance: a.Instance, none: a.InstanceErr != nil}
}

type outcomes struct {
	mu sync.Mutex
	m  map[string]*lazy
}

// get returns the render of a, making it with fn the first time.
func (o *outcomes) get(a *discover.App, fn func() *outcome) *outcome {
	o.mu.Lock()
	l, ok := o.m[a.Key]
	if !ok {
		l = &lazy{}
		o.m[a.Key] = l
	}
	o.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.o, l.done, l.at = fn(), true, placement(a)
	}
	return l.o
}

// forgetMoved forgets the outcome of a made while a was placed elsewhere (or nowhere): discovery placed it again
// since, on the instance of the app-of-apps parent that applies it (internal/discover adopt), and it is rendered
// again with that instance's settings.
func (o *outcomes) forgetMoved(a *discover.App) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if l, ok := o.m[a.Key]; ok && l.mu.TryLock() { // a render in progress is of this very app: not moved
		if l.done && l.at != placement(a) {
			delete(o.m, a.Key)
		}
		l.mu.Unlock()
	}
}

// peek returns the render of key if it was made (waiting for one in progress), else nil.
func (o *outcomes) peek(key string) *outcome {
	o.mu.Lock()
	l, ok := o.m[key]
	o.mu.Unlock()
	if !ok {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.o
}

// side is one revision of the change: its checkout, the files that mention Argo CD kinds, its fleet.
type side struct {
	co       *source.Checkout
	mentions map[string]bool // files mentioning "argoproj.io"
	argo     *discover.Paths // files mentioning "argoproj.io"
	apps     *discover.Paths // files mentioning "Application"
	inv      *discover.Inventory
	settings render.Settings
}

// The strings the checkouts are indexed by. Discovery reads the files with the first. An app whose reach holds
// files with each (not necessarily the same file: the apiVersion may come from a Helm helper) may render
// Applications, so it is rendered to find them.
const (
	needleArgo        = "argoproj.io"
	needleApplication = "Application"
)

// newSide collects, from a checkout's index, the files discovery and the app-of-apps rule look at.
func newSide(co *source.Checkout) *side {
	argo := co.FilesContaining(false, needleArgo)
	s := &side{co: co, mentions: make(map[string]bool, len(argo)), argo: discover.NewPaths(argo), apps: discover.NewPaths(co.FilesContaining(false, needleApplication))}
	for _, f := range argo {
		s.mentions[f] = true
	}
	return s
}

// open makes the lazy checkouts of both sides and discovers the base's fleet (stages 2 and 3): the pipeline it
// returns renders them, and close removes them. Lazy: discovery reads the files it needs from git's objects, and
// each render first writes what it can read (its reach): a change to a repository of thousands of apps writes the
// files of the apps it renders. The files the reach of every app reads (kustomization files) are kept in memory
// from the checkout's index pass.
func open(ctx context.Context, r Renderer, in Input, ch *change) (*pipeline, error) {
	exportOpts := source.ExportOptions{TempDir: in.TempDir, Index: []string{needleArgo, needleApplication}, Lazy: true, Keep: discover.ReadByName()}
	baseCo, err := ch.repo.Checkout(ctx, ch.base, exportOpts)
	if err != nil {
		return nil, err
	}
	// The head's checkout is derived while the base is discovered: listing and indexing it is mostly waiting for
	// git, discovering the base mostly parsing.
	type derived struct {
		co  *source.Checkout
		err error
	}
	headDerived := make(chan derived, 1)
	go func() {
		co, err := ch.repo.Derive(ctx, baseCo, ch.tree, exportOpts)
		headDerived <- derived{co, err}
	}()

	conc := in.Concurrency
	if conc <= 0 {
		conc = max(2, runtime.GOMAXPROCS(0))
	}
	settings := in.Settings.WithDefaults()
	insts := newInstances(in)
	// Each ApplicationSet is generated by its own instance (the instance "" in a fleet of one).
	generateFor := func(name string) discover.GenerateFunc {
		i, ok := insts[name]
		if !ok || i.argocd.AppSets == nil {
			return nil
		}
		g := i.argocd.AppSets
		return func(set *v1alpha1.ApplicationSet) ([]v1alpha1.Application, error) {
			return g.GenerateApplicationSet(ctx, set)
		}
	}
	generating := false
	for _, i := range insts {
		generating = generating || i.argocd.AppSets != nil
	}
	discoverOpts := func(s *side) discover.Options {
		o := discover.Options{Root: s.co.Dir, Files: s.co.Files(), Reader: s.co, Cache: in.Discovered, Mentions: s.mentions, Clusters: in.Clusters,
			IsThisRepo: ch.matcher.Match, ControlPlaneNamespace: settings.ControlPlaneNamespace, Generate: generateFor(""),
			Instance: resolver(in), InstanceClusters: instanceClusters(in)}
		if generating {
			o.GenerateFor = generateFor
		}
		return o
	}
	baseSide := newSide(baseCo)
	baseSide.inv = discover.Discover(discoverOpts(baseSide))
	d := <-headDerived
	if d.err != nil {
		baseCo.Close()
		return nil, d.err
	}
	headSide := newSide(d.co)

	p := &pipeline{r: r, instances: insts, matcher: ch.matcher, changes: ch.changes, changed: source.Paths(ch.changes),
		base: baseSide, head: headSide, baseOut: &outcomes{m: map[string]*lazy{}}, headOut: &outcomes{m: map[string]*lazy{}}}
	p.pins = &pins{repo: ch.repo, baseBranch: in.BaseBranch, baseSHA: ch.base, headSHA: ch.head, tempDir: in.TempDir, follows: map[string]bool{}, trees: map[string]*pinnedTree{}}
	if p.pins.baseBranch == "" {
		p.pins.baseBranch = ch.repo.BranchOf(ctx, in.Base)
	}
	p.budget = in.RenderBudget
	p.noRemoteHead, p.repoURLs = in.NoRemoteHead, urlsOnly(ch.names)
	if p.budget == 0 {
		p.budget = DefaultRenderBudget
	}
	p.conc = conc
	p.base.settings, p.head.settings = settings, settings
	p.base.settings.Revision, p.head.settings.Revision = ch.base, ch.head
	p.headDiscovery = discoverOpts(p.head)
	p.headDiscovery.Reuse, p.headDiscovery.Changed = p.base.inv, map[string]bool{}
	for _, f := range p.changed {
		p.headDiscovery.Changed[f] = true
	}
	return p, nil
}

// close removes what the pipeline checked out: the pinned revisions', the head's, the base's.
func (p *pipeline) close() {
	p.pins.close()
	p.head.co.Close()
	p.base.co.Close()
}
