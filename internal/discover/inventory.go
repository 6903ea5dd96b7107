package discover

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
)

// App is one Application of the fleet at one revision.
type App struct {
	// Key is "<namespace>/<name>", unique in an inventory.
	Key string
	App *v1alpha1.Application
	// File is the repository file that declares the Application, or the ApplicationSet that generates it
	// ("" for apps found in a parent's rendered manifests).
	File string
	// AppSet is the key of the ApplicationSet that generated the app, if any.
	AppSet string
	// Parent is the key of the app-of-apps Application whose manifests contain this app (or its ApplicationSet).
	Parent string
	// Strategy is the generating ApplicationSet's spec.strategy (RollingSync steps), if any.
	Strategy *v1alpha1.ApplicationSetStrategy
	// AppSetSyncPolicy is the generating ApplicationSet's spec.syncPolicy (whether it deletes apps it no
	// longer generates), if any.
	AppSetSyncPolicy *v1alpha1.ApplicationSetSyncPolicy
	// Cluster is the destination cluster; ClusterKnown is false when no declared cluster matches.
	Cluster      Cluster
	ClusterKnown bool
}

// Name and Namespace of the Application.
func (a *App) Name() string      { return a.App.Name }
func (a *App) Namespace() string { return a.App.Namespace }

// Options configure discovery at one revision.
type Options struct {
	// Root is the checkout of the revision.
	Root string
	// Clusters are the destination clusters; nil takes the cluster Secrets the repository declares.
	Clusters []Cluster
	// IsThisRepo tells whether a repoURL denotes the repository being previewed (git generators read only it).
	IsThisRepo func(repoURL string) bool
	// ControlPlaneNamespace is Argo CD's namespace: the namespace of Applications and ApplicationSets that do
	// not set one (default "argocd").
	ControlPlaneNamespace string
	// MaxDepth bounds app-of-apps nesting (default 16).
	MaxDepth int
	// Files, when set, lists every file of the checkout (slash paths, sorted), sparing a walk of Root.
	Files []string
	// Mentions, when set, holds the files whose text contains "argoproj.io" or the cluster-secret label: only
	// they are read to find Applications, ApplicationSets and cluster Secrets. Without it every YAML/JSON file is
	// read.
	Mentions map[string]bool
	// Reuse is the inventory of another revision of the same repository (the base of a change): its parse of
	// every file not in Changed is taken instead of reading the file again.
	Reuse   *Inventory
	Changed map[string]bool
}

// Inventory is the fleet declared by a repository at one revision.
type Inventory struct {
	opts     Options
	gen      *generatorEnv
	tree     *dirTree
	reachMu  sync.Mutex
	reach    map[string]*reachSet // kustomization closures and chart dependency sets, by directory
	scanned  map[string]*fileScan
	mu       sync.Mutex
	apps     map[string]*App
	Clusters *Clusters
	Problems []Problem
}

// Discover finds the Applications a checkout declares: Application manifests, and the Applications its
// ApplicationSets generate. Problems (broken YAML, a generator that fails) are collected, not fatal.
// Follow app-of-apps with Expand.
func Discover(opts Options) *Inventory {
	if opts.ControlPlaneNamespace == "" {
		opts.ControlPlaneNamespace = "argocd"
	}
	if opts.MaxDepth <= 0 {
		opts.MaxDepth = 16
	}
	var tree *dirTree
	if opts.Files != nil {
		tree = treeFromFiles(opts.Root, opts.Files)
	} else {
		tree = &dirTree{root: opts.Root}
	}
	var reuse map[string]*fileScan
	if opts.Reuse != nil {
		reuse = opts.Reuse.scanned
	}
	sr, scanned := scan(opts.Root, tree, opts.Mentions, reuse, opts.Changed)
	inv := &Inventory{opts: opts, apps: map[string]*App{}, Problems: sr.problems, tree: tree, reach: map[string]*reachSet{}, scanned: scanned}
	clusters := opts.Clusters
	if clusters == nil {
		clusters = sr.clusters
		if err := checkUnique(clusters); err != nil {
			inv.Problems = append(inv.Problems, Problem{Err: fmt.Errorf("repository cluster secrets: %w", err)})
		}
	}
	inv.Clusters = NewClusters(clusters)
	inv.gen = &generatorEnv{t: newTemplater(), clusters: inv.Clusters, tree: tree, isThisRepo: opts.IsThisRepo}
	for _, f := range sr.apps {
		inv.add(&App{App: f.app, File: f.file})
	}
	for _, f := range sr.appSets {
		for _, a := range inv.generate(f.set, f.file, "") {
			inv.add(a)
		}
	}
	return inv
}

