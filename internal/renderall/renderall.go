// Package renderall renders every Argo CD app a GitOps repository declares at one revision — the "render all"
// mode of repo-server based tools — and hands each app's manifests to the caller as soon as they are made, so
// that memory holds the renders in flight, not the fleet's.
//
// The revision is written out once (internal/edge/source), its Applications and ApplicationSets found by
// internal/discover, and the apps rendered at most Concurrency at a time. App-of-apps is followed as Argo CD
// does (discover.Inventory.Expand): the Applications a parent renders are rendered in turn. Of each render only
// the argoproj.io objects are kept, until Expand has read the children from them.
package renderall

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetwave/fleetwave/internal/discover"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch"
	"github.com/fleetwave/fleetwave/internal/edge/source"
	"github.com/fleetwave/fleetwave/internal/render"
)

// Renderer renders one Application (internal/render.Renderer and internal/render/isolate's pool implement it).
type Renderer interface {
	Render(ctx context.Context, req render.Request) (*render.Result, error)
}

// Input is one render of a whole revision.
type Input struct {
	// RepoDir is the local git repository (working copy top level or bare repository).
	RepoDir string
	// Revision is the revision rendered (branch, tag, sha; default HEAD).
	Revision string
	// RepoURLs are names of the repository that sources may use; the origin remote's URL is added.
	RepoURLs []string
	// Clusters are the destination clusters; nil takes the cluster Secrets the repository declares.
	Clusters []discover.Cluster
	// Settings are the render settings; Revision is set to the commit rendered.
	Settings render.Settings
	// Concurrency bounds concurrent renders (default: the number of CPUs, at least 2).
	Concurrency int
	// TempDir is where the checkout is written ("" for the system default).
	TempDir string
}

// Status is the outcome of one app's render.
type Status string

// The statuses of a Result.
const (
	// Rendered: Objects are the app's manifests.
	Rendered Status = "rendered"
	// Failed: Err says why, in one line.
	Failed Status = "error"
	// Skipped: a source only Argo CD can render (outside this repository, a plugin, a repository not allowed).
	Skipped Status = "skipped"
)

// Result is one app's render, handed to Input's sink as soon as it is made.
type Result struct {
	App     *discover.App
	Status  Status
	Objects []*unstructured.Unstructured // Rendered only
	Err     error                        // Failed and Skipped
	// Elapsed is the render's time.
	Elapsed time.Duration
	// Again marks a second render of an app: a parent rendered the Application with another spec than its file,
	// and the parent's is what Argo CD applies. The later result replaces the earlier one.
	Again bool
	// Done, FailedSoFar and Known count, when this result is handed over, the apps handed over (this one
	// included; Again counts no new app), those whose last result failed, and the apps known so far (app-of-apps
	// adds apps as parents render).
	Done, FailedSoFar, Known int
}

// Summary is what a render of a revision did.
type Summary struct {
	// Commit is the commit rendered.
	Commit string
	// Apps is the number of distinct apps; Rendered, Failed and Skipped count them by their last result.
	Apps, Rendered, Failed, Skipped int
	// Problems are the repository's problems (a broken Application file, a generator that fails), one line each.
	Problems []string
	// Unevaluated are the ApplicationSets whose generators need a live service (SCM provider, pull request,
	// plugin, cluster decision resource), one line each: their apps are only Argo CD's to know, as skipped apps.
	Unevaluated []string
	// NoSourceInRepo says that the revision has apps and not one takes a source from this repository (a fork or
	// a mirror whose names are not the ones the Applications use): nothing was rendered, which is no all-clear.
	// AppRepoURLs are the repoURLs the apps name instead, most named first (at most three).
	NoSourceInRepo bool
	AppRepoURLs    []string
	Elapsed        time.Duration
}

// OK reports whether every app rendered (or was skipped as only Argo CD can render it) and the repository has
// no problem.
func (s *Summary) OK() bool { return s.Failed == 0 && len(s.Problems) == 0 && !s.NoSourceInRepo }

// The string the checkout is indexed by: discovery reads only the files that contain it.
const needleArgo = "argoproj.io"

