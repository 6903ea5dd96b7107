package preview

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/fleetwave/fleetwave/internal/discover"
	"github.com/fleetwave/fleetwave/internal/edge/source"
)

// Apps pinned to another revision of the repository (issue #33, item 1). Argo CD renders an app's source from
// its own targetRevision (controller/state.go CompareAppState passes app.Spec.GetSource().TargetRevision to the
// repo-server's GenerateManifest): an app of this repository at `targetRevision: release-1` or `v1.0.0` does
// not follow the branch the change goes into, so the change does not alter what it renders, and the merge is not
// what Argo CD syncs it to. Such an app is rendered at its own revision on both sides — from this repository's
// refs when it holds the revision, else through the renderer's git fetch (the path of other repositories'
// sources) — and the plan gives it no wave slot.

// pins resolves and checks out the pinned revisions of one preview, once each.
type pins struct {
	repo       *source.Repo
	baseBranch string // the branch the change goes into ("" when not known)
	baseSHA    string
	headSHA    string
	tempDir    string

	mu      sync.Mutex
	follows map[string]bool
	trees   map[string]*pinnedTree
}

// pinnedTree is one pinned revision: its checkout, or none when the repository does not hold it.
type pinnedTree struct {
	once   sync.Once
	rev    string
	commit string
	co     *source.Checkout // nil: not in this repository (fetched by the renderer, if allowed)
	err    error
}

// follows reports whether an app source of this repository at targetRevision follows the change's branch:
// "" and HEAD (the default branch, which the change is taken to go into), the base branch by name or, when the
// branch is not known (a commit id was given as base), a branch whose tip is the base commit or the head commit:
// after the merge (`fleetwave rollout --base <sha> --head <merge>`), the branch's tip is the head.
func (ps *pins) followsChange(ctx context.Context, targetRevision string) bool {
	if ps == nil {
		return true
	}
	rev := strings.TrimPrefix(targetRevision, "refs/heads/")
	if rev == "" || rev == "HEAD" {
		return true
	}
	if ps.baseBranch != "" {
		return rev == ps.baseBranch
	}
	ps.mu.Lock()
	f, ok := ps.follows[rev]
	ps.mu.Unlock()
	if ok {
		return f
	}
	c, tag, found := ps.repo.ResolveTarget(ctx, rev)
	f = !found || !tag && (c == ps.baseSHA || c == ps.headSHA) // not found: the base branch's name may be the one the app uses
	ps.mu.Lock()
	ps.follows[rev] = f
	ps.mu.Unlock()
	return f
}

// pinnedRevision returns the revision of this repository app renders from when it is not the change's branch
// ("" when the app follows the change). mixed reports sources of this repository at different revisions, one of
// them pinned: fleetwave renders one revision of a repository per app.
func (ps *pins) pinnedRevision(ctx context.Context, a *discover.App, isThisRepo func(string) bool) (rev string, mixed bool) {
	if ps == nil {
		return "", false
	}
	following := false
	for _, src := range a.App.Spec.GetSources() {
		if !isThisRepo(src.RepoURL) || src.IsHelm() || src.IsOCI() {
			continue
		}
		if ps.followsChange(ctx, src.TargetRevision) {
			following = true
			continue
		}
		if rev != "" && rev != src.TargetRevision {
			return rev, true
		}
		rev = src.TargetRevision
	}
	return rev, rev != "" && following
}

// tree returns the checkout of a pinned revision, made once.
func (ps *pins) tree(ctx context.Context, rev string) *pinnedTree {
	ps.mu.Lock()
	t, ok := ps.trees[rev]
	if !ok {
		t = &pinnedTree{rev: rev}
		ps.trees[rev] = t
	}
	ps.mu.Unlock()
	t.once.Do(func() {
		c, _, found := ps.repo.ResolveTarget(ctx, rev)
		if !found {
			return
		}
		t.commit = c
		t.co, t.err = ps.repo.Checkout(ctx, c, source.ExportOptions{TempDir: ps.tempDir})
		if t.err != nil {
			t.err = fmt.Errorf("checking out %s (the app's targetRevision): %w", rev, t.err)
		}
	})
	return t
}

// close removes the pinned checkouts.
func (ps *pins) close() {
	if ps == nil {
		return
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, t := range ps.trees {
		if t.co != nil {
			_ = t.co.Close()
		}
	}
}

// pinnedNotHeld is the addition to the error of a pinned app whose revision this repository does not hold and
// the renderer could not fetch.
func pinnedNotHeld(rev string) string {
	return fmt.Sprintf("pinned to %s, which this checkout does not hold: fetch it (git fetch origin %s) or allow the repository in --repositories", rev, rev)
}
