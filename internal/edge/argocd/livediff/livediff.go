package livediff

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	gdiff "github.com/argoproj/argo-cd/gitops-engine/v3/pkg/diff"
	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/sync/hook"
	resourceutil "github.com/argoproj/argo-cd/gitops-engine/v3/pkg/sync/resource"
	"github.com/argoproj/argo-cd/v3/common"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	argodiff "github.com/argoproj/argo-cd/v3/util/argo/diff"
	"github.com/argoproj/argo-cd/v3/util/argo/normalizers"
	"github.com/argoproj/argo-cd/v3/util/git"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetwave/fleetwave/internal/diff"
	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/kit/yamlcodec/manifestyaml"
	"github.com/fleetwave/fleetwave/internal/preview"
	"github.com/fleetwave/fleetwave/internal/report"
)

// ArgoCD is what the comparison needs of Argo CD's API (*argocd.Client implements it).
type ArgoCD interface {
	ListApplications(ctx context.Context, q argocd.ListQuery) (*v1alpha1.ApplicationList, error)
	ManagedResources(ctx context.Context, name string) ([]v1alpha1.ResourceDiff, error)
	FindApplication(ctx context.Context, name, project string) (*v1alpha1.Application, error)
	Manifests(ctx context.Context, name, revision string) (*argocd.ManifestResponse, error)
	Settings(ctx context.Context) (*argocd.Settings, error)
	GenerateApplicationSet(ctx context.Context, set *v1alpha1.ApplicationSet) ([]v1alpha1.Application, error)
	SourcesManifests(ctx context.Context, name string, revisions []string) (*argocd.ManifestResponse, error)
	ProjectSyncWindows(ctx context.Context, project string) (v1alpha1.SyncWindows, error)
}

// Options tune a Comparer.
type Options struct {
	// Server names Argo CD in error messages (its URL).
	Server string
	// Concurrency bounds the managed-resources calls in flight (default 8).
	Concurrency int
	// Context is the number of unchanged lines around each change of a live diff (default 3).
	Context int
	// System, when set, is Argo CD's system-wide diff settings (LoadArgoCDCM of an argocd-cm file); nil reads
	// them from GET /api/v1/settings.
	System *System
}

// System is Argo CD's system-wide diff settings, from argocd-cm.
type System struct {
	// Overrides are the resource customizations (resource.customizations and
	// resource.customizations.<type>.<group_kind> keys) keyed "group/kind" ("*/*" for .all), with Argo CD's
	// status ignoring (resource.compareoptions ignoreResourceStatusField) added, as GET /api/v1/settings
	// serves them.
	Overrides map[string]v1alpha1.ResourceOverride
	// IgnoreAggregatedRoles is resource.compareoptions' ignoreAggregatedRoles (not served by the settings API).
	IgnoreAggregatedRoles bool
	// AppLabelKey and TrackingMethod are the tracking settings ("": Argo CD's defaults).
	AppLabelKey, TrackingMethod string
}

// Comparer is the preview's Argo CD: it compares affected apps with their live state, renders the apps only Argo
// CD can render, generates the ApplicationSets of live generators and reads sync windows (Ports).
type Comparer struct {
	argo ArgoCD
	opts Options
}

// New returns a Comparer reading live state from argo.
func New(argo ArgoCD, opts Options) *Comparer {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 8
	}
	return &Comparer{argo: argo, opts: opts}
}

// Ports is c in each of the preview's Argo CD roles.
func (c *Comparer) Ports() preview.ArgoCD {
	return preview.ArgoCD{Live: c, Remote: c, AppSets: c, Windows: c}
}

// GenerateApplicationSet generates set's apps through Argo CD's generate endpoint (see
// argocd.Client.GenerateApplicationSet).
func (c *Comparer) GenerateApplicationSet(ctx context.Context, set *v1alpha1.ApplicationSet) ([]v1alpha1.Application, error) {
	return c.argo.GenerateApplicationSet(ctx, set)
}

// ProjectSyncWindows reads an AppProject's sync windows (preview.SyncWindowReader: the plan says which waves a
// window holds).
func (c *Comparer) ProjectSyncWindows(ctx context.Context, project string) (preview.ProjectWindows, error) {
	ws, err := c.argo.ProjectSyncWindows(ctx, project)
	if err != nil {
		return nil, err
	}
	return projectWindows(ws), nil
}

