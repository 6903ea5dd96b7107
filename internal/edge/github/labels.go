package github

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	gh "github.com/google/go-github/v60/github"
)

// LabelsAPI labels issues and pull requests. go-github's Issues.AddLabelsToIssue sends the labels as a bare JSON
// array, a form GitHub's REST description does not state (it documents {"labels": [...]}, and calls the array an
// alternative), and Issues.RemoveLabelForIssue puts the label in the path unescaped ("risk: crd", "a/b"):
// issueLabels sends the documented body and escapes the name.
type LabelsAPI interface {
	AddLabels(ctx context.Context, owner, repo string, number int, labels []string) (*gh.Response, error)
	RemoveLabel(ctx context.Context, owner, repo string, number int, label string) (*gh.Response, error)
}

// issueLabels is LabelsAPI over a go-github client.
type issueLabels struct{ c *gh.Client }

// AddLabels adds labels to issue number (POST /repos/{owner}/{repo}/issues/{issue_number}/labels,
// issues/add-labels); GitHub creates a label the repository lacks.
func (l issueLabels) AddLabels(ctx context.Context, owner, repo string, number int, labels []string) (*gh.Response, error) {
	u := fmt.Sprintf("repos/%v/%v/issues/%d/labels", url.PathEscape(owner), url.PathEscape(repo), number)
	req, err := l.c.NewRequest("POST", u, struct {
		Labels []string `json:"labels"`
	}{labels})
	if err != nil {
		return nil, err
	}
	var out []*gh.Label
	return l.c.Do(ctx, req, &out)
}

// RemoveLabel removes label from issue number (issues/remove-label), its name escaped for the path.
func (l issueLabels) RemoveLabel(ctx context.Context, owner, repo string, number int, label string) (*gh.Response, error) {
	return l.c.Issues.RemoveLabelForIssue(ctx, owner, repo, number, url.PathEscape(label))
}

// AddLabels puts labels on pull request (or issue) number of repo; a label the repository lacks is created by
// GitHub, with a default colour. Labels already there stay.
func (c *Client) AddLabels(ctx context.Context, repo string, number int, labels []string) error {
	if len(labels) == 0 {
		return nil
	}
	owner, name, err := splitRepo(repo)
	if err != nil {
		return err
	}
	if c.svc.Labels == nil {
		return fmt.Errorf("adding labels to %s#%d: this client cannot label", repo, number)
	}
	if resp, err := c.svc.Labels.AddLabels(ctx, owner, name, number, labels); err != nil {
		return apiErr(fmt.Sprintf("adding labels %s to %s#%d", quoteList(labels), repo, number), resp, err)
	}
	return nil
}

// RemoveLabel takes label off pull request (or issue) number of repo; a label not there is no error.
func (c *Client) RemoveLabel(ctx context.Context, repo string, number int, label string) error {
	owner, name, err := splitRepo(repo)
	if err != nil {
		return err
	}
	if c.svc.Labels == nil {
		return fmt.Errorf("removing label %q from %s#%d: this client cannot label", label, repo, number)
	}
	if resp, err := c.svc.Labels.RemoveLabel(ctx, owner, name, number, label); err != nil && !isNotFound(resp) {
		return apiErr(fmt.Sprintf("removing label %q from %s#%d", label, repo, number), resp, err)
	}
	return nil
}

func quoteList(s []string) string {
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}
