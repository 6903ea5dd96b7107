package fakegithub

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Issue is an issue (not a pull request) in the fake's state: opened by the App (issues/create) or seeded with
// AddIssue. Issues and pull requests of a repository share its numbers, as on GitHub.
type Issue struct {
	Repo        string
	Number      int
	Title       string
	Body        string
	State       string // open or closed
	StateReason string // completed, not_planned, reopened; "" while never closed
	User        string
	UserType    string // "Bot" for what installation tokens create, "User" for seeded ones
	CreatedAt   time.Time
	UpdatedAt   time.Time
	ClosedAt    time.Time
	Edits       int
}

// maxIssueTitle is the longest issue title GitHub takes (it answers a longer one with 422).
const maxIssueTitle = 256

// AddIssue adds an open issue by user (a person, or a Bot when user ends in "[bot]") to repo, as if opened on
// GitHub, and returns its number.
func (s *Server) AddIssue(repo, user, title, body string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	typ := "User"
	if strings.HasSuffix(user, "[bot]") {
		typ = "Bot"
	}
	now := s.o.now()
	is := &Issue{Repo: repo, Number: s.nextNumber(repo), Title: title, Body: body, State: "open", User: user, UserType: typ,
		CreatedAt: now, UpdatedAt: now}
	s.issues[issueKey(repo, is.Number)] = is
	return is.Number
}

