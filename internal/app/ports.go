package app

import (
	"context"
	"log/slog"

	"github.com/fleetwave/fleetwave/internal/command"
	"github.com/fleetwave/fleetwave/internal/discover"
	"github.com/fleetwave/fleetwave/internal/edge/github"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/preview"
)

// The use cases' roles of GitHub, for one App installation. *github.Client plays them all; the value types
// (CheckRun, PullRequest, ...) are the adapter's own, so no translation layer sits in between.

// PullRequests reads a pull request as it is now (its head, base, author, fork).
type PullRequests interface {
	PullRequest(ctx context.Context, repo string, number int) (github.PullRequest, error)
}

// CheckRuns starts, completes and finds the check-runs fleetwave/diff and fleetwave/plan.
type CheckRuns interface {
	CreateCheckRun(ctx context.Context, repo string, run github.CheckRun) (int64, error)
	UpdateCheckRun(ctx context.Context, repo string, id int64, run github.CheckRun) error
	ListCheckRuns(ctx context.Context, repo, ref, name string) ([]github.CheckRunInfo, error)
}

// Conversation is what the App says on a pull request: the sticky comment, replies to commands, reactions.
type Conversation interface {
	UpsertComment(ctx context.Context, repo string, number int, parts []string) ([]github.Comment, error)
	React(ctx context.Context, repo string, commentID int64, content string) error
	Reply(ctx context.Context, repo string, number int, body string) (int64, error)
}

// Permissions answers who a command's actor is: their permission on the repository, their teams.
type Permissions interface {
	Permission(ctx context.Context, repo, user string) (string, error)
	IsTeamMember(ctx context.Context, team, user string) (bool, error)
}

// Labels puts labels on a pull request and takes them off (the release policy's labels per risk class).
type Labels interface {
	// AddLabels adds labels (GitHub creates those the repository lacks); labels already there stay.
	AddLabels(ctx context.Context, repo string, number int, labels []string) error
	// RemoveLabel takes label off; a label not there is no error.
	RemoveLabel(ctx context.Context, repo string, number int, label string) error
}

// GitHub is every role: what one installation's client does for the use cases.
type GitHub interface {
	PullRequests
	CheckRuns
	Conversation
	Permissions
	Labels
}

// GitHubFactory returns the GitHub client of an installation (internal/edge/github App.Client).
type GitHubFactory func(installationID int64) (GitHub, error)

// Clones keeps local copies of the repositories. *gitcache.Cache satisfies it.
type Clones interface {
	// Fetch makes commits present in a local repository of cloneURL, fetching refs (full remote ref names)
	// and, failing that, the commits by id; it returns the repository's directory. Refs fetched are kept there
	// as refs/fleetwave/<ref without "refs/"> (a merge group without base_sha finds its base branch there).
	Fetch(ctx context.Context, installationID int64, cloneURL string, refs, commits []string) (dir string, err error)
	// ReadFile returns path at commit in the local repository dir; an error wrapping fs.ErrNotExist when absent.
	ReadFile(ctx context.Context, dir, commit, path string) ([]byte, error)
}

// ClusterSource lists the destination clusters with their labels (Argo CD's cluster list, or a clusters
// file). A nil ClusterSource lets each preview use the cluster Secrets the repository declares.
type ClusterSource func(ctx context.Context) ([]discover.Cluster, error)

// Merge is a change that reached the default branch: a merged pull request, or a direct push.
type Merge struct {
	InstallationID int64
	Repo           string // owner/name
	PRNumber       int    // 0 for a direct push
	MergeSHA       string // the commit every app is to be synced to
	BaseSHA        string // the default branch before the merge (first parent)
	// Plan is the wave plan recomputed at the merge commit: the one to execute.
	Plan *plan.Plan
	// Policy is the release policy at the merge commit (plan.DefaultPolicy when the repository has none).
	Policy *plan.Policy
	// PRPlanDigest is the digest of the plan last shown on the pull request ("" when unknown).
	PRPlanDigest string
	// RepoURL is the repository's clone URL (multi-source apps name it).
	RepoURL string
	// Sender is who merged or pushed.
	Sender string
	// Branch is the default branch MergeSHA is the tip of. An app is rolled out only when its targetRevision
	// resolves there (empty, HEAD or this branch); one that tracks another branch, a tag or a fixed commit is
	// reported "not rolled out", never synced to MergeSHA.
	Branch string
}

