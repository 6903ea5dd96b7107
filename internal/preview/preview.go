package preview

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetwave/fleetwave/internal/chartfetch"
	"github.com/fleetwave/fleetwave/internal/diff"
	"github.com/fleetwave/fleetwave/internal/discover"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/report"
	"github.com/fleetwave/fleetwave/internal/source"
	"github.com/fleetwave/fleetwave/internal/text"
)

// Renderer renders one Application (internal/render.Renderer implements it).
type Renderer interface {
	Render(ctx context.Context, req render.Request) (*render.Result, error)
}

// Input is one preview request.
type Input struct {
	// RepoDir is the local git repository (working copy top level or bare repository).
	RepoDir string
	// Base and Head are the revisions compared (branches, tags, shas).
	Base, Head string
	// BaseBranch is the branch the change goes into ("main"); "" takes Base's name when Base is a branch. Apps
	// of this repository whose targetRevision is another branch, a tag or a commit are rendered at that revision
	// (pinned.go).
	BaseBranch string
	// RepoURLs are names of the repository that sources may use (clone URLs, "owner/name"); the origin remote's
	// URL is added when the repository has one.
	RepoURLs []string
	// Clusters are the destination clusters; nil takes the cluster Secrets the repository declares.
	Clusters []discover.Cluster
	// Settings are the render settings (cluster and argocd-cm facts); Revision is set per side.
	Settings render.Settings
	// Plan asks for the wave plan of the repository's release policy (.fleetwave.yaml at head).
	Plan bool
	// PlanOnly makes the report what a merge's rollout needs, the plan (Plan is implied), and no more. The apps
	// are still rendered and diffed — which apps changed, were added, removed or failed decides the plan — but
	// their live state is not compared (Live serves only what the plan needs: rendering through Argo CD,
	// generating ApplicationSets, sync windows), and what only the comment shows (each app's kind, wave and
	// batch, the footer) is left out. The plan is the one a full preview of the same change makes.
	PlanOnly bool
	// Concurrency bounds concurrent renders (default: the number of CPUs, at least 2).
	Concurrency int
	// RenderBudget bounds the time of all the change's renders, base and head, from the first (default
	// DefaultRenderBudget; negative: none), so that one change of hostile apps, each under its own time cap,
	// cannot hold the renderer for long. A render still running at the budget's end, and every later one,
	// fails with one line saying so.
	RenderBudget time.Duration
	// TempDir is where checkouts are written ("" for the system default).
	TempDir string
	// Discovered, when set, keeps the files discovery parsed for the next previews of the repository (serve
	// keeps one per process): a preview parses only what changed since the revisions already seen.
	Discovered *discover.ScanCache
	// Live, when set, compares the affected apps' renders with their live state in Argo CD (internal/diff/livediff
	// implements it); each compared app gets report.App.Live. Nil leaves the report as it is without Argo CD.
	// When it also implements RemoteRenderer, apps whose source is a config-management plugin are rendered
	// through it.
	Live LiveComparer
	// NoRemoteHead keeps the head side from being rendered through Argo CD (Live's RemoteRenderer): Argo CD would
	// run the head's content through its config-management plugins, whose output (a secret-injecting plugin's
	// resolved values among them) comes back in the diff. The App sets it for a pull request unless its
	// repository opts in (serve's FLEETWAVE_ARGOCD_RENDER_HEAD_REPOS), and always for a fork's. The base side is
	// merged content and is rendered through Argo CD either way.
	NoRemoteHead bool
}

// DefaultRenderBudget is Input.RenderBudget's default: ten apps at render.DefaultTimeout each.
const DefaultRenderBudget = 10 * render.DefaultTimeout

// RemoteRenderer renders an app through Argo CD's repo-server, at one revision per source (revisions[i] for
// source i; one for a single-source app): the apps only Argo CD can render — a config-management plugin, a
// repository or registry fleetwave may not or cannot fetch. internal/diff/livediff's Comparer implements it.
//
// repoURLs are the URLs naming this repository: the Argo CD app is rendered only when one of its live sources is
// one of them and its project is app's (ErrNotManagedHere otherwise): a pull request here must not render, nor
// choose the revisions of, another repository's app.
type RemoteRenderer interface {
	RenderRemote(ctx context.Context, app *v1alpha1.Application, revisions []string, repoURLs []string) (*RemoteRender, error)
}

// RemoteRender is an app rendered by Argo CD.
type RemoteRender struct {
	Objects []*unstructured.Unstructured
	// Warning says how the render may differ from the change (Argo CD renders with the Application spec it
	// holds, not the one in the change).
	Warning string
}

// AppSetGenerator generates an ApplicationSet's apps through Argo CD (the generators that need a live service:
// scmProvider, pullRequest, plugin, clusterDecisionResource). internal/diff/livediff's Comparer implements it; when
// Input.Live does, discovery uses it (discover.Options.Generate says which sets a change may have generated).
type AppSetGenerator interface {
	GenerateApplicationSet(ctx context.Context, set *v1alpha1.ApplicationSet) ([]v1alpha1.Application, error)
}

