package app

import (
	"context"
	"sort"

	"github.com/fleetwave/fleetwave/internal/checkrun"
	"github.com/fleetwave/fleetwave/internal/edge/github"
)

// headFiles reads files of the head commit from the local repository, once each, for annotations
// (checkrun.Files) and the release policy.
type headFiles struct {
	ctx    context.Context
	clones Clones
	dir    string
	commit string
	cache  map[string][]byte
}

func (a *App) headFiles(ctx context.Context, out *outcome, ch Change) *headFiles {
	return &headFiles{ctx: ctx, clones: a.clones, dir: out.dir, commit: ch.Head, cache: map[string][]byte{}}
}

// Read returns the file's content, nil when it cannot be read ("" is no file).
func (h *headFiles) Read(path string) []byte {
	if path == "" {
		return nil
	}
	if data, ok := h.cache[path]; ok {
		return data
	}
	data, err := h.clones.ReadFile(h.ctx, h.dir, h.commit, path)
	if err != nil {
		data = nil
	}
	h.cache[path] = data
	return data
}

// diffCheck is the fleetwave/diff check run of a preview (checkrun.Diff presents it).
func (a *App) diffCheck(ctx context.Context, ch Change, out *outcome) github.CheckRun {
	return checkrun.Diff(CheckDiff, externalID(ch.Number, ""), out.rep, a.headFiles(ctx, out, ch))
}

// planCheck is the fleetwave/plan check run of a preview (checkrun.Plan presents it), with the release policy
// at head for the lines of its waves and its warnings.
func (a *App) planCheck(ctx context.Context, ch Change, out *outcome) github.CheckRun {
	files := a.headFiles(ctx, out, ch)
	in := checkrun.PlanInput{Name: CheckPlan, ExternalID: externalID(ch.Number, ""), DiffCheck: CheckDiff, Head: ch.Head,
		Report: out.rep, PolicyErr: out.policyErr, Files: files}
	if out.policyErr != nil {
		return checkrun.Plan(in)
	}
	pl := out.plan
	if pl == nil {
		return checkrun.Plan(in)
	}
	in.Plan = pl
	in.ExternalID = externalID(ch.Number, pl.Digest())
	// The policy the plan was made with, for its warnings, and its file at head, for its wave lines.
	in.Policy, in.PolicyFile = out.policy, out.policyFile
	in.PolicyData = files.Read(in.PolicyFile)
	return checkrun.Plan(in)
}

// errorChecks are both check runs when no preview could be made: failure (the change is unverified, so a
// required check must not pass), saying why and how to retry.
func (a *App) errorChecks(ch Change, err error) (github.CheckRun, github.CheckRun) {
	return github.CheckRun{Name: CheckDiff, Conclusion: github.ConclusionFailure, ExternalID: externalID(ch.Number, ""), Output: checkrun.PreviewFailed(ch.Base, ch.Head, err)},
		github.CheckRun{Name: CheckPlan, Conclusion: github.ConclusionFailure, ExternalID: externalID(ch.Number, ""), Output: checkrun.PreviewFailed(ch.Base, ch.Head, err)}
}

// sortedKeys returns the keys of m in order.
func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