// Apps returns the inventory's apps sorted by key.
func (inv *Inventory) Apps() []*App {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	out := make([]*App, 0, len(inv.apps))
	for _, a := range inv.apps {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Get returns the app with the given key.
func (inv *Inventory) Get(key string) (*App, bool) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	a, ok := inv.apps[key]
	return a, ok
}

func (inv *Inventory) normalize(a *App, defaultNS string) {
	if a.App.Namespace == "" {
		a.App.Namespace = defaultNS
	}
	if a.App.APIVersion == "" {
		a.App.APIVersion = "argoproj.io/v1alpha1"
	}
	if a.App.Kind == "" {
		a.App.Kind = "Application"
	}
	a.Key = a.App.Namespace + "/" + a.App.Name
	c, err := inv.Clusters.Resolve(a.App.Spec.Destination)
	a.Cluster, a.ClusterKnown = c, err == nil
}

// add inserts a top-level app; a second declaration of the same key is a problem.
func (inv *Inventory) add(a *App) {
	inv.normalize(a, inv.opts.ControlPlaneNamespace)
	if prev, dup := inv.apps[a.Key]; dup {
		inv.Problems = append(inv.Problems, Problem{File: a.File, App: a.Key,
			Err: fmt.Errorf("application declared twice (also in %s)", where(prev))})
		return
	}
	inv.apps[a.Key] = a
}

func where(a *App) string {
	switch {
	case a.AppSet != "" && a.File != "":
		return "applicationset " + a.AppSet + " in " + a.File
	case a.AppSet != "":
		return "applicationset " + a.AppSet
	case a.Parent != "":
		return "the manifests of " + a.Parent
	default:
		return a.File
	}
}

// generate runs an ApplicationSet's generators (controllers/template/template.go GenerateApplications).
func (inv *Inventory) generate(set *v1alpha1.ApplicationSet, file, parent string) []*App {
	if set.Namespace == "" {
		set = set.DeepCopy()
		set.Namespace = inv.opts.ControlPlaneNamespace
	}
	key := set.Namespace + "/" + set.Name
	var out []*App
	for i, g := range set.Spec.Generators {
		results, err := inv.gen.transform(g, set.Spec.Template, set, map[string]any{})
		if err != nil {
			inv.Problems = append(inv.Problems, Problem{File: file, App: key, Err: fmt.Errorf("generator %d: %s", i+1, oneLine(err))})
			continue
		}
		for _, r := range results {
			for _, p := range r.params {
				app, err := inv.gen.t.renderApplication(r.template, set, p)
				if err != nil {
					inv.Problems = append(inv.Problems, Problem{File: file, App: key, Err: fmt.Errorf("generator %d: rendering template: %s", i+1, oneLine(err))})
					continue
				}
				if app.Name == "" {
					inv.Problems = append(inv.Problems, Problem{File: file, App: key, Err: fmt.Errorf("generator %d: generated application has no name", i+1)})
					continue
				}
				// The API server refuses such an Application, so Argo CD never has it (a template left unresolved:
				// "{{.missing", "{{unknown}}", "<no value>").
				if errs := validation.IsDNS1123Subdomain(app.Name); len(errs) > 0 {
					inv.Problems = append(inv.Problems, Problem{File: file, App: key,
						Err: fmt.Errorf("generator %d: generated application name %q is not a valid Kubernetes name (is a template unresolved?): %s", i+1, app.Name, errs[0])})
					continue
				}
				out = append(out, &App{App: app, File: file, AppSet: key, Parent: parent, Strategy: set.Spec.Strategy, AppSetSyncPolicy: set.Spec.SyncPolicy})
			}
		}
	}
	return out
}

// RenderFunc renders an app's manifests. Expand calls it concurrently; it must be safe for that.
type RenderFunc func(ctx context.Context, app *App) ([]*unstructured.Unstructured, error)

// Expand follows app-of-apps: every app is rendered, and the Applications and ApplicationSets in its manifests
// join the inventory (their apps rendered in turn), level by level up to MaxDepth. An app found again is not
// followed again, so cycles end. A rendered Application replaces a raw manifest of the same key whose spec
// differs (the rendered one is what Argo CD applies). Render errors are the caller's to record.
func (inv *Inventory) Expand(ctx context.Context, render RenderFunc, concurrency int) {
	if concurrency <= 0 {
		concurrency = 1
	}
	frontier := inv.Apps()
	for depth := 0; len(frontier) > 0; depth++ {
		if depth >= inv.opts.MaxDepth {
			for _, a := range frontier {
				inv.Problems = append(inv.Problems, Problem{App: a.Key, Err: fmt.Errorf("app-of-apps nesting deeper than %d levels: not followed", inv.opts.MaxDepth)})
			}
			return
		}
		results := make([][]*unstructured.Unstructured, len(frontier))
		sem := make(chan struct{}, concurrency)
		var wg sync.WaitGroup
		for i, a := range frontier {
			if ctx.Err() != nil {
				break
			}
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				objs, err := render(ctx, a)
				if err == nil {
					results[i] = objs
				}
			}()
		}
		wg.Wait()
		if ctx.Err() != nil {
			return
		}
		var next []*App
		for i, parent := range frontier {
			for _, child := range inv.children(parent, results[i]) {
				if inv.adopt(child) {
					next = append(next, child)
				}
			}
		}
		sort.Slice(next, func(i, j int) bool { return next[i].Key < next[j].Key })
		frontier = next
	}
}

