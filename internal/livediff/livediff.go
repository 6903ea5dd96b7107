package livediff

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/argoproj/argo-cd/v3/util/argo/normalizers"
	gdiff "github.com/argoproj/gitops-engine/pkg/diff"
	"github.com/argoproj/gitops-engine/pkg/sync/hook"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/argocd"
	"github.com/fleetwave/fleetwave/internal/diff"
	"github.com/fleetwave/fleetwave/internal/preview"
	"github.com/fleetwave/fleetwave/internal/report"
)

// ArgoCD is what the comparison needs of Argo CD's API (*argocd.Client implements it).
type ArgoCD interface {
	ListApplications(ctx context.Context, q argocd.ListQuery) (*v1alpha1.ApplicationList, error)
	ManagedResources(ctx context.Context, name string) ([]v1alpha1.ResourceDiff, error)
	FindApplication(ctx context.Context, name, project string) (*v1alpha1.Application, error)
	Manifests(ctx context.Context, name, revision string) (*argocd.ManifestResponse, error)
}

// Options tune a Comparer.
type Options struct {
	// Server names Argo CD in error messages (its URL).
	Server string
	// Concurrency bounds the managed-resources calls in flight (default 8).
	Concurrency int
	// Context is the number of unchanged lines around each change of a live diff (default 3).
	Context int
}

// Comparer compares affected apps with their live state; it implements preview.LiveComparer.
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

var (
	_ preview.LiveComparer   = (*Comparer)(nil)
	_ preview.RemoteRenderer = (*Comparer)(nil)
)

// RenderRemote renders app at revision through Argo CD's repo-server (GET .../manifests?revision=): the way to
// see what a config-management plugin makes of a change. Argo CD renders the Application it holds, so when
// that one's source differs from app's (the change edits the Application itself) the render carries a warning.
func (c *Comparer) RenderRemote(ctx context.Context, app *v1alpha1.Application, revision string) (*preview.RemoteRender, error) {
	name := app.Namespace + "/" + app.Name
	held, err := c.argo.FindApplication(ctx, name, app.Spec.Project)
	if errors.Is(err, argocd.ErrNotFound) { // not there, or in another project than the change says
		return nil, preview.ErrNotInArgoCD
	}
	if err != nil {
		return nil, err
	}
	res, err := c.argo.Manifests(ctx, name, revision)
	if err != nil {
		return nil, err
	}
	out := &preview.RemoteRender{Objects: make([]*unstructured.Unstructured, 0, len(res.Manifests))}
	for i, m := range res.Manifests {
		obj, err := decode(m)
		if err != nil {
			return nil, fmt.Errorf("manifest %d of %s at %s from Argo CD: %w", i, name, revision, err)
		}
		if obj != nil {
			out.Objects = append(out.Objects, obj)
		}
	}
	if !sameSource(held.Spec.Source, app.Spec.Source) {
		out.Warning = "Argo CD rendered it with the source of the Application it holds, which this revision changes"
	}
	return out, nil
}

