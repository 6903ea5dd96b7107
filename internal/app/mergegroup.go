package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"time"

	gh "github.com/google/go-github/v60/github"

	"github.com/fleetwave/fleetwave/internal/edge/github"
	"github.com/fleetwave/fleetwave/internal/edge/source"
	"github.com/fleetwave/fleetwave/internal/kit/text"
)

// MergeGroup is a group of GitHub's merge queue whose required checks are requested: the head of the queue's
// temporary branch, which holds the group's pull requests merged on top of the commit the group is built on.
type MergeGroup struct {
	InstallationID int64
	Repo           string // owner/name
	HeadSHA        string // the group's commit: the checks go there
	HeadRef        string // refs/heads/gh-readonly-queue/<base>/pr-<n>-<sha>
	// BaseSHA is the group's parent commit (GitHub's merge_group.base_sha); "" in older deliveries, which lack
	// it: the base is then the merge base of HeadSHA and BaseRef (see OnMergeGroup).
	BaseSHA  string
	BaseRef  string // refs/heads/<branch> the group is merged into
	CloneURL string
	// RepoURLs are the names Applications may give the repository (html_url, clone_url, ssh_url, full_name).
	RepoURLs []string
}

// errGroupDestroyed is the cancellation cause of a merge group's check when the group is destroyed.
var errGroupDestroyed = errors.New("the merge group was destroyed (merged, dequeued, or invalidated by an earlier entry leaving the queue)")

// onMergeGroupEvent handles merge_group checks_requested and destroyed.
func (a *App) onMergeGroupEvent(ctx context.Context, action string, e *gh.MergeGroupEvent) error {
	mg, repo := e.GetMergeGroup(), e.GetRepo()
	if mg == nil || repo == nil {
		return errors.New("merge_group event without a merge group or repository")
	}
	g := MergeGroup{
		InstallationID: e.GetInstallation().GetID(), Repo: repo.GetFullName(),
		HeadSHA: mg.GetHeadSHA(), HeadRef: mg.GetHeadRef(), BaseSHA: mg.GetBaseSHA(), BaseRef: mg.GetBaseRef(),
		CloneURL: repo.GetCloneURL(),
		RepoURLs: repoURLs(repo.GetHTMLURL(), repo.GetCloneURL(), repo.GetSSHURL(), repo.GetFullName()),
	}
	switch action {
	case "checks_requested":
		return a.OnMergeGroup(ctx, g)
	case "destroyed":
		a.dropMergeGroup(ctx, g)
	}
	return nil
}

// groupKey is a merge group's entry among the previews in flight: keyed by its head ref, with number 0, which
// no pull request has.
func groupKey(repo, headRef string) prKey { return prKey{repo: repo + "@" + headRef} }

