package isolate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/render/isolate"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
)

// TestChangeOutputBudget: the manifests of the renders of one Pool.For view (one change's preview) count in a
// budget of their own; past it an app is refused in one line naming it, its source and the rule, while a new
// view (the next preview) and Pool.Render count from nothing.
func TestChangeOutputBudget(t *testing.T) {
	root := filetest.Tree(t, map[string]string{
		"big/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata: {x: " + strings.Repeat("x", 4000) + "}\n",
	})
	pool, err := isolate.New(isolate.Options{Workers: 1, ChangeOutput: 10000})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ctx := context.Background()
	req := appReq(t, "big", "{repoURL: https://example.com/r.git, path: big}", root)
	for _, tc := range []struct {
		name  string
		views []string // per render: "a", "b" (two For views), or "" for Pool.Render
		want  []bool   // per render: refused
	}{
		{"two apps fit, the third passes the budget", []string{"a", "a", "a"}, []bool{false, false, true}},
		{"a new view starts from nothing", []string{"a", "a", "b", "b"}, []bool{false, false, false, false}},
		{"Pool.Render counts in no budget", []string{"", "", "", ""}, []bool{false, false, false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			views := map[string]*isolate.Tenant{"a": pool.For("1", "o/r#1"), "b": pool.For("1", "o/r#1")}
			for i, v := range tc.views {
				var err error
				if v == "" {
					_, err = pool.Render(ctx, req)
				} else {
					_, err = views[v].Render(ctx, req)
				}
				refused := err != nil && err.Error() == `app "big" (big): refused (pr-output): the change's manifests exceeded 10000 bytes`
				if err != nil && !refused {
					t.Fatalf("render %d: %v", i, err)
				}
				if refused != tc.want[i] {
					t.Errorf("render %d (view %q): refused %v, want %v", i, v, refused, tc.want[i])
				}
			}
		})
	}
}
