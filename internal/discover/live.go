package discover

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/fleetwave/fleetwave/internal/kit/text"
)

// GenerateFunc evaluates an ApplicationSet through Argo CD (POST /api/v1/applicationsets/generate): the
// Applications Argo CD would generate from it now. It is how generators that need a live service are evaluated.
type GenerateFunc func(set *v1alpha1.ApplicationSet) ([]v1alpha1.Application, error)

// Unevaluated is an ApplicationSet discovery did not expand: it has a generator that needs a live service
// (scmProvider, pullRequest, plugin, clusterDecisionResource) and Argo CD did not evaluate it. Its apps are
// neither listed nor compared: nothing is known of them.
type Unevaluated struct {
	File   string // the file declaring it ("" when found in a parent app's manifests)
	AppSet string // namespace/name
	Parent string // the app-of-apps whose manifests hold it, if any
	// Generators are the kinds that need a live service, in the spec's order.
	Generators []string
	// Reason says why it was not evaluated, in one line.
	Reason string
	// Changed is true when the change being previewed adds or alters the ApplicationSet (only known on the head
	// side of a change, Options.Reuse set).
	Changed bool
}

// liveSet is what became of an ApplicationSet with live generators at one revision, kept so that the head side
// of a change can compare with and reuse the base's.
type liveSet struct {
	spec, generators []byte // JSON of spec and of spec.generators
	apps             []v1alpha1.Application
	unevaluated      *Unevaluated
}

// liveKinds are the generators Argo CD evaluates against live services (applicationset/generators: SCM
// provider APIs, pull request APIs, plugin services, duck-typed cluster resources), found at any depth of
// matrix and merge nesting.
var liveKinds = []string{"scmProvider", "pullRequest", "clusterDecisionResource", "plugin"}

// liveGenerators names the live generators of set, walking the JSON of its generators: nested matrix and
// merge generators are raw JSON in the API types (ApplicationSetNestedGenerator.Matrix/Merge).
func liveGenerators(set *v1alpha1.ApplicationSet) []string {
	raw, err := json.Marshal(set.Spec.Generators)
	if err != nil {
		return nil
	}
	var gens []any
	if err := json.Unmarshal(raw, &gens); err != nil {
		return nil
	}
	var out []string
	var walk func(gens []any, depth int)
	walk = func(gens []any, depth int) {
		if depth > 8 {
			return
		}
		for _, g := range gens {
			m, _ := g.(map[string]any)
			for _, k := range liveKinds {
				if m[k] != nil && !slices.Contains(out, k) {
					out = append(out, k)
				}
			}
			for _, nest := range []string{"matrix", "merge"} {
				if n, ok := m[nest].(map[string]any); ok {
					if inner, ok := n["generators"].([]any); ok {
						walk(inner, depth+1)
					}
				}
			}
		}
	}
	walk(gens, 0)
	return out
}

// generateLive expands an ApplicationSet that has live generators: through Argo CD when it is configured and the
// change may have it evaluated, otherwise not at all (an Unevaluated entry says why).
//
// A pull request is hostile: its generators could point Argo CD's SCM credentials (tokenRef) at another host, or
// feed a plugin service with input of its choosing. So on the head side of a change, Argo CD evaluates a set only
// when its generators are exactly the base revision's (the template may differ: it is rendered by Argo CD's
// template engine, which reaches no service); a set the change adds or whose generators it alters is left
// unevaluated and marked Changed, which fails the diff check until a person reviews it. A set the change leaves
// as it was is not generated again: the base's answer is reused.
func (inv *Inventory) generateLive(set *v1alpha1.ApplicationSet, key, file, parent string, kinds []string) []*App {
	spec, _ := json.Marshal(set.Spec)
	gens, _ := json.Marshal(set.Spec.Generators)
	rec := &liveSet{spec: spec, generators: gens}
	inv.live[key] = rec
	unevaluated := func(reason string, changed bool) []*App {
		rec.unevaluated = &Unevaluated{File: file, AppSet: key, Parent: parent, Generators: kinds, Reason: reason, Changed: changed}
		inv.Unevaluated = append(inv.Unevaluated, *rec.unevaluated)
		return nil
	}
	if base := inv.opts.Reuse; base != nil {
		base.mu.Lock() // the base's app-of-apps expansion may add to its sets
		b := base.live[key]
		base.mu.Unlock()
		switch {
		case b != nil && bytes.Equal(b.spec, spec):
			rec.apps = b.apps
			if b.unevaluated != nil {
				return unevaluated(b.unevaluated.Reason, false)
			}
			return inv.liveApps(set, key, file, parent, b.apps)
		case b == nil || !bytes.Equal(b.generators, gens):
			what := "this change adds it"
			if b != nil {
				what = "this change alters its generators"
			}
			return unevaluated(what+"; Argo CD evaluates live generators only as the base revision declares them, so review it by hand", true)
		}
		// Only the template changed: Argo CD may render it.
		if inv.generator(inv.setInstances[key].name) == nil {
			return unevaluated(noArgoCD, true)
		}
	}
	if pl := inv.setInstances[key]; pl.err != nil {
		return unevaluated("not generated through Argo CD: "+text.FirstLine(pl.err.Error()), inv.opts.Reuse != nil)
	}
	generate := inv.generator(inv.setInstances[key].name)
	if generate == nil {
		return unevaluated(noArgoCD, false)
	}
	apps, err := generate(set)
	if err != nil {
		return unevaluated("Argo CD could not generate it: "+text.FirstLine(err.Error()), inv.opts.Reuse != nil)
	}
	rec.apps = apps
	return inv.liveApps(set, key, file, parent, apps)
}

const noArgoCD = "it needs a live service, which only Argo CD evaluates (configure Argo CD: FLEETWAVE_ARGOCD_URL, or --argocd)"

// liveApps turns the Applications Argo CD generated into inventory apps, with the checks generate makes.
func (inv *Inventory) liveApps(set *v1alpha1.ApplicationSet, key, file, parent string, apps []v1alpha1.Application) []*App {
	var out []*App
	for i := range apps {
		app := apps[i].DeepCopy()
		if errs := validation.IsDNS1123Subdomain(app.Name); len(errs) > 0 {
			inv.Problems = append(inv.Problems, Problem{File: file, App: key,
				Err: fmt.Errorf("generated by Argo CD: application name %q is not a valid Kubernetes name: %s", app.Name, errs[0])})
			continue
		}
		if app.Namespace == "" {
			app.Namespace = set.Namespace
		}
		out = append(out, &App{App: app, File: file, AppSet: key, Parent: parent, Strategy: set.Spec.Strategy,
			AppSetSyncPolicy: set.Spec.SyncPolicy, GeneratedByArgoCD: true})
	}
	return out
}