// projectWindows are a project's sync windows, evaluated for an app as Argo CD does: argocd.EvaluateWindows over
// the windows that match it (argocd.AppWindows, v1alpha1.SyncWindows.Matches).
type projectWindows v1alpha1.SyncWindows

func (ws projectWindows) HoldAt(app *v1alpha1.Application, now time.Time) preview.WindowHold {
	h := argocd.EvaluateWindows(argocd.AppWindows(v1alpha1.SyncWindows(ws), app), now)
	return preview.WindowHold{Blocked: h.Blocked, Reason: h.Reason, Until: h.Until}
}

// RenderRemote renders app through Argo CD's repo-server with one revision per source (GET .../manifests with
// ?revision= for a single source, ?revisions=&sourcePositions= for several): the way to see what a
// config-management plugin, or a source only Argo CD fetches, makes of a change. Argo CD renders the Application
// it holds, so when that one's sources differ from app's in more than their revisions (the change edits the
// Application itself) the render carries a warning.
//
// Only an app managed from this repository is rendered (ManagedHere with repoURLs): for any other,
// preview.ErrNotManagedHere, before Argo CD is asked to render anything.
func (c *Comparer) RenderRemote(ctx context.Context, app *v1alpha1.Application, revisions []string, repoURLs []string) (*preview.RemoteRender, error) {
	name := app.Namespace + "/" + app.Name
	held, err := c.argo.FindApplication(ctx, name, app.Spec.Project)
	if errors.Is(err, argocd.ErrNotFound) { // not there, or in another project than the change says
		return nil, preview.ErrNotInArgoCD
	}
	if err != nil {
		return nil, err
	}
	if !ManagedHere(held, app, repoURLs) {
		return nil, preview.ErrNotManagedHere
	}
	var res *argocd.ManifestResponse
	switch {
	case len(revisions) != len(app.Spec.GetSources()):
		return nil, fmt.Errorf("rendering %s through Argo CD: %d revisions for %d sources", name, len(revisions), len(app.Spec.GetSources()))
	case held.Spec.HasMultipleSources() != app.Spec.HasMultipleSources() || len(held.Spec.GetSources()) != len(revisions):
		return nil, fmt.Errorf("the Application %s in Argo CD has %d source(s), the change's %d: it cannot render the change's", name, len(held.Spec.GetSources()), len(revisions))
	case app.Spec.HasMultipleSources():
		res, err = c.argo.SourcesManifests(ctx, name, revisions)
	default:
		res, err = c.argo.Manifests(ctx, name, revisions[0])
	}
	if err != nil {
		return nil, err
	}
	out := &preview.RemoteRender{Objects: make([]*unstructured.Unstructured, 0, len(res.Manifests))}
	for i, m := range res.Manifests {
		obj, err := decode(m)
		if err != nil {
			return nil, fmt.Errorf("manifest %d of %s from Argo CD: %w", i, name, err)
		}
		if obj != nil {
			out.Objects = append(out.Objects, obj)
		}
	}
	if !sameSources(held.Spec.GetSources(), app.Spec.GetSources()) {
		out.Warning = "Argo CD rendered it with the sources of the Application it holds, which this revision changes"
	}
	return out, nil
}

// ManagedHere reports whether held, the Argo CD app of change's namespace and name, is this repository's to show:
// its project is change's (an empty project is "default", as Application.Spec.GetProject reads it) and one of its
// live sources (spec.source, spec.sources) has a repoURL that is one of repoURLs by argo-cd util/git SameURL (the
// URL normalised as NormalizeGitURL does). A pull request that adds an Application named like another team's app
// must not get that app's live objects, nor have Argo CD render it at revisions the pull request picks.
func ManagedHere(held, change *v1alpha1.Application, repoURLs []string) bool {
	if held == nil || change == nil || held.Spec.GetProject() != change.Spec.GetProject() {
		return false
	}
	for _, src := range held.Spec.GetSources() {
		for _, u := range repoURLs {
			if strings.TrimSpace(u) != "" && git.SameURL(src.RepoURL, u) {
				return true
			}
		}
	}
	return false
}

// sameSources compares two source lists as Argo CD would use them, revisions aside (they are given apart).
func sameSources(a, b v1alpha1.ApplicationSources) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i].DeepCopy(), b[i].DeepCopy()
		x.TargetRevision, y.TargetRevision = "", ""
		if !x.Equals(y) {
			return false
		}
	}
	return true
}

