package preview

import (
	"fmt"
	"reflect"

	gdiff "github.com/argoproj/argo-cd/gitops-engine/v3/pkg/diff"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/argoproj/argo-cd/v3/util/argo/normalizers"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetwave/fleetwave/internal/plan"
)

// ignorer leaves the release policy's diff.ignore fields out of both sides of a diff, with Argo CD's own
// ignore normalizer (util/argo/normalizers/diff_normalizer.go NewIgnoreNormalizer: group and kind are globs,
// JSON pointers are removed with a JSON patch, jq path expressions with del(...)).
type ignorer struct {
	n     gdiff.Normalizer
	rules int
}

// newIgnorer builds the normalizer of a policy's rules; nil when there are none.
func newIgnorer(rules []plan.IgnoreRule) (*ignorer, error) {
	if len(rules) == 0 {
		return nil, nil
	}
	ig := make([]v1alpha1.ResourceIgnoreDifferences, len(rules))
	for i, r := range rules {
		ig[i] = v1alpha1.ResourceIgnoreDifferences{Group: r.Group, Kind: r.Kind, Name: r.Name, Namespace: r.Namespace,
			JSONPointers: r.JSONPointers, JQPathExpressions: r.JQPathExpressions}
	}
	n, err := normalizers.NewIgnoreNormalizer(ig, nil, normalizers.IgnoreNormalizerOpts{})
	if err != nil {
		return nil, fmt.Errorf("diff.ignore: %w", err)
	}
	return &ignorer{n: n, rules: len(rules)}, nil
}

// apply returns objs with the ignored fields removed (copies of the objects it changes; the render's own
// objects are shared with other apps and caches) and how many objects it changed.
func (g *ignorer) apply(objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, int, error) {
	if g == nil || len(objs) == 0 {
		return objs, 0, nil
	}
	out := make([]*unstructured.Unstructured, len(objs))
	changed := 0
	for i, o := range objs {
		if o == nil {
			continue
		}
		c := o.DeepCopy()
		if err := g.n.Normalize(c); err != nil {
			return nil, 0, fmt.Errorf("diff.ignore on %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		if reflect.DeepEqual(c.Object, o.Object) {
			out[i] = o
			continue
		}
		out[i] = c
		changed++
	}
	return out, changed, nil
}
