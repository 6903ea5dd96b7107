package github

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	gh "github.com/google/go-github/v60/github"
)

// CommentMarker is the hidden HTML comment that identifies fleetwave's sticky comment on a pull request. Each
// part also carries a hidden part number ("<!-- fleetwave:part 2 -->").
const CommentMarker = "<!-- fleetwave:comment -->"

const markerRoom = 128 // CommentMarker + part line + slack, reserved in every part

var partLine = regexp.MustCompile(`^<!-- fleetwave:part (\d+) -->`)

const commentTruncatedNote = "> ✂️ fleetwave truncated this comment at GitHub's size limit; the complete report is in the check-run output."

// Comment is one part of the sticky comment.
type Comment struct {
	ID   int64
	Part int // 1-based
	URL  string
}

// UpsertComment makes the pull request's sticky comment consist of exactly parts, in order: part i is the
// fleetwave comment carrying part number i, updated in place when it exists (and left alone when unchanged),
// created otherwise; fleetwave comments beyond len(parts), and duplicates of a part, are deleted. An empty
// parts deletes the sticky comment. A part longer than MaxCommentPart is truncated with a note, so no body
// sent exceeds MaxCommentBody.
func (c *Client) UpsertComment(ctx context.Context, repo string, number int, parts []string) ([]Comment, error) {
	owner, name, err := splitRepo(repo)
	if err != nil {
		return nil, err
	}
	existing, err := c.stickyComments(ctx, owner, name, number)
	if err != nil {
		return nil, err
	}
	var out []Comment
	for i, text := range parts {
		part := i + 1
		body := commentBody(part, text)
		if olds := existing[part]; len(olds) > 0 {
			old := olds[0]
			if old.GetBody() != body {
				if _, resp, err := c.svc.Issues.EditComment(ctx, owner, name, old.GetID(), &gh.IssueComment{Body: &body}); err != nil {
					return out, apiErr(fmt.Sprintf("updating part %d of the comment on %s#%d", part, repo, number), resp, err)
				}
			}
			out = append(out, Comment{ID: old.GetID(), Part: part, URL: old.GetHTMLURL()})
			existing[part] = olds[1:] // duplicates, deleted below
			continue
		}
		created, resp, err := c.svc.Issues.CreateComment(ctx, owner, name, number, &gh.IssueComment{Body: &body})
		if err != nil {
			return out, apiErr(fmt.Sprintf("creating part %d of the comment on %s#%d", part, repo, number), resp, err)
		}
		out = append(out, Comment{ID: created.GetID(), Part: part, URL: created.GetHTMLURL()})
	}
	var stale []*gh.IssueComment // parts beyond len(parts), and duplicates of the others
	for _, olds := range existing {
		stale = append(stale, olds...)
	}
	sort.Slice(stale, func(i, j int) bool { return stale[i].GetID() < stale[j].GetID() })
	for _, old := range stale {
		if resp, err := c.svc.Issues.DeleteComment(ctx, owner, name, old.GetID()); err != nil && !isNotFound(resp) {
			return out, apiErr(fmt.Sprintf("deleting stale comment %d on %s#%d", old.GetID(), repo, number), resp, err)
		}
	}
	return out, nil
}

// commentBody is the body of part: the markers, then the text, truncated to fit.
func commentBody(part int, text string) string {
	text, _ = truncate(text, MaxCommentPart, commentTruncatedNote)
	return CommentMarker + "\n<!-- fleetwave:part " + strconv.Itoa(part) + " -->\n" + text
}

// stickyComments lists the App's sticky comments on the pull request, by part number, oldest first.
func (c *Client) stickyComments(ctx context.Context, owner, name string, number int) (map[int][]*gh.IssueComment, error) {
	byPart := map[int][]*gh.IssueComment{}
	opts := &gh.IssueListCommentsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	for {
		page, resp, err := c.svc.Issues.ListComments(ctx, owner, name, number, opts)
		if err != nil {
			return nil, apiErr(fmt.Sprintf("listing comments on %s/%s#%d", owner, name, number), resp, err)
		}
		for _, cm := range page {
			if part, ok := c.stickyPart(cm); ok {
				byPart[part] = append(byPart[part], cm)
			}
		}
		if resp == nil || resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	for _, cms := range byPart {
		sort.Slice(cms, func(i, j int) bool { return cms[i].GetID() < cms[j].GetID() })
	}
	return byPart, nil
}

// stickyPart reports whether cm is one of the App's sticky comment parts, and which.
func (c *Client) stickyPart(cm *gh.IssueComment) (int, bool) {
	body, ok := strings.CutPrefix(strings.TrimLeft(cm.GetBody(), " \t\r\n"), CommentMarker)
	if !ok {
		return 0, false
	}
	user := cm.GetUser()
	if c.botLogin != "" && !strings.EqualFold(user.GetLogin(), c.botLogin) {
		return 0, false
	}
	if c.botLogin == "" && user.GetType() != "Bot" {
		return 0, false // a person quoting the marker
	}
	m := partLine.FindStringSubmatch(strings.TrimLeft(body, "\r\n"))
	if m == nil {
		return 1, true
	}
	part, err := strconv.Atoi(m[1])
	if err != nil || part < 1 {
		return 0, false
	}
	return part, true
}

// Reply posts a new comment on the pull request or issue (slash-command answers) and returns its id. A body
// over MaxCommentBody is truncated with a note.
func (c *Client) Reply(ctx context.Context, repo string, number int, body string) (int64, error) {
	owner, name, err := splitRepo(repo)
	if err != nil {
		return 0, err
	}
	body, _ = truncate(body, MaxCommentBody, commentTruncatedNote)
	cm, resp, err := c.svc.Issues.CreateComment(ctx, owner, name, number, &gh.IssueComment{Body: &body})
	if err != nil {
		return 0, apiErr(fmt.Sprintf("replying on %s#%d", repo, number), resp, err)
	}
	return cm.GetID(), nil
}

// React adds a reaction ("eyes", "+1", "-1", "rocket", "confused", ...) to an issue or PR comment. Reacting
// twice is harmless: GitHub answers 200 with the existing reaction.
func (c *Client) React(ctx context.Context, repo string, commentID int64, content string) error {
	owner, name, err := splitRepo(repo)
	if err != nil {
		return err
	}
	if _, resp, err := c.svc.Reactions.CreateIssueCommentReaction(ctx, owner, name, commentID, content); err != nil {
		return apiErr(fmt.Sprintf("reacting %q to comment %d on %s", content, commentID, repo), resp, err)
	}
	return nil
}
