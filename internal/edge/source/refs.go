package source

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// BranchOf returns the branch rev names ("main" for "main", "origin/main", "refs/heads/main" or
// "refs/remotes/origin/main"), or "" when rev is not a branch (a commit id, a tag, an expression).
func (r *Repo) BranchOf(ctx context.Context, rev string) string {
	if rev == "" || strings.HasPrefix(rev, "-") || strings.ContainsAny(rev, "\x00\n") {
		return ""
	}
	out, err := r.run(ctx, nil, "rev-parse", "--symbolic-full-name", "--end-of-options", rev)
	if err != nil {
		return ""
	}
	full := strings.TrimSpace(string(out))
	if b, ok := strings.CutPrefix(full, "refs/heads/"); ok {
		return b
	}
	if b, ok := strings.CutPrefix(full, "refs/remotes/"); ok {
		if _, name, ok := strings.Cut(b, "/"); ok && name != "HEAD" {
			return name
		}
	}
	return ""
}

// ResolveTarget returns the commit an Application's targetRevision names in this repository, looked up as the
// remote knows it: a tag, the origin's branch, a local branch, then a commit id. ok is false when the repository
// does not hold it (a clone that fetched only some branches); tag reports a tag.
func (r *Repo) ResolveTarget(ctx context.Context, targetRevision string) (commit string, tag, ok bool) {
	rev := strings.TrimPrefix(targetRevision, "refs/heads/")
	if rev == "" || strings.HasPrefix(rev, "-") || strings.ContainsAny(rev, "\x00\n") {
		return "", false, false
	}
	if t, isTag := strings.CutPrefix(rev, "refs/tags/"); isTag {
		c, err := r.Resolve(ctx, "refs/tags/"+t)
		return c, true, err == nil
	}
	for _, ref := range []string{"refs/tags/" + rev, "refs/remotes/origin/" + rev, "refs/heads/" + rev} {
		if c, err := r.Resolve(ctx, ref); err == nil {
			return c, strings.HasPrefix(ref, "refs/tags/"), true
		}
	}
	if len(rev) >= 7 && strings.Trim(rev, "0123456789abcdef") == "" {
		if c, err := r.Resolve(ctx, rev); err == nil {
			return c, false, true
		}
	}
	return "", false, false
}

// ErrShallow marks a revision or merge base missing from a shallow clone: the fix is to fetch more history.
var ErrShallow = errors.New("shallow clone: fetch the base (fetch-depth: 0 or git fetch --unshallow)")

// Shallow reports whether the repository is a shallow clone (part of its history not fetched).
func (r *Repo) Shallow(ctx context.Context) bool {
	out, err := r.run(ctx, nil, "rev-parse", "--is-shallow-repository")
	return err == nil && strings.TrimSpace(string(out)) == "true"
}

// ShallowHint returns err wrapped in ErrShallow when the repository is a shallow clone, where a revision git
// does not know, or two that share no history, most likely lack the history a deeper fetch brings; else err.
func (r *Repo) ShallowHint(ctx context.Context, err error) error {
	if err == nil || errors.Is(err, ErrShallow) || ctx.Err() != nil || !r.Shallow(ctx) {
		return err
	}
	return fmt.Errorf("%w: %v", ErrShallow, err)
}

// WorkingTree reports the uncommitted changes of a working copy: dirty is set when tracked files differ from
// HEAD (staged or not) or untracked files exist; commit is a commit of HEAD plus the tracked changes and the
// staged new files, as `git stash create` makes it without touching the working tree or the stash ("" when
// the tracked files are clean). A bare repository has none.
func (r *Repo) WorkingTree(ctx context.Context) (commit string, dirty, untracked bool, err error) {
	if r.bare {
		return "", false, false, nil
	}
	out, err := r.run(ctx, nil, "status", "--porcelain", "--untracked-files=normal")
	if err != nil {
		return "", false, false, fmt.Errorf("reading the working tree's status: %w", err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		switch {
		case l == "":
		case strings.HasPrefix(l, "??"):
			dirty, untracked = true, true
		default:
			dirty = true
		}
	}
	if !dirty {
		return "", false, false, nil
	}
	out, err = r.run(ctx, nil, "-c", "user.name=fleetwave", "-c", "user.email=fleetwave@localhost", "stash", "create", "fleetwave: the working tree")
	if err != nil {
		return "", dirty, untracked, fmt.Errorf("recording the working tree: %w", err)
	}
	return strings.TrimSpace(string(out)), dirty, untracked, nil
}
