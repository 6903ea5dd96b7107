package preview

import (
	"context"
	"errors"
	"fmt"

	"github.com/fleetwave/fleetwave/internal/edge/source"
	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/report"
)

// change is what Run previews, as git resolves it (stage 1).
type change struct {
	repo       *source.Repo
	base, head string // commit SHAs
	// tree is the head side: head's own tree, or the merge of base and head when head is not based on base.
	tree    string
	changes []source.Change
	// names are the names of the repository sources may use (Input.RepoURLs, the origin remote's URL).
	names   []string
	matcher *source.RepoMatcher
}

// resolve opens the repository, resolves the change's revisions and lists the files it changes; the report it
// starts says how the head side was made and when no source can be told to be this repository.
func resolve(ctx context.Context, in Input) (*change, *report.Report, error) {
	repo, err := source.Open(ctx, in.RepoDir)
	if err != nil {
		return nil, nil, inputErr(err)
	}
	baseSHA, headSHA, headOwnTree, err := repo.Revisions(ctx, in.Base, in.Head)
	if err != nil {
		return nil, nil, inputErr(repo.ShallowHint(ctx, err))
	}
	rep := &report.Report{Base: baseSHA, Head: headSHA}
	headTree, merged, conflicted, err := repo.MergedHeadTree(ctx, baseSHA, headSHA, headOwnTree)
	if err != nil {
		err = repo.ShallowHint(ctx, err)
		if errors.Is(err, source.ErrShallow) {
			return nil, nil, inputErr(err)
		}
		return nil, nil, err
	}
	if merged {
		rep.HeadTree = headTree
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s is not based on %s: the head side is the merge of both, as GitHub tests it", text.Short(headSHA, 7), text.Short(baseSHA, 7)))
	}
	if conflicted {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s conflicts with %s: the head side is %s as it is", text.Short(headSHA, 7), text.Short(baseSHA, 7), text.Short(headSHA, 7)))
	}
	changes, err := repo.ChangedFiles(ctx, baseSHA, headTree)
	if err != nil {
		return nil, nil, err
	}

	names := append([]string(nil), in.RepoURLs...)
	if origin, err := repo.OriginURL(ctx); err == nil && origin != "" {
		names = append(names, origin)
	}
	matcher := source.NewRepoMatcher(names...)
	if matcher.Empty() {
		rep.Notes = append(rep.Notes, "the repository has no origin remote and no --repo-url was given: every source is treated as external")
	}
	return &change{repo: repo, base: baseSHA, head: headSHA, tree: headTree, changes: changes, names: names, matcher: matcher}, rep, nil
}
