package app

import (
	"context"
	"errors"
	"fmt"
	"github.com/fleetwave/fleetwave/internal/discover"
	"log/slog"
	"strings"
	"sync"
	"time"

	gh "github.com/google/go-github/v60/github"

	"github.com/fleetwave/fleetwave/internal/config"
	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/preview"
	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/report"
	"github.com/fleetwave/fleetwave/webhooks"
)

// Check-run names on a pull request's head.
const (
	CheckDiff = "fleetwave/diff"
	CheckPlan = "fleetwave/plan"
)

// App holds the use cases of the GitHub App. It is safe for concurrent use; one App serves every installation.
type App struct {
	github   GitHubFactory
	clones   Clones
	renderer preview.Renderer
	// fetchWaits are the pauses before fetching a merge commit the remote does not serve yet (mergeFetchWaits).
	fetchWaits []time.Duration

	settings    render.Settings
	clusters    ClusterSource
	argocd      preview.ArgoCD  // zero: no Argo CD
	instances   *Instances      // nil: a fleet of one Argo CD (WithInstances)
	tenants     TenantRenderers // nil: every preview renders with renderer
	argoURL     string          // Argo CD's URL for links to apps ("" = no links)
	merges      Merges
	commands    Commands
	botLogin    string
	appID       int64 // the GitHub App's id: which check runs are its own
	now         func() time.Time
	log         *slog.Logger
	skipDrafts  bool
	concurrency int
	tempDir     string
	// renderBudget is preview.Input.RenderBudget of every preview (0: preview's default).
	renderBudget time.Duration
	observer     Observer           // nil: none
	holds        AutomatedSyncHolds // nil: automated sync is not held before the merge (no Argo CD)
	// renderHeadRepos are the repositories ("owner/name", lower case) whose pull requests' heads may be rendered
	// through Argo CD (WithArgoCDRenderHead); never a fork's.
	renderHeadRepos map[string]bool
	// commandLog remembers the command comments and check-run actions acted on (replay.go).
	commandLog CommandLog
	// allowedOwners are the accounts, lower-cased, whose installations are served (nil: every one).
	allowedOwners map[string]bool

	mu         sync.Mutex
	prs        map[prKey]*prState // pull requests, and merge queue groups (groupKey)
	merged     *recent            // merge SHAs already handed to Merges
	goneGroups *recent            // merge queue groups destroyed ("owner/name@head_ref")
	previews   Previews           // changes previewed or being previewed, check runs per head (WithPreviews)
	acks       *ackChecks         // the plan checks of heads awaiting an acknowledgement (acknowledge.go)
	// discovered keeps the files discovery parsed, across pull requests and repositories: a preview of a large
	// repository parses only what changed since the revisions already seen.
	discovered *discover.ScanCache
}

// discoveryCacheFiles bounds App.discovered: parsed Application manifests are a few KiB each.
const discoveryCacheFiles = 20_000

// Option configures an App.
type Option func(*App)

// Observer is told the outcome of each preview, for metrics: trigger is "pull_request" or "merge_group"; rep is
// nil when err is set (no report could be made: clone, checkout or Argo CD failed).
type Observer interface {
	Previewed(trigger string, took time.Duration, rep *report.Report, err error)
}

// WithObserver reports each preview's outcome to o.
func WithObserver(o Observer) Option { return func(a *App) { a.observer = o } }

// observed tells the observer of a finished preview.
func (a *App) observed(trigger string, out *outcome) {
	if a.observer != nil {
		a.observer.Previewed(trigger, out.elapsed, out.rep, out.err)
	}
}

// WithSettings sets the render settings (cluster and argocd-cm facts; Revision is set per side).
func WithSettings(s render.Settings) Option { return func(a *App) { a.settings = s } }

// WithClusters sets where destination clusters and their labels come from (default: each repository's own
// cluster Secrets).
func WithClusters(c ClusterSource) Option { return func(a *App) { a.clusters = c } }

// WithArgoCD gives the previews Argo CD's ports (internal/edge/argocd/livediff's Comparer.Ports): the affected apps of
// a pull request compared with their live state, the apps only Argo CD renders, live ApplicationSet generators,
// sync windows. When Argo CD cannot be read the preview is made without it, with a note.
func WithArgoCD(p preview.ArgoCD) Option { return func(a *App) { a.argocd = p } }

