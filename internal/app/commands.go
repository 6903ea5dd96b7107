package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	gh "github.com/google/go-github/v60/github"

	"github.com/fleetwave/fleetwave/internal/command"
	"github.com/fleetwave/fleetwave/internal/edge/github"
	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/plan"
)

// onCheckRunRerequested recomputes the preview when someone presses "Re-run" on fleetwave/diff or
// fleetwave/plan — for the check run's head only, and only while it is the pull request's head.
func (a *App) onCheckRunRerequested(ctx context.Context, e *gh.CheckRunEvent) error {
	cr := e.GetCheckRun()
	if cr == nil || (cr.GetName() != CheckDiff && cr.GetName() != CheckPlan) {
		return nil
	}
	number, _, ok := parseExternalID(cr.GetExternalID())
	if !ok && len(cr.PullRequests) > 0 {
		number, ok = cr.PullRequests[0].GetNumber(), true
	}
	if !ok {
		logFrom(ctx).Info("re-run of a check run that names no pull request: ignored")
		return nil
	}
	return a.rerun(ctx, e.GetInstallation().GetID(), e.GetRepo(), number, cr.GetHeadSHA(), "rerequested")
}

// onCheckSuiteRerequested recomputes the previews of the suite's pull requests ("Re-run all checks").
func (a *App) onCheckSuiteRerequested(ctx context.Context, e *gh.CheckSuiteEvent) error {
	cs := e.GetCheckSuite()
	if cs == nil {
		return nil
	}
	var errs []error
	for _, pr := range cs.PullRequests {
		errs = append(errs, a.rerun(ctx, e.GetInstallation().GetID(), e.GetRepo(), pr.GetNumber(), cs.GetHeadSHA(), "suite rerequested"))
	}
	return errors.Join(errs...)
}

// rerun previews pull request number again if its head is still head ("" for whatever it is now).
func (a *App) rerun(ctx context.Context, installationID int64, repo *gh.Repository, number int, head, reason string) error {
	client, err := a.ghClient(installationID)
	if err != nil {
		return err
	}
	pr, err := client.PullRequest(ctx, repo.GetFullName(), number)
	if err != nil {
		return fmt.Errorf("re-running the preview of %s#%d: %w", repo.GetFullName(), number, err)
	}
	if head != "" && pr.HeadSHA != head {
		logFrom(ctx).Info("re-run of a stale head: ignored", slog.String("head", text.Short(head, 7)), slog.String("current", text.Short(pr.HeadSHA, 7)))
		return nil
	}
	if pr.State == "closed" {
		logFrom(ctx).Info("re-run on a closed pull request: ignored")
		return nil
	}
	return a.OnPullRequest(ctx, changeOfAPI(installationID, repo, pr, reason))
}

// changeOfAPI describes a pull request read from the API (repository names from the event's payload).
func changeOfAPI(installationID int64, repo *gh.Repository, pr github.PullRequest, reason string) Change {
	return Change{
		InstallationID: installationID, Repo: repo.GetFullName(), Number: pr.Number,
		Head: pr.HeadSHA, Base: pr.BaseSHA, BaseRef: pr.BaseRef, CloneURL: repo.GetCloneURL(),
		RepoURLs: repoURLs(repo.GetHTMLURL(), repo.GetCloneURL(), repo.GetSSHURL(), repo.GetFullName()),
		Fork:     pr.FromFork(), Reason: reason,
	}
}

