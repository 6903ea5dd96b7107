package app

import (
	"context"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/store"
)

// TestMemPreviews: an App without a store keeps the store's rules (storetest's previews group) in memory.
func TestMemPreviews(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	m := newMemPreviews(func() time.Time { return now }, 3)
	k := store.PreviewKey{Repo: "octo/fleet", PR: 21, Head: "h1", Base: "b1"}
	other := k
	other.Base = "b2"
	steps := []struct {
		name  string
		do    func()
		key   store.PreviewKey
		force bool
		want  bool
	}{
		{name: "first delivery claims", key: k, want: true},
		{name: "a delivery while it runs", key: k},
		{name: "a re-run while it runs", key: k, force: true},
		{name: "another base of the same head", key: other, want: true},
		{name: "claim expired", do: func() { now = now.Add(claimTTL + time.Second) }},
		{name: "an expired claim is taken over", key: k, want: true},
		{name: "done", do: func() { _ = m.FinishPreview(ctx, k) }},
		{name: "a delivery once done", key: k},
		{name: "a re-run once done", key: k, force: true, want: true},
		{name: "released", do: func() { _ = m.ReleasePreview(ctx, k) }},
		{name: "a delivery once released", key: k, want: true},
		{name: "done again", do: func() { _ = m.FinishPreview(ctx, k) }},
		{name: "releasing a done change keeps it", do: func() { _ = m.ReleasePreview(ctx, k) }},
		{name: "a delivery after that", key: k},
		{name: "two more changes forget the oldest", do: func() {
			for _, h := range []string{"h2", "h3"} {
				_, _ = m.ClaimPreview(ctx, store.PreviewKey{Repo: "octo/fleet", PR: 21, Head: h, Base: "b1"}, false, claimTTL)
			}
		}},
		{name: "the oldest change, forgotten, is claimed again", key: k, want: true},
	}
	for _, st := range steps {
		if st.do != nil {
			st.do()
			continue
		}
		if got, err := m.ClaimPreview(ctx, st.key, st.force, claimTTL); err != nil || got != st.want {
			t.Fatalf("%s: ClaimPreview(force %v) = %v, %v; want %v", st.name, st.force, got, err, st.want)
		}
	}
	for _, c := range []struct {
		head string
		id   int64
	}{{"h1", 11}, {"h1", 12}, {"h2", 21}, {"h3", 31}, {"h4", 41}} {
		_ = m.SaveCheckRunID(ctx, "octo/fleet", c.head, CheckDiff, c.id)
	}
	for _, c := range []struct {
		head string
		want int64
	}{{"h1", 0}, {"h2", 21}, {"h4", 41}} { // h1 forgotten: 3 check runs kept
		if id, _ := m.CheckRunID(ctx, "octo/fleet", c.head, CheckDiff); id != c.want {
			t.Errorf("CheckRunID(%s) = %d; want %d", c.head, id, c.want)
		}
	}
}

// TestMemPreviewsComments: the comment per change and the one each pull request shows, as the store keeps them
// (storetest's previews group); the oldest comment forgotten beyond max.
func TestMemPreviewsComments(t *testing.T) {
	ctx := context.Background()
	m := newMemPreviews(time.Now, 2)
	a := store.PreviewKey{Repo: "octo/fleet", PR: 34, Head: "a", Base: "b"}
	b, c := a, a
	b.Head, c.Head = "b", "c"
	if err := m.ShowComment(ctx, a); err == nil {
		t.Fatal("ShowComment of a change with no comment succeeded")
	}
	_ = m.SaveComment(ctx, a, []string{"A"})
	_ = m.SaveComment(ctx, b, []string{"B"})
	if k, _ := m.ShownComment(ctx, a.Repo, a.PR); k != b {
		t.Fatalf("shown %v; want B", k)
	}
	if err := m.ShowComment(ctx, a); err != nil {
		t.Fatal(err)
	}
	if k, _ := m.ShownComment(ctx, a.Repo, a.PR); k != a {
		t.Fatalf("shown %v after returning to A; want A", k)
	}
	if p, _ := m.Comment(ctx, a); len(p) != 1 || p[0] != "A" {
		t.Fatalf("Comment(A) = %q", p)
	}
	_ = m.SaveComment(ctx, c, []string{"C"}) // A, the oldest, is forgotten
	if p, _ := m.Comment(ctx, a); p != nil {
		t.Fatalf("Comment(A) = %q after it was forgotten; want nil", p)
	}
	if k, _ := m.ShownComment(ctx, a.Repo, a.PR); k != c {
		t.Fatalf("shown %v; want C", k)
	}
}
