package storetest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/store"
)

var previewKey = store.PreviewKey{Repo: "octo/fleet", PR: 21, Head: "4a1f0c2e9d", Base: "b7e3d11a05"}

const claimTTL = 30 * time.Minute

var previewTests = []test{
	{"claims of one change: once, then only forced when done", func(t *testing.T, e *env) {
		other := previewKey
		other.Base = "c0ffee0000" // the same head against another base is another change
		steps := []struct {
			name  string
			do    func() error
			key   store.PreviewKey
			force bool
			want  bool
		}{
			{name: "first delivery claims", key: previewKey, want: true},
			{name: "a delivery while it runs", key: previewKey, want: false},
			{name: "a re-run while it runs", key: previewKey, force: true, want: false},
			{name: "another base of the same head", key: other, want: true},
			{name: "done", do: func() error { return e.s.FinishPreview(e.ctx, previewKey) }},
			{name: "a delivery once done", key: previewKey, want: false},
			{name: "a re-run once done", key: previewKey, force: true, want: true},
			{name: "released", do: func() error { return e.s.ReleasePreview(e.ctx, previewKey) }},
			{name: "a delivery once released", key: previewKey, want: true},
			{name: "done again", do: func() error { return e.s.FinishPreview(e.ctx, previewKey) }},
			{name: "releasing a done change keeps it", do: func() error { return e.s.ReleasePreview(e.ctx, previewKey) }},
			{name: "a delivery after that", key: previewKey, want: false},
		}
		for _, st := range steps {
			if st.do != nil {
				if err := st.do(); err != nil {
					t.Fatalf("%s: %v", st.name, err)
				}
				continue
			}
			got, err := e.s.ClaimPreview(e.ctx, st.key, st.force, claimTTL)
			if err != nil || got != st.want {
				t.Fatalf("%s: ClaimPreview(force %v) = %v, %v; want %v", st.name, st.force, got, err, st.want)
			}
		}
		if done, err := e.s.PreviewDone(e.ctx, previewKey); err != nil || !done {
			t.Fatalf("PreviewDone = %v, %v; want true", done, err)
		}
		if done, err := e.s.PreviewDone(e.ctx, other); err != nil || done {
			t.Fatalf("PreviewDone of a running change = %v, %v; want false", done, err)
		}
		if _, err := e.s.ClaimPreview(e.ctx, store.PreviewKey{Repo: "octo/fleet", PR: 21, Head: "h"}, false, claimTTL); err == nil {
			t.Fatal("ClaimPreview without a base succeeded")
		}
	}},
	{"an expired claim is taken over", func(t *testing.T, e *env) {
		if got, err := e.s.ClaimPreview(e.ctx, previewKey, false, claimTTL); err != nil || !got {
			t.Fatalf("first claim = %v, %v", got, err)
		}
		e.clock.Advance(claimTTL - time.Second)
		if got, err := e.s.ClaimPreview(e.ctx, previewKey, false, claimTTL); err != nil || got {
			t.Fatalf("claim before expiry = %v, %v; want false", got, err)
		}
		e.clock.Advance(2 * time.Second)
		if got, err := e.open().ClaimPreview(e.ctx, previewKey, false, claimTTL); err != nil || !got {
			t.Fatalf("claim after expiry, from another replica = %v, %v; want true", got, err)
		}
	}},
	{"100 deliveries on two replicas, one preview", func(t *testing.T, e *env) {
		replicas := []interface {
			ClaimPreview(context.Context, store.PreviewKey, bool, time.Duration) (bool, error)
		}{e.s, e.open()}
		var claims atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := 0; i < 100; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				<-start
				got, err := replicas[i%2].ClaimPreview(e.ctx, previewKey, i%10 == 0, claimTTL)
				if err != nil {
					t.Errorf("ClaimPreview: %v", err)
				}
				if got {
					claims.Add(1)
				}
			}(i)
		}
		close(start)
		wg.Wait()
		if n := claims.Load(); n != 1 {
			t.Fatalf("%d claims succeeded; want exactly 1", n)
		}
	}},
	{"check-run ids per head and name, kept across a restart", func(t *testing.T, e *env) {
		if id, err := e.s.CheckRunID(e.ctx, "octo/fleet", "4a1f0c2e9d", "fleetwave/diff"); err != nil || id != 0 {
			t.Fatalf("CheckRunID before any = %d, %v; want 0", id, err)
		}
		for _, c := range []struct {
			head, name string
			id         int64
		}{{"4a1f0c2e9d", "fleetwave/diff", 101}, {"4a1f0c2e9d", "fleetwave/plan", 102}, {"99aa", "fleetwave/diff", 201}, {"99aa", "fleetwave/diff", 202}} {
			if err := e.s.SaveCheckRunID(e.ctx, "octo/fleet", c.head, c.name, c.id); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.s.SaveCheckRunID(e.ctx, "octo/fleet", "99aa", "fleetwave/diff", 0); err == nil {
			t.Fatal("SaveCheckRunID of id 0 succeeded")
		}
		e.s.Close()
		s := e.open()
		for _, c := range []struct {
			repo, head, name string
			want             int64
		}{
			{"octo/fleet", "4a1f0c2e9d", "fleetwave/diff", 101}, {"octo/fleet", "4a1f0c2e9d", "fleetwave/plan", 102},
			{"octo/fleet", "99aa", "fleetwave/diff", 202}, {"octo/fleet", "99aa", "fleetwave/plan", 0}, {"octo/other", "4a1f0c2e9d", "fleetwave/diff", 0},
		} {
			if id, err := s.CheckRunID(e.ctx, c.repo, c.head, c.name); err != nil || id != c.want {
				t.Errorf("CheckRunID(%s, %s, %s) after a restart = %d, %v; want %d", c.repo, c.head, c.name, id, err, c.want)
			}
		}
		if got, err := s.ClaimPreview(e.ctx, previewKey, false, claimTTL); err != nil || !got {
			t.Fatalf("claim = %v, %v", got, err)
		}
		if err := s.FinishPreview(e.ctx, previewKey); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if got, err := e.open().ClaimPreview(e.ctx, previewKey, false, claimTTL); err != nil || got {
			t.Fatalf("claim of a change done before the restart = %v, %v; want false", got, err)
		}
	}},
	{"the comment per change and the one shown, kept across a restart", func(t *testing.T, e *env) {
		a, b := previewKey, previewKey
		b.Head = "b0b0b0b0b0"
		if k, err := e.s.ShownComment(e.ctx, a.Repo, a.PR); err != nil || k != (store.PreviewKey{}) {
			t.Fatalf("ShownComment before any = %v, %v; want none", k, err)
		}
		if err := e.s.ShowComment(e.ctx, a); err == nil {
			t.Fatal("ShowComment of a change with no comment recorded succeeded")
		}
		for _, c := range []struct {
			k     store.PreviewKey
			parts []string
		}{{a, []string{"comment of A", "part 2 of A"}}, {b, []string{"comment of B"}}} {
			if err := e.s.SaveComment(e.ctx, c.k, c.parts); err != nil {
				t.Fatal(err)
			}
		}
		other := a
		other.PR = 22
		if err := e.s.SaveComment(e.ctx, other, []string{"another PR"}); err != nil {
			t.Fatal(err)
		}
		if k, err := e.s.ShownComment(e.ctx, a.Repo, a.PR); err != nil || k != b {
			t.Fatalf("ShownComment after B = %v, %v; want %v", k, err, b)
		}
		if err := e.s.ShowComment(e.ctx, a); err != nil { // the head returned to A
			t.Fatal(err)
		}
		e.s.Close()
		s := e.open()
		if k, err := s.ShownComment(e.ctx, a.Repo, a.PR); err != nil || k != a {
			t.Fatalf("ShownComment after returning to A and a restart = %v, %v; want %v", k, err, a)
		}
		if parts, err := s.Comment(e.ctx, a); err != nil || len(parts) != 2 || parts[0] != "comment of A" || parts[1] != "part 2 of A" {
			t.Fatalf("Comment(A) = %q, %v", parts, err)
		}
		if parts, err := s.Comment(e.ctx, store.PreviewKey{Repo: a.Repo, PR: a.PR, Head: "none", Base: a.Base}); err != nil || parts != nil {
			t.Fatalf("Comment of a change never posted = %q, %v; want nil", parts, err)
		}
		if k, err := s.ShownComment(e.ctx, other.Repo, other.PR); err != nil || k != other {
			t.Fatalf("ShownComment of another PR = %v, %v; want %v", k, err, other)
		}
	}},
	{"prune by age", func(t *testing.T, e *env) {
		old := previewKey
		if err := e.s.FinishPreview(e.ctx, old); err != nil {
			t.Fatal(err)
		}
		if err := e.s.SaveCheckRunID(e.ctx, old.Repo, old.Head, "fleetwave/diff", 1); err != nil {
			t.Fatal(err)
		}
		running := previewKey
		running.Head = "running"
		if _, err := e.s.ClaimPreview(e.ctx, running, false, 60*24*time.Hour); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(31 * 24 * time.Hour)
		recent := previewKey
		recent.Head = "recent"
		if err := e.s.FinishPreview(e.ctx, recent); err != nil {
			t.Fatal(err)
		}
		n, err := e.s.PrunePreviews(e.ctx, 30*24*time.Hour)
		if err != nil || n != 2 {
			t.Fatalf("PrunePreviews = %d, %v; want 2 (the old preview and its check run)", n, err)
		}
		for _, c := range []struct {
			key  store.PreviewKey
			want bool // claimable again
		}{{old, true}, {running, false}, {recent, false}} {
			if got, err := e.s.ClaimPreview(e.ctx, c.key, false, claimTTL); err != nil || got != c.want {
				t.Errorf("claim of %s after pruning = %v, %v; want %v", c.key, got, err, c.want)
			}
		}
		if _, err := e.s.PrunePreviews(e.ctx, 0); err == nil {
			t.Fatal("PrunePreviews(0) succeeded")
		}
	}},
}