// children are the apps declared by a parent's rendered manifests.
func (inv *Inventory) children(parent *App, objs []*unstructured.Unstructured) []*App {
	defaultNS := parent.App.Spec.Destination.Namespace
	if defaultNS == "" {
		defaultNS = inv.opts.ControlPlaneNamespace
	}
	var out []*App
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		if gvk.Group != "argoproj.io" {
			continue
		}
		switch gvk.Kind {
		case "Application":
			var app v1alpha1.Application
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &app); err != nil {
				inv.problem(Problem{App: parent.Key, Err: fmt.Errorf("child Application %s: %s", o.GetName(), oneLine(err))})
				continue
			}
			if app.Name == "" {
				continue
			}
			if app.Namespace == "" {
				app.Namespace = defaultNS
			}
			out = append(out, &App{App: &app, Parent: parent.Key})
		case "ApplicationSet":
			var set v1alpha1.ApplicationSet
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &set); err != nil {
				inv.problem(Problem{App: parent.Key, Err: fmt.Errorf("child ApplicationSet %s: %s", o.GetName(), oneLine(err))})
				continue
			}
			if set.Namespace == "" {
				set.Namespace = defaultNS
			}
			inv.mu.Lock()
			apps := inv.generate(&set, "", parent.Key)
			inv.mu.Unlock()
			out = append(out, apps...)
		}
	}
	return out
}

func (inv *Inventory) problem(p Problem) {
	inv.mu.Lock()
	inv.Problems = append(inv.Problems, p)
	inv.mu.Unlock()
}

// adopt adds a child app; it reports whether the child is new (or replaced a different raw manifest) and so
// must be rendered in turn.
func (inv *Inventory) adopt(child *App) bool {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	inv.normalize(child, child.App.Namespace)
	prev, ok := inv.apps[child.Key]
	if !ok {
		inv.apps[child.Key] = child
		return true
	}
	if prev.Parent == "" && prev.AppSet == child.AppSet {
		// A raw manifest also applied by a parent (commonly the root app managing itself, or the children
		// of an app-of-apps kept as plain files): the rendered one is what Argo CD applies.
		child.File = prev.File
		if SpecEqual(prev.App, child.App) {
			if child.Parent != child.Key {
				prev.Parent = child.Parent
			}
			return false
		}
		inv.apps[child.Key] = child
		return true
	}
	if !SpecEqual(prev.App, child.App) {
		inv.Problems = append(inv.Problems, Problem{App: child.Key,
			Err: fmt.Errorf("application declared twice (by %s and by %s)", where(prev), where(child))})
	}
	return false // seen before: a cycle, or the same app declared twice
}

// SpecEqual reports whether two Applications have the same spec.
func SpecEqual(a, b *v1alpha1.Application) bool {
	return jsonEqual(a.Spec, b.Spec)
}

// ignoredAnnotations are set by rendering or by kubectl, not by the app's author.
var ignoredAnnotations = map[string]bool{
	"argocd.argoproj.io/tracking-id":                   true,
	"argocd.argoproj.io/installation-id":               true,
	"kubectl.kubernetes.io/last-applied-configuration": true,
}

// DefinitionEqual reports whether two Applications would render the same way as far as their definition goes:
// same spec and same annotations (manifest-generate-paths, sync options...), ignoring tracking annotations.
func DefinitionEqual(a, b *v1alpha1.Application) bool {
	if !SpecEqual(a, b) {
		return false
	}
	strip := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			if !ignoredAnnotations[k] {
				out[k] = v
			}
		}
		return out
	}
	return jsonEqual(strip(a.Annotations), strip(b.Annotations))
}

func jsonEqual(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// String describes where an app comes from, for messages.
func (a *App) String() string {
	var b strings.Builder
	b.WriteString(a.Key)
	if w := where(a); w != "" {
		b.WriteString(" (" + w + ")")
	}
	return b.String()
}
