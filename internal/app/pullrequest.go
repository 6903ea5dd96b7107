package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/github"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/preview"
	"github.com/fleetwave/fleetwave/internal/report"
)

// Change is a pull request's change to preview: its head against its base.
type Change struct {
	InstallationID int64
	Repo           string // owner/name of the base repository
	Number         int
	Head, Base     string // commit ids
	BaseRef        string // the base branch
	CloneURL       string // the base repository's clone URL; a fork's head is fetched from its refs/pull/N/head
	// RepoURLs are the names Applications may give the repository (html_url, clone_url, ssh_url, full_name).
	RepoURLs []string
	Fork     bool
	// HeadRepoGone: the head branch's repository was deleted (the payload's head.repo is null); such a change,
	// like a fork's, is never held (automated sync is switched off only for branches of this repository).
	HeadRepoGone bool
	// Reason is what asked for the preview ("opened", "synchronize", "rerequested", "/plan", ...), for logs.
	Reason string
}

// errSuperseded is the cancellation cause of a preview whose head is no longer the pull request's head.
var errSuperseded = errors.New("superseded by a newer commit")

type prKey struct {
	repo   string
	number int
}

func (k prKey) String() string { return k.repo + "#" + strconv.Itoa(k.number) }

// prState is what the App remembers of one pull request: the latest head it was told about and the preview in
// flight. mu is held to change them and while results are posted, so that a newer head is either registered
// before an older preview checks whether it may post, or after that preview posted.
type prState struct {
	mu   sync.Mutex
	head string
	run  *prRun
}

type prRun struct {
	head   string
	cancel context.CancelCauseFunc
}

func (a *App) state(k prKey) *prState {
	a.mu.Lock()
	defer a.mu.Unlock()
	st, ok := a.prs[k]
	if !ok {
		st = &prState{}
		a.prs[k] = st
	}
	return st
}

