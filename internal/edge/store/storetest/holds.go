package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetwave/fleetwave/internal/edge/store"
)

var holdTests = []test{
	{"holds: put, list by filter, put again, delete", func(t *testing.T, e *env) {
		h := func(pr int, head, name string) store.Hold {
			return store.Hold{Repo: "octo/fleet", PR: pr, Head: head, App: app(name)}
		}
		if err := e.s.PutHolds(e.ctx, []store.Hold{h(7, "head-a", "web-eu"), h(7, "head-a", "web-us"), h(8, "head-b", "web-eu"),
			h(0, "head-c", "web-ap"), {Repo: "octo/other", PR: 7, Head: "head-a", App: app("web-eu")}}); err != nil {
			t.Fatalf("PutHolds: %v", err)
		}
		at := e.now()
		names := func(hs []store.Hold) []string {
			var out []string
			for _, h := range hs {
				out = append(out, h.String())
			}
			return out
		}
		list := func(f store.HoldFilter) []store.Hold {
			t.Helper()
			hs, err := e.s.ListHolds(e.ctx, f)
			if err != nil {
				t.Fatalf("ListHolds(%+v): %v", f, err)
			}
			return hs
		}
		for _, tc := range []struct {
			name string
			f    store.HoldFilter
			want []string
		}{
			{"all", store.HoldFilter{}, []string{"octo/fleet#0@head-c argocd/web-ap", "octo/fleet#7@head-a argocd/web-eu",
				"octo/fleet#7@head-a argocd/web-us", "octo/fleet#8@head-b argocd/web-eu", "octo/other#7@head-a argocd/web-eu"}},
			{"one PR", store.HoldFilter{Repo: "octo/fleet", PRs: []int{7}}, []string{"octo/fleet#7@head-a argocd/web-eu", "octo/fleet#7@head-a argocd/web-us"}},
			{"the terminal's", store.HoldFilter{Repo: "octo/fleet", PRs: []int{0}}, []string{"octo/fleet#0@head-c argocd/web-ap"}},
			{"one app, any repo", store.HoldFilter{Apps: []store.AppKey{app("web-eu")}}, []string{"octo/fleet#7@head-a argocd/web-eu",
				"octo/fleet#8@head-b argocd/web-eu", "octo/other#7@head-a argocd/web-eu"}},
			{"by head", store.HoldFilter{Repo: "octo/fleet", Head: "head-b"}, []string{"octo/fleet#8@head-b argocd/web-eu"}},
			{"no PR", store.HoldFilter{PRs: []int{}}, nil},
			{"no app", store.HoldFilter{Apps: []store.AppKey{}}, nil},
		} {
			if d := cmp.Diff(tc.want, names(list(tc.f))); d != "" {
				t.Errorf("%s: ListHolds (-want +got):\n%s", tc.name, d)
			}
		}
		if got := list(store.HoldFilter{Repo: "octo/fleet", PRs: []int{8}}); len(got) != 1 || !got[0].At.Equal(at) || got[0].Group {
			t.Fatalf("hold = %+v; want one at %v, not a merge group's", got, at)
		}
		group := h(8, "group-head", "web-us")
		group.Group = true
		if err := e.s.PutHolds(e.ctx, []store.Hold{group}); err != nil {
			t.Fatalf("PutHolds of a merge group: %v", err)
		}
		if got := list(store.HoldFilter{Repo: "octo/fleet", Head: "group-head"}); len(got) != 1 || !got[0].Group {
			t.Fatalf("merge group hold = %+v; want one with Group", got)
		}
		if err := e.s.DeleteHolds(e.ctx, []store.Hold{group}); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Minute)
		if err := e.s.PutHolds(e.ctx, []store.Hold{h(8, "head-b", "web-eu")}); err != nil {
			t.Fatalf("PutHolds again: %v", err)
		}
		if got := list(store.HoldFilter{Repo: "octo/fleet", PRs: []int{8}}); len(got) != 1 || !got[0].At.Equal(at.Add(time.Minute)) {
			t.Fatalf("after putting it again: %v; want one hold at %v", got, at.Add(time.Minute))
		}
		if err := e.s.DeleteHolds(e.ctx, []store.Hold{h(7, "head-a", "web-eu"), h(7, "head-a", "absent")}); err != nil {
			t.Fatalf("DeleteHolds: %v", err)
		}
		if d := cmp.Diff([]string{"octo/fleet#7@head-a argocd/web-us"}, names(list(store.HoldFilter{Repo: "octo/fleet", PRs: []int{7}}))); d != "" {
			t.Errorf("after DeleteHolds (-want +got):\n%s", d)
		}
		// Reopened, the store keeps them.
		s2 := e.open()
		if hs, err := s2.ListHolds(e.ctx, store.HoldFilter{}); err != nil || len(hs) != 4 {
			t.Fatalf("after reopening: %v, %v; want 4 holds", names(hs), err)
		}
	}},
	{"holds: invalid ones refused, none recorded", func(t *testing.T, e *env) {
		for _, bad := range []store.Hold{
			{PR: 1, Head: "h", App: app("a")},
			{Repo: "r", PR: -1, Head: "h", App: app("a")},
			{Repo: "r", PR: 1, App: app("a")},
			{Repo: "r", PR: 1, Head: "h"},
		} {
			good := store.Hold{Repo: "r", PR: 1, Head: "h", App: app("ok")}
			if err := e.s.PutHolds(e.ctx, []store.Hold{good, bad}); err == nil {
				t.Errorf("PutHolds(%s) succeeded", bad)
			}
		}
		if hs, err := e.s.ListHolds(e.ctx, store.HoldFilter{}); err != nil || len(hs) != 0 {
			t.Fatalf("ListHolds = %v, %v; want none", hs, err)
		}
	}},
}