// ErrNotInArgoCD is returned by a RemoteRenderer for an app Argo CD does not know (yet).
var ErrNotInArgoCD = errors.New("the app is not in Argo CD")

// ErrNotManagedHere is returned by a RemoteRenderer for an app Argo CD holds with no source in this repository,
// or in another project: another repository's app.
var ErrNotManagedHere = errors.New("exists in Argo CD, not managed from this repository")

// LiveApp is one affected app handed to a LiveComparer: its Application at head and its renders (Base nil when
// the app is added or its base render failed).
type LiveApp struct {
	App                          *v1alpha1.Application
	Base, Head                   []*unstructured.Unstructured
	BaseNamespace, HeadNamespace string // destination namespaces of each side
	// RepoURLs are the URLs naming this repository: an Argo CD app of the same namespace and name is compared
	// only when one of its live sources is one of them (and its project is App's); otherwise it is another
	// repository's app, which a pull request here must not read. None: no app is compared.
	RepoURLs []string
}

// LiveComparer compares affected apps with their live state: one result per app, in order. An error means the
// live state could not be read at all (Argo CD unreachable); Run returns it.
type LiveComparer interface {
	CompareLive(ctx context.Context, apps []LiveApp) ([]*report.Live, error)
}

// InputError is a problem with the request itself (not a repository, unknown revision, broken policy): the
// CLI exits 2 on it.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputErr(err error) error { return &InputError{Err: err} }

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
}

type outcomes struct {
	mu sync.Mutex
	m  map[string]*lazy
}

// get returns the render of key, making it with fn the first time.
func (o *outcomes) get(key string, fn func() *outcome) *outcome {
	o.mu.Lock()
	l, ok := o.m[key]
	if !ok {
		l = &lazy{}
		o.m[key] = l
	}
	o.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.o, l.done = fn(), true
	}
	return l.o
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