// begin registers a preview of head, cancelling one of an older head. It returns false when a preview of the
// same head is already running (its results will do).
func (a *App) begin(ctx context.Context, k prKey, head string) (context.Context, *prRun, bool) {
	st := a.state(k)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.run != nil && st.run.head == head {
		return ctx, nil, false
	}
	if st.run != nil {
		st.run.cancel(errSuperseded)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	st.head = head
	st.run = &prRun{head: head, cancel: cancel}
	return ctx, st.run, true
}

// end unregisters a finished preview.
func (a *App) end(k prKey, run *prRun) {
	st := a.state(k)
	st.mu.Lock()
	if st.run == run {
		st.run = nil
	}
	st.mu.Unlock()
	run.cancel(nil)
}

// forget cancels any preview of a closed pull request and drops its state.
func (a *App) forget(k prKey) {
	a.mu.Lock()
	st, ok := a.prs[k]
	delete(a.prs, k)
	a.mu.Unlock()
	if !ok {
		return
	}
	st.mu.Lock()
	if st.run != nil {
		st.run.cancel(errors.New("pull request closed"))
	}
	st.mu.Unlock()
}

// checkRuns are the ids of a preview's two check runs (0 when creating one failed).
type checkRuns struct{ diff, plan int64 }

// OnPullRequest previews a pull request's change: both check runs start on the head at once, base and head are
// fetched into the clone cache, the preview (discovery → render → diff → plan) runs, and its results go to the
// sticky comment and the check runs — unless a newer head arrived meanwhile, in which case this preview is
// cancelled and its check runs are marked cancelled. It returns an error only for what no check run can say.
func (a *App) OnPullRequest(ctx context.Context, ch Change) error {
	log := logFrom(ctx).With(slog.String("head", text.Short(ch.Head, 7)), slog.String("reason", ch.Reason), slog.Bool("fork", ch.Fork))
	ctx = withLog(ctx, log)
	if ch.Repo == "" || ch.Number == 0 || ch.Head == "" || ch.Base == "" || ch.CloneURL == "" {
		return fmt.Errorf("previewing %s#%d: incomplete pull request (head %q, base %q, clone URL %q)", ch.Repo, ch.Number, ch.Head, ch.Base, ch.CloneURL)
	}
	// A change is previewed once: another delivery naming the same base and head (reopened, ready_for_review,
	// a redelivery under a new id), here or on another replica, after a restart too, finds it done or running
	// and costs no GitHub call. A re-run asked for on a check run or with /plan recomputes a change done.
	done := previewKey(ch)
	claimed, err := a.previews.ClaimPreview(ctx, done, forced(ch.Reason), claimTTL)
	if err != nil {
		return fmt.Errorf("previewing %s#%d: %w", ch.Repo, ch.Number, err)
	}
	if !claimed {
		return a.showAgain(ctx, ch, done)
	}
	finished := false
	defer func() {
		if !finished {
			a.releasePreview(ctx, done)
		}
	}()
	client, err := a.ghClient(ch.InstallationID)
	if err != nil {
		return err
	}
	// GitHub does not deliver in order: an older synchronize can arrive after a newer one. Its head is then not
	// the pull request's any more, and it must not cancel the newer preview.
	if cur, err := client.PullRequest(ctx, ch.Repo, ch.Number); err == nil {
		if cur.State == "closed" {
			log.Info("pull request closed: not previewed")
			return nil
		}
		if cur.HeadSHA != "" && cur.HeadSHA != ch.Head {
			log.Info("stale event: the pull request's head is now another commit", slog.String("current", text.Short(cur.HeadSHA, 7)))
			return nil
		}
	} else {
		log.Warn("could not read the pull request's current head; previewing the event's", slog.Any("error", err))
	}

	key := prKey{repo: ch.Repo, number: ch.Number}
	ctx, run, ok := a.begin(ctx, key, ch.Head)
	if !ok {
		log.Info("a preview of this head is already running")
		return nil
	}
	defer a.end(key, run)

	started := a.now()
	ids := a.startChecks(ctx, client, ch, started)
	out := a.compute(ctx, ch)
	if cause := context.Cause(ctx); ctx.Err() != nil {
		a.cancelChecks(ctx, client, ch, ids, cause)
		log.Info("preview cancelled", slog.Any("cause", cause))
		return nil
	}
	posted, err := a.publish(ctx, client, key, ch, ids, out, started)
	if posted {
		// Done, a failed preview included: its checks say why and how to re-run, and another delivery must not
		// post it again.
		if ferr := a.previews.FinishPreview(context.WithoutCancel(ctx), done); ferr != nil {
			log.Warn("recording the preview as done", slog.Any("error", ferr))
		} else {
			finished = true
		}
	}
	return err
}

// showAgain handles a delivery naming a change already previewed or being previewed. When the change is done
// and the sticky comment shows another one, the pull request's head may have returned to it (a force-push back
// to an earlier commit, or deliveries of several heads answered out of order): if GitHub says the head is the
// change's, the comment is re-pointed at the change's recorded comment — no preview, no check run (the head's
// are on the commit already) — so that it always shows what would merge. It costs nothing when the comment
// shows the change, and one read of the pull request otherwise.
func (a *App) showAgain(ctx context.Context, ch Change, k store.PreviewKey) error {
	log := logFrom(ctx)
	shown, err := a.previews.ShownComment(ctx, ch.Repo, ch.Number)
	if err != nil {
		return fmt.Errorf("previewing %s#%d: %w", ch.Repo, ch.Number, err)
	}
	if shown == k {
		log.Info("this change is already previewed and its comment shown: nothing to do (re-run the check or comment /plan to recompute)")
		return nil
	}
	parts, err := a.previews.Comment(ctx, k)
	if err != nil {
		return fmt.Errorf("previewing %s#%d: %w", ch.Repo, ch.Number, err)
	}
	if parts == nil {
		log.Info("this change is being previewed: nothing to do (re-run the check or comment /plan to recompute)")
		return nil
	}
	client, err := a.ghClient(ch.InstallationID)
	if err != nil {
		return err
	}
	// Under the pull request's lock, as publish: a preview of another head posts either before (and this
	// re-points after it) or after, finding its head stale.
	st := a.state(prKey{repo: ch.Repo, number: ch.Number})
	st.mu.Lock()
	defer st.mu.Unlock()
	if shown, err := a.previews.ShownComment(ctx, ch.Repo, ch.Number); err != nil {
		return fmt.Errorf("previewing %s#%d: %w", ch.Repo, ch.Number, err)
	} else if shown == k {
		log.Info("this change is already previewed and its comment shown: nothing to do (re-run the check or comment /plan to recompute)")
		return nil // another delivery of the same head re-pointed it meanwhile
	}
	cur, err := client.PullRequest(ctx, ch.Repo, ch.Number)
	if err != nil {
		return fmt.Errorf("reading %s#%d to tell whether its head returned to %s: %w", ch.Repo, ch.Number, text.Short(ch.Head, 7), err)
	}
	if cur.State == "closed" {
		log.Info("pull request closed: its comment is left as it is")
		return nil
	}
	if cur.HeadSHA != ch.Head {
		log.Info("stale event: the pull request's head is now another commit", slog.String("current", text.Short(cur.HeadSHA, 7)))
		return nil
	}
	if st.run != nil && st.run.head != ch.Head {
		st.run.cancel(errSuperseded) // a preview of a head the pull request left: its results would not be posted
	}
	st.head = ch.Head
	pctx := context.WithoutCancel(ctx)
	if _, err := client.UpsertComment(pctx, ch.Repo, ch.Number, parts); err != nil {
		return fmt.Errorf("showing the preview of %s#%d at %s again: %w", ch.Repo, ch.Number, text.Short(ch.Head, 7), err)
	}
	if err := a.previews.ShowComment(pctx, k); err != nil {
		log.Warn("recording the comment shown", slog.Any("error", err))
	}
	if l, ok := labelsIn(parts); ok {
		a.applyLabels(pctx, client, ch.Repo, ch.Number, l, cur.Labels, true) // the head's labels come back with its comment
	}
	log.Info("the pull request's head returned to a commit already previewed: its comment is shown again, not recomputed",
		slog.String("was", text.Short(shown.Head, 7)))
	return nil
}

// releasePreview gives up the claim of a change not posted (cancelled, stale, or its posting failed), so that
// the next delivery naming it previews it; a failure is logged (the claim then expires after claimTTL).
func (a *App) releasePreview(ctx context.Context, k store.PreviewKey) {
	if err := a.previews.ReleasePreview(context.WithoutCancel(ctx), k); err != nil {
		logFrom(ctx).Warn("releasing the preview claim", slog.Any("error", err))
	}
}

// previewKey names a pull request's change: the same base and head preview the same.
func previewKey(ch Change) store.PreviewKey {
	return store.PreviewKey{Repo: ch.Repo, PR: ch.Number, Head: ch.Head, Base: ch.Base}
}

// forced reports whether a preview was asked for explicitly (a check run or suite re-run, /plan): it runs even
// when the change was previewed already.
func forced(reason string) bool {
	switch reason {
	case "rerequested", "suite rerequested", "/plan", "/acknowledge":
		return true
	}
	return false
}

// startChecks creates both check runs in progress on the head, unless they exist. A failure is logged: the
// results are still worth a comment, and the check runs are created when completing them.
func (a *App) startChecks(ctx context.Context, client CheckRuns, ch Change, at time.Time) checkRuns {
	return a.startCheckRuns(ctx, client, ch.Repo, ch.Head, externalID(ch.Number, ""), at, &github.CheckOutput{
		Title: "Rendering the change…", Summary: fmt.Sprintf("fleetwave is rendering `%s..%s` as Argo CD would.", text.Short(ch.Base, 7), text.Short(ch.Head, 7))})
}

// startCheckRuns creates fleetwave/diff and fleetwave/plan in progress on head, with out as their output, and
// records their ids. A check run fleetwave already created on head (another base, a re-run, before a restart)
// is not created again: its id is returned and the results update it. A failure is logged and leaves that id 0.
func (a *App) startCheckRuns(ctx context.Context, client CheckRuns, repo, head, extID string, at time.Time, out *github.CheckOutput) checkRuns {
	var ids checkRuns
	for _, c := range []struct {
		name string
		id   *int64
	}{{CheckDiff, &ids.diff}, {CheckPlan, &ids.plan}} {
		if id := a.checkRunID(ctx, repo, head, c.name); id != 0 {
			*c.id = id
			continue
		}
		id, err := client.CreateCheckRun(ctx, repo, github.CheckRun{
			Name: c.name, HeadSHA: head, Status: github.StatusInProgress, StartedAt: at, ExternalID: extID, Output: out,
		})
		if err != nil {
			logFrom(ctx).Warn("creating check run", slog.String("check", c.name), slog.Any("error", err))
			continue
		}
		a.saveCheckRunID(ctx, repo, head, c.name, id)
		*c.id = id
	}
	return ids
}

// checkRunID is the check run name fleetwave created on head, 0 when none (or the lookup failed, logged).
func (a *App) checkRunID(ctx context.Context, repo, head, name string) int64 {
	id, err := a.previews.CheckRunID(ctx, repo, head, name)
	if err != nil {
		logFrom(ctx).Warn("looking up the check run of the head", slog.String("check", name), slog.Any("error", err))
		return 0
	}
	return id
}

// saveCheckRunID records a check run created on head; a failure is logged.
func (a *App) saveCheckRunID(ctx context.Context, repo, head, name string, id int64) {
	if err := a.previews.SaveCheckRunID(context.WithoutCancel(ctx), repo, head, name, id); err != nil {
		logFrom(ctx).Warn("recording the check run of the head", slog.String("check", name), slog.Any("error", err))
	}
}

// outcome is what a preview produced.
type outcome struct {
	dir        string            // the local repository
	rep        *report.Report    // nil when err is set
	plan       *plan.Plan        // the wave plan; nil without one (no report, or policyErr)
	policy     *plan.Policy      // the release policy the preview read at head and planned with; nil with policyErr
	policyFile string            // its file ("" for the default policy)
	policyErr  *plan.PolicyError // the release policy at head is invalid (rep is then a diff without a plan)
	err        error             // no report could be made
	elapsed    time.Duration     // for logs only: never in what is posted
}

// compute fetches the change and previews it.
func (a *App) compute(ctx context.Context, ch Change) *outcome {
	t0 := time.Now()
	out := &outcome{}
	defer func() {
		out.elapsed = time.Since(t0)
		a.observed("pull_request", out)
	}()
	refs := []string{fmt.Sprintf("refs/pull/%d/head", ch.Number)}
	if ch.BaseRef != "" {
		refs = append(refs, "refs/heads/"+ch.BaseRef)
	}
	dir, err := a.clones.Fetch(ctx, ch.InstallationID, ch.CloneURL, refs, []string{ch.Base, ch.Head})
	if err != nil {
		out.err = err
		return out
	}
	out.dir = dir
	a.previewInto(ctx, out, ch)
	return out
}

// previewInto previews ch in out.dir, which holds both revisions, and fills out's report or error.
func (a *App) previewInto(ctx context.Context, out *outcome, ch Change) {
	in := preview.Input{RepoDir: out.dir, Base: ch.Base, Head: ch.Head, BaseBranch: ch.BaseRef, RepoURLs: ch.RepoURLs, Settings: a.settings,
		Plan: true, Concurrency: a.concurrency, TempDir: a.tempDir, Discovered: a.discovered,
		NoRemoteHead: !a.remoteHead(ch)}
	if a.clusters != nil {
		cs, err := a.clusters(ctx)
		if err != nil {
			out.err = fmt.Errorf("listing destination clusters: %w", err)
			return
		}
		in.Clusters = cs
	}
	if err := a.withInstances(ctx, &in); err != nil {
		out.err = err
		return
	}
	res, err := a.runPreview(ctx, ch.InstallationID, renderGroup(ch.Repo, ch.Number), in)
	var pe *plan.PolicyError
	if errors.As(err, &pe) {
		// The diff does not depend on the policy: show it, and fail the plan check on the policy's lines.
		// preview.Run returns the diff with the policy error (its PolicyErrors say why there is no plan).
		out.policyErr = pe
		if res != nil {
			err = nil
		} else {
			in.Plan = false
			res, err = a.runPreview(ctx, ch.InstallationID, renderGroup(ch.Repo, ch.Number), in)
		}
	}
	out.err = err
	if err == nil && res != nil {
		out.rep, out.plan, out.policy, out.policyFile = res.Report, res.Plan, res.Policy, res.PolicyFile
		a.link(out.rep, ch)
	}
}

// link points the comment's footer at the policy file on GitHub and at each shown app in Argo CD.
func (a *App) link(rep *report.Report, ch Change) {
	f := rep.Footer
	if f == nil {
		return
	}
	if web := repoWebURL(ch); web != "" && f.PolicyFile != "" {
		f.PolicyURL = web + "/blob/" + ch.Head + "/" + f.PolicyFile
	}
	if a.argoURL == "" && (a.instances == nil || len(a.instances.URLs) == 0) {
		return
	}
	f.AppURLs = map[string]string{}
	for i := range rep.Apps {
		ra := &rep.Apps[i]
		if ra.Status != report.StatusUnchanged && ra.Status != report.StatusAdded {
			// Argo CD's UI path for an app, in the instance that holds it (instances.go).
			if u := a.appURL(ra); u != "" {
				f.AppURLs[ra.Key()] = u
			}
		}
	}
}

// repoWebURL is the repository's page on GitHub: its html_url among the names the payload gave, else
// https://github.com/owner/name.
func repoWebURL(ch Change) string {
	for _, u := range ch.RepoURLs {
		if strings.HasPrefix(u, "https://") && !strings.HasSuffix(u, ".git") {
			return strings.TrimSuffix(u, "/")
		}
	}
	if ch.Repo != "" {
		return "https://github.com/" + ch.Repo
	}
	return ""
}

// runPreview runs the preview of a change of the installation (of the pull request group), with the live state
// when a comparer is configured; when the preview fails with it (Argo CD unreachable) it is made again without,
// and says so.
func (a *App) runPreview(ctx context.Context, installation int64, group string, in preview.Input) (*preview.Result, error) {
	r := a.rendererOf(installation, group)
	if a.renderBudget != 0 {
		in.RenderBudget = a.renderBudget
	}
	in.ArgoCD = a.argocd
	if !asksArgoCD(in) {
		return preview.Run(ctx, r, in)
	}
	res, err := preview.Run(ctx, r, in)
	var pe *plan.PolicyError
	if err == nil || ctx.Err() != nil || errors.As(err, &pe) {
		return res, err
	}
	in = withoutArgoCD(in)
	res, err2 := preview.Run(ctx, a.rendererOf(installation, group), in) // a new view: its output budget afresh
	if err2 != nil {
		return nil, err // the first error is the one to report
	}
	res.Report.Notes = append(res.Report.Notes, "live state not compared: "+postable(err))
	logFrom(ctx).Warn("preview without live state", slog.Any("error", err))
	return res, nil
}

// rendererOf is the renderer of an installation's previews of a pull request: the installation's share of a
// shared renderer (TenantRenderers), so that one installation flooding pull requests (or rendering bombs to the
// time cap) cannot starve another, and within it the pull request's turn, so that one pull request's queue of
// bombs does not hold the next pull request of the same installation.
func (a *App) rendererOf(installation int64, group string) preview.Renderer {
	if a.tenants != nil {
		return a.tenants(strconv.FormatInt(installation, 10), group)
	}
	return a.renderer
}

// renderGroup names a pull request's renders for the shared renderer.
func renderGroup(repo string, number int) string { return fmt.Sprintf("%s#%d", repo, number) }

// publish posts a preview's results, unless its head is stale; posted reports that everything was posted.
func (a *App) publish(ctx context.Context, client GitHub, key prKey, ch Change, ids checkRuns, out *outcome, started time.Time) (posted bool, err error) {
	log := logFrom(ctx)
	// Build everything before taking the lock: reading files for annotations may touch the disk.
	var parts []string
	var diffRun, planRun github.CheckRun
	if out.err != nil {
		parts = []string{errorComment(ch, out.err)}
		diffRun, planRun = a.errorChecks(ch, out.err)
	} else {
		parts = out.rep.MarkdownParts(github.MaxCommentPart)
		diffRun = a.diffCheck(ctx, ch, out)
		planRun = a.planCheck(ctx, ch, out)
	}
	var gate ackGate // the classes a person must acknowledge for the check to pass (acknowledge.go)
	if out.err == nil {
		gate = a.ackNeeded(ctx, ch, out)
	}
	labels, labelled := labelsOf(out) // the policy's labels of the classes present (labels.go)
	if labelled {
		parts = withLabels(parts, labels)
	}

	st := a.state(key)
	st.mu.Lock()
	defer st.mu.Unlock()
	// Once decided, post everything: a newer head cancelling ctx now must not leave half a comment.
	pctx := context.WithoutCancel(ctx)
	stale := st.head != "" && st.head != ch.Head
	var current []string // the pull request's labels, when read
	currentKnown := false
	if !stale {
		if cur, err := client.PullRequest(pctx, ch.Repo, ch.Number); err == nil {
			stale = cur.HeadSHA != "" && cur.HeadSHA != ch.Head
			current, currentKnown = cur.Labels, true
		}
	}
	if stale {
		a.cancelChecks(pctx, client, ch, ids, errSuperseded)
		log.Info("results not posted: the pull request has a newer head")
		return false, nil
	}
	if out.err == nil {
		// Before the check can pass: automated sync off for the apps the merge will roll out (holds.go).
		applyHold(&planRun, a.holdAutomated(pctx, ch, out, false))
		planRun, parts = a.applyAcknowledge(pctx, ch, gate, planRun, parts)
	}
	var errs []error
	if _, err := client.UpsertComment(pctx, ch.Repo, ch.Number, parts); err != nil {
		errs = append(errs, err)
	} else if err := a.previews.SaveComment(pctx, previewKey(ch), parts); err != nil {
		// Only a later return of the head to this commit needs it: the comment would then not be re-pointed.
		log.Warn("recording the comment posted", slog.Any("error", err))
	}
	errs = append(errs, a.completeChecks(pctx, client, ch, ids, diffRun, planRun, started)...)
	if labelled {
		a.applyLabels(pctx, client, ch.Repo, ch.Number, labels, current, currentKnown)
	}
	posted = len(errs) == 0
	if out.err != nil {
		errs = append(errs, fmt.Errorf("previewing %s#%d at %s: %w", ch.Repo, ch.Number, text.Short(ch.Head, 7), out.err))
	} else {
		log.Info("preview posted", slog.String("summary", out.rep.SummaryLine()), slog.Duration("took", out.elapsed),
			slog.String("diff", diffRun.Conclusion), slog.String("plan", planRun.Conclusion))
	}
	return posted, errors.Join(errs...)
}

// completeCheck updates check run id with run, or creates it completed when starting it had failed.
func (a *App) completeCheck(ctx context.Context, client CheckRuns, ch Change, id int64, run github.CheckRun, started time.Time) error {
	run.Status = github.StatusCompleted
	if id != 0 {
		return client.UpdateCheckRun(ctx, ch.Repo, id, run)
	}
	run.HeadSHA, run.StartedAt = ch.Head, started
	id, err := client.CreateCheckRun(ctx, ch.Repo, run)
	if err == nil {
		a.saveCheckRunID(ctx, ch.Repo, ch.Head, run.Name, id)
	}
	return err
}

// cancelChecks completes a preview's check runs as cancelled, saying why. It runs after ctx was cancelled, so it
// uses a detached context with its own bound.
func (a *App) cancelChecks(ctx context.Context, client CheckRuns, ch Change, ids checkRuns, cause error) {
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	summary := fmt.Sprintf("The preview of `%s` was cancelled: %s.", text.Short(ch.Head, 7), cause)
	if errors.Is(cause, errSuperseded) {
		summary = fmt.Sprintf("The preview of `%s` was cancelled: the pull request has a newer commit, whose checks carry the results.", text.Short(ch.Head, 7))
	}
	a.completeCancelled(pctx, client, ch.Repo, externalID(ch.Number, ""), ids, summary)
}

// completeChecks completes a preview's two check runs with their results, at one time; it returns the
// failures. PRs and merge groups share it.
func (a *App) completeChecks(ctx context.Context, client CheckRuns, ch Change, ids checkRuns, diffRun, planRun github.CheckRun, started time.Time) []error {
	var errs []error
	now := a.now()
	for _, c := range []struct {
		run github.CheckRun
		id  int64
	}{{diffRun, ids.diff}, {planRun, ids.plan}} {
		c.run.CompletedAt = now
		if err := a.completeCheck(ctx, client, ch, c.id, c.run, started); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// completeCancelled completes a preview's two check runs (those created) as cancelled with summary; a failure is
// logged. PRs and merge groups share it.
func (a *App) completeCancelled(ctx context.Context, client CheckRuns, repo, extID string, ids checkRuns, summary string) {
	for _, c := range []struct {
		name string
		id   int64
	}{{CheckDiff, ids.diff}, {CheckPlan, ids.plan}} {
		if c.id == 0 {
			continue
		}
		err := client.UpdateCheckRun(ctx, repo, c.id, github.CheckRun{
			Name: c.name, Conclusion: github.ConclusionCancelled, CompletedAt: a.now(), ExternalID: extID,
			Output: &github.CheckOutput{Title: "Cancelled", Summary: summary},
		})
		if err != nil {
			logFrom(ctx).Warn("cancelling check run", slog.String("check", c.name), slog.Any("error", err))
		}
	}
}

// externalID is what fleetwave's PR check runs carry: "fleetwave-pr:<number>", plus ":plan:<digest>" on the
// plan check once the plan is known (so that the rollout can tell whether the plan at merge is the one shown).
// It cannot be mistaken for a rollout check run's ("fleetwave:<id>…").
func externalID(number int, planDigest string) string {
	s := "fleetwave-pr:" + strconv.Itoa(number)
	if planDigest != "" {
		s += ":plan:" + planDigest
	}
	return s
}

// parseExternalID reads externalID's form.
func parseExternalID(s string) (number int, planDigest string, ok bool) {
	rest, found := strings.CutPrefix(s, "fleetwave-pr:")
	if !found {
		return 0, "", false
	}
	num, digest, _ := strings.Cut(rest, ":plan:")
	n, err := strconv.Atoi(num)
	if err != nil || n <= 0 {
		return 0, "", false
	}
	return n, digest, true
}

// errorComment is the sticky comment when no preview could be made: the previous one would describe another
// commit.
func errorComment(ch Change, err error) string {
	return fmt.Sprintf("%s\n## fleetwave preview `%s..%s`\n\n⚠️ fleetwave could not preview this change: %s\n\nComment `/plan` or re-run the check to try again.\n",
		report.Marker, text.Short(ch.Base, 7), text.Short(ch.Head, 7), postable(err))
}