// onComment handles a comment on a pull request: slash commands are acknowledged with 👀, parsed by
// internal/command, authorised against the release policy of the base branch (never the pull request's own,
// which its author controls), then /plan recomputes the preview and the rollout commands go to the Commands
// port. Every refusal, usage error or unknown command gets a reply.
func (a *App) onComment(ctx context.Context, e *gh.IssueCommentEvent) error {
	issue, c, repo := e.GetIssue(), e.GetComment(), e.GetRepo()
	if issue == nil || c == nil || repo == nil || !issue.IsPullRequest() {
		return nil
	}
	parser := command.Parser{BotLogin: a.botLogin}
	res := parser.Parse(command.Comment{Body: c.GetBody(), Author: c.GetUser().GetLogin(), AuthorIsBot: c.GetUser().GetType() == "Bot"})
	if res.Ignore {
		return nil
	}
	// A command is acted on once, and only while it is fresh: a signed delivery sent again under a new delivery
	// id is the same comment (replay.go).
	if why := a.commentTooOld(c.GetCreatedAt().Time); why != "" {
		logFrom(ctx).Info("command comment not acted on: "+why, slog.Int64("comment", c.GetID()))
		return nil
	}
	if why, err := a.firstTime(ctx, commentKey(repo.GetFullName(), c.GetID())); err != nil || why != "" {
		if why != "" {
			logFrom(ctx).Info("command comment not acted on: "+why, slog.Int64("comment", c.GetID()))
		}
		return err
	}
	client, err := a.ghClient(e.GetInstallation().GetID())
	if err != nil {
		return err
	}
	fullName, number, login := repo.GetFullName(), issue.GetNumber(), c.GetUser().GetLogin()
	log := logFrom(ctx).With(slog.String("command", string(res.Command)), slog.String("actor", login))
	if err := client.React(ctx, fullName, c.GetID(), "eyes"); err != nil {
		log.Warn("reacting to a command", slog.Any("error", err))
	}
	reply := func(body string) error {
		_, err := client.Reply(ctx, fullName, number, body)
		return err
	}
	if res.Command == "" || res.Command == command.Help {
		return reply(res.Response)
	}
	pr, err := client.PullRequest(ctx, fullName, number)
	if err != nil {
		return errors.Join(fmt.Errorf("running /%s on %s#%d: %w", res.Command, fullName, number, err),
			reply(fmt.Sprintf("@%s: fleetwave could not read this pull request, so `/%s` was not run. Try again later.", login, res.Command)))
	}
	if branch := repo.GetDefaultBranch(); res.Command != command.Plan && res.Command != command.Acknowledge && (branch == "" || pr.BaseRef != branch) {
		// Only the default branch rolls out (onMerged), and only its policy says who may steer a rollout.
		log.Info("rollout command on a pull request not into the default branch: refused", slog.String("base", pr.BaseRef))
		return reply(fmt.Sprintf("@%s: `/%s` was not run: this pull request is into `%s`, not the default branch; only a merge into the default branch is rolled out.",
			login, res.Command, pr.BaseRef))
	}
	trusted := pr.BaseSHA
	if pr.Merged && pr.MergeCommitSHA != "" {
		trusted = pr.MergeCommitSHA
	}
	policy, err := a.policyAt(ctx, e.GetInstallation().GetID(), repo.GetCloneURL(), []string{"refs/heads/" + pr.BaseRef}, trusted)
	if err != nil {
		return errors.Join(err, reply(fmt.Sprintf("@%s: `/%s` was not run: fleetwave cannot tell who may run it — %s", login, res.Command, postable(err))))
	}
	req := CommandRequest{
		Repo: fullName, PRNumber: number, Command: res.Command, Args: res.Args, Target: res.Target, Actor: login,
	}
	if pr.Merged {
		req.MergeSHA = pr.MergeCommitSHA
	}
	if answered, err := a.resolveApproval(ctx, &req, reply); answered {
		return err
	}
	actor, err := a.actor(ctx, client, fullName, login, policy, res.Command)
	if err != nil {
		return errors.Join(err, reply(fmt.Sprintf("@%s: `/%s` was not run: fleetwave could not check your permission. Try again later.", login, res.Command)))
	}
	dec := command.Authorize(policy, command.Request{Command: res.Command, Wave: approvalOf(req), Actor: actor, FromFork: pr.FromFork()})
	if !dec.Allowed {
		log.Info("command refused", slog.String("reason", dec.Reason))
		return reply(dec.Reason)
	}
	if res.Command == command.Acknowledge {
		recompute := func() error {
			return a.OnPullRequest(ctx, changeOfAPI(e.GetInstallation().GetID(), repo, pr, "/acknowledge"))
		}
		return a.acknowledge(ctx, client, pr, fullName, login, recompute, reply)
	}
	if res.Command == command.Plan {
		if pr.State == "closed" {
			return reply(fmt.Sprintf("@%s: this pull request is closed; there is nothing to preview.", login))
		}
		if err := reply(fmt.Sprintf("@%s: recomputing the preview of `%s`; the comment and the checks are updated when it is done.", login, text.Short(pr.HeadSHA, 7))); err != nil {
			log.Warn("replying to /plan", slog.Any("error", err))
		}
		return a.OnPullRequest(ctx, changeOfAPI(e.GetInstallation().GetID(), repo, pr, "/plan"))
	}
	return a.runCommand(ctx, req, reply)
}