// Run previews a change (see the package documentation for the steps): it discovers the fleet at base and at
// head, renders at base the apps the change can reach (what each render reads decides which apps the change
// affects), renders the affected apps at head, diffs them and, when asked, plans the rollout. Apps that fail to
// render are reported in the Report, not returned as an error; an error (an *InputError for bad input) means no
// report could be made, except an invalid release policy (a *plan.PolicyError, wrapped in an *InputError): the
// report is then returned too, complete but without a plan, its PolicyErrors saying why.
func Run(ctx context.Context, r Renderer, in Input) (*report.Report, error) {
	repo, err := source.Open(ctx, in.RepoDir)
	if err != nil {
		return nil, inputErr(err)
	}
	baseSHA, headSHA, headOwnTree, err := repo.Revisions(ctx, in.Base, in.Head)
	if err != nil {
		return nil, inputErr(repo.ShallowHint(ctx, err))
	}
	rep := &report.Report{Base: baseSHA, Head: headSHA}
	if in.PlanOnly {
		in.Plan = true
	}
	headTree, merged, conflicted, err := repo.MergedHeadTree(ctx, baseSHA, headSHA, headOwnTree)
	if err != nil {
		err = repo.ShallowHint(ctx, err)
		if errors.Is(err, source.ErrShallow) {
			return nil, inputErr(err)
		}
		return nil, err
	}
	if merged {
		rep.HeadTree = headTree
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s is not based on %s: the head side is the merge of both, as GitHub tests it", text.Short(headSHA, 7), text.Short(baseSHA, 7)))
	}
	if conflicted {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s conflicts with %s: the head side is %s as it is", text.Short(headSHA, 7), text.Short(baseSHA, 7), text.Short(headSHA, 7)))
	}
	changes, err := repo.ChangedFiles(ctx, baseSHA, headTree)
	if err != nil {
		return nil, err
	}

	names := append([]string(nil), in.RepoURLs...)
	if origin, err := repo.OriginURL(ctx); err == nil && origin != "" {
		names = append(names, origin)
	}
	matcher := source.NewRepoMatcher(names...)
	if matcher.Empty() {
		rep.Notes = append(rep.Notes, "the repository has no origin remote and no --repo-url was given: every source is treated as external")
	}

	// Lazy: discovery reads the files it needs from git's objects, and each render first writes what it can read
	// (its reach): a change to a repository of thousands of apps writes the files of the apps it renders. The
	// files the reach of every app reads (kustomization files) are kept in memory from the checkout's index pass.
	exportOpts := source.ExportOptions{TempDir: in.TempDir, Index: []string{needleArgo, needleApplication}, Lazy: true, Keep: discover.ReadByName()}
	baseCo, err := repo.Checkout(ctx, baseSHA, exportOpts)
	if err != nil {
		return nil, err
	}
	defer baseCo.Close()
	// The head's checkout is derived while the base is discovered: listing and indexing it is mostly waiting for
	// git, discovering the base mostly parsing.
	type derived struct {
		co  *source.Checkout
		err error
	}
	headDerived := make(chan derived, 1)
	go func() {
		co, err := repo.Derive(ctx, baseCo, headTree, exportOpts)
		headDerived <- derived{co, err}
	}()

	conc := in.Concurrency
	if conc <= 0 {
		conc = max(2, runtime.GOMAXPROCS(0))
	}
	settings := in.Settings.WithDefaults()
	var generate discover.GenerateFunc
	if g, ok := in.Live.(AppSetGenerator); ok {
		generate = func(set *v1alpha1.ApplicationSet) ([]v1alpha1.Application, error) {
			return g.GenerateApplicationSet(ctx, set)
		}
	}
	discoverOpts := func(s *side) discover.Options {
		return discover.Options{Root: s.co.Dir, Files: s.co.Files(), Reader: s.co, Cache: in.Discovered, Mentions: s.mentions, Clusters: in.Clusters,
			IsThisRepo: matcher.Match, ControlPlaneNamespace: settings.ControlPlaneNamespace, Generate: generate}
	}
	baseSide := newSide(baseCo)
	baseSide.inv = discover.Discover(discoverOpts(baseSide))
	d := <-headDerived
	if d.err != nil {
		return nil, d.err
	}
	headCo := d.co
	defer headCo.Close()
	headSide := newSide(headCo)

	remote, _ := in.Live.(RemoteRenderer)
	p := &pipeline{r: r, remote: remote, matcher: matcher, changes: changes, changed: source.Paths(changes),
		base: baseSide, head: headSide, baseOut: &outcomes{m: map[string]*lazy{}}, headOut: &outcomes{m: map[string]*lazy{}}}
	p.pins = &pins{repo: repo, baseBranch: in.BaseBranch, baseSHA: baseSHA, tempDir: in.TempDir, follows: map[string]bool{}, trees: map[string]*pinnedTree{}}
	if p.pins.baseBranch == "" {
		p.pins.baseBranch = repo.BranchOf(ctx, in.Base)
	}
	defer p.pins.close()
	p.budget = in.RenderBudget
	p.noRemoteHead, p.repoURLs = in.NoRemoteHead, urlsOnly(names)
	if p.budget == 0 {
		p.budget = DefaultRenderBudget
	}
	p.base.settings, p.head.settings = settings, settings
	p.base.settings.Revision, p.head.settings.Revision = baseSHA, headSHA
	headOpts := discoverOpts(p.head)
	headOpts.Reuse, headOpts.Changed = p.base.inv, map[string]bool{}
	for _, f := range p.changed {
		headOpts.Changed[f] = true
	}
	// The head is discovered while the base renders (discovery reads only the base's parsed files, which nothing
	// changes any more); not when discovery asks Argo CD to generate ApplicationSets, which would then be asked
	// while it renders for the base.
	headInv := make(chan *discover.Inventory, 1)
	if generate == nil {
		go func() { headInv <- discover.Discover(headOpts) }()
	} else {
		headInv <- discover.Discover(headOpts)
	}

	changed := discover.NewPaths(p.changed)
	// Base: the apps the change can reach, and the possible app-of-apps, are rendered; what each render reads
	// is the evidence of the affected-app rules. Other apps are rendered later only if they turn out affected.
	p.base.inv.Expand(ctx, func(ctx context.Context, a *discover.App) ([]*unstructured.Unstructured, error) {
		reach := p.base.inv.Reach(a)
		maybeParent := reach.TouchesAny(p.base.argo) && reach.TouchesAny(p.base.apps)
		if !reach.Unbounded() && !reach.TouchesAny(changed) && !maybeParent {
			return nil, nil
		}
		o := p.renderBase(ctx, a)
		return o.objs, o.err
	}, conc)

	p.head.inv = <-headInv
	// Head: affected apps rendered again; the others keep their base render.
	p.head.inv.Expand(ctx, func(ctx context.Context, a *discover.App) ([]*unstructured.Unstructured, error) {
		o := p.renderHead(ctx, a)
		return o.objs, o.err
	}, conc)
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	// The head policy's diff settings shape the diffs; an invalid policy is reported by the plan (or here).
	policy, policyFile, policyErr := readPolicy(headCo)
	var diffSettings plan.DiffSettings
	if policyErr == nil {
		diffSettings = policy.Diff
		var err error
		if p.ignore, err = newIgnorer(policy.Diff.Ignore); err != nil {
			rep.Notes = append(rep.Notes, text.FirstLine(err.Error())+": not applied")
		}
	} else if !in.Plan {
		rep.Notes = append(rep.Notes, "the release policy is invalid, so its diff settings are not applied: "+text.FirstLine(policyErr.Error()))
	}
	rep.FoldChartLabels = !diffSettings.ShowChartLabels
	p.dropRenders = in.Live == nil || in.PlanOnly // the live comparison reads the renders after pair
	rep.Apps = p.pair(ctx)
	// A source in another git repository the renderer fetches (an allowed one) was rendered: not a foreign fleet.
	fetcher, _ := p.r.(interface {
		Fetches(*v1alpha1.ApplicationSource) bool
	})
	rendered := func(u string) bool {
		return p.matcher.Match(u) || fetcher != nil && fetcher.Fetches(&v1alpha1.ApplicationSource{RepoURL: u})
	}
	if foreign, named := discover.ForeignFleet(rendered, p.base.inv, p.head.inv); foreign {
		rep.NoSourceInRepo, rep.AppRepoURLs = true, named
		rep.Notes = append(rep.Notes, noSourceNote(names, named))
	}
	if in.Live != nil && !in.PlanOnly {
		if err := p.live(ctx, in.Live, rep); err != nil {
			return nil, err
		}
	}
	for _, pr := range p.head.inv.Problems {
		rep.Problems = append(rep.Problems, pr.Error())
	}
	rep.Unevaluated = unevaluated(p.base.inv, p.head.inv)
	if !p.base.inv.Declares() && !p.head.inv.Declares() && len(rep.Unevaluated) == 0 && len(p.head.inv.Problems) == 0 {
		rep.NoApps = true
		rep.Notes = append(rep.Notes, "no Argo CD Application or ApplicationSet at either revision, so nothing was previewed: is this the GitOps repository that declares the Applications?")
	}
	for _, name := range headCo.Skipped() {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%q: not checked out: git refuses to write such a path (an app that reads it finds it missing)", name))
	}
	sort.Strings(rep.Problems)
	rep.Summarize()

	place := p.place
	if in.PlanOnly {
		place = func(*report.Report, *plan.Policy, string, *plan.Plan) {} // the comment's presentation
	}
	if !in.Plan {
		place(rep, plan.DefaultPolicy(), "", nil)
	}
	if in.Plan {
		var pe *plan.PolicyError
		if err := policyErr; errors.As(err, &pe) {
			place(rep, plan.DefaultPolicy(), "", nil)
			if f := rep.Footer; f != nil {
				// The file is there, and invalid: not "no policy"; the commands are listed, who may run them is
				// the file's to say.
				f.PolicyFile, f.PolicyInvalid = pe.File, true
				for _, c := range []string{"approve", "pause", "resume", "abort", "rollback"} {
					f.Commands = append(f.Commands, report.CommandHelp{Command: c})
				}
			}
			// The diff does not depend on the policy: it is returned with the error, saying why no plan.
			for _, d := range pe.Diagnostics {
				rep.PolicyErrors = append(rep.PolicyErrors, d.String())
			}
			if len(pe.Diagnostics) == 0 {
				rep.PolicyErrors = []string{pe.Error()}
			}
			return rep, err
		}
		if policyErr != nil {
			return nil, policyErr
		}
		pl := p.plan(policy, p.head.inv, rep)
		if wr, ok := in.Live.(SyncWindowReader); ok {
			holdWaves(ctx, wr, pl, p.head.inv, time.Now())
		}
		rep.Plan = pl
		rep.Summary.Waves = len(pl.Waves)
		place(rep, policy, policyFile, pl)
	}
	return rep, nil
}

