package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	gh "github.com/google/go-github/v60/github"

	"github.com/fleetwave/fleetwave/internal/edge/gitcache"
	"github.com/fleetwave/fleetwave/internal/edge/source"
	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/preview"
)

const zeroSHA = "0000000000000000000000000000000000000000"

// onMerged hands a merged pull request to the rollout executor with the plan recomputed at the merge commit
// (against its first parent: the default branch just before the merge) and the digest of the plan last shown
// on the pull request, read back from the fleetwave/plan check run of its head.
//
// Only a pull request merged into the repository's default branch starts a rollout, as only a push to it does:
// another branch may be unprotected (no required reviews or checks), and its merge commit carries a policy its
// author wrote.
func (a *App) onMerged(ctx context.Context, e *gh.PullRequestEvent) error {
	pr, repo := e.GetPullRequest(), e.GetRepo()
	if branch := repo.GetDefaultBranch(); branch == "" || pr.GetBase().GetRef() != branch {
		logFrom(ctx).Info("pull request merged into a branch that is not the default branch: no rollout",
			slog.String("base", pr.GetBase().GetRef()), slog.String("default_branch", branch))
		return nil
	}
	mergeSHA := pr.GetMergeCommitSHA()
	if mergeSHA == "" {
		return fmt.Errorf("merged pull request %s#%d without a merge commit", repo.GetFullName(), pr.GetNumber())
	}
	m := mergeTarget{
		installationID: e.GetInstallation().GetID(), repo: repo, number: pr.GetNumber(), mergeSHA: mergeSHA,
		base: mergeSHA + "^1", refs: []string{"refs/heads/" + pr.GetBase().GetRef()}, commits: []string{mergeSHA},
		sender: e.GetSender().GetLogin(), prHead: pr.GetHead().GetSHA(), branch: repo.GetDefaultBranch(),
	}
	return a.handOver(ctx, m)
}

// onPush hands a direct push to the default branch to the rollout executor, diffed against the branch's
// previous tip. A merged pull request's push is the same merge commit: handOver skips a merge already handed
// over (and the executor's Submit is idempotent per merge SHA anyway).
func (a *App) onPush(ctx context.Context, e *gh.PushEvent) error {
	repo := e.GetRepo()
	if repo == nil || e.GetDeleted() || e.GetAfter() == "" || e.GetAfter() == zeroSHA || e.GetBefore() == "" || e.GetBefore() == zeroSHA {
		return nil
	}
	branch := repo.GetDefaultBranch()
	if branch == "" || e.GetRef() != "refs/heads/"+branch {
		return nil
	}
	r := &gh.Repository{FullName: repo.FullName, CloneURL: repo.CloneURL, HTMLURL: repo.HTMLURL, SSHURL: repo.SSHURL}
	m := mergeTarget{
		installationID: e.GetInstallation().GetID(), repo: r, mergeSHA: e.GetAfter(), base: e.GetBefore(),
		refs: []string{e.GetRef()}, commits: []string{e.GetAfter(), e.GetBefore()}, sender: e.GetSender().GetLogin(),
		branch: branch,
	}
	return a.handOver(ctx, m)
}

type mergeTarget struct {
	installationID int64
	repo           *gh.Repository
	number         int
	mergeSHA       string
	base           string // a revision: the parent, or the previous tip
	refs, commits  []string
	sender         string
	prHead         string
	branch         string // the default branch, which mergeSHA is the tip of
}

func (a *App) handOver(ctx context.Context, m mergeTarget) error {
	fullName := m.repo.GetFullName()
	key := fullName + "@" + m.mergeSHA
	if !a.merged.add(key) {
		logFrom(ctx).Info("merge already handed over", slog.String("merge", text.Short(m.mergeSHA, 7)))
		return nil
	}
	err := a.handOverOnce(ctx, m)
	if err != nil {
		a.merged.remove(key) // a redelivery may try again
	}
	return err
}

