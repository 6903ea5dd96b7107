package github

import (
	"context"
	"fmt"
	"strings"

	gh "github.com/google/go-github/v60/github"
)

// PullRequest is what the use cases need of a pull request.
type PullRequest struct {
	Number         int
	Title          string
	Author         string
	State          string // open, closed
	Draft          bool
	Merged         bool
	MergeCommitSHA string
	HTMLURL        string

	HeadSHA      string
	HeadRef      string
	HeadRepo     string // owner/name; differs from BaseRepo for a fork
	HeadCloneURL string
	BaseSHA      string
	BaseRef      string
	BaseRepo     string
	// Labels are the names of the pull request's labels.
	Labels []string
}

// FromFork reports whether the head branch lives in another repository — or in none GitHub still knows (a
// deleted fork's pull request has no head repository): a pull request is trusted as the base repository's own
// only when its head is there.
func (p PullRequest) FromFork() bool {
	return p.HeadRepo == "" || !strings.EqualFold(p.HeadRepo, p.BaseRepo)
}

// ChangedFile is a file a pull request changes.
type ChangedFile struct {
	Path         string
	PreviousPath string // set for renames
	Status       string // added, removed, modified, renamed, copied, changed, unchanged
	Additions    int
	Deletions    int
}

// PullRequest gets pull request number of repo.
func (c *Client) PullRequest(ctx context.Context, repo string, number int) (PullRequest, error) {
	owner, name, err := splitRepo(repo)
	if err != nil {
		return PullRequest{}, err
	}
	pr, resp, err := c.svc.Pulls.Get(ctx, owner, name, number)
	if err != nil {
		return PullRequest{}, apiErr(fmt.Sprintf("getting pull request %s#%d", repo, number), resp, err)
	}
	return PullRequest{
		Number: pr.GetNumber(), Title: pr.GetTitle(), Author: pr.GetUser().GetLogin(), State: pr.GetState(),
		Draft: pr.GetDraft(), Merged: pr.GetMerged(), MergeCommitSHA: pr.GetMergeCommitSHA(), HTMLURL: pr.GetHTMLURL(),
		HeadSHA: pr.GetHead().GetSHA(), HeadRef: pr.GetHead().GetRef(), HeadRepo: pr.GetHead().GetRepo().GetFullName(),
		HeadCloneURL: pr.GetHead().GetRepo().GetCloneURL(),
		BaseSHA:      pr.GetBase().GetSHA(), BaseRef: pr.GetBase().GetRef(), BaseRepo: pr.GetBase().GetRepo().GetFullName(),
		Labels: labelNames(pr.Labels),
	}, nil
}

func labelNames(ls []*gh.Label) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.GetName())
	}
	return out
}

// PullRequestFiles lists the files pull request number changes, all pages (GitHub lists at most 3,000).
func (c *Client) PullRequestFiles(ctx context.Context, repo string, number int) ([]ChangedFile, error) {
	owner, name, err := splitRepo(repo)
	if err != nil {
		return nil, err
	}
	opts := &gh.ListOptions{PerPage: 100}
	var out []ChangedFile
	for {
		files, resp, err := c.svc.Pulls.ListFiles(ctx, owner, name, number, opts)
		if err != nil {
			return nil, apiErr(fmt.Sprintf("listing files of pull request %s#%d", repo, number), resp, err)
		}
		for _, f := range files {
			out = append(out, ChangedFile{
				Path: f.GetFilename(), PreviousPath: f.GetPreviousFilename(), Status: f.GetStatus(),
				Additions: f.GetAdditions(), Deletions: f.GetDeletions(),
			})
		}
		if resp == nil || resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}
