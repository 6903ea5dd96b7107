package storetest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetwave/fleetwave/internal/edge/store"
)

var rolloutTests = []test{
	{"create records rollout, waves and steps", func(t *testing.T, e *env) {
		n := sample("org/fleet", "m1")
		r, steps := mustCreate(t, e, n)
		want := store.Rollout{
			ID: r.ID, Repo: "org/fleet", PRNumber: 42, MergeSHA: "m1", BaseSHA: "base-m1", InstallationID: 7,
			Plan: n.Plan, PlanDigest: store.PlanDigest(n.Plan), State: store.RolloutPending,
			CreatedAt: e.now(), UpdatedAt: e.now(), Version: 1,
		}
		if d := cmp.Diff(want, r); d != "" {
			t.Fatalf("created rollout (-want +got):\n%s", d)
		}
		if string(r.Plan) != string(n.Plan) {
			t.Fatalf("plan bytes changed: %s", r.Plan)
		}
		got, err := e.s.GetRollout(e.ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(r, got); d != "" {
			t.Fatalf("GetRollout (-created +got):\n%s", d)
		}
		waves, err := e.s.ListWaves(e.ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		wantWaves := []store.Wave{
			{RolloutID: r.ID, Index: 0, Name: "canary", State: store.WavePending, UpdatedAt: e.now(), Version: 1},
			{RolloutID: r.ID, Index: 1, Name: "production", State: store.WavePending, UpdatedAt: e.now(), Version: 1},
		}
		if d := cmp.Diff(wantWaves, waves); d != "" {
			t.Fatalf("waves (-want +got):\n%s", d)
		}
		if len(steps) != 4 {
			t.Fatalf("%d steps; want 4", len(steps))
		}
		ap := steps["web-ap"]
		wantAP := store.AppStep{
			ID: ap.ID, RolloutID: r.ID, Wave: 1, Batch: 1, App: app("web-ap"), Cluster: "prd-ap-1",
			TargetRevision: "pinned", State: store.StepPending, Op: store.OpSync, UpdatedAt: e.now(), Version: 1,
		}
		if d := cmp.Diff(wantAP, ap); d != "" {
			t.Fatalf("step web-ap (-want +got):\n%s", d)
		}
		if st := steps["web-test"]; st.TargetRevision != "m1" || st.PreviousRevision != "old-web-test" || st.Wave != 0 {
			t.Fatalf("step web-test = %+v; want target m1 (the merge SHA), previous old-web-test, wave 0", st)
		}
		all, err := e.s.ListSteps(e.ctx, r.ID, store.StepFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		for _, st := range all {
			order = append(order, st.App.Name)
		}
		if d := cmp.Diff([]string{"web-test", "web-eu", "web-us", "web-ap"}, order); d != "" {
			t.Fatalf("ListSteps order (-want +got):\n%s", d)
		}
	}},
	{"create is idempotent per repo and merge SHA", func(t *testing.T, e *env) {
		r, _ := mustCreate(t, e, sample("org/fleet", "m1"))
		again := sample("org/fleet", "m1")
		again.Plan = []byte(`{"different":true}`)
		e.clock.Advance(time.Minute)
		r2, created, err := e.s.CreateRollout(e.ctx, again)
		if err != nil || created {
			t.Fatalf("second CreateRollout = created %v, %v; want false, nil", created, err)
		}
		if d := cmp.Diff(r, r2); d != "" {
			t.Fatalf("second CreateRollout returned another rollout (-first +second):\n%s", d)
		}
		steps, err := e.s.ListSteps(e.ctx, r.ID, store.StepFilter{})
		if err != nil || len(steps) != 4 {
			t.Fatalf("ListSteps = %d steps, %v; want 4", len(steps), err)
		}
		other, created, err := e.s.CreateRollout(e.ctx, sample("org/other", "m1"))
		if err != nil || !created || other.ID == r.ID {
			t.Fatalf("CreateRollout in another repo = %d, created %v, %v", other.ID, created, err)
		}
	}},
	{"1000 apps in 5 waves", func(t *testing.T, e *env) {
		n := store.NewRollout{Repo: "org/fleet", MergeSHA: "big", Plan: []byte(`{}`)}
		for w := 0; w < 5; w++ {
			nw := store.NewWave{Name: fmt.Sprintf("wave-%d", w)}
			for i := 0; i < 200; i++ {
				nw.Steps = append(nw.Steps, store.NewStep{Batch: i / 25, App: app(fmt.Sprintf("app-%d-%03d", w, i)), Cluster: fmt.Sprintf("c-%d", i/25)})
			}
			n.Waves = append(n.Waves, nw)
		}
		r, steps := mustCreate(t, e, n)
		if len(steps) != 1000 {
			t.Fatalf("%d steps; want 1000", len(steps))
		}
		if st := steps["app-4-199"]; st.Wave != 4 || st.Batch != 7 || st.Cluster != "c-7" || st.TargetRevision != "big" {
			t.Fatalf("last step = %+v", st)
		}
		wave3, err := e.s.ListSteps(e.ctx, r.ID, store.StepFilter{Waves: []int{3}})
		if err != nil || len(wave3) != 200 || wave3[0].App.Name != "app-3-000" || wave3[199].App.Name != "app-3-199" {
			t.Fatalf("ListSteps(wave 3) = %d steps, %v", len(wave3), err)
		}
	}},
	{"replicas creating one rollout at once", func(t *testing.T, e *env) {
		// The pull_request and push events of one merge, handled by two replicas.
		other := e.open()
		var created atomic.Int32
		ids := make(chan int64, 8)
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				s := e.s
				if i%2 == 1 {
					s = other
				}
				r, c, err := s.CreateRollout(e.ctx, sample("org/fleet", "m1"))
				if err != nil {
					t.Errorf("CreateRollout: %v", err)
					return
				}
				if c {
					created.Add(1)
				}
				ids <- r.ID
			}(i)
		}
		wg.Wait()
		close(ids)
		first := int64(0)
		for id := range ids {
			if first == 0 {
				first = id
			}
			if id != first {
				t.Fatalf("concurrent creates returned rollouts %d and %d", first, id)
			}
		}
		if created.Load() != 1 {
			t.Fatalf("%d creates reported created; want 1", created.Load())
		}
		if steps, err := e.s.ListSteps(e.ctx, first, store.StepFilter{}); err != nil || len(steps) != 4 {
			t.Fatalf("ListSteps = %d, %v; want 4 steps", len(steps), err)
		}
	}},
	{"create refuses bad input", func(t *testing.T, e *env) {
		bad := map[string]func(n *store.NewRollout){
			"repo without owner": func(n *store.NewRollout) { n.Repo = "fleet" },
			"no merge SHA":       func(n *store.NewRollout) { n.MergeSHA = "" },
			"plan not JSON":      func(n *store.NewRollout) { n.Plan = []byte("{") },
			"unknown state":      func(n *store.NewRollout) { n.State = "exploded" },
			"unnamed wave":       func(n *store.NewRollout) { n.Waves[0].Name = "" },
			"app twice": func(n *store.NewRollout) {
				n.Waves[1].Steps = append(n.Waves[1].Steps, store.NewStep{App: app("web-test")})
			},
			"app without namespace": func(n *store.NewRollout) { n.Waves[0].Steps[0].App.Namespace = "" },
		}
		for name, mutate := range bad {
			n := sample("org/fleet", "m-"+name)
			mutate(&n)
			if _, _, err := e.s.CreateRollout(e.ctx, n); err == nil {
				t.Errorf("%s: CreateRollout succeeded", name)
			}
		}
		if rs, err := e.s.ListRollouts(e.ctx, store.RolloutFilter{}); err != nil || len(rs) != 0 {
			t.Fatalf("after refused creates: %d rollouts, %v; want none", len(rs), err)
		}
	}},
	{"not found", func(t *testing.T, e *env) {
		if _, err := e.s.GetRollout(e.ctx, 999); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetRollout(999): %s; want ErrNotFound", fmtErr(err))
		}
		if _, err := e.s.GetRolloutByMergeSHA(e.ctx, "org/fleet", "nope"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetRolloutByMergeSHA: %s; want ErrNotFound", fmtErr(err))
		}
		if _, err := e.s.UpdateRollout(e.ctx, store.Rollout{ID: 999, State: store.RolloutRunning, Version: 1}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("UpdateRollout(999): %s; want ErrNotFound", fmtErr(err))
		}
		if _, err := e.s.GetStep(e.ctx, 999); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetStep(999): %s; want ErrNotFound", fmtErr(err))
		}
	}},
	{"list by PR and state", func(t *testing.T, e *env) {
		a, _ := mustCreate(t, e, sample("org/fleet", "a"))
		bn := sample("org/fleet", "b")
		bn.PRNumber = 7
		b, _ := mustCreate(t, e, bn)
		c, _ := mustCreate(t, e, sample("org/other", "c"))
		a.State = store.RolloutSucceeded
		if _, err := e.s.UpdateRollout(e.ctx, a); err != nil {
			t.Fatal(err)
		}
		bySHA, err := e.s.GetRolloutByMergeSHA(e.ctx, "org/fleet", "b")
		if err != nil || bySHA.ID != b.ID {
			t.Fatalf("GetRolloutByMergeSHA = %d, %v; want %d", bySHA.ID, err, b.ID)
		}
		for _, tc := range []struct {
			name string
			f    store.RolloutFilter
			want []int64
		}{
			{"all, newest first", store.RolloutFilter{}, []int64{c.ID, b.ID, a.ID}},
			{"repo", store.RolloutFilter{Repo: "org/fleet"}, []int64{b.ID, a.ID}},
			{"PR 42 of the repo", store.RolloutFilter{Repo: "org/fleet", PRNumber: 42}, []int64{a.ID}},
			{"unfinished", store.RolloutFilter{Repo: "org/fleet", Unfinished: true}, []int64{b.ID}},
			{"states", store.RolloutFilter{States: []store.RolloutState{store.RolloutSucceeded}}, []int64{a.ID}},
			{"states ∩ unfinished", store.RolloutFilter{States: []store.RolloutState{store.RolloutSucceeded}, Unfinished: true}, nil},
			{"limit", store.RolloutFilter{Limit: 1}, []int64{c.ID}},
		} {
			rs, err := e.s.ListRollouts(e.ctx, tc.f)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			var got []int64
			for _, r := range rs {
				got = append(got, r.ID)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("%s (-want +got):\n%s", tc.name, d)
			}
		}
	}},
	{"update is compare-and-set", func(t *testing.T, e *env) {
		r, _ := mustCreate(t, e, sample("org/fleet", "m1"))
		stale := r
		e.clock.Advance(time.Second)
		r.State, r.Message, r.CheckRunID = store.RolloutRunning, "wave canary", 1234
		r2, err := e.s.UpdateRollout(e.ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if r2.Version != 2 || r2.State != store.RolloutRunning || r2.CheckRunID != 1234 || r2.Message != "wave canary" ||
			!r2.UpdatedAt.Equal(e.now()) || !r2.CreatedAt.Equal(stale.CreatedAt) {
			t.Fatalf("updated rollout = %+v", r2)
		}
		stale.State = store.RolloutAborted
		if _, err := e.s.UpdateRollout(e.ctx, stale); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("update from a stale version: %s; want ErrConflict", fmtErr(err))
		}
		if got, _ := e.s.GetRollout(e.ctx, r.ID); got.State != store.RolloutRunning {
			t.Fatalf("a refused update changed the state to %s", got.State)
		}
		r2.State = "exploded"
		if _, err := e.s.UpdateRollout(e.ctx, r2); err == nil {
			t.Fatal("UpdateRollout to an unknown state succeeded")
		}
	}},
	{"terminal states", func(t *testing.T, e *env) {
		r, _ := mustCreate(t, e, sample("org/fleet", "m1"))
		next, _ := mustCreate(t, e, sample("org/fleet", "m2"))
		r.State, r.SupersededBy = store.RolloutSuperseded, next.ID
		r, err := e.s.UpdateRollout(e.ctx, r)
		if err != nil || r.SupersededBy != next.ID {
			t.Fatalf("supersede = %+v, %v", r, err)
		}
		r.State = store.RolloutRunning
		if _, err := e.s.UpdateRollout(e.ctx, r); !errors.Is(err, store.ErrInvalidTransition) {
			t.Fatalf("superseded → running: %s; want ErrInvalidTransition", fmtErr(err))
		}
		next.State = store.RolloutSucceeded
		if next, err = e.s.UpdateRollout(e.ctx, next); err != nil {
			t.Fatal(err)
		}
		next.State = store.RolloutRunning
		if _, err := e.s.UpdateRollout(e.ctx, next); !errors.Is(err, store.ErrInvalidTransition) {
			t.Fatalf("succeeded → running: %s; want ErrInvalidTransition", fmtErr(err))
		}
		next.State, next.RollbackCheckRunID = store.RolloutRollingBack, 99
		if next, err = e.s.UpdateRollout(e.ctx, next); err != nil || next.RollbackCheckRunID != 99 {
			t.Fatalf("succeeded → rolling-back = %+v, %v", next, err)
		}
	}},
	{"concurrent updates from one version, one wins", func(t *testing.T, e *env) {
		r, _ := mustCreate(t, e, sample("org/fleet", "m1"))
		other := e.open()
		var wins, conflicts atomic.Int32
		var wg sync.WaitGroup
		for i := 0; i < 10; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				s := e.s
				if i%2 == 1 {
					s = other
				}
				u := r
				u.State = []store.RolloutState{store.RolloutRunning, store.RolloutPaused}[i%2]
				_, err := s.UpdateRollout(e.ctx, u)
				switch {
				case err == nil:
					wins.Add(1)
				case errors.Is(err, store.ErrConflict):
					conflicts.Add(1)
				default:
					t.Errorf("UpdateRollout: %v", err)
				}
			}(i)
		}
		wg.Wait()
		if wins.Load() != 1 || conflicts.Load() != 9 {
			t.Fatalf("%d updates won, %d conflicted; want 1 and 9", wins.Load(), conflicts.Load())
		}
		if got, _ := e.s.GetRollout(e.ctx, r.ID); got.Version != 2 {
			t.Fatalf("version %d after one winning update; want 2", got.Version)
		}
	}},
}