// Run renders every app of in.Revision, calling sink with each result as soon as it is made, from up to
// in.Concurrency goroutines at once: sink must be safe for concurrent use, and the Objects it is given are not
// kept after it returns. An error from sink stops the run and is returned. Render failures are results, not
// errors; an error (other than sink's) means the revision could not be read.
func Run(ctx context.Context, r Renderer, in Input, sink func(Result) error) (*Summary, error) {
	start := time.Now()
	repo, err := source.Open(ctx, in.RepoDir)
	if err != nil {
		return nil, err
	}
	rev := in.Revision
	if rev == "" {
		rev = "HEAD"
	}
	commit, err := repo.Resolve(ctx, rev)
	if err != nil {
		return nil, err
	}
	names := append([]string(nil), in.RepoURLs...)
	if origin, err := repo.OriginURL(ctx); err == nil && origin != "" {
		names = append(names, origin)
	}
	matcher := source.NewRepoMatcher(names...)
	// Every app is rendered, so the whole revision is written at once rather than app by app.
	co, err := repo.Checkout(ctx, commit, source.ExportOptions{TempDir: in.TempDir, Index: []string{needleArgo}})
	if err != nil {
		return nil, err
	}
	defer co.Close()

	settings := in.Settings.WithDefaults()
	settings.Revision = commit
	mentions := map[string]bool{}
	for _, f := range co.FilesContaining(false, needleArgo) {
		mentions[f] = true
	}
	inv := discover.Discover(discover.Options{Root: co.Dir, Files: co.Files(), Reader: co, Mentions: mentions,
		Clusters: in.Clusters, IsThisRepo: matcher.Match, ControlPlaneNamespace: settings.ControlPlaneNamespace})
	conc := in.Concurrency
	if conc <= 0 {
		conc = max(2, runtime.GOMAXPROCS(0))
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu      sync.Mutex
		last    = map[string]Status{} // each app's last status
		sinkErr error
		done    int
		failed  int
		known   = len(inv.Apps())
		seen    sync.Map // keys rendered: a key seen twice is a second render
	)
	inv.Expand(ctx, func(ctx context.Context, a *discover.App) ([]*unstructured.Unstructured, error) {
		_, again := seen.LoadOrStore(a.Key, true)
		t0 := time.Now()
		res, err := r.Render(ctx, render.Request{
			App: a.App,
			Repos: func(repoURL string) (string, bool) {
				if matcher.Match(repoURL) {
					return co.Dir, true
				}
				return "", false
			},
			Settings: settings,
		})
		out := Result{App: a, Status: Rendered, Elapsed: time.Since(t0), Again: again}
		switch {
		case err != nil && onlyArgoCDRenders(err):
			out.Status, out.Err = Skipped, err
		case err != nil:
			out.Status, out.Err = Failed, err
		default:
			out.Objects = res.Objects
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		mu.Lock()
		prev, had := last[a.Key]
		last[a.Key] = out.Status
		if !had {
			done++
		}
		if out.Status == Failed {
			failed++
		}
		if had && prev == Failed {
			failed-- // the later render replaces it
		}
		if done > known {
			known = len(inv.Apps()) // a new level of app-of-apps
		}
		out.Done, out.FailedSoFar, out.Known = done, failed, known
		mu.Unlock()
		if err := sink(out); err != nil {
			mu.Lock()
			if sinkErr == nil {
				sinkErr = err
			}
			mu.Unlock()
			cancel()
			return nil, err
		}
		if err != nil {
			return nil, err
		}
		return children(res.Objects), nil
	}, conc)
	if sinkErr != nil {
		return nil, sinkErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	sum := &Summary{Commit: commit, Apps: len(last)}
	for _, st := range last {
		switch st {
		case Rendered:
			sum.Rendered++
		case Failed:
			sum.Failed++
		case Skipped:
			sum.Skipped++
		}
	}
	for _, p := range inv.Problems {
		sum.Problems = append(sum.Problems, p.Error())
	}
	for _, name := range co.Skipped() {
		sum.Problems = append(sum.Problems, fmt.Sprintf("%q: not checked out: git refuses to write such a path (an app that reads it finds it missing)", name))
	}
	for _, u := range inv.Unevaluated {
		sum.Unevaluated = append(sum.Unevaluated, fmt.Sprintf("applicationset %s (%s): not evaluated: %s", u.AppSet, u.File, u.Reason))
	}
	sort.Strings(sum.Problems)
	sort.Strings(sum.Unevaluated)
	// As internal/preview: a source in another git repository the renderer fetches (an allowed one) is rendered.
	fetcher, _ := r.(interface {
		Fetches(*v1alpha1.ApplicationSource) bool
	})
	rendered := func(u string) bool {
		return matcher.Match(u) || fetcher != nil && fetcher.Fetches(&v1alpha1.ApplicationSource{RepoURL: u})
	}
	sum.NoSourceInRepo, sum.AppRepoURLs = discover.ForeignFleet(rendered, inv)
	sum.Elapsed = time.Since(start)
	return sum, nil
}

// children keeps, of a render, what app-of-apps needs: its Applications and ApplicationSets (the fleet's other
// manifests are not held once handed over).
func children(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GroupVersionKind().Group == "argoproj.io" {
			out = append(out, o)
		}
	}
	return out
}

// onlyArgoCDRenders tells the render errors of sources only Argo CD can render (internal/preview reports them the
// same way: not rendered locally, never a failure of the change).
func onlyArgoCDRenders(err error) bool {
	return errors.Is(err, render.ErrPluginSource) || errors.Is(err, render.ErrExternalSource) || errors.Is(err, chartfetch.ErrNotAllowed)
}
