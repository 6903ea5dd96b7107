package preview

import (
	"context"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/discover"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/report"
)

// Renderer renders one Application (internal/render.Renderer implements it).
type Renderer interface {
	Render(ctx context.Context, req render.Request) (*render.Result, error)
	// Fetches reports whether the renderer fetches src itself (a chart from an allowed Helm repository, another
	// allowed git repository): what it renders follows from the Application, not from this repository's files.
	Fetches(src *v1alpha1.ApplicationSource) bool
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
	// their live state is not compared (ArgoCD serves only what the plan needs: rendering through Argo CD,
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
	// ArgoCD is what the preview asks of Argo CD, one port per role (internal/edge/argocd/livediff's Comparer serves
	// them all: Comparer.Ports); its zero value asks nothing, and the report is what it is without Argo CD.
	ArgoCD ArgoCD
	// NoRemoteHead keeps the head side from being rendered through Argo CD (ArgoCD.Remote): Argo CD would
	// run the head's content through its config-management plugins, whose output (a secret-injecting plugin's
	// resolved values among them) comes back in the diff. The App sets it for a pull request unless its
	// repository opts in (serve's FLEETWAVE_ARGOCD_RENDER_HEAD_REPOS), and always for a fork's. The base side is
	// merged content and is rendered through Argo CD either way.
	NoRemoteHead bool
	// InstanceOf, when set, spreads the fleet over several Argo CD instances: each discovered app is held by the
	// instance it names (discover.App.Instance), whose ports (Instances[name].ArgoCD), render settings and
	// clusters serve it. An app that maps to no instance, to several, or to one not in Instances is an error
	// line of the report with the resolver's reason, never rendered or compared (the plan lists it unplaced).
	// nil: a fleet of one Argo CD, every app's instance is "" (ArgoCD, Settings, Clusters).
	InstanceOf InstanceOf
	// Instances are the instances InstanceOf names, by name; the instance "" is ArgoCD, Settings and Clusters
	// unless listed here.
	Instances map[string]Instance
}

// DefaultRenderBudget is Input.RenderBudget's default: ten apps at render.DefaultTimeout each.
const DefaultRenderBudget = 10 * render.DefaultTimeout

// InputError is a problem with the request itself (not a repository, unknown revision, broken policy): the
// CLI exits 2 on it.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputErr(err error) error { return &InputError{Err: err} }

// Result is what Run makes of a change.
type Result struct {
	// Report is the preview: what the CLI prints and the App posts. Report.Plan is Plan.
	Report *report.Report
	// Plan is the wave plan (Input.Plan), nil without one: not asked for, or the release policy is invalid.
	Plan *plan.Plan
	// Policy is the release policy the preview read at head (plan.Load: the default when the repository has
	// none), the one the plan was made with and whose diff settings shaped the diffs; nil when it is unreadable
	// or invalid. PolicyFile names its file ("" for the default).
	Policy     *plan.Policy
	PolicyFile string
}

// Run previews a change (see the package documentation for the steps): it discovers the fleet at base and at
// head, renders at base the apps the change can reach (what each render reads decides which apps the change
// affects), renders the affected apps at head, diffs them and, when asked, plans the rollout. Apps that fail to
// render are reported in the Report, not returned as an error; an error (an *InputError for bad input) means no
// report could be made, except an invalid release policy (a *plan.PolicyError, wrapped in an *InputError): the
// result is then returned too, its report complete but without a plan, its PolicyErrors saying why.
func Run(ctx context.Context, r Renderer, in Input) (*Result, error) {
	if in.PlanOnly {
		in.Plan = true
	}
	ch, rep, err := resolve(ctx, in) // change.go
	if err != nil {
		return nil, err
	}
	p, err := open(ctx, r, in, ch) // sides.go
	if err != nil {
		return nil, err
	}
	defer p.close()
	if err := p.renderSides(ctx); err != nil { // render.go
		return nil, err
	}
	pol := readPolicy(p.head.co)        // planning.go
	p.diff(ctx, in, rep, pol, ch.names) // pair.go
	if p.instances.live() && !in.PlanOnly {
		if err := p.live(ctx, rep); err != nil { // live.go
			return nil, err
		}
	}
	p.findings(rep)                     // findings.go
	return p.planned(ctx, in, rep, pol) // planning.go
}
