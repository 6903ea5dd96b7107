package github

import (
	"context"
	"errors"
	"fmt"
	"strings"

	gh "github.com/google/go-github/v60/github"
)

// IssueTrackerAPI is the subset of gh.IssuesService that files issues (the drift reports): create, edit (and
// close), list a repository's issues. It is apart from IssuesAPI, the comments, so that a value fake of one
// need not implement the other.
type IssueTrackerAPI interface {
	Create(ctx context.Context, owner, repo string, issue *gh.IssueRequest) (*gh.Issue, *gh.Response, error)
	Edit(ctx context.Context, owner, repo string, number int, issue *gh.IssueRequest) (*gh.Issue, *gh.Response, error)
	ListByRepo(ctx context.Context, owner, repo string, opts *gh.IssueListByRepoOptions) ([]*gh.Issue, *gh.Response, error)
}

// Issue is an issue as the drift reports know it.
type Issue struct {
	Number int
	Title  string
	Body   string
	State  string // open or closed
	URL    string // on GitHub's web
	// ByApp: the App wrote it (its bot, or any Bot account when the client has no bot login).
	ByApp bool
}

func issueOf(i *gh.Issue) Issue {
	return Issue{Number: i.GetNumber(), Title: i.GetTitle(), Body: i.GetBody(), State: i.GetState(), URL: i.GetHTMLURL()}
}

// issueTitle bounds a title to what GitHub takes (256 characters).
func issueTitle(t string) string {
	const max = 256
	if len(t) <= max {
		return t
	}
	cut := max - len("…")
	for cut > 0 && !isRuneStart(t[cut]) {
		cut--
	}
	return t[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

func (c *Client) tracker(action string) (IssueTrackerAPI, error) {
	if c.svc.IssueTracker == nil {
		return nil, fmt.Errorf("%s: this client files no issues", action)
	}
	return c.svc.IssueTracker, nil
}

// CreateIssue opens an issue on repo (issues/create) and returns it. A body over MaxCommentBody is truncated
// with a note; a title over 256 characters is cut.
func (c *Client) CreateIssue(ctx context.Context, repo, title, body string) (Issue, error) {
	owner, name, err := splitRepo(repo)
	if err != nil {
		return Issue{}, err
	}
	t, err := c.tracker("opening an issue on " + repo)
	if err != nil {
		return Issue{}, err
	}
	title = issueTitle(title)
	body, _ = truncate(body, MaxCommentBody, commentTruncatedNote)
	i, resp, err := t.Create(ctx, owner, name, &gh.IssueRequest{Title: &title, Body: &body})
	if err != nil {
		return Issue{}, apiErr(fmt.Sprintf("opening an issue on %s", repo), resp, err)
	}
	out := issueOf(i)
	out.ByApp = true
	return out, nil
}

// EditIssue replaces the title and body of issue number of repo (issues/update).
func (c *Client) EditIssue(ctx context.Context, repo string, number int, title, body string) error {
	owner, name, err := splitRepo(repo)
	if err != nil {
		return err
	}
	t, err := c.tracker(fmt.Sprintf("editing %s#%d", repo, number))
	if err != nil {
		return err
	}
	title = issueTitle(title)
	body, _ = truncate(body, MaxCommentBody, commentTruncatedNote)
	if _, resp, err := t.Edit(ctx, owner, name, number, &gh.IssueRequest{Title: &title, Body: &body}); err != nil {
		return apiErr(fmt.Sprintf("editing %s#%d", repo, number), resp, err)
	}
	return nil
}

// CloseIssue closes issue number of repo as completed, after commenting comment on it when comment is not
// empty. An issue already closed, or gone (404), is no error.
func (c *Client) CloseIssue(ctx context.Context, repo string, number int, comment string) error {
	owner, name, err := splitRepo(repo)
	if err != nil {
		return err
	}
	t, err := c.tracker(fmt.Sprintf("closing %s#%d", repo, number))
	if err != nil {
		return err
	}
	if comment != "" {
		if _, err := c.Reply(ctx, repo, number, comment); err != nil {
			if errors.Is(err, ErrNotFound) {
				return nil
			}
			return err
		}
	}
	state, reason := "closed", "completed"
	if _, resp, err := t.Edit(ctx, owner, name, number, &gh.IssueRequest{State: &state, StateReason: &reason}); err != nil && !isNotFound(resp) {
		return apiErr(fmt.Sprintf("closing %s#%d", repo, number), resp, err)
	}
	return nil
}

// OpenIssues lists the open issues of repo (not pull requests) whose body starts with marker and that the App
// wrote (its bot login when the client knows it, else any Bot account), oldest first, every page.
func (c *Client) OpenIssues(ctx context.Context, repo, marker string) ([]Issue, error) {
	owner, name, err := splitRepo(repo)
	if err != nil {
		return nil, err
	}
	t, err := c.tracker("listing the issues of " + repo)
	if err != nil {
		return nil, err
	}
	opts := &gh.IssueListByRepoOptions{State: "open", Sort: "created", Direction: "asc", ListOptions: gh.ListOptions{PerPage: 100}}
	if c.botLogin != "" {
		opts.Creator = c.botLogin
	}
	var out []Issue
	for {
		page, resp, err := t.ListByRepo(ctx, owner, name, opts)
		if err != nil {
			return nil, apiErr("listing the open issues of "+repo, resp, err)
		}
		for _, i := range page {
			if i.IsPullRequest() || !strings.HasPrefix(strings.TrimLeft(i.GetBody(), " \t\r\n"), marker) {
				continue
			}
			u := i.GetUser()
			if c.botLogin != "" && !strings.EqualFold(u.GetLogin(), c.botLogin) || c.botLogin == "" && u.GetType() != "Bot" {
				continue // a person quoting the marker
			}
			is := issueOf(i)
			is.ByApp = true
			out = append(out, is)
		}
		if resp == nil || resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	return out, nil
}