// WithTenantRenderers renders each installation's previews with its share of a renderer shared among
// installations (internal/render/isolate's Pool.For), instead of with New's renderer.
func WithTenantRenderers(t TenantRenderers) Option { return func(a *App) { a.tenants = t } }

// WithArgoCDRenderHead lets the pull requests of repos ("owner/name") have their head rendered through Argo CD
// when fleetwave cannot render an app itself (a config-management plugin, a source it does not fetch). Argo CD
// would run the head's content through its plugins, a secret-injecting one included, and the diff would show
// what they produce: so it is off unless a repository is named here, and never done for a pull request from a
// fork (preview.Input.NoRemoteHead). "*" names every repository of the installations.
func WithArgoCDRenderHead(repos ...string) Option {
	return func(a *App) {
		if a.renderHeadRepos == nil {
			a.renderHeadRepos = map[string]bool{}
		}
		for _, r := range repos {
			if r = strings.ToLower(strings.TrimSpace(r)); r != "" {
				a.renderHeadRepos[r] = true
			}
		}
	}
}

// remoteHead reports whether ch's head may be rendered through Argo CD.
func (a *App) remoteHead(ch Change) bool {
	return !ch.Fork && (a.renderHeadRepos["*"] || a.renderHeadRepos[strings.ToLower(ch.Repo)])
}

// WithArgoCDURL sets Argo CD's URL: the PR comment links each app to its page there.
func WithArgoCDURL(u string) Option { return func(a *App) { a.argoURL = strings.TrimSuffix(u, "/") } }

// WithAutomatedSyncHolds makes the plan check hold automated sync off, before the merge can land, for the apps a
// pull request's plan rolls out under automatedSync: disable-during-rollout (*autosync.Holder, with Argo CD).
func WithAutomatedSyncHolds(h AutomatedSyncHolds) Option { return func(a *App) { a.holds = h } }

// WithMerges sets who is handed merges (default LoggingExecutor).
func WithMerges(m Merges) Option { return func(a *App) { a.merges = m } }

// WithCommands sets who runs rollout commands (default LoggingExecutor).
func WithCommands(c Commands) Option { return func(a *App) { a.commands = c } }

// WithBotLogin names the App's bot user ("<slug>[bot]") so that its own comments are never read as commands.
func WithBotLogin(login string) Option { return func(a *App) { a.botLogin = login } }

// WithAppID sets the GitHub App's id, so that only the check runs it created are read back (the plan digest
// shown on a pull request). Without it no digest is read back.
func WithAppID(id int64) Option { return func(a *App) { a.appID = id } }

// WithAllowedOwners serves only the installations on these accounts (organisations or users, compared
// case-insensitively, FLEETWAVE_ALLOWED_OWNERS): an event about a repository another account owns is ignored,
// with one log line. None: every installation.
func WithAllowedOwners(owners ...string) Option {
	return func(a *App) {
		for _, o := range owners {
			if a.allowedOwners == nil {
				a.allowedOwners = map[string]bool{}
			}
			a.allowedOwners[strings.ToLower(o)] = true
		}
	}
}

// WithClock sets the clock stamping check runs (default time.Now).
func WithClock(now func() time.Time) Option { return func(a *App) { a.now = now } }

// WithLogger sets the logger used when an event carries none (default: discard).
func WithLogger(l *slog.Logger) Option { return func(a *App) { a.log = l } }

// WithSkipDrafts stops draft pull requests from being previewed until they are marked ready for review
// (default: drafts are previewed too — the preview is read-only and most useful early).
func WithSkipDrafts(skip bool) Option { return func(a *App) { a.skipDrafts = skip } }

// WithConcurrency bounds the concurrent renders of one preview (default: the number of CPUs).
func WithConcurrency(n int) Option { return func(a *App) { a.concurrency = n } }

// WithRenderBudget bounds the time of all the renders of one change, base and head
// (preview.Input.RenderBudget; default preview.DefaultRenderBudget; negative: none).
func WithRenderBudget(d time.Duration) Option { return func(a *App) { a.renderBudget = d } }