// resolveApproval sets the Target of an approval to the wave it approves, by that wave's own name
// (Commands.ApprovalWave: the wave awaiting approval for a bare /approve or the rollout's button, the named wave
// matched case-insensitively otherwise), so that the actor is authorised against that wave's approval teams and
// the executor approves that wave and no other. answered reports that the command was answered instead (nothing
// awaits approval, or the wave cannot be told): nothing is to be approved. Other commands pass through.
func (a *App) resolveApproval(ctx context.Context, req *CommandRequest, reply func(string) error) (answered bool, err error) {
	if req.Command != command.Approve {
		return false, nil
	}
	wave, answer, err := a.commands.ApprovalWave(ctx, *req)
	if err == nil && answer == "" && wave == "" {
		answer = fmt.Sprintf("@%s: `/approve` was not run: fleetwave could not tell which wave it approves.", req.Actor)
	}
	if answer == "" && err != nil {
		answer = fmt.Sprintf("@%s: `/approve` was not run: fleetwave could not tell which wave it approves; see fleetwave's logs. Try again later.", req.Actor)
	}
	if answer != "" {
		logFrom(ctx).Info("approval not run", slog.String("target", req.Target), slog.String("reason", answer))
		if err != nil {
			err = fmt.Errorf("resolving the wave /approve is for on %s#%d: %w", req.Repo, req.PRNumber, err)
		}
		return true, errors.Join(err, reply(answer))
	}
	req.Target = wave
	return false, nil
}

// approvalOf is the wave a command is authorised against: the resolved wave of an approval, "" otherwise.
func approvalOf(req CommandRequest) string {
	if req.Command == command.Approve {
		return req.Target
	}
	return ""
}

