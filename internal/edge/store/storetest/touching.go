package storetest

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetwave/fleetwave/internal/edge/store"
)

var touchingTests = []test{
	{"active rollouts touching apps", func(t *testing.T, e *env) {
		one := func(repo, sha string, apps ...string) store.Rollout {
			n := store.NewRollout{Repo: repo, MergeSHA: sha, Plan: []byte("{}"), Waves: []store.NewWave{{Name: "all"}}}
			for _, a := range apps {
				n.Waves[0].Steps = append(n.Waves[0].Steps, store.NewStep{App: app(a), Cluster: "c"})
			}
			r, _ := mustCreate(t, e, n)
			return r
		}
		r1 := one("org/fleet", "m1", "a", "b")
		r2 := one("org/fleet", "m2", "c")
		r3 := one("org/other", "m3", "a")
		check := func(name, repo string, apps []store.AppKey, want ...int64) {
			t.Helper()
			rs, err := e.s.ActiveRolloutsTouching(e.ctx, repo, apps)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var got []int64
			for _, r := range rs {
				got = append(got, r.ID)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%s (-want +got):\n%s", name, d)
			}
		}
		check("a in org/fleet", "org/fleet", []store.AppKey{app("a")}, r1.ID)
		check("c and b, oldest first", "org/fleet", []store.AppKey{app("c"), app("b")}, r1.ID, r2.ID)
		check("a in any repo", "", []store.AppKey{app("a")}, r1.ID, r3.ID)
		check("same name, other namespace", "", []store.AppKey{{Namespace: "team-a", Name: "a"}})
		check("no apps", "", nil)
		many := make([]store.AppKey, 0, 450)
		for i := 0; i < 449; i++ {
			many = append(many, app(fmt.Sprintf("unrelated-%d", i)))
		}
		many = append(many, app("c"))
		check("450 apps, the match last", "org/fleet", many, r2.ID)
		spread := append([]store.AppKey{app("a")}, many...)
		spread = append(spread, app("b"))
		check("one rollout matched in several chunks, once", "org/fleet", spread, r1.ID, r2.ID)

		r1.State = store.RolloutSucceeded
		if _, err := e.s.UpdateRollout(e.ctx, r1); err != nil {
			t.Fatal(err)
		}
		check("finished rollouts do not count", "", []store.AppKey{app("a"), app("b")}, r3.ID)
	}},
}
