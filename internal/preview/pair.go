package preview

import (
	"context"
	"errors"
	"sort"
	"strings"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetwave/fleetwave/internal/diff"
	"github.com/fleetwave/fleetwave/internal/discover"
	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/report"
)

// diff pairs the apps of both sides and diffs them (stage 6), with the diff settings of the head's release policy,
// and says when no app takes a source from this repository (names: what it is known as).
func (p *pipeline) diff(ctx context.Context, in Input, rep *report.Report, pol headPolicy, names []string) {
	// The head policy's diff settings shape the diffs; an invalid policy is reported by the plan (or here).
	var diffSettings plan.DiffSettings
	if pol.err == nil {
		diffSettings = pol.policy.Diff
		var err error
		if p.ignore, err = newIgnorer(pol.policy.Diff.Ignore); err != nil {
			rep.Notes = append(rep.Notes, text.FirstLine(err.Error())+": not applied")
		}
	} else if !in.Plan {
		rep.Notes = append(rep.Notes, "the release policy is invalid, so its diff settings are not applied: "+text.FirstLine(pol.err.Error()))
	}
	rep.FoldChartLabels = !diffSettings.ShowChartLabels
	p.dropRenders = !p.instances.live() || in.PlanOnly // the live comparison reads the renders after pair
	rep.Apps = p.pair(ctx)
	// A source in another git repository the renderer fetches (an allowed one) was rendered: not a foreign fleet.
	rendered := func(u string) bool {
		return p.matcher.Match(u) || p.r.Fetches(&v1alpha1.ApplicationSource{RepoURL: u})
	}
	if foreign, named := discover.ForeignFleet(rendered, p.base.inv, p.head.inv); foreign {
		rep.NoSourceInRepo, rep.AppRepoURLs = true, named
		rep.Notes = append(rep.Notes, noSourceNote(names, named))
	}
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
		Instance: a.Instance, Cluster: cluster, Server: server, File: a.File, AppSet: a.AppSet, Parent: a.Parent,
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
	for _, src := range a.App.Spec.GetSources() {
		if p.r.Fetches(&src) {
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