// OnMergeGroup checks a merge queue's group: fleetwave/diff and fleetwave/plan start on the group's head at
// once, and are completed with the preview of the group's combined change — its head against its parent
// commit — with the same conclusions as on a pull request (the plan, and the policy's limits, cover every pull
// request of the group together). There is no pull request comment: the check runs carry the report. Nothing
// is rolled out: the rollout starts when the group lands on the default branch (a push, merge.go).
//
// When the delivery has no base_sha (older deliveries), the base is the merge base of the head and the base
// branch as fetched with the group: the commit of the branch the queue built on. Not the head's first parent,
// which would leave out every pull request of the group but the last. If no base can be found, both checks fail:
// the change is unverified.
func (a *App) OnMergeGroup(ctx context.Context, g MergeGroup) error {
	log := logFrom(ctx).With(slog.String("group", g.HeadRef), slog.String("head", text.Short(g.HeadSHA, 7)))
	ctx = withLog(ctx, log)
	if g.Repo == "" || !source.IsFullSHA(g.HeadSHA) || g.HeadRef == "" || g.BaseRef == "" || g.CloneURL == "" ||
		(g.BaseSHA != "" && !source.IsFullSHA(g.BaseSHA)) {
		return fmt.Errorf("checking merge group %q of %s: incomplete merge group (head %q, base %q %q, clone URL %q)",
			g.HeadRef, g.Repo, g.HeadSHA, g.BaseSHA, g.BaseRef, g.CloneURL)
	}
	client, err := a.ghClient(g.InstallationID)
	if err != nil {
		return err
	}
	key := groupKey(g.Repo, g.HeadRef)
	if a.goneGroups.contains(key.repo) {
		log.Info("merge group already destroyed: not checked")
		return nil
	}
	ctx, run, ok := a.begin(ctx, key, g.HeadSHA)
	if !ok {
		log.Info("a check of this merge group is already running")
		return nil
	}
	defer a.endGroup(key, run)
	// dropMergeGroup records the group before cancelling what is registered: registered first and checked
	// again here, a check is either seen gone now or cancelled by it.
	if a.goneGroups.contains(key.repo) {
		a.dropMergeGroup(ctx, g)
		log.Info("merge group destroyed meanwhile: not checked")
		return nil
	}

	ch := Change{InstallationID: g.InstallationID, Repo: g.Repo, Head: g.HeadSHA, Base: g.BaseSHA,
		BaseRef: strings.TrimPrefix(g.BaseRef, "refs/heads/"), CloneURL: g.CloneURL, RepoURLs: g.RepoURLs,
		Reason: "merge group"}
	started := a.now()
	ids := a.startGroupChecks(ctx, client, g, started)
	out := a.computeGroup(ctx, g, &ch)
	if cause := context.Cause(ctx); ctx.Err() != nil {
		a.cancelGroupChecks(ctx, client, g, ids, cause)
		log.Info("merge group check cancelled", slog.Any("cause", cause))
		return nil
	}
	return a.publishGroup(ctx, client, key, g, ch, ids, out, started)
}