// Merges is the port the rollout executor satisfies: it is handed every merge with the plan to execute.
// Implementations must be idempotent per repository and merge SHA (a merged pull request also arrives as a
// push).
type Merges interface {
	OnMerge(ctx context.Context, m Merge) error
}

// CommandRequest is an authorised rollout command (a slash command on a pull request, or a check-run button).
type CommandRequest struct {
	Repo     string // owner/name
	PRNumber int    // 0 when a button on a merge commit's check run has no pull request
	Command  command.Name
	Args     []string
	// Target is the wave of /approve — by its own name, as Commands.ApprovalWave resolved it before the actor was
	// authorised against it — or of /rollback (command.TargetAll).
	Target string
	Actor  string // login
	// CheckRunExternalID and HeadSHA identify the check run whose button was clicked ("" for a comment).
	CheckRunExternalID string
	HeadSHA            string
	// MergeSHA is the pull request's merge commit, when merged.
	MergeSHA string
}

// Commands is the port the rollout executor satisfies for /pause, /resume, /abort, /approve and /rollback
// (the use case has already authorised the actor with the release policy). It returns the reply to post;
// an error whose reply is "" is answered with a generic failure message.
type Commands interface {
	OnCommand(ctx context.Context, req CommandRequest) (reply string, err error)
	// ApprovalWave resolves the wave an approval is for, before the App authorises it: the wave the request's
	// rollout awaits approval for when req.Target is "" (a bare /approve, the fleetwave/rollout button), else the
	// wave req.Target names (case-insensitively), which must await approval. It returns the wave's own name;
	// when nothing can be approved (no rollout, no wave awaiting approval, the named wave not awaiting it),
	// reply says why and wave is "".
	ApprovalWave(ctx context.Context, req CommandRequest) (wave, reply string, err error)
}

// LoggingExecutor is the Merges and Commands implementation used until the rollout executor is wired: it logs
// what it is handed and answers commands with a note that rollouts are not executed by this deployment.
type LoggingExecutor struct{ Log *slog.Logger }

// OnMerge logs the merge and its plan.
func (l LoggingExecutor) OnMerge(ctx context.Context, m Merge) error {
	apps, waves := 0, 0
	if m.Plan != nil {
		apps, waves = m.Plan.AppCount(), len(m.Plan.Waves)
	}
	l.log().InfoContext(ctx, "merge not rolled out: no rollout executor wired", slog.String("repo", m.Repo),
		slog.Int("pr", m.PRNumber), slog.String("merge", m.MergeSHA), slog.Int("apps", apps), slog.Int("waves", waves))
	return nil
}

// OnCommand logs the command and replies that no executor runs here.
func (l LoggingExecutor) OnCommand(ctx context.Context, req CommandRequest) (string, error) {
	l.log().InfoContext(ctx, "command not executed: no rollout executor wired", slog.String("repo", req.Repo),
		slog.Int("pr", req.PRNumber), slog.String("command", string(req.Command)), slog.String("actor", req.Actor))
	return "`/" + string(req.Command) + "`: this fleetwave deployment does not execute rollouts (no rollout executor is configured); nothing was done.", nil
}

// ApprovalWave answers, as OnCommand does, that no executor runs here: there is no wave to approve.
func (l LoggingExecutor) ApprovalWave(ctx context.Context, req CommandRequest) (string, string, error) {
	reply, err := l.OnCommand(ctx, req)
	return "", reply, err
}

func (l LoggingExecutor) log() *slog.Logger {
	if l.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l.Log
}

// TenantRenderers is a renderer shared among tenants (internal/render/isolate's Pool.For): the renderer of one
// tenant's (an installation's) previews, scheduled fairly against the other tenants', within a share of the
// workers, and the renders of one group (a pull request) fairly against its other groups'.
type TenantRenderers func(tenant, group string) preview.Renderer
