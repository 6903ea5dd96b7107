package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	gh "github.com/google/go-github/v60/github"
)

// The narrow subsets of go-github's services the adapter uses. *gh.IssuesService etc. satisfy them; unit tests
// can satisfy them with values.

// IssuesAPI is the subset of gh.IssuesService the adapter uses (PR comments are issue comments).
type IssuesAPI interface {
	ListComments(ctx context.Context, owner, repo string, number int, opts *gh.IssueListCommentsOptions) ([]*gh.IssueComment, *gh.Response, error)
	CreateComment(ctx context.Context, owner, repo string, number int, comment *gh.IssueComment) (*gh.IssueComment, *gh.Response, error)
	EditComment(ctx context.Context, owner, repo string, commentID int64, comment *gh.IssueComment) (*gh.IssueComment, *gh.Response, error)
	DeleteComment(ctx context.Context, owner, repo string, commentID int64) (*gh.Response, error)
}

// ChecksAPI is the subset of gh.ChecksService the adapter uses.
type ChecksAPI interface {
	CreateCheckRun(ctx context.Context, owner, repo string, opts gh.CreateCheckRunOptions) (*gh.CheckRun, *gh.Response, error)
	UpdateCheckRun(ctx context.Context, owner, repo string, checkRunID int64, opts gh.UpdateCheckRunOptions) (*gh.CheckRun, *gh.Response, error)
	ListCheckRunsForRef(ctx context.Context, owner, repo, ref string, opts *gh.ListCheckRunsOptions) (*gh.ListCheckRunsResults, *gh.Response, error)
}

// PullsAPI is the subset of gh.PullRequestsService the adapter uses.
type PullsAPI interface {
	Get(ctx context.Context, owner, repo string, number int) (*gh.PullRequest, *gh.Response, error)
	ListFiles(ctx context.Context, owner, repo string, number int, opts *gh.ListOptions) ([]*gh.CommitFile, *gh.Response, error)
}

// ReposAPI is the subset of gh.RepositoriesService the adapter uses.
type ReposAPI interface {
	GetPermissionLevel(ctx context.Context, owner, repo, user string) (*gh.RepositoryPermissionLevel, *gh.Response, error)
}

// TeamsAPI is the subset of gh.TeamsService the adapter uses.
type TeamsAPI interface {
	GetTeamMembershipBySlug(ctx context.Context, org, slug, user string) (*gh.Membership, *gh.Response, error)
}

// ReactionsAPI is the subset of gh.ReactionsService the adapter uses.
type ReactionsAPI interface {
	CreateIssueCommentReaction(ctx context.Context, owner, repo string, id int64, content string) (*gh.Reaction, *gh.Response, error)
}

// Services are the go-github services a Client calls.
type Services struct {
	Issues    IssuesAPI
	Checks    ChecksAPI
	Pulls     PullsAPI
	Repos     ReposAPI
	Teams     TeamsAPI
	Reactions ReactionsAPI
	Labels    LabelsAPI // nil: the client does not label (AddLabels and RemoveLabel fail)
	// IssueTracker files issues (the drift reports); nil: CreateIssue, EditIssue, CloseIssue and OpenIssues fail.
	IssueTracker IssueTrackerAPI
}

// ServicesOf returns the services of a go-github client.
func ServicesOf(c *gh.Client) Services {
	return Services{
		Issues: c.Issues, Checks: c.Checks, Pulls: c.PullRequests, Repos: c.Repositories, Teams: c.Teams,
		Reactions: c.Reactions, Labels: issueLabels{c}, IssueTracker: c.Issues,
	}
}

// Client is the GitHub adapter for one App installation: sticky PR comments, check runs, pull requests, and
// the permission checks behind slash commands. Repositories are named "owner/name". Methods are safe for
// concurrent use.
type Client struct {
	svc      Services
	botLogin string
	now      func() time.Time
}

// ClientOption configures a Client.
type ClientOption func(*Client)

// WithBotLogin names the App's bot user ("<app-slug>[bot]"). The sticky comment is then recognised by author
// as well as by its hidden marker; without it, any Bot-type author carrying the marker is taken for the App.
func WithBotLogin(login string) ClientOption { return func(c *Client) { c.botLogin = login } }

// WithClock sets the clock used for check-run timestamps (default time.Now).
func WithClock(now func() time.Time) ClientOption { return func(c *Client) { c.now = now } }

// NewClient returns a Client calling svc.
func NewClient(svc Services, opts ...ClientOption) *Client {
	c := &Client{svc: svc, now: time.Now}
	for _, o := range opts {
		o(c)
	}
	return c
}

// ErrNotFound is wrapped by errors for a resource GitHub does not have (or does not show the App).
var ErrNotFound = errors.New("not found")

// splitRepo splits "owner/name".
func splitRepo(repo string) (string, string, error) {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("repository %q is not owner/name", repo)
	}
	return owner, name, nil
}

// apiErr wraps err with action, adding ErrNotFound for a 404.
func apiErr(action string, resp *gh.Response, err error) error {
	if resp != nil && resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("%s: %w: %w", action, ErrNotFound, err)
	}
	return fmt.Errorf("%s: %w", action, err)
}

func isNotFound(resp *gh.Response) bool { return resp != nil && resp.StatusCode == http.StatusNotFound }