// WithTempDir sets where previews write their checkouts (default: the system's temporary directory).
func WithTempDir(dir string) Option { return func(a *App) { a.tempDir = dir } }

// New returns an App built from its three required adapters.
func New(github GitHubFactory, clones Clones, renderer preview.Renderer, opts ...Option) (*App, error) {
	if github == nil || clones == nil || renderer == nil {
		return nil, errors.New("creating the app: a GitHub client factory, a clone cache and a renderer are required")
	}
	a := &App{github: github, clones: clones, renderer: renderer, now: time.Now, fetchWaits: mergeFetchWaits,
		prs: map[prKey]*prState{}, acks: newAckChecks(4096), merged: newRecent(1024), goneGroups: newRecent(1024), discovered: discover.NewScanCache(discoveryCacheFiles)}
	for _, o := range opts {
		o(a)
	}
	if a.previews == nil {
		a.previews = newMemPreviews(time.Now, 4096)
	}
	if a.commandLog == nil {
		a.commandLog = webhooks.NewMemoryDeliveries(100_000)
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.merges == nil || a.commands == nil {
		l := LoggingExecutor{Log: a.log}
		if a.merges == nil {
			a.merges = l
		}
		if a.commands == nil {
			a.commands = l
		}
	}
	return a, nil
}

var _ webhooks.Handler = (*App)(nil)

// Handles lists the deliveries the App acts on, in the webhooks package's "event.action" form.
func (a *App) Handles() []string {
	return []string{
		"pull_request.opened", "pull_request.synchronize", "pull_request.reopened", "pull_request.ready_for_review",
		"pull_request.closed",
		"check_run.rerequested", "check_run.requested_action",
		"check_suite.rerequested",
		"issue_comment.created",
		"push",
		"merge_group.checks_requested", "merge_group.destroyed",
	}
}

// Handle dispatches one verified, first-time delivery to its use case: the App is the webhooks server's
// Handler, as a go-githubapp EventHandler is its dispatcher's. ctx carries the delivery's logger
// (webhooks.LoggerFrom), which every use case logs with. Deliveries outside Handles, and payloads of an
// unexpected type, are ignored.
func (a *App) Handle(ctx context.Context, ev webhooks.Event) error {
	if a.allowedOwners != nil {
		if owner := ownerOf(ev.Payload); !a.allowedOwners[strings.ToLower(owner)] {
			logFrom(ctx).Info("event of an installation whose account is not in FLEETWAVE_ALLOWED_OWNERS: ignored",
				slog.String("owner", owner), slog.Int64("installation", ev.InstallationID))
			return nil
		}
	}
	switch p := ev.Payload.(type) {
	case *gh.PullRequestEvent:
		return a.onPullRequestEvent(ctx, ev.Action, p)
	case *gh.CheckRunEvent:
		switch ev.Action {
		case "rerequested":
			return a.onCheckRunRerequested(ctx, p)
		case "requested_action":
			return a.onCheckRunAction(ctx, p)
		}
	case *gh.CheckSuiteEvent:
		if ev.Action == "rerequested" {
			return a.onCheckSuiteRerequested(ctx, p)
		}
	case *gh.IssueCommentEvent:
		if ev.Action == "created" {
			return a.onComment(ctx, p)
		}
	case *gh.PushEvent:
		return a.onPush(ctx, p)
	case *gh.MergeGroupEvent:
		return a.onMergeGroupEvent(ctx, ev.Action, p)
	}
	return nil
}

// ownerOf is the account owning the repository an event is about: the installation's account ("" when the
// payload names none).
func ownerOf(payload any) string {
	switch p := payload.(type) {
	case *gh.PullRequestEvent:
		return p.GetRepo().GetOwner().GetLogin()
	case *gh.CheckRunEvent:
		return p.GetRepo().GetOwner().GetLogin()
	case *gh.CheckSuiteEvent:
		return p.GetRepo().GetOwner().GetLogin()
	case *gh.IssueCommentEvent:
		return p.GetRepo().GetOwner().GetLogin()
	case *gh.PushEvent:
		if o := p.GetRepo().GetOwner(); o.GetLogin() != "" {
			return o.GetLogin()
		}
		return p.GetRepo().GetOwner().GetName()
	case *gh.MergeGroupEvent:
		return p.GetRepo().GetOwner().GetLogin()
	}
	return ""
}

func (a *App) onPullRequestEvent(ctx context.Context, action string, e *gh.PullRequestEvent) error {
	pr := e.GetPullRequest()
	if pr == nil || e.GetRepo() == nil {
		return errors.New("pull_request event without a pull request or repository")
	}
	switch action {
	case "opened", "synchronize", "reopened", "ready_for_review":
		if pr.GetDraft() && a.skipDrafts {
			logFrom(ctx).Info("draft pull request not previewed")
			return nil
		}
		return a.OnPullRequest(ctx, changeOf(e.GetInstallation().GetID(), e.GetRepo(), pr, action))
	case "closed":
		key := prKey{repo: e.GetRepo().GetFullName(), number: pr.GetNumber()}
		a.forget(key)
		if !pr.GetMerged() {
			a.releaseHolds(ctx, key.repo, key.number, "closed unmerged")
			return nil
		}
		if err := a.onMerged(ctx, e); err != nil {
			return err // the holds stay: the redelivery hands the merge over, then lets go of them
		}
		// The rollout of the merge (submitted by onMerged) keeps the apps off from here; without one (nothing to
		// roll out), the apps are restored.
		a.releaseHolds(ctx, key.repo, key.number, "merged")
		return nil
	}
	return nil
}

// changeOf describes the change of a pull request from a webhook payload.
func changeOf(installationID int64, repo *gh.Repository, pr *gh.PullRequest, reason string) Change {
	return Change{
		InstallationID: installationID,
		Repo:           repo.GetFullName(),
		Number:         pr.GetNumber(),
		Head:           pr.GetHead().GetSHA(),
		Base:           pr.GetBase().GetSHA(),
		BaseRef:        pr.GetBase().GetRef(),
		CloneURL:       repo.GetCloneURL(),
		RepoURLs:       repoURLs(repo.GetHTMLURL(), repo.GetCloneURL(), repo.GetSSHURL(), repo.GetFullName()),
		// A deleted fork's pull request has no head repository (head.repo null): a fork too.
		Fork:         pr.GetHead().GetRepo().GetFullName() == "" || !strings.EqualFold(pr.GetHead().GetRepo().GetFullName(), repo.GetFullName()),
		HeadRepoGone: pr.GetHead() != nil && pr.GetHead().GetRepo() == nil,
		Reason:       reason,
	}
}

// repoURLs are the names under which Applications may refer to the repository: html_url,
// clone_url, ssh_url and full_name. Never the local clone's path.
func repoURLs(names ...string) []string {
	var out []string
	for _, n := range names {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}

// ghClient returns the installation's GitHub client.
func (a *App) ghClient(installationID int64) (GitHub, error) {
	if installationID == 0 {
		return nil, errors.New("the event names no App installation")
	}
	c, err := a.github(installationID)
	if err != nil {
		return nil, fmt.Errorf("getting the GitHub client of installation %d: %w", installationID, err)
	}
	return c, nil
}

// logFrom is the logger of the delivery being handled (the one the webhooks server put in ctx); withLog
// replaces it with one carrying more attributes. One key for both packages: webhooks'.
func logFrom(ctx context.Context) *slog.Logger { return webhooks.LoggerFrom(ctx) }

func withLog(ctx context.Context, l *slog.Logger) context.Context {
	return webhooks.ContextWithLogger(ctx, l)
}

// recent is a bounded set of strings, oldest forgotten first.
type recent struct {
	mu    sync.Mutex
	max   int
	order []string
	set   map[string]bool
}

func newRecent(max int) *recent { return &recent{max: max, set: map[string]bool{}} }

// add records s and reports whether it was new.
func (r *recent) add(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.set[s] {
		return false
	}
	r.set[s] = true
	r.order = append(r.order, s)
	if len(r.order) > r.max {
		delete(r.set, r.order[0])
		r.order = r.order[1:]
	}
	return true
}

func (r *recent) remove(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.set, s)
}

// postable is an error as the App posts it (comments, check-runs): its first line, credentials masked.
func postable(err error) string { return text.FirstLine(config.Redact(err.Error())) }
