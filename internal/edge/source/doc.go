// Package source reads a GitOps repository's history with the git CLI: it resolves revisions, lists the files a
// change touches (renames included), reads the origin remote, and materialises one revision into a temporary
// directory that the renderer and discovery read.
//
// # Model
//
// A Repo is a local git repository (a working copy or a bare clone). Git is trusted; the repository's content
// is data, possibly hostile (a pull request). So:
//
//   - every git process runs with hooks off (core.hooksPath=/dev/null), no fsmonitor, no external diff or textconv
//     drivers, no terminal prompts, optional locks off, replace refs ignored, and an environment scrubbed of GIT_*
//     variables that could redirect it to another repository;
//   - discovery of the repository never climbs above the given directory (GIT_CEILING_DIRECTORIES);
//   - a revision is exported by reading blobs (`git ls-tree` + `git cat-file --batch`), not by `git checkout` or
//     `git archive`: no smudge/clean filters, no export-subst/export-ignore attributes, no worktree registered in
//     the user's repository, and every write goes through an os.Root so a crafted tree cannot write outside the
//     temporary directory. Symbolic links are recreated as links; the renderer's repofs refuses those that point
//     outside the checkout. Submodules are not fetched (Argo CD only fetches them when enabled).
//   - exports are capped in file count and total bytes.
//
// A stale pull-request branch (its base is not an ancestor of the head) would diff as if it reverted everything
// merged since it forked. MergedHead builds the tree GitHub would test (`git merge-tree --write-tree`) so the head
// side of a preview is "base + this change".
package source