// sameSource compares two single sources as Argo CD would use them.
func sameSource(a, b *v1alpha1.ApplicationSource) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equals(b)
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
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			out[i] = c.compareApp(ctx, la, argoApp)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func (c *Comparer) compareApp(ctx context.Context, la preview.LiveApp, argoApp *v1alpha1.Application) *report.Live {
	items, err := c.argo.ManagedResources(ctx, argoApp.Namespace+"/"+argoApp.Name)
	if errors.Is(err, argocd.ErrNotFound) {
		return &report.Live{Missing: true, Drift: []string{}, LiveDiff: []diff.Resource{}}
	}
	if err != nil {
		return &report.Live{Error: oneLine(err), Drift: []string{}, LiveDiff: []diff.Resource{}}
	}
	ignore := la.App.Spec.IgnoreDifferences
	if len(ignore) == 0 {
		ignore = argoApp.Spec.IgnoreDifferences
	}
	l, err := Compare(Input{
		Base: la.Base, Head: la.Head, BaseNamespace: la.BaseNamespace, HeadNamespace: la.HeadNamespace,
		Live: items, IgnoreDifferences: ignore, Context: c.opts.Context,
	})
	if err != nil {
		return &report.Live{Error: oneLine(err), Drift: []string{}, LiveDiff: []diff.Resource{}}
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
	// Context lines around changes (default 3).
	Context int
}

// Compare compares one app's renders with its live resources.
func Compare(in Input) (*report.Live, error) {
	ctxLines := in.Context
	if ctxLines <= 0 {
		ctxLines = 3
	}
	// The normaliser Argo CD's controller builds for an app (argo-cd util/argo/diff/normalize.go
	// newDiffNormalizer): ignoreDifferences, then known types.
	ign, err := normalizers.NewIgnoreNormalizer(in.IgnoreDifferences, nil, normalizers.IgnoreNormalizerOpts{})
	if err != nil {
		return nil, fmt.Errorf("building the ignoreDifferences normaliser: %w", err)
	}
	known, err := normalizers.NewKnownTypesNormalizer(nil)
	if err != nil {
		return nil, fmt.Errorf("building the known-types normaliser: %w", err)
	}
	opts := []gdiff.Option{gdiff.WithNormalizer(composite{ign, known}), gdiff.WithLogr(logr.Discard())}

	baseNS := in.BaseNamespace
	if baseNS == "" {
		baseNS = in.HeadNamespace
	}
	head := keyed(in.Head, in.HeadNamespace)
	var base map[diff.Key]*unstructured.Unstructured
	if in.Base != nil {
		base = keyed(in.Base, baseNS)
	}
	live := map[diff.Key]*unstructured.Unstructured{}
	for _, r := range in.Live {
		if r.Hook {
			continue
		}
		k := diff.Key{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
		state := r.NormalizedLiveState
		if state == "" || state == "null" {
			state = r.LiveState
		}
		obj, err := decode(state)
		if err != nil {
			return nil, fmt.Errorf("decoding the live state of %s: %w", k, err)
		}
		if obj != nil {
			live[k] = obj
		}
	}

	l := &report.Live{Drift: []string{}, LiveDiff: []diff.Resource{}}
	var blinded []string
	var ssa bool
	keys := union(head, live)
	l.Compared = len(keys)
	for _, k := range keys {
		h, lv := head[k], live[k]
		cmp := prepare(h, lv)
		if cmp.blinded {
			blinded = append(blinded, k.String())
		}
		ssa = ssa || cmp.ssa
		r, err := liveDiff(k, cmp.config, cmp.live, opts, ctxLines)
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
			cmp := prepare(b, lv)
			if cmp.blinded && !contains(blinded, k.String()) {
				blinded = append(blinded, k.String())
			}
			ssa = ssa || cmp.ssa
			drifted, err := differs(cmp.config, cmp.live, opts)
			if err != nil {
				return nil, fmt.Errorf("comparing %s with the base render: %w", k, err)
			}
			if drifted {
				l.Drift = append(l.Drift, k.String())
			}
		}
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

type composite []gdiff.Normalizer

func (c composite) Normalize(un *unstructured.Unstructured) error {
	for _, n := range c {
		if err := n.Normalize(un); err != nil {
			return err
		}
	}
	return nil
}

// pair is one config (render) object and one live object prepared for gitops-engine's diff.
type pair struct {
	config, live *unstructured.Unstructured
	blinded      bool // Secret values masked by Argo CD: blanked on both sides
	ssa          bool // ServerSideApply sync option dropped from the config
}

// prepare copies the objects and works around what cannot be compared offline: Secret values Argo CD masked
// (gitops-engine HideSecretData "+" runs) and server-side apply, whose diff needs a cluster's schema.
func prepare(config, live *unstructured.Unstructured) pair {
	p := pair{}
	if config != nil {
		p.config = config.DeepCopy()
	}
	if live != nil {
		p.live = live.DeepCopy()
	}
	copyTracking(p.config, p.live)
	if maskedByArgoCD(p.live) {
		p.blinded = true
		blankSecret(p.config)
		blankSecret(p.live)
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

// maskedByArgoCD reports a Secret whose data values are all runs of "+" (argo-cd server/application
// application.go ManagedResources masks them with gitops-engine diff.HideSecretData).
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
func differs(config, live *unstructured.Unstructured, opts []gdiff.Option) (bool, error) {
	if config == nil || live == nil {
		return config != nil || live != nil, nil
	}
	res, err := gdiff.Diff(config, live, opts...)
	if err != nil {
		return false, err
	}
	return res.Modified, nil
}

// liveDiff returns what a sync of config would change in live (nil when nothing), Secret values masked.
func liveDiff(k diff.Key, config, live *unstructured.Unstructured, opts []gdiff.Option, ctxLines int) (*diff.Resource, error) {
	var from, to *unstructured.Unstructured
	var change diff.Change
	switch {
	case config == nil && live == nil:
		return nil, nil
	case config == nil:
		change, from = diff.Removed, live
	default:
		res, err := gdiff.Diff(config, live, opts...)
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

func toYAML(obj *unstructured.Unstructured) (string, error) {
	if obj == nil {
		return "", nil
	}
	b, err := yaml.Marshal(obj.Object)
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

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func oneLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