// dropMergeGroup forgets a destroyed merge group: a check still running is cancelled (its check runs end
// cancelled), and a checks_requested arriving late is not acted on.
func (a *App) dropMergeGroup(ctx context.Context, g MergeGroup) {
	key := groupKey(g.Repo, g.HeadRef)
	a.goneGroups.add(key.repo)
	a.mu.Lock()
	st, ok := a.prs[key]
	delete(a.prs, key)
	a.mu.Unlock()
	if !ok {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.run != nil {
		st.run.cancel(errGroupDestroyed)
		logFrom(ctx).Info("merge group destroyed: its check is cancelled", slog.String("group", g.HeadRef))
	}
}

// endGroup unregisters a finished merge group check. Unlike end, it does not bring back the entry of a group
// destroyed meanwhile.
func (a *App) endGroup(k prKey, run *prRun) {
	a.mu.Lock()
	st := a.prs[k]
	a.mu.Unlock()
	if st != nil {
		st.mu.Lock()
		if st.run == run {
			st.run = nil
		}
		st.mu.Unlock()
	}
	run.cancel(nil)
}

// startGroupChecks creates both check runs in progress on the group's head (a failure is logged: the check
// runs are created when completing them).
func (a *App) startGroupChecks(ctx context.Context, client CheckRuns, g MergeGroup, at time.Time) checkRuns {
	return a.startCheckRuns(ctx, client, g.Repo, g.HeadSHA, groupExternalID(g.HeadRef, ""), at, &github.CheckOutput{
		Title: "Rendering the merge group…",
		Summary: fmt.Sprintf("fleetwave is rendering the change of merge group `%s` (`%s`) as Argo CD would.",
			groupName(g.HeadRef), text.Short(g.HeadSHA, 7))})
}

// computeGroup fetches the group and previews its change; ch.Base is set to the base used.
func (a *App) computeGroup(ctx context.Context, g MergeGroup, ch *Change) *outcome {
	t0 := time.Now()
	out := &outcome{}
	defer func() {
		out.elapsed = time.Since(t0)
		a.observed("merge_group", out)
	}()
	commits := []string{g.HeadSHA}
	if g.BaseSHA != "" {
		commits = append(commits, g.BaseSHA)
	}
	dir, err := a.clones.Fetch(ctx, g.InstallationID, g.CloneURL, []string{g.HeadRef, g.BaseRef}, commits)
	if err != nil {
		out.err = err
		return out
	}
	out.dir = dir
	if ch.Base == "" {
		if ch.Base, err = groupBase(ctx, dir, g); err != nil {
			out.err = err
			return out
		}
		logFrom(ctx).Info("the delivery has no base_sha: the base is the merge base with the base branch", slog.String("base", text.Short(ch.Base, 7)))
	}
	a.previewInto(ctx, out, *ch)
	return out
}

// groupBase is the base of a merge group whose delivery has no base_sha: the merge base of its head and the
// base branch, read from the local repository where the clone cache keeps the fetched refs
// (refs/fleetwave/heads/<branch>).
func groupBase(ctx context.Context, dir string, g MergeGroup) (string, error) {
	what := fmt.Sprintf("finding the base of merge group %s (the delivery has no base_sha)", groupName(g.HeadRef))
	repo, err := source.Open(ctx, dir)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	tip, err := repo.Resolve(ctx, "refs/fleetwave/"+strings.TrimPrefix(g.BaseRef, "refs/"))
	if err != nil {
		return "", fmt.Errorf("%s: the base branch %s was not fetched: %w", what, g.BaseRef, err)
	}
	base, err := repo.MergeBase(ctx, g.HeadSHA, tip)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	if base == "" {
		return "", fmt.Errorf("%s: %s shares no history with %s", what, text.Short(g.HeadSHA, 7), g.BaseRef)
	}
	return base, nil
}

// publishGroup completes a merge group's check runs, unless the group was destroyed or has a newer head
// meanwhile (its check runs are then cancelled).
func (a *App) publishGroup(ctx context.Context, client CheckRuns, key prKey, g MergeGroup, ch Change, ids checkRuns, out *outcome, started time.Time) error {
	log := logFrom(ctx)
	var diffRun, planRun github.CheckRun
	if out.err != nil {
		diffRun, planRun = groupErrorChecks(g, ch, out.err)
	} else {
		diffRun, planRun = a.diffCheck(ctx, ch, out), a.planCheck(ctx, ch, out)
		header := groupHeader(g, ch)
		diffRun.Output.Summary = header + diffRun.Output.Summary
		planRun.Output.Summary = header + planRun.Output.Summary
		diffRun.ExternalID, planRun.ExternalID = groupExternalID(g.HeadRef, ""), groupExternalID(g.HeadRef, "")
		if out.plan != nil && out.policyErr == nil {
			planRun.ExternalID = groupExternalID(g.HeadRef, out.plan.Digest())
		}
	}

	a.mu.Lock()
	st := a.prs[key]
	a.mu.Unlock()
	cause := errGroupDestroyed
	if st != nil {
		st.mu.Lock()
		defer st.mu.Unlock()
		// Held while posting: a destroyed group's cancellation waits until the results are out, or is seen here.
		switch {
		case ctx.Err() != nil:
			cause = context.Cause(ctx)
		case st.head != g.HeadSHA:
			cause = errSuperseded
		default:
			cause = nil
		}
	}
	pctx := context.WithoutCancel(ctx)
	if cause != nil {
		a.cancelGroupChecks(pctx, client, g, ids, cause)
		log.Info("merge group results not posted", slog.Any("cause", cause))
		return nil
	}
	if out.err == nil {
		// The merge group's plan is held as a pull request's: before its check can pass (holds.go). Its holds go
		// with the queued pull request's, or to the rollout of the group's head once it lands.
		hc := ch
		if m := queuedPR.FindStringSubmatch(g.HeadRef); m != nil {
			hc.Number, _ = strconv.Atoi(m[1])
		}
		applyHold(&planRun, a.holdAutomated(pctx, hc, out, true))
	}
	var errs []error
	errs = append(errs, a.completeChecks(pctx, client, ch, ids, diffRun, planRun, started)...)
	if out.err != nil {
		errs = append(errs, fmt.Errorf("checking merge group %s of %s at %s: %w", groupName(g.HeadRef), g.Repo, text.Short(g.HeadSHA, 7), out.err))
	} else {
		log.Info("merge group checked", slog.String("base", text.Short(ch.Base, 7)), slog.String("summary", out.rep.SummaryLine()),
			slog.Duration("took", out.elapsed), slog.String("diff", diffRun.Conclusion), slog.String("plan", planRun.Conclusion))
	}
	return errors.Join(errs...)
}

// cancelGroupChecks completes a merge group's check runs as cancelled, saying why (with a detached context of
// its own bound: ctx is usually cancelled).
func (a *App) cancelGroupChecks(ctx context.Context, client CheckRuns, g MergeGroup, ids checkRuns, cause error) {
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	summary := fmt.Sprintf("The check of merge group `%s` (`%s`) was cancelled: %s.", groupName(g.HeadRef), text.Short(g.HeadSHA, 7), cause)
	a.completeCancelled(pctx, client, g.Repo, groupExternalID(g.HeadRef, ""), ids, summary)
}

// groupErrorChecks are both check runs when no preview of the group could be made: failure (the combined change
// is unverified, so a required check must not pass).
func groupErrorChecks(g MergeGroup, ch Change, err error) (github.CheckRun, github.CheckRun) {
	out := func() *github.CheckOutput {
		base := text.Short(ch.Base, 7)
		if base == "" {
			base = "?"
		}
		return &github.CheckOutput{
			Title: "fleetwave could not preview this merge group",
			Summary: fmt.Sprintf("Previewing merge group `%s` (`%s..%s`) failed: %s\n\nThe merge queue asks again when the pull request is queued again.",
				groupName(g.HeadRef), base, text.Short(g.HeadSHA, 7), postable(err)),
		}
	}
	return github.CheckRun{Name: CheckDiff, Conclusion: github.ConclusionFailure, ExternalID: groupExternalID(g.HeadRef, ""), Output: out()},
		github.CheckRun{Name: CheckPlan, Conclusion: github.ConclusionFailure, ExternalID: groupExternalID(g.HeadRef, ""), Output: out()}
}

var queuedPR = regexp.MustCompile(`/pr-([0-9]+)-[0-9a-f]+$`)

// groupHeader opens a merge group's check-run summary: which group, which change.
func groupHeader(g MergeGroup, ch Change) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "Merge queue group `%s`: the combined change of its pull requests, `%s..%s`", groupName(g.HeadRef), text.Short(ch.Base, 7), text.Short(ch.Head, 7))
	if m := queuedPR.FindStringSubmatch(g.HeadRef); m != nil {
		fmt.Fprintf(&sb, " (#%s and the pull requests queued with it)", m[1])
	}
	sb.WriteString(".")
	if g.BaseSHA == "" {
		fmt.Fprintf(&sb, " The delivery named no base commit: the base is the merge base with `%s`.", strings.TrimPrefix(g.BaseRef, "refs/heads/"))
	}
	sb.WriteString(" Nothing is rolled out until the group lands on the branch.\n\n")
	return sb.String()
}

// groupName is a merge group's head ref without refs/heads/.
func groupName(headRef string) string { return strings.TrimPrefix(headRef, "refs/heads/") }

// groupExternalID is what a merge group's check runs carry: "fleetwave-queue:<branch>", plus ":plan:<digest>"
// on the plan check once the plan is known. parseExternalID does not read it as a pull request's.
func groupExternalID(headRef, planDigest string) string {
	s := "fleetwave-queue:" + groupName(headRef)
	if planDigest != "" {
		s += ":plan:" + planDigest
	}
	return s
}

// contains reports whether s is in the set.
func (r *recent) contains(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.set[s]
}
