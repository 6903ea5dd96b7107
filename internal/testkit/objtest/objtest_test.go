package objtest

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestObjs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		doc       string
		kind, obj string
		replicas  float64
	}{
		{name: "yaml", doc: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: api}\nspec: {replicas: 3}\n", kind: "Deployment", obj: "api", replicas: 3},
		{name: "json", doc: `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"db"},"spec":{"replicas":1}}`, kind: "StatefulSet", obj: "db", replicas: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Obj(t, tc.doc)
			if o.GetKind() != tc.kind || o.GetName() != tc.obj {
				t.Errorf("got %s %s, want %s %s", o.GetKind(), o.GetName(), tc.kind, tc.obj)
			}
			// Numbers are float64, as encoding/json decodes them (the tests' objects compare so with rendered ones).
			if r, _, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", "replicas"); r != tc.replicas {
				t.Errorf("replicas %v (%T), want %v", r, r, tc.replicas)
			}
		})
	}
	if got := Objs(t, "kind: A", "kind: B"); len(got) != 2 || got[0].GetKind() != "A" || got[1].GetKind() != "B" {
		t.Errorf("two documents: %v", got)
	}
}