// Issues returns the issues of repo (not pull requests), by number.
func (s *Server) Issues(repo string) []Issue {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Issue
	for _, is := range s.issues {
		if is.Repo == repo {
			out = append(out, *is)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	return out
}

func issueKey(repo string, number int) string { return fmt.Sprintf("%s#%d", repo, number) }

// nextNumber is the repository's next issue or pull request number.
func (s *Server) nextNumber(repo string) int {
	n := 0
	for _, pr := range s.pulls {
		if k := issueKey(repo, pr.Number); s.pulls[k] == pr {
			n = max(n, pr.Number)
		}
	}
	for _, is := range s.issues {
		if is.Repo == repo {
			n = max(n, is.Number)
		}
	}
	return n + 1
}

// checkIssue applies GitHub's rules on a title and body that the description does not state.
func checkIssue(c call, title string, hasTitle bool, body string) (answer, bool) {
	if hasTitle && strings.TrimSpace(title) == "" {
		return validationFailed(c, "Issue", "title", "title cannot be blank"), false
	}
	if utf8.RuneCountInString(title) > maxIssueTitle {
		return validationFailed(c, "Issue", "title", fmt.Sprintf("title is too long (maximum is %d characters)", maxIssueTitle)), false
	}
	if n := utf8.RuneCountInString(body); n > MaxCommentBody {
		return validationFailed(c, "Issue", "body", fmt.Sprintf("body is too long (maximum is %d characters)", MaxCommentBody)), false
	}
	return answer{}, true
}

func (s *Server) createIssue(c call) answer {
	title, _ := c.body["title"].(string)
	body, _ := c.body["body"].(string)
	if a, ok := checkIssue(c, title, true, body); !ok {
		return a
	}
	login, typ := s.actor(c)
	now := s.o.now()
	is := &Issue{Repo: c.repo(), Number: s.nextNumber(c.repo()), Title: title, Body: body, State: "open", User: login,
		UserType: typ, CreatedAt: now, UpdatedAt: now}
	s.issues[issueKey(is.Repo, is.Number)] = is
	a := jsonAnswer(http.StatusCreated, s.issueJSON(is))
	a.header.Set("Location", fmt.Sprintf("%s/repos/%s/issues/%d", apiBase, is.Repo, is.Number))
	return a
}

func (s *Server) updateIssue(c call) answer {
	number, _ := strconv.Atoi(c.params["issue_number"])
	is, ok := s.issues[issueKey(c.repo(), number)]
	if !ok {
		return notFound(c)
	}
	title, hasTitle := c.body["title"].(string)
	body, hasBody := c.body["body"].(string)
	if a, ok := checkIssue(c, title, hasTitle, body); !ok {
		return a
	}
	if hasTitle {
		is.Title = title
	}
	if hasBody {
		is.Body = body
	}
	now := s.o.now()
	if state, ok := c.body["state"].(string); ok && state != is.State {
		is.State = state
		switch state {
		case "closed":
			is.ClosedAt = now
			is.StateReason = "completed"
		case "open":
			is.ClosedAt = time.Time{}
			is.StateReason = "reopened"
		}
	}
	if reason, ok := c.body["state_reason"].(string); ok && is.State == "closed" {
		is.StateReason = reason
	}
	is.UpdatedAt = now
	is.Edits++
	return jsonAnswer(http.StatusOK, s.issueJSON(is))
}

// listIssues lists a repository's issues and pull requests (GitHub lists both), filtered by state (open by
// default, closed, all) and creator, oldest first with sort=created&direction=asc, else newest first.
func (s *Server) listIssues(c call) answer {
	q := c.r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	creator := q.Get("creator")
	type item struct {
		number int
		v      map[string]any
	}
	var items []item
	match := func(st, user string) bool {
		return (state == "all" || st == state) && (creator == "" || strings.EqualFold(creator, user))
	}
	for _, is := range s.issues {
		if is.Repo == c.repo() && match(is.State, is.User) {
			items = append(items, item{is.Number, s.issueJSON(is)})
		}
	}
	for k, pr := range s.pulls {
		if k == issueKey(c.repo(), pr.Number) && match(pr.State, pr.Author) {
			items = append(items, item{pr.Number, s.pullIssueJSON(c.repo(), pr)})
		}
	}
	asc := q.Get("sort") == "created" && q.Get("direction") == "asc"
	sort.Slice(items, func(i, j int) bool {
		if asc {
			return items[i].number < items[j].number
		}
		return items[i].number > items[j].number
	})
	start, end, link := paginate(c, len(items))
	out := []any{}
	for _, it := range items[start:end] {
		out = append(out, it.v)
	}
	a := jsonAnswer(http.StatusOK, out)
	if link != "" {
		a.header.Set("Link", link)
	}
	return a
}

func (s *Server) issueJSON(is *Issue) map[string]any {
	id := stableID("issue", issueKey(is.Repo, is.Number))
	api := fmt.Sprintf("%s/repos/%s", apiBase, is.Repo)
	self := fmt.Sprintf("%s/issues/%d", api, is.Number)
	var closed, reason any
	if !is.ClosedAt.IsZero() {
		closed = ts(is.ClosedAt)
	}
	if is.StateReason != "" {
		reason = is.StateReason
	}
	comments := 0
	for _, cm := range s.comments {
		if cm.Repo == is.Repo && cm.Number == is.Number {
			comments++
		}
	}
	v := map[string]any{
		"id":                 id,
		"node_id":            nodeID("I", id),
		"url":                self,
		"repository_url":     api,
		"labels_url":         self + "/labels{/name}",
		"comments_url":       self + "/comments",
		"events_url":         self + "/events",
		"html_url":           fmt.Sprintf("%s/%s/issues/%d", webBase, is.Repo, is.Number),
		"number":             is.Number,
		"state":              is.State,
		"state_reason":       reason,
		"title":              is.Title,
		"body":               nullable(is.Body),
		"user":               userJSON(is.User, is.UserType),
		"labels":             []any{},
		"assignee":           nil,
		"assignees":          []any{},
		"milestone":          nil,
		"locked":             false,
		"comments":           comments,
		"closed_at":          closed,
		"created_at":         ts(is.CreatedAt),
		"updated_at":         ts(is.UpdatedAt),
		"author_association": "NONE",
	}
	if is.UserType == "Bot" {
		v["performed_via_github_app"] = s.appJSON()
	} else {
		v["author_association"] = "MEMBER"
	}
	return v
}

// pullIssueJSON is a pull request as GitHub lists it among a repository's issues: an issue with a
// pull_request member.
func (s *Server) pullIssueJSON(repo string, pr *PullRequest) map[string]any {
	is := &Issue{Repo: repo, Number: pr.Number, Title: pr.Title, State: pr.State, User: pr.Author, UserType: "User",
		CreatedAt: s.o.now().Add(-time.Hour).UTC().Truncate(time.Second)}
	is.UpdatedAt = is.CreatedAt
	v := s.issueJSON(is)
	v["labels"] = labelsJSON(repo, pr.Labels)
	html := fmt.Sprintf("%s/%s/pull/%d", webBase, repo, pr.Number)
	v["html_url"] = html
	v["pull_request"] = map[string]any{
		"url": fmt.Sprintf("%s/repos/%s/pulls/%d", apiBase, repo, pr.Number), "html_url": html,
		"diff_url": html + ".diff", "patch_url": html + ".patch", "merged_at": nil,
	}
	return v
}