// onCheckRunAction handles a button of a rollout check run (check_run requested_action): the button stands for
// a slash command (command.FromAction), authorised alike with the policy at the check run's commit — the merge
// commit, on the default branch.
func (a *App) onCheckRunAction(ctx context.Context, e *gh.CheckRunEvent) error {
	cr, repo := e.GetCheckRun(), e.GetRepo()
	if cr == nil || repo == nil || e.GetRequestedAction() == nil {
		return nil
	}
	wave := ""
	if name, ok := strings.CutPrefix(cr.GetName(), "fleetwave/wave: "); ok {
		wave = name
	}
	res, ok := command.FromAction(e.GetRequestedAction().Identifier, wave)
	if !ok {
		logFrom(ctx).Info("unknown check-run action: ignored", slog.String("identifier", e.GetRequestedAction().Identifier))
		return nil
	}
	if why, err := a.firstTime(ctx, actionKey(e)); err != nil || why != "" {
		if why != "" {
			logFrom(ctx).Info("check-run action not acted on: "+why, slog.Int64("check_run", cr.GetID()))
		}
		return err
	}
	client, err := a.ghClient(e.GetInstallation().GetID())
	if err != nil {
		return err
	}
	login, fullName := e.GetSender().GetLogin(), repo.GetFullName()
	number := 0
	if len(cr.PullRequests) > 0 {
		number = cr.PullRequests[0].GetNumber()
	}
	reply := func(body string) error {
		if number == 0 {
			logFrom(ctx).Info("check-run action answered in the logs only (no pull request)", slog.String("reply", body))
			return nil
		}
		_, err := client.Reply(ctx, fullName, number, body)
		return err
	}
	var refs []string
	if b := repo.GetDefaultBranch(); b != "" {
		refs = []string{"refs/heads/" + b}
	}
	policy, err := a.policyAt(ctx, e.GetInstallation().GetID(), repo.GetCloneURL(), refs, cr.GetHeadSHA())
	if err != nil {
		return errors.Join(err, reply(fmt.Sprintf("@%s: the %q button was not acted on: fleetwave cannot tell who may use it — %s", login, res.Command, postable(err))))
	}
	req := CommandRequest{
		Repo: fullName, PRNumber: number, Command: res.Command, Args: res.Args, Target: res.Target, Actor: login,
		CheckRunExternalID: cr.GetExternalID(), HeadSHA: cr.GetHeadSHA(),
	}
	if answered, err := a.resolveApproval(ctx, &req, reply); answered {
		return err
	}
	actor, err := a.actor(ctx, client, fullName, login, policy, res.Command)
	if err != nil {
		return err
	}
	dec := command.Authorize(policy, command.Request{Command: res.Command, Wave: approvalOf(req), Actor: actor})
	if !dec.Allowed {
		logFrom(ctx).Info("check-run action refused", slog.String("command", string(res.Command)), slog.String("actor", login), slog.String("reason", dec.Reason))
		return reply(dec.Reason)
	}
	return a.runCommand(ctx, req, reply)
}

// runCommand hands an authorised rollout command to the Commands port and posts its reply.
func (a *App) runCommand(ctx context.Context, req CommandRequest, reply func(string) error) error {
	answer, err := a.commands.OnCommand(ctx, req)
	if answer == "" && err != nil {
		answer = fmt.Sprintf("@%s: `/%s` failed; see fleetwave's logs. Try again later.", req.Actor, req.Command)
	}
	var rerr error
	if answer != "" {
		rerr = reply(answer)
	}
	if err != nil {
		err = fmt.Errorf("running /%s on %s#%d: %w", req.Command, req.Repo, req.PRNumber, err)
	}
	return errors.Join(err, rerr)
}

// actor is who asks, as the policy's rules look at them: their permission on the repository and, among the
// teams the rule for cmd names (and, for approve, the waves' approval teams), those they belong to.
func (a *App) actor(ctx context.Context, client Permissions, repo, login string, p *plan.Policy, cmd command.Name) (plan.Actor, error) {
	perm, err := client.Permission(ctx, repo, login)
	if err != nil {
		return plan.Actor{}, fmt.Errorf("reading the permission of %s on %s: %w", login, repo, err)
	}
	actor := plan.Actor{Login: login, Permission: plan.Permission(perm)}
	if perm == "none" {
		actor.Permission = ""
	}
	teams := map[string]bool{}
	rule, ok := p.Commands[string(cmd)]
	if !ok {
		rule = plan.DefaultCommandRules()[string(cmd)]
	}
	for _, t := range rule.Teams {
		teams[t] = true
	}
	if cmd == command.Approve {
		for _, w := range p.Waves {
			for _, t := range w.Approval.Teams {
				teams[t] = true
			}
		}
	}
	for _, t := range sortedKeys(teams) {
		member, err := client.IsTeamMember(ctx, t, login)
		if err != nil {
			return plan.Actor{}, fmt.Errorf("checking whether %s is in team %s: %w", login, t, err)
		}
		if member {
			actor.Teams = append(actor.Teams, t)
		}
	}
	return actor, nil
}
