package render_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
)

// TestKeepJSON: with Options.KeepJSON, Result.JSON is each object's JSON encoding (what a render worker sends),
// tracking included; without it, nil.
func TestKeepJSON(t *testing.T) {
	root := filetest.Tree(t, map[string]string{
		"app/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {x: '1', html: '<b>'}\n",
		"app/crd.yaml": "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: bs.example.com}\n",
	})
	app, err := render.ParseApplication([]byte("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: k, namespace: argocd}\n" +
		"spec:\n  destination: {namespace: d}\n  source: {repoURL: https://example.com/r.git, path: app}\n"))
	if err != nil {
		t.Fatal(err)
	}
	req := render.Request{App: app, Repos: func(string) (string, bool) { return root, true }}
	for _, keep := range []bool{false, true} {
		res, err := render.New(render.Options{KeepJSON: keep}).Render(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if !keep {
			if res.JSON != nil {
				t.Fatalf("JSON kept without KeepJSON: %d objects", len(res.JSON))
			}
			continue
		}
		if len(res.Objects) != 2 || len(res.JSON) != len(res.Objects) {
			t.Fatalf("%d objects, %d encodings; want 2 and 2", len(res.Objects), len(res.JSON))
		}
		for i, o := range res.Objects {
			want, _ := json.Marshal(o.Object)
			if !bytes.Equal(res.JSON[i], want) {
				t.Fatalf("JSON[%d] = %s, want %s", i, res.JSON[i], want)
			}
		}
	}
}