func (a *App) handOverOnce(ctx context.Context, m mergeTarget) error {
	fullName := m.repo.GetFullName()
	what := fmt.Sprintf("planning the rollout of %s@%s", fullName, text.Short(m.mergeSHA, 7))
	dir, err := a.fetchMerge(ctx, m)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if !source.IsFullSHA(m.mergeSHA) {
		// Never the default policy for what is not a commit: it would stand in for gates and command rules that
		// may well exist.
		return fmt.Errorf("%s: reading the release policy: %q is not a commit SHA", what, text.Short(m.mergeSHA, 40))
	}
	// Only the plan: no live comparison with Argo CD, no comment (preview.Input.PlanOnly). Argo CD still renders
	// the plugin apps, generates the live ApplicationSets and gives the sync windows, as for the pull request,
	// so that the plan is the one the pull request showed; none of these fails the run, so there is no retry
	// without it (runPreview's).
	in := preview.Input{RepoDir: dir, Base: m.base, Head: m.mergeSHA, BaseBranch: m.branch, Settings: a.settings, PlanOnly: true,
		RepoURLs:    repoURLs(m.repo.GetHTMLURL(), m.repo.GetCloneURL(), m.repo.GetSSHURL(), fullName),
		Concurrency: a.concurrency, TempDir: a.tempDir, Discovered: a.discovered, RenderBudget: a.renderBudget, ArgoCD: a.argocd}
	if a.clusters != nil {
		if in.Clusters, err = a.clusters(ctx); err != nil {
			return fmt.Errorf("%s: listing destination clusters: %w", what, err)
		}
	}
	if err := a.withInstances(ctx, &in); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	res, err := preview.Run(ctx, a.rendererOf(m.installationID, renderGroup(fullName, m.number)), in)
	var pe *plan.PolicyError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: the release policy at %s is invalid: %w", what, text.Short(m.mergeSHA, 7), pe)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if res.Plan == nil {
		return fmt.Errorf("%s: the preview made no plan", what)
	}
	// The policy the plan was made with (the merge commit's) goes with it: its execution settings.
	merge := Merge{
		InstallationID: m.installationID, Repo: fullName, PRNumber: m.number, MergeSHA: m.mergeSHA, BaseSHA: res.Report.Base,
		Plan: res.Plan, Policy: res.Policy, RepoURL: m.repo.GetCloneURL(), Sender: m.sender, Branch: m.branch,
	}
	if m.number != 0 && m.prHead != "" {
		merge.PRPlanDigest = a.shownPlanDigest(ctx, m.installationID, fullName, m.prHead)
	}
	return a.merges.OnMerge(ctx, merge)
}

// shownPlanDigest reads the digest of the plan shown on a pull request from its head's fleetwave/plan check run
// ("" when there is none, or it cannot be read). Only a run this App created counts: any App installed on the
// repository (or a workflow's token) may create a run of that name, with a digest of its choosing.
func (a *App) shownPlanDigest(ctx context.Context, installationID int64, repo, head string) string {
	if a.appID == 0 {
		return "" // which runs are the App's cannot be told
	}
	client, err := a.ghClient(installationID)
	if err != nil {
		return ""
	}
	runs, err := client.ListCheckRuns(ctx, repo, head, CheckPlan)
	if err != nil {
		logFrom(ctx).Warn("reading the plan shown on the pull request", slog.Any("error", err))
		return ""
	}
	for _, r := range runs {
		if r.AppID != a.appID {
			logFrom(ctx).Info("a fleetwave/plan check run of another GitHub App: ignored", slog.Int64("app_id", r.AppID), slog.Int64("check_run", r.ID))
			continue
		}
		if _, digest, ok := parseExternalID(r.ExternalID); ok && digest != "" {
			return digest
		}
	}
	return ""
}

// policyAt fetches commit and reads the release policy there (plan.DefaultPolicy when there is none).
func (a *App) policyAt(ctx context.Context, installationID int64, cloneURL string, refs []string, commit string) (*plan.Policy, error) {
	if commit == "" {
		return nil, errors.New("no commit to read the release policy from")
	}
	var okRefs []string
	for _, r := range refs {
		if r != "" && !strings.HasSuffix(r, "/") {
			okRefs = append(okRefs, r)
		}
	}
	dir, err := a.clones.Fetch(ctx, installationID, cloneURL, okRefs, []string{commit})
	if err != nil {
		return nil, err
	}
	return a.readPolicy(ctx, dir, commit)
}

// readPolicy reads the release policy at commit of the local repository dir (plan.Load): plan.DefaultPolicy only
// when the commit has no policy file. A commit that is not a full SHA is an error, never the default policy: the
// default would stand in for gates and command rules that may well exist.
func (a *App) readPolicy(ctx context.Context, dir, commit string) (*plan.Policy, error) {
	if !source.IsFullSHA(commit) {
		return nil, fmt.Errorf("reading the release policy: %q is not a commit SHA", text.Short(commit, 40))
	}
	p, _, err := plan.Load(func(name string) ([]byte, error) { return a.clones.ReadFile(ctx, dir, commit, name) })
	var pe *plan.PolicyError
	if errors.As(err, &pe) {
		return nil, fmt.Errorf("the release policy at %s is invalid: %w", text.Short(commit, 7), err)
	}
	return p, err
}

// mergeFetchWaits are the pauses before fetching a merge commit again when the remote does not serve it yet:
// GitHub announces a merge (the pull_request closed event, the push) possibly before every replica serves the
// commit. About half a minute in all, then the error stands (a redelivery, or the push event, tries again).
var mergeFetchWaits = []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second}

// fetchMerge fetches the merge's commits, again after a pause while the remote does not have them yet.
func (a *App) fetchMerge(ctx context.Context, m mergeTarget) (string, error) {
	for i := 0; ; i++ {
		dir, err := a.clones.Fetch(ctx, m.installationID, m.repo.GetCloneURL(), m.refs, m.commits)
		if err == nil || !errors.Is(err, gitcache.ErrCommitNotFound) || i >= len(a.fetchWaits) {
			return dir, err
		}
		logFrom(ctx).Info("merge commit not served yet: fetching again", slog.String("merge", text.Short(m.mergeSHA, 7)),
			slog.Duration("after", a.fetchWaits[i]))
		select {
		case <-ctx.Done():
			return "", err
		case <-time.After(a.fetchWaits[i]):
		}
	}
}