type pipeline struct {
	ignore  *ignorer // the head policy's diff.ignore; nil: none
	r       Renderer
	remote  RemoteRenderer // nil: plugin apps are reported as not rendered
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
}

// budgetErr is a render's error past the change's render budget.
func (p *pipeline) budgetErr(a *discover.App) error {
	return &render.Error{App: a.App.Name, Path: render.SourcesLabel(a.App), Err: fmt.Errorf("refused (pr-budget): the change's renders exceeded their %s budget", p.budget)}
}

func (p *pipeline) render(ctx context.Context, a *discover.App, s *side) *outcome {
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
	root, settings := s.co.Dir, s.settings
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
		if onlyArgoCDRenders(err) && p.remote != nil {
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
	rr, err := p.remote.RenderRemote(ctx, a.App, revisions, p.repoURLs)
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
	return p.baseOut.get(a.Key, func() *outcome { return p.render(ctx, a, p.base) })
}

// renderHead decides whether a head app is affected and renders it if so; an unaffected app keeps its base
// render (or none, when the base had no need of one).
func (p *pipeline) renderHead(ctx context.Context, a *discover.App) *outcome {
	return p.headOut.get(a.Key, func() *outcome {
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

// pair matches the apps of both sides and diffs them.
func (p *pipeline) pair(ctx context.Context) []report.App {
	keys := map[string]bool{}
	for _, a := range p.base.inv.Apps() {
		keys[a.Key] = true
	}
	for _, a := range p.head.inv.Apps() {
		keys[a.Key] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	apps := make([]report.App, 0, len(sorted))
	for _, k := range sorted {
		b, inBase := p.base.inv.Get(k)
		h, inHead := p.head.inv.Get(k)
		var ra report.App
		switch {
		case !inBase:
			ra = describe(h)
			ra.Status = report.StatusAdded
			p.fill(&ra, h.App.Spec.Destination.Namespace, nil, p.headOut.peek(k))
		case !inHead:
			ra = describe(b)
			ra.Status = report.StatusRemoved
			p.fill(&ra, b.App.Spec.Destination.Namespace, p.renderBase(ctx, b), nil)
			if ra.Status == report.StatusRemoved {
				ra.Removal = removal(b, p.base.inv.Get)
				if !deletesResources(ra.Removal, b) {
					// Its resources stay in the cluster: nothing of them is removed, whatever the render holds.
					ra.Resources, ra.Hooks, ra.Counts = []diff.Resource{}, []diff.Resource{}, diff.Summary{}
				}
			}
		default:
			ra = describe(h)
			p.fillBoth(&ra, h, b.App.Spec.Destination.Namespace, h.App.Spec.Destination.Namespace, p.baseOut.peek(k), p.headOut.peek(k))
		}
		if a, ok := p.head.inv.Get(k); ok {
			ra.PinnedRevision, _ = p.pins.pinnedRevision(ctx, a, p.matcher.Match)
		} else if a, ok := p.base.inv.Get(k); ok {
			ra.PinnedRevision, _ = p.pins.pinnedRevision(ctx, a, p.matcher.Match)
		}
		apps = append(apps, ra)
		p.drop(k)
	}
	return apps
}

// live hands the apps rendered at head (the affected ones) to the live comparer and records its answers.
func (p *pipeline) live(ctx context.Context, lc LiveComparer, rep *report.Report) error {
	var apps []LiveApp
	var idx []int
	for i := range rep.Apps {
		k := rep.Apps[i].Key()
		h, inHead := p.head.inv.Get(k)
		ho := p.headOut.peek(k)
		if !inHead || ho == nil || ho.reused || ho.err != nil {
			continue
		}
		la := LiveApp{App: h.App, Head: ho.objs, HeadNamespace: h.App.Spec.Destination.Namespace, RepoURLs: p.repoURLs}
		if b, inBase := p.base.inv.Get(k); inBase {
			la.BaseNamespace = b.App.Spec.Destination.Namespace
			if bo := p.baseOut.peek(k); bo != nil && bo.err == nil {
				la.Base = append([]*unstructured.Unstructured{}, bo.objs...) // non-nil: rendered, maybe empty
			}
		}
		apps = append(apps, la)
		idx = append(idx, i)
	}
	if len(apps) == 0 {
		return nil
	}
	lives, err := lc.CompareLive(ctx, apps)
	if err != nil {
		return err
	}
	var missing []string
	for j, l := range lives {
		if j >= len(idx) {
			break
		}
		rep.Apps[idx[j]].Live = l
		if l != nil && l.Missing {
			missing = append(missing, rep.Apps[idx[j]].Key())
		}
	}
	if len(missing) > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("not in Argo CD, live state not compared: %s", strings.Join(missing, ", ")))
	}
	return nil
}

func describe(a *discover.App) report.App {
	cluster := a.Cluster.Name
	if cluster == "" {
		cluster = a.App.Spec.Destination.Server
	}
	server := a.Cluster.Server
	if server == "" {
		server = a.App.Spec.Destination.Server
	}
	return report.App{
		Name: a.App.Name, Namespace: a.App.Namespace, Project: a.App.Spec.Project,
		Cluster: cluster, Server: server, File: a.File, AppSet: a.AppSet, Parent: a.Parent,
		Resources: []diff.Resource{}, Hooks: []diff.Resource{}, ReadFiles: []string{},
		DestinationNamespace: a.App.Spec.Destination.Namespace, ReleaseName: releaseName(a),
	}
}

// releaseName is the Helm release name the app's sources set, "" when none does (the app's name, Argo CD's
// default: reposerver/repository/repository.go, templateOpts.Name).
func releaseName(a *discover.App) string {
	for _, src := range a.App.Spec.GetSources() {
		if src.Helm != nil && src.Helm.ReleaseName != "" {
			return src.Helm.ReleaseName
		}
	}
	return ""
}

// fill describes an app present on one side only (added: head outcome; removed: base outcome).
func (p *pipeline) fill(ra *report.App, ns string, base, head *outcome) {
	side := head
	if side == nil {
		side = base
	}
	if side == nil {
		ra.Status, ra.Error = report.StatusError, "not rendered"
		return
	}
	if side.verdict.Reasons != nil {
		ra.AffectedBy = reasons(side.verdict)
	}
	ra.ReadFiles = nonNil(side.readFiles)
	switch {
	case side.external():
		ra.Status, ra.Error = report.StatusSkipped, externalMessage(side.err)
		return
	case side.failed():
		ra.Status, ra.Error = report.StatusError, text.FirstLine(side.err.Error())
		return
	}
	var res *diff.Result
	objs, ignored, err := p.ignore.apply(side.objs)
	if err == nil && head != nil {
		res, err = diff.Compare(nil, objs, diff.Options{Namespace: ns})
	} else if err == nil {
		res, err = diff.Compare(objs, nil, diff.Options{Namespace: ns})
	}
	if err != nil {
		ra.Status, ra.Error = report.StatusError, text.FirstLine(err.Error())
		return
	}
	ra.Resources, ra.Hooks, ra.Counts = res.Resources, res.Hooks, res.Summary
	ra.Ignored = ignored
	ra.Warning = joinNonEmpty(ra.Warning, joinNonEmpty(side.remoteWarning, strings.Join(res.Warnings, " ")))
	if side.remoteWarning != "" {
		ra.RenderedBy = "argocd"
	}
}

// fillBoth describes an app present on both sides.
func (p *pipeline) fillBoth(ra *report.App, a *discover.App, baseNS, headNS string, bo, ho *outcome) {
	if ho == nil {
		ra.Status, ra.Error = report.StatusError, "not rendered (app-of-apps nesting too deep?)"
		return
	}
	if ho.notRendered {
		if src := p.externalSource(a); src != "" {
			// Never "unchanged": nothing is known of what a source outside the checkout renders.
			ra.Status, ra.Error = report.StatusSkipped, notRenderedMessage(src)
			return
		}
		ra.Status = report.StatusUnchanged // the change cannot reach what it renders from
		return
	}
	if bo == nil {
		bo = &outcome{err: errors.New("not rendered")}
	}
	ra.ReadFiles = nonNil(bo.readFiles)
	ra.Warning = ho.verdict.Warning
	ra.AffectedBy = reasons(ho.verdict)
	switch {
	case ho.external():
		// Reused (the change does not reach it) or not, an app that could not be rendered is never "unchanged".
		ra.Status, ra.Error = report.StatusSkipped, externalMessage(ho.err)
		return
	case ho.failed():
		ra.Status, ra.Error = report.StatusError, text.FirstLine(ho.err.Error())
		return
	case ho.reused:
		ra.Status = report.StatusUnchanged
		return
	}
	baseObjs := bo.objs
	if bo.err != nil {
		baseObjs = nil
		ra.Warning = joinNonEmpty(ra.Warning, "the base revision failed to render ("+text.FirstLine(bo.err.Error())+"): every resource is shown as added")
	}
	baseObjs, ignoredBase, err := p.ignore.apply(baseObjs)
	var headObjs []*unstructured.Unstructured
	var ignoredHead int
	if err == nil {
		headObjs, ignoredHead, err = p.ignore.apply(ho.objs)
	}
	var res *diff.Result
	if err == nil {
		res, err = diff.Compare(baseObjs, headObjs, diff.Options{Namespace: headNS, BaseNamespace: baseNS})
	}
	if err != nil {
		ra.Status, ra.Error = report.StatusError, text.FirstLine(err.Error())
		return
	}
	ra.Resources, ra.Hooks, ra.Counts = res.Resources, res.Hooks, res.Summary
	ra.Ignored = max(ignoredBase, ignoredHead)
	ra.Warning = joinNonEmpty(ra.Warning, joinNonEmpty(ho.remoteWarning, strings.Join(res.Warnings, " ")))
	if ho.remoteWarning != "" {
		ra.RenderedBy = "argocd"
	}
	ra.Status = report.StatusUnchanged
	if res.Summary.Changed() || hooksChanged(res.Hooks) {
		ra.Status = report.StatusChanged
	}
}

func hooksChanged(hooks []diff.Resource) bool {
	for _, h := range hooks {
		if h.Change != diff.Unchanged {
			return true
		}
	}
	return false
}

func reasons(v discover.Verdict) []string {
	var out []string
	for _, r := range v.Reasons {
		out = append(out, r.String())
	}
	return out
}

// externalSource returns the repoURL of the first source of a that is not in the checkout ("" when all are).
// A chart from a Helm repository the renderer fetches (render.Renderer.Fetches) counts as known: what it renders
// follows from the Application's repoURL, chart and targetRevision, not from this repository's files, so an app
// the change does not reach is unchanged, not skipped.
func (p *pipeline) externalSource(a *discover.App) string {
	fetcher, _ := p.r.(interface {
		Fetches(*v1alpha1.ApplicationSource) bool
	})
	for _, src := range a.App.Spec.GetSources() {
		if fetcher != nil && fetcher.Fetches(&src) {
			continue // a chart from an allowed Helm repository: the change cannot alter it unless it alters the app
		}
		if !p.matcher.Match(src.RepoURL) {
			if src.RepoURL == "" {
				return "(no repoURL)"
			}
			return src.RepoURL
		}
	}
	return ""
}

// notRenderedMessage is the error of an app left unrendered because a source is outside the checkout.
func notRenderedMessage(repoURL string) string {
	return "not rendered locally: source " + repoURL + " is not this repository, so what it renders is not known here"
}

// noSourceNote says that no app's source is this repository, naming what the repository is known as and what
// the apps name.
func noSourceNote(known, named []string) string {
	s := "no app takes a source from this repository"
	if len(known) > 0 {
		s += " (known as " + strings.Join(known, ", ") + ")"
	} else {
		s += " (it has no origin remote and no other name was given)"
	}
	if len(named) > 0 {
		s += "; the apps name " + strings.Join(named, ", ")
	}
	return s + ": nothing was rendered, so no app is known to be unchanged"
}

func externalMessage(err error) string {
	return "not rendered locally: " + text.FirstLine(err.Error()) + " (render it through Argo CD)"
}

func joinNonEmpty(a, b string) string {
	if a == "" {
		return b
	}
	if b == "" {
		return a
	}
	return a + "; " + b
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// plan builds the wave plan of the changed and added apps with the release policy at head (or the default); the
// apps it cannot place make it incomplete, and removed apps are listed apart.
func (p *pipeline) plan(policy *plan.Policy, headInv *discover.Inventory, rep *report.Report) *plan.Plan {
	var apps []plan.App
	var unplaced, removed, pinned []plan.Unplaced
	var refused []plan.Violation
	for _, ra := range rep.Apps {
		if ra.PinnedRevision != "" && ra.Status != report.StatusUnchanged && ra.Status != report.StatusRemoved &&
			(ra.Status != report.StatusSkipped || len(ra.AffectedBy) > 0) {
			reason := "pinned to " + ra.PinnedRevision + ": Argo CD syncs it to that revision, not to the merge"
			if ra.Error != "" {
				reason += " (" + ra.Error + ")"
			}
			pinned = append(pinned, plan.Unplaced{App: ra.Name, Namespace: ra.Namespace, Cluster: ra.Cluster, Reason: reason})
			continue
		}
		// An app that failed to render, or that the change affects but could not be rendered, may roll out
		// too: the plan cannot place it, and says so.
		if ra.Status == report.StatusError || ra.Status == report.StatusSkipped && len(ra.AffectedBy) > 0 {
			unplaced = append(unplaced, plan.Unplaced{App: ra.Name, Namespace: ra.Namespace, Cluster: ra.Cluster, Reason: ra.Error})
			continue
		}
		if ra.Status == report.StatusRemoved && ra.Removal != nil {
			removed = append(removed, plan.Unplaced{App: ra.Name, Namespace: ra.Namespace, Cluster: ra.Cluster, Reason: ra.Removal.Detail})
			continue
		}
		if ra.Status != report.StatusChanged && ra.Status != report.StatusAdded {
			continue
		}
		a, ok := headInv.Get(ra.Namespace + "/" + ra.Name)
		if !ok {
			continue
		}
		if msg := destinationProblem(a, headInv); msg != "" {
			refused = append(refused, plan.Violation{App: a.App.Name, Namespace: a.App.Namespace, Cluster: ra.Cluster, Rule: plan.RuleDestination, Message: msg})
			continue
		}
		pa := PlanApp(a)
		pa.Risks = planRisks(&ra)
		apps = append(apps, pa)
	}
	pl := plan.Build(policy, apps)
	if len(refused) > 0 {
		pl.Violations = append(refused, pl.Violations...)
	}
	pl.SetUnplaced(unplaced)
	pl.SetUnreadable(rep.Problems)
	pl.Removed = removed
	pl.Pinned = pinned
	return pl
}

// destinationProblem says, in one line naming the app, why Argo CD refuses its destination: none at all, or a
// cluster no cluster Secret declares (argo-cd v3.6.1 util/argo/argo.go GetDestinationCluster). A cluster is
// unknown only when the fleet declares some: without cluster Secrets or --clusters, the destination is taken as
// it is written. "" when the destination is valid.
func destinationProblem(a *discover.App, inv *discover.Inventory) string {
	d := a.App.Spec.Destination
	switch {
	case d.Server == "" && d.Name == "":
		return fmt.Sprintf("app %s has no destination (neither server nor name): Argo CD refuses to sync it", a.Key)
	case !a.ClusterKnown && len(inv.Clusters.Declared()) > 0:
		what := "cluster " + d.Name
		if d.Server != "" {
			what = "server " + d.Server
		}
		return fmt.Sprintf("app %s: destination %s is not a cluster any cluster Secret declares: Argo CD refuses to sync it", a.Key, what)
	}
	return ""
}

// readPolicy reads the release policy at the head checkout's root (plan.Load): the default policy and "" when
// there is none. Every error is an *InputError: an unreadable file (a symbolic link) says which.
func readPolicy(head *source.Checkout) (*plan.Policy, string, error) {
	policy, file, err := plan.Load(func(name string) ([]byte, error) {
		data, err := head.ReadFile(name)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			err = fmt.Errorf("reading %s: %w", name, err)
		}
		return data, err
	})
	if err != nil {
		return nil, "", inputErr(err)
	}
	return policy, file, nil
}

// place records, on each app of the report, its kind (what the grouped comment names it by) and, with a plan,
// its wave and batch (the comment reads in rollout order); and sets the footer.
func (p *pipeline) place(rep *report.Report, policy *plan.Policy, policyFile string, pl *plan.Plan) {
	type spot struct {
		wave         string
		index, batch int
	}
	spots := map[string]spot{}
	if pl != nil {
		for wi, w := range pl.Waves {
			for bi, b := range w.Batches {
				for _, a := range b.Apps {
					spots[a.Namespace+"/"+a.Name] = spot{w.Name, wi + 1, bi + 1}
				}
			}
		}
	}
	for i := range rep.Apps {
		ra := &rep.Apps[i]
		a, ok := p.head.inv.Get(ra.Key())
		if !ok {
			a, ok = p.base.inv.Get(ra.Key())
		}
		if ok {
			pa := PlanApp(a)
			ra.Kind = policy.AppKind(&pa)
		}
		if s, ok := spots[ra.Key()]; ok {
			ra.Wave, ra.WaveIndex, ra.Batch = s.wave, s.index, s.batch
		}
	}
	f := &report.Footer{PolicyFile: policyFile}
	if pl != nil {
		for _, c := range []string{"approve", "pause", "resume", "abort", "rollback"} {
			f.Commands = append(f.Commands, report.CommandHelp{Command: c, Who: policy.Who(c)})
		}
		f.Reproduce = fmt.Sprintf("fleetwave plan --base %s --head %s", text.Short(rep.Base, 7), text.Short(rep.Head, 7))
	} else {
		f.Reproduce = fmt.Sprintf("fleetwave diff --base %s --head %s", text.Short(rep.Base, 7), text.Short(rep.Head, 7))
	}
	rep.Footer = f
}

// PlanApp is how the planner sees a discovered app.
func PlanApp(a *discover.App) plan.App {
	pa := plan.App{
		Name: a.App.Name, Namespace: a.App.Namespace, Project: a.App.Spec.Project,
		Cluster: a.Cluster.Name, Server: a.Cluster.Server,
		ClusterLabels: a.Cluster.Labels, Labels: a.App.Labels,
		AutomatedSync: a.App.Spec.SyncPolicy != nil && a.App.Spec.SyncPolicy.IsAutomatedSyncEnabled(),
		Source:        a.File,
	}
	if pa.Server == "" {
		pa.Server = a.App.Spec.Destination.Server
	}
	if a.AppSet != "" {
		pa.Source = "appset:" + a.AppSet
	}
	if a.Parent != "" && pa.Source == "" {
		pa.Source = "app:" + a.Parent
	}
	if st := a.Strategy; st != nil && st.Type == "RollingSync" && st.RollingSync != nil {
		pa.RollingSyncSteps = rollingSteps(st.RollingSync.Steps)
	}
	return pa
}

func rollingSteps(steps []v1alpha1.ApplicationSetRolloutStep) []plan.RollingSyncStep {
	out := make([]plan.RollingSyncStep, 0, len(steps))
	for _, s := range steps {
		var st plan.RollingSyncStep
		for _, e := range s.MatchExpressions {
			st.MatchExpressions = append(st.MatchExpressions, plan.Requirement{Key: e.Key, Operator: plan.Operator(e.Operator), Values: e.Values})
		}
		if s.MaxUpdate != nil {
			st.MaxUpdate = s.MaxUpdate.String()
		}
		out = append(out, st)
	}
	return out
}

// unevaluated lists the ApplicationSets the head side could not generate, and those of the base the change
// removes while they were not generated (its apps would go, unknown).
func unevaluated(base, head *discover.Inventory) []report.Unevaluated {
	var out []report.Unevaluated
	seen := map[string]bool{}
	add := func(u discover.Unevaluated) {
		seen[u.AppSet] = true
		out = append(out, report.Unevaluated{ApplicationSet: u.AppSet, File: u.File, Parent: u.Parent,
			Generators: u.Generators, Reason: u.Reason, Changed: u.Changed})
	}
	for _, u := range head.Unevaluated {
		add(u)
	}
	generated := map[string]bool{}
	for _, a := range head.Apps() {
		generated[a.AppSet] = true
	}
	for _, u := range base.Unevaluated {
		if !seen[u.AppSet] && !generated[u.AppSet] {
			u.Reason, u.Changed = "this change removes it, and what it generated is not known", true
			add(u)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ApplicationSet < out[j].ApplicationSet })
	return out
}
