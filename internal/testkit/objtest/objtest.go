// Package objtest builds Kubernetes objects for tests from the YAML (or JSON) a test writes inline. It is
// imported by tests only.
package objtest

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Objs parses each document (one object each, YAML or JSON) into an object, in order; a document that does not
// parse fails tb.
func Objs(tb testing.TB, docs ...string) []*unstructured.Unstructured {
	tb.Helper()
	out := make([]*unstructured.Unstructured, 0, len(docs))
	for _, d := range docs {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(d), &m); err != nil {
			tb.Fatalf("parsing %q: %v", d, err)
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out
}

// Obj is Objs for one document.
func Obj(tb testing.TB, doc string) *unstructured.Unstructured {
	tb.Helper()
	return Objs(tb, doc)[0]
}