// CompareLive lists Argo CD's applications once, then compares each app that exists there (matched by
// namespace and name) with its managed resources. The error is the list's: Argo CD unreachable or refusing.
func (c *Comparer) CompareLive(ctx context.Context, apps []preview.LiveApp) ([]*report.Live, error) {
	list, err := c.argo.ListApplications(ctx, argocd.ListQuery{})
	if err != nil {
		where := ""
		if c.opts.Server != "" {
			where = " at " + c.opts.Server
		}
		return nil, fmt.Errorf("reading live state from argo cd%s: %w", where, err)
	}
	sys, sysNote := c.system(ctx)
	known := make(map[string]*v1alpha1.Application, len(list.Items))
	for i := range list.Items {
		a := &list.Items[i]
		known[a.Namespace+"/"+a.Name] = a
	}
	out := make([]*report.Live, len(apps))
	sem := make(chan struct{}, c.opts.Concurrency)
	var wg sync.WaitGroup
	for i, la := range apps {
		if la.App == nil {
			continue
		}
		argoApp, ok := known[la.App.Namespace+"/"+la.App.Name]
		if !ok {
			out[i] = &report.Live{Missing: true, Drift: []string{}, LiveDiff: []diff.Resource{}}
			continue
		}
		if !ManagedHere(argoApp, la.App, la.RepoURLs) {
			// Another repository's app (or another project's): its live state is not this pull request's to read.
			out[i] = &report.Live{NotManaged: true, Drift: []string{}, LiveDiff: []diff.Resource{}}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			out[i] = c.compareApp(ctx, la, argoApp, sys)
			if sysNote != "" && out[i].Error == "" && !out[i].Missing {
				out[i].Notes = append(out[i].Notes, sysNote)
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// system returns Argo CD's system-wide diff settings: Options.System, else GET /api/v1/settings. When the
// settings cannot be read, Argo CD's defaults (status ignored on every kind, no customization) are used and the
// note says so.
func (c *Comparer) system(ctx context.Context) (System, string) {
	if c.opts.System != nil {
		return *c.opts.System, ""
	}
	st, err := c.argo.Settings(ctx)
	if err != nil {
		return DefaultSystem(), "Argo CD's settings could not be read (" + text.FirstLine(err.Error()) + "): its resource.customizations.ignoreDifferences were not applied"
	}
	sys := System{Overrides: st.ResourceOverrides, AppLabelKey: st.AppLabelKey, TrackingMethod: st.TrackingMethod}
	if sys.Overrides == nil {
		sys.Overrides = map[string]v1alpha1.ResourceOverride{}
	}
	return sys, ""
}

func (c *Comparer) compareApp(ctx context.Context, la preview.LiveApp, argoApp *v1alpha1.Application, sys System) *report.Live {
	items, err := c.argo.ManagedResources(ctx, argoApp.Namespace+"/"+argoApp.Name)
	if errors.Is(err, argocd.ErrNotFound) {
		return &report.Live{Missing: true, Drift: []string{}, LiveDiff: []diff.Resource{}}
	}
	if err != nil {
		return &report.Live{Error: text.FirstLine(err.Error()), Drift: []string{}, LiveDiff: []diff.Resource{}}
	}
	ignore := la.App.Spec.IgnoreDifferences
	if len(ignore) == 0 {
		ignore = argoApp.Spec.IgnoreDifferences
	}
	l, err := Compare(ctx, Input{
		Base: la.Base, Head: la.Head, BaseNamespace: la.BaseNamespace, HeadNamespace: la.HeadNamespace,
		Live: items, IgnoreDifferences: ignore, Context: c.opts.Context,
		System: &sys, Resources: argoApp.Status.Resources,
	})
	if err != nil {
		return &report.Live{Error: text.FirstLine(err.Error()), Drift: []string{}, LiveDiff: []diff.Resource{}}
	}
	return l
}

// Input is one app's comparison.
type Input struct {
	// Base and Head are the app's renders; Base nil means there is no base render (added app, failed render):
	// no drift is computed.
	Base, Head []*unstructured.Unstructured
	// BaseNamespace and HeadNamespace are the destination namespaces (BaseNamespace "" takes HeadNamespace).
	BaseNamespace, HeadNamespace string
	// Live is GET managed-resources' items.
	Live []v1alpha1.ResourceDiff
	// IgnoreDifferences is the Application's spec.ignoreDifferences.
	IgnoreDifferences []v1alpha1.ResourceIgnoreDifferences
	// System is Argo CD's system-wide diff settings; nil is DefaultSystem.
	System *System
	// Resources is the Application's status.resources: which live resources Argo CD would prune.
	Resources []v1alpha1.ResourceStatus
	// Context lines around changes (default 3).
	Context int
}

// Compare compares one app's renders with its live resources. ctx reaches Argo CD's StateDiff (argo-cd v3.6
// util/argo/diff/diff.go), which hands it to gitops-engine's diff.
func Compare(ctx context.Context, in Input) (*report.Live, error) {
	ctxLines := in.Context
	if ctxLines <= 0 {
		ctxLines = 3
	}
	sys := DefaultSystem()
	if in.System != nil {
		sys = *in.System
	}
	if sys.Overrides == nil {
		sys.Overrides = map[string]v1alpha1.ResourceOverride{}
	}
	// The diff configuration Argo CD's controller builds for an app (argo-cd controller/state.go
	// CompareAppState): the app's ignoreDifferences and argocd-cm's resource overrides, tracking settings, the
	// controller's field manager; no cache, no cluster (so no server-side diff: a client-side diff). Each
	// comparison is argo-cd util/argo/diff StateDiff: managedFieldsManagers (util/argo/managedfields), then the
	// ignoreDifferences and known-types normalisers, then gitops-engine's diff.
	cfg, err := argodiff.NewDiffConfigBuilder().
		WithDiffSettings(in.IgnoreDifferences, sys.Overrides, sys.IgnoreAggregatedRoles, normalizers.IgnoreNormalizerOpts{}).
		WithTracking(sys.AppLabelKey, sys.TrackingMethod).
		WithNoCache().
		WithLogger(logr.Discard()).
		WithManager(common.ArgoCDSSAManager).
		Build()
	if err != nil {
		return nil, fmt.Errorf("building the diff configuration: %w", err)
	}
	// Build validates neither ignoreDifferences nor overrides: their jq expressions fail here, once.
	if _, err := normalizers.NewIgnoreNormalizer(in.IgnoreDifferences, sys.Overrides, normalizers.IgnoreNormalizerOpts{}); err != nil {
		return nil, fmt.Errorf("building the ignoreDifferences normaliser: %w", err)
	}

	baseNS := in.BaseNamespace
	if baseNS == "" {
		baseNS = in.HeadNamespace
	}
	head := keyed(in.Head, in.HeadNamespace)
	var base map[diff.Key]*unstructured.Unstructured
	if in.Base != nil {
		base = keyed(in.Base, baseNS)
	}
	// The live object is liveState, the object as the cluster holds it (managed fields included, which
	// managedFieldsManagers needs), normalised here as the controller normalises it; normalizedLiveState (Argo
	// CD's normalisation already applied) only when liveState is absent. targetState is Argo CD's own render,
	// whose masked Secret values tell which live values are the rendered ones.
	live := map[diff.Key]*unstructured.Unstructured{}
	target := map[diff.Key]*unstructured.Unstructured{}
	for _, r := range in.Live {
		if r.Hook {
			continue
		}
		k := diff.Key{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
		state := r.LiveState
		if state == "" || state == "null" {
			state = r.NormalizedLiveState
		}
		obj, err := decode(state)
		if err != nil {
			return nil, fmt.Errorf("decoding the live state of %s: %w", k, err)
		}
		if obj != nil {
			live[k] = obj
		}
		if t, err := decode(r.TargetState); err == nil && t != nil {
			target[k] = t
		}
	}
	pruned := map[string]bool{}
	for _, r := range in.Resources {
		if r.RequiresPruning {
			pruned[diff.Key{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}.String()] = true
		}
	}

	l := &report.Live{Drift: []string{}, LiveDiff: []diff.Resource{}}
	var blinded []string
	var ssa bool
	keys := union(head, live)
	l.Compared = len(keys)
	for _, k := range keys {
		h, lv := head[k], live[k]
		cmp := prepare(h, base[k], lv, target[k])
		if cmp.blinded {
			blinded = append(blinded, k.String())
		}
		ssa = ssa || cmp.ssa
		r, err := liveDiff(ctx, k, cmp.config, cmp.live, cfg, ctxLines)
		if err != nil {
			return nil, err
		}
		if r != nil {
			l.LiveDiff = append(l.LiveDiff, *r)
		}
	}
	if base != nil {
		for _, k := range union(base, live) {
			b, lv := base[k], live[k]
			if b == nil && lv != nil && resourceutil.HasAnnotationOption(lv, common.AnnotationCompareOptions, "IgnoreExtraneous") {
				// Live, in no render: extraneous. With IgnoreExtraneous Argo CD still marks it OutOfSync but
				// does not count it against the app (argo-cd controller/state.go CompareAppState).
				l.IgnoredExtraneous = append(l.IgnoredExtraneous, k.String())
				continue
			}
			cmp := prepare(b, b, lv, target[k])
			if cmp.blinded && !contains(blinded, k.String()) {
				blinded = append(blinded, k.String())
			}
			ssa = ssa || cmp.ssa
			drifted, err := differs(ctx, cmp.config, cmp.live, cfg)
			if err != nil {
				return nil, fmt.Errorf("comparing %s with the base render: %w", k, err)
			}
			if !drifted {
				continue
			}
			l.Drift = append(l.Drift, k.String())
			if b == nil && pruned[k.String()] {
				l.Extraneous = append(l.Extraneous, k.String())
			}
			if sk := changedSecretKeys(cmp.live, cmp.config); len(sk) > 0 && !cmp.blinded {
				if l.DriftSecretKeys == nil {
					l.DriftSecretKeys = map[string][]string{}
				}
				l.DriftSecretKeys[k.String()] = sk
			}
		}
	}
	if len(l.Extraneous) > 0 {
		l.Notes = append(l.Notes, "live but in no render, a sync with prune deletes them (Argo CD: requiresPruning): "+strings.Join(l.Extraneous, ", "))
	}
	if len(l.IgnoredExtraneous) > 0 {
		l.Notes = append(l.Notes, "live but in no render, ignored by Argo CD's sync status (IgnoreExtraneous): "+strings.Join(l.IgnoredExtraneous, ", "))
	}
	for _, k := range sortedKeys(l.DriftSecretKeys) {
		l.Notes = append(l.Notes, "Secret "+k+": live value differs from the base render for "+strings.Join(l.DriftSecretKeys[k], ", "))
	}
	if len(blinded) > 0 {
		sort.Strings(blinded)
		l.Notes = append(l.Notes, "Argo CD masks live Secret values: only keys and metadata of "+strings.Join(blinded, ", ")+" were compared")
	}
	if ssa {
		l.Notes = append(l.Notes, "resources with ServerSideApply=true were compared with a client-side diff (no cluster to dry-run against)")
	}
	return l, nil
}

// pair is one config (render) object and one live object prepared for the comparison.
type pair struct {
	config, live *unstructured.Unstructured
	blinded      bool // Secret values masked by Argo CD and no target to read the masks by: blanked on both sides
	ssa          bool // ServerSideApply sync option dropped from the config
}

// prepare copies the objects and works around what cannot be compared offline: Secret values Argo CD masked
// (gitops-engine HideSecretData "+" runs) and server-side apply, whose diff needs a cluster's schema. base is
// the base render's object of the same key (config itself when comparing with the base), target Argo CD's
// masked render of it (targetState).
func prepare(config, base, live, target *unstructured.Unstructured) pair {
	p := pair{}
	if config != nil {
		p.config = config.DeepCopy()
	}
	if live != nil {
		p.live = live.DeepCopy()
	}
	copyTracking(p.config, p.live)
	if maskedByArgoCD(p.live) && p.config != nil {
		if maskedByArgoCD(target) {
			maskLike(p.config, base, target)
		} else {
			p.blinded = true
			blankSecret(p.config)
			blankSecret(p.live)
		}
	}
	if p.config != nil {
		anns := p.config.GetAnnotations()
		if v, ok := anns[syncOptions]; ok && strings.Contains(v, "ServerSideApply=true") {
			p.ssa = true
			delete(anns, syncOptions)
			p.config.SetAnnotations(anns)
		}
	}
	return p
}

const syncOptions = "argocd.argoproj.io/sync-options"

// Tracking metadata the controller adds to target objects before it diffs (argo-cd controller/state.go
// CompareAppState, SetAppInstance): copied from live onto the render so it is not reported as a difference.
const (
	trackingAnnotation = "argocd.argoproj.io/tracking-id"
	trackingLabel      = "app.kubernetes.io/instance"
)

func copyTracking(config, live *unstructured.Unstructured) {
	if config == nil || live == nil {
		return
	}
	if v, ok := live.GetAnnotations()[trackingAnnotation]; ok {
		anns := config.GetAnnotations()
		if anns == nil {
			anns = map[string]string{}
		}
		if _, set := anns[trackingAnnotation]; !set {
			anns[trackingAnnotation] = v
			config.SetAnnotations(anns)
		}
	}
	if v, ok := live.GetLabels()[trackingLabel]; ok {
		labels := config.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		if _, set := labels[trackingLabel]; !set {
			labels[trackingLabel] = v
			config.SetLabels(labels)
		}
	}
}

// maskedByArgoCD reports a Secret whose data values are all runs of "+" (argo-cd controller/appcontroller.go
// hideSecretData masks managed resources with gitops-engine diff.HideSecretData).
func maskedByArgoCD(obj *unstructured.Unstructured) bool {
	if !diff.IsSecret(obj) {
		return false
	}
	data, _, _ := unstructured.NestedMap(obj.Object, "data")
	if len(data) == 0 {
		return false
	}
	for _, v := range data {
		s, ok := v.(string)
		if !ok || s == "" || strings.Trim(s, "+") != "" {
			return false
		}
	}
	return true
}

// unknownValue stands for a rendered Secret value whose mask is not known: valid base64 (the diff decodes
// Secret data), never a run of "+", so it differs from every masked live value.
const unknownValue = "Pz8/Pw=="

// maskLike replaces config's Secret values by the masks Argo CD gave the same values. gitops-engine
// pkg/diff/diff.go HideSecretData masks each key across target, live and live's last-applied configuration in
// that order: the target's value becomes "++++++++", and a live value equal to it the same run, a different
// one a longer run. So a rendered value equal to what Argo CD rendered (the base render's value, when Argo CD's
// target is the base revision) takes the target's run, and compares with live as the values would; any other
// value (head changed it, or Argo CD's target lacks the key) takes unknownValue, which differs from live.
func maskLike(config, base, target *unstructured.Unstructured) {
	gdiff.NormalizeSecret(config, gdiff.WithLogr(logr.Discard()))
	var baseData map[string]any
	if base != nil {
		b := base.DeepCopy()
		gdiff.NormalizeSecret(b, gdiff.WithLogr(logr.Discard()))
		baseData, _, _ = unstructured.NestedMap(b.Object, "data")
	}
	targetData, _, _ := unstructured.NestedMap(target.Object, "data")
	data, ok := config.Object["data"].(map[string]any)
	if !ok {
		return
	}
	for k, v := range data {
		mask, inTarget := targetData[k].(string)
		bv, inBase := baseData[k]
		if inTarget && inBase && fmt.Sprint(bv) == fmt.Sprint(v) {
			data[k] = mask
		} else {
			data[k] = unknownValue
		}
	}
	// The render's last-applied annotation (if any) holds the values: never compare or show it.
	if anns := config.GetAnnotations(); anns != nil {
		delete(anns, "kubectl.kubernetes.io/last-applied-configuration")
		config.SetAnnotations(anns)
	}
}

// changedSecretKeys names the data keys whose (masked) values differ between live and config, "data.<key>".
func changedSecretKeys(live, config *unstructured.Unstructured) []string {
	if !diff.IsSecret(live) || !diff.IsSecret(config) {
		return nil
	}
	_, _, keys := diff.MaskSecretPair(live, config)
	var out []string
	for _, k := range keys {
		if strings.HasPrefix(k.Key, "data.") && k.Change != "unchanged" {
			out = append(out, k.Key)
		}
	}
	return out
}

// blankSecret replaces every data value (stringData folded in) with "" and drops the last-applied annotation.
func blankSecret(obj *unstructured.Unstructured) {
	if !diff.IsSecret(obj) {
		return
	}
	gdiff.NormalizeSecret(obj, gdiff.WithLogr(logr.Discard()))
	if data, ok := obj.Object["data"].(map[string]any); ok {
		for k := range data {
			data[k] = ""
		}
	}
	delete(obj.Object, "stringData")
	if anns := obj.GetAnnotations(); anns != nil {
		delete(anns, "kubectl.kubernetes.io/last-applied-configuration")
		obj.SetAnnotations(anns)
	}
}

// differs reports whether live differs from config as Argo CD's controller sees it. A live object the config
// lacks differs (it is extraneous); so does a config object not live.
func differs(ctx context.Context, config, live *unstructured.Unstructured, cfg argodiff.DiffConfig) (bool, error) {
	if config == nil || live == nil {
		return config != nil || live != nil, nil
	}
	res, err := argodiff.StateDiff(ctx, live, config, cfg)
	if err != nil {
		return false, err
	}
	return res.Modified, nil
}

// liveDiff returns what a sync of config would change in live (nil when nothing), Secret values masked.
func liveDiff(ctx context.Context, k diff.Key, config, live *unstructured.Unstructured, cfg argodiff.DiffConfig, ctxLines int) (*diff.Resource, error) {
	var from, to *unstructured.Unstructured
	var change diff.Change
	switch {
	case config == nil && live == nil:
		return nil, nil
	case config == nil:
		change, from = diff.Removed, live
	default:
		res, err := argodiff.StateDiff(ctx, live, config, cfg)
		if err != nil {
			return nil, fmt.Errorf("comparing %s with the head render: %w", k, err)
		}
		if !res.Modified {
			return nil, nil
		}
		change = diff.Modified
		if live == nil {
			change = diff.Added
		}
		if from, err = decode(string(res.NormalizedLive)); err != nil {
			return nil, fmt.Errorf("comparing %s: %w", k, err)
		}
		if to, err = decode(string(res.PredictedLive)); err != nil {
			return nil, fmt.Errorf("comparing %s: %w", k, err)
		}
	}
	for _, o := range []*unstructured.Unstructured{from, to} {
		if o != nil {
			unstructured.RemoveNestedField(o.Object, "metadata", "managedFields")
		}
	}
	from, to, secretKeys := diff.MaskSecretPair(from, to)
	fromText, err := toYAML(from)
	if err != nil {
		return nil, fmt.Errorf("serialising live %s: %w", k, err)
	}
	toText, err := toYAML(to)
	if err != nil {
		return nil, fmt.Errorf("serialising head %s: %w", k, err)
	}
	r := &diff.Resource{Key: k, Change: change}
	r.Diff = diff.Unified(fromText, toText, label("live", k, from == nil), label("head", k, to == nil), ctxLines)
	for _, sk := range secretKeys {
		if sk.Change != "unchanged" {
			r.SecretKeys = append(r.SecretKeys, sk)
		}
	}
	if r.Diff == "" && len(r.SecretKeys) == 0 {
		return nil, nil // the difference is in nothing shown (e.g. managed fields)
	}
	return r, nil
}

// keyed keys a render as internal/diff does (and Argo CD's controller, controller/state.go
// DeduplicateTargetObjects): namespaced kinds without a namespace get the destination namespace, cluster-scoped
// ones lose theirs; hooks are left out. The last of duplicate keys wins.
func keyed(objs []*unstructured.Unstructured, namespace string) map[diff.Key]*unstructured.Unstructured {
	m := make(map[diff.Key]*unstructured.Unstructured, len(objs))
	for _, o := range objs {
		if o == nil || hook.IsHook(o) {
			continue
		}
		gvk := o.GroupVersionKind()
		namespaced := diff.DefaultIsNamespaced(gvk.Group, gvk.Kind)
		switch {
		case !namespaced && o.GetNamespace() != "":
			o = o.DeepCopy()
			o.SetNamespace("")
		case namespaced && o.GetNamespace() == "" && namespace != "":
			o = o.DeepCopy()
			o.SetNamespace(namespace)
		}
		m[diff.KeyOf(o)] = o
	}
	return m
}

func union(a, b map[diff.Key]*unstructured.Unstructured) []diff.Key {
	keys := make([]diff.Key, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	return keys
}

// decode parses a JSON object ("", "null": nil).
func decode(s string) (*unstructured.Unstructured, error) {
	if s == "" || s == "null" {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, nil
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// toYAML is sigs.k8s.io/yaml.Marshal of the object ("" for nil): manifestyaml.Marshal writes the same bytes for
// any object, at a fraction of the cost.
func toYAML(obj *unstructured.Unstructured) (string, error) {
	if obj == nil {
		return "", nil
	}
	b, err := manifestyaml.Marshal(obj.Object)
	return string(b), err
}

func label(side string, k diff.Key, absent bool) string {
	if absent {
		return "/dev/null"
	}
	g, ns := k.Group, k.Namespace
	if g == "" {
		g = "core"
	}
	if ns == "" {
		ns = "_cluster"
	}
	return side + "/" + g + "/" + k.Kind + "/" + ns + "/" + k.Name
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
