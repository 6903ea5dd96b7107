package fakegithub

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

func notFound(c call) answer { return message(http.StatusNotFound, "Not Found", c.op.doc) }

// validationFailed is GitHub's 422 for a field it refuses.
func validationFailed(c call, resource, field, msg string) answer {
	return jsonAnswer(http.StatusUnprocessableEntity, map[string]any{
		"message":           "Validation Failed",
		"errors":            []any{map[string]any{"resource": resource, "code": "custom", "field": field, "message": msg}},
		"documentation_url": c.op.doc,
	})
}

func invalid(c call, msg string) answer {
	return message(http.StatusUnprocessableEntity, "Invalid request.\n\n"+msg, c.op.doc)
}

func (s *Server) createToken(c call) answer {
	id, err := strconv.ParseInt(c.params["installation_id"], 10, 64)
	if err != nil || id <= 0 {
		return notFound(c)
	}
	tok := s.mintToken(id)
	v := s.installationTokenJSON(tok.Token, tok.Expires)
	return jsonAnswer(http.StatusCreated, v)
}

func (s *Server) getRepoInstallation(c call) answer {
	repo := c.params["owner"] + "/" + c.params["repo"]
	id, ok := s.o.installs[strings.ToLower(repo)]
	if !ok {
		return notFound(c)
	}
	v := s.installationJSON(id, c.params["owner"])
	return jsonAnswer(http.StatusOK, v)
}

// --- users -----------------------------------------------------------------------------------------------

func (s *Server) actor(c call) (string, string) {
	if c.installation != 0 {
		return s.BotLogin(), "Bot"
	}
	return "octocat", "User"
}

// --- comments --------------------------------------------------------------------------------------------

func (s *Server) issueExists(repo string, number int) bool {
	_, ok := s.pulls[fmt.Sprintf("%s#%d", repo, number)]
	_, isIssue := s.issues[issueKey(repo, number)]
	return ok || isIssue
}

// checkCommentBody applies GitHub's rules the description does not state.
func checkCommentBody(c call, body string) (answer, bool) {
	if strings.TrimSpace(body) == "" {
		return validationFailed(c, "IssueComment", "body", "body cannot be blank"), false
	}
	if n := utf8.RuneCountInString(body); n > MaxCommentBody {
		return validationFailed(c, "IssueComment", "body",
			fmt.Sprintf("body is too long (maximum is %d characters)", MaxCommentBody)), false
	}
	return answer{}, true
}

func (s *Server) listComments(c call) answer {
	number, _ := strconv.Atoi(c.params["issue_number"])
	if !s.issueExists(c.repo(), number) {
		return notFound(c)
	}
	all := s.commentsOn(c.repo(), number)
	start, end, link := paginate(c, len(all))
	out := []any{}
	for i := start; i < end; i++ {
		out = append(out, s.commentJSON(&all[i]))
	}
	a := jsonAnswer(http.StatusOK, out)
	if link != "" {
		a.header.Set("Link", link)
	}
	return a
}

func (s *Server) createComment(c call) answer {
	number, _ := strconv.Atoi(c.params["issue_number"])
	if !s.issueExists(c.repo(), number) {
		return notFound(c)
	}
	body, _ := c.body["body"].(string)
	if a, ok := checkCommentBody(c, body); !ok {
		return a
	}
	login, typ := s.actor(c)
	now := s.o.now()
	cm := &Comment{ID: s.id(), Repo: c.repo(), Number: number, Body: body, User: login, UserType: typ, CreatedAt: now, UpdatedAt: now}
	s.comments[cm.ID] = cm
	a := jsonAnswer(http.StatusCreated, s.commentJSON(cm))
	a.header.Set("Location", fmt.Sprintf("https://api.github.com/repos/%s/issues/comments/%d", cm.Repo, cm.ID))
	return a
}

func (s *Server) comment(c call) (*Comment, bool) {
	id, _ := strconv.ParseInt(c.params["comment_id"], 10, 64)
	cm, ok := s.comments[id]
	if !ok || cm.Repo != c.repo() {
		return nil, false
	}
	return cm, true
}

func (s *Server) updateComment(c call) answer {
	cm, ok := s.comment(c)
	if !ok {
		return notFound(c)
	}
	body, _ := c.body["body"].(string)
	if a, ok := checkCommentBody(c, body); !ok {
		return a
	}
	if login, _ := s.actor(c); login != cm.User {
		// An App may edit others' comments with issues:write; fleetwave never should.
		s.t.Errorf("fakegithub: %s edits comment %d written by %s", login, cm.ID, cm.User)
	}
	cm.Body = body
	cm.UpdatedAt = s.o.now()
	cm.Edits++
	return jsonAnswer(http.StatusOK, s.commentJSON(cm))
}

func (s *Server) deleteComment(c call) answer {
	cm, ok := s.comment(c)
	if !ok {
		return notFound(c)
	}
	if login, _ := s.actor(c); login != cm.User {
		s.t.Errorf("fakegithub: %s deletes comment %d written by %s", login, cm.ID, cm.User)
	}
	delete(s.comments, cm.ID)
	delete(s.reactions, cm.ID)
	return answer{status: http.StatusNoContent, header: http.Header{}}
}

func (s *Server) createReaction(c call) answer {
	cm, ok := s.comment(c)
	if !ok {
		return notFound(c)
	}
	content, _ := c.body["content"].(string)
	login, typ := s.actor(c)
	for _, r := range s.reactions[cm.ID] {
		if r.User == login && r.Content == content {
			return jsonAnswer(http.StatusOK, s.reactionJSON(r, typ))
		}
	}
	r := Reaction{ID: s.id(), CommentID: cm.ID, Content: content, User: login}
	s.reactions[cm.ID] = append(s.reactions[cm.ID], r)
	return jsonAnswer(http.StatusCreated, s.reactionJSON(r, typ))
}

// --- labels ----------------------------------------------------------------------------------------------

// issue is the pull request an issues/... call names by issue_number.
func (s *Server) issue(c call) (*PullRequest, bool) {
	number, _ := strconv.Atoi(c.params["issue_number"])
	pr, ok := s.pulls[fmt.Sprintf("%s#%d", c.repo(), number)]
	return pr, ok
}

// addLabels adds labels to a pull request, as GitHub does: a label already there stays once (names compare
// case-insensitively), one the repository lacks is created; the answer is every label of the issue.
func (s *Server) addLabels(c call) answer {
	pr, ok := s.issue(c)
	if !ok {
		return notFound(c)
	}
	items, _ := c.body["labels"].([]any)
	for _, it := range items {
		name, _ := it.(string)
		if m, ok := it.(map[string]any); ok {
			name, _ = m["name"].(string)
		}
		if strings.TrimSpace(name) == "" {
			return validationFailed(c, "Label", "name", "name cannot be blank")
		}
		if !slicesContainsFold(pr.Labels, name) {
			pr.Labels = append(pr.Labels, name)
		}
	}
	return jsonAnswer(http.StatusOK, labelsJSON(c.repo(), pr.Labels))
}

// removeLabel takes a label off a pull request; GitHub answers 404 "Label does not exist" when it is not there.
func (s *Server) removeLabel(c call) answer {
	pr, ok := s.issue(c)
	if !ok {
		return notFound(c)
	}
	name := c.params["name"]
	i := slices.IndexFunc(pr.Labels, func(l string) bool { return strings.EqualFold(l, name) })
	if i < 0 {
		return message(http.StatusNotFound, "Label does not exist", c.op.doc)
	}
	pr.Labels = slices.Delete(pr.Labels, i, i+1)
	return jsonAnswer(http.StatusOK, labelsJSON(c.repo(), pr.Labels))
}

func slicesContainsFold(list []string, s string) bool {
	return slices.ContainsFunc(list, func(x string) bool { return strings.EqualFold(x, s) })
}

// --- check runs ------------------------------------------------------------------------------------------

var shaRe = regexp.MustCompile(`^[0-9a-f]{40}$`)

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// applyCheckRun applies a create or update body to cr, with GitHub's rules; it returns a refusal or nil.
func (s *Server) applyCheckRun(c call, cr *CheckRun, creating bool) *answer {
	b := c.body
	if name, ok := b["name"].(string); ok {
		if strings.TrimSpace(name) == "" {
			a := invalid(c, "name cannot be blank")
			return &a
		}
		cr.Name = name
	}
	if v, ok := b["external_id"].(string); ok {
		cr.ExternalID = v
	}
	if v, ok := b["details_url"].(string); ok {
		cr.DetailsURL = v
	}
	status, _ := b["status"].(string)
	conclusion, _ := b["conclusion"].(string)
	if conclusion != "" {
		status = "completed" // GitHub: providing a conclusion sets the status to completed
	}
	if status == "completed" && conclusion == "" {
		a := invalid(c, "conclusion is required when status is completed")
		return &a
	}
	if status != "" && status != "completed" && cr.Status == "completed" {
		a := invalid(c, fmt.Sprintf("fakegithub: check run %d is completed; moving it back to %s is refused", cr.ID, status))
		return &a
	}
	if creating && status == "" {
		status = "queued"
	}
	if out, ok := b["output"].(map[string]any); ok {
		for _, f := range []string{"summary", "text"} {
			if v, _ := out[f].(string); utf8.RuneCountInString(v) > MaxCheckRunText {
				a := invalid(c, fmt.Sprintf("output.%s: only %d characters are allowed; %d were supplied",
					f, MaxCheckRunText, utf8.RuneCountInString(v)))
				return &a
			}
		}
		anns, _ := out["annotations"].([]any)
		if len(anns) > MaxAnnotationsPerRequest {
			a := invalid(c, fmt.Sprintf("output.annotations: at most %d per request, %d were supplied", MaxAnnotationsPerRequest, len(anns)))
			return &a
		}
		for _, x := range anns {
			ann, ok := x.(map[string]any)
			if !ok {
				a := invalid(c, "output.annotations: each annotation is an object")
				return &a
			}
			if _, hasCol := ann["start_column"]; hasCol && ann["start_line"] != ann["end_line"] {
				a := invalid(c, "annotation columns are only allowed when start_line equals end_line")
				return &a
			}
		}
		if v, ok := out["title"].(string); ok {
			cr.Title = v
		}
		if v, ok := out["summary"].(string); ok {
			cr.Summary = v
		}
		if v, ok := out["text"].(string); ok {
			cr.Text = v
		}
		for _, x := range anns {
			cr.Annotations = append(cr.Annotations, x.(map[string]any))
		}
	}
	if acts, ok := b["actions"].([]any); ok {
		if len(acts) > MaxCheckRunActions {
			a := invalid(c, fmt.Sprintf("actions: at most %d, %d were supplied", MaxCheckRunActions, len(acts)))
			return &a
		}
		cr.Actions = nil
		for _, x := range acts {
			act, ok := x.(map[string]any)
			if !ok {
				a := invalid(c, "actions: each action is an object")
				return &a
			}
			cr.Actions = append(cr.Actions, act)
		}
	}
	now := s.o.now()
	if v, ok := b["started_at"].(string); ok {
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			cr.StartedAt = t
		}
	}
	if status != "" && status != cr.Status {
		cr.History = append(cr.History, status)
		cr.Status = status
	}
	if cr.Status != "queued" && cr.StartedAt.IsZero() {
		cr.StartedAt = now
	}
	if conclusion != "" {
		cr.Conclusion = conclusion
		cr.CompletedAt = now
		if v, ok := b["completed_at"].(string); ok {
			if t, err := time.Parse(time.RFC3339, v); err == nil {
				cr.CompletedAt = t
			}
		}
	}
	return nil
}

func (s *Server) createCheckRun(c call) answer {
	sha, _ := c.body["head_sha"].(string)
	if !shaRe.MatchString(sha) {
		return invalid(c, "No commit found for SHA: "+sha)
	}
	cr := &CheckRun{ID: s.id(), Repo: c.repo(), HeadSHA: sha}
	if a := s.applyCheckRun(c, cr, true); a != nil {
		return *a
	}
	s.checkRuns[cr.ID] = cr
	return jsonAnswer(http.StatusCreated, s.checkRunJSON(cr))
}

func (s *Server) updateCheckRun(c call) answer {
	id, _ := strconv.ParseInt(c.params["check_run_id"], 10, 64)
	cur, ok := s.checkRuns[id]
	if !ok || cur.Repo != c.repo() {
		return notFound(c)
	}
	next := *cur // refused updates leave the run untouched
	next.Annotations = append([]map[string]any(nil), cur.Annotations...)
	next.History = append([]string(nil), cur.History...)
	if a := s.applyCheckRun(c, &next, false); a != nil {
		return *a
	}
	next.Updates++
	*cur = next
	return jsonAnswer(http.StatusOK, s.checkRunJSON(cur))
}

func (s *Server) listCheckRuns(c call) answer {
	ref := c.params["ref"]
	sha := ref
	if !shaRe.MatchString(ref) {
		sha = ""
		for key, pr := range s.pulls {
			if strings.HasPrefix(key, c.repo()+"#") && (pr.HeadRef == ref || pr.HeadRef == strings.TrimPrefix(ref, "heads/")) {
				sha = pr.HeadSHA
			}
		}
	}
	q := c.r.URL.Query()
	var runs []*CheckRun
	for _, cr := range s.checkRuns {
		if cr.Repo != c.repo() || cr.HeadSHA != sha {
			continue
		}
		if n := q.Get("check_name"); n != "" && cr.Name != n {
			continue
		}
		if st := q.Get("status"); st != "" && cr.Status != st {
			continue
		}
		runs = append(runs, cr)
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].ID > runs[j].ID }) // newest first, as GitHub lists
	if q.Get("filter") != "all" {
		// The latest run of each name in each App's check suite: another App's run of the same name hides none.
		seen := map[string]bool{}
		latest := runs[:0]
		for _, cr := range runs {
			if k := fmt.Sprint(cr.AppID, "/", cr.Name); !seen[k] {
				seen[k] = true
				latest = append(latest, cr)
			}
		}
		runs = latest
	}
	start, end, link := paginate(c, len(runs))
	out := []any{}
	for _, cr := range runs[start:end] {
		out = append(out, s.checkRunJSON(cr))
	}
	a := jsonAnswer(http.StatusOK, map[string]any{"total_count": len(runs), "check_runs": out})
	if link != "" {
		a.header.Set("Link", link)
	}
	return a
}

// --- pull requests ---------------------------------------------------------------------------------------

func (s *Server) pull(c call) (*PullRequest, bool) {
	number, _ := strconv.Atoi(c.params["pull_number"])
	pr, ok := s.pulls[fmt.Sprintf("%s#%d", c.repo(), number)]
	return pr, ok
}

func (s *Server) getPull(c call) answer {
	pr, ok := s.pull(c)
	if !ok {
		return notFound(c)
	}
	v := s.pullJSON(c.repo(), pr)
	return jsonAnswer(http.StatusOK, v)
}

func (s *Server) listFiles(c call) answer {
	pr, ok := s.pull(c)
	if !ok {
		return notFound(c)
	}
	files := pr.Files
	if len(files) > 3000 { // GitHub lists at most 3,000 files
		files = files[:3000]
	}
	start, end, link := paginate(c, len(files))
	out := []any{}
	for _, f := range files[start:end] {
		v := fileJSON(c.repo(), pr, f)
		out = append(out, v)
	}
	a := jsonAnswer(http.StatusOK, out)
	if link != "" {
		a.header.Set("Link", link)
	}
	return a
}

// --- access ----------------------------------------------------------------------------------------------

func (s *Server) getPermission(c call) answer {
	user := c.params["username"]
	role, ok := s.permissions[c.repo()+":"+strings.ToLower(user)]
	if !ok {
		role = "none"
	}
	permission := map[string]string{"maintain": "write", "triage": "read"}[role]
	if permission == "" {
		permission = role
	}
	v := permissionJSON(user, permission, role)
	return jsonAnswer(http.StatusOK, v)
}

func (s *Server) getMembership(c call) answer {
	team := c.params["org"] + "/" + c.params["team_slug"]
	state, ok := s.teams[team][strings.ToLower(c.params["username"])]
	if !ok {
		return notFound(c)
	}
	v := membershipJSON(c.params["org"], c.params["team_slug"], c.params["username"], state)
	return jsonAnswer(http.StatusOK, v)
}

// paginate applies per_page (default 30, at most 100) and page (from 1) to n items and builds the Link header.
func paginate(c call, n int) (start, end int, link string) {
	q := c.r.URL.Query()
	per, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || per <= 0 {
		per = 30
	}
	per = min(per, maxPerPage)
	page, err := strconv.Atoi(q.Get("page"))
	if err != nil || page <= 0 {
		page = 1
	}
	start = min((page-1)*per, n)
	end = min(start+per, n)
	last := max((n+per-1)/per, 1)
	pageURL := func(p int) string {
		u := *c.r.URL
		u.Scheme, u.Host = "http", c.r.Host
		qq := u.Query()
		qq.Set("page", strconv.Itoa(p))
		qq.Set("per_page", strconv.Itoa(per))
		u.RawQuery = qq.Encode()
		return u.String()
	}
	var links []string
	if page < last {
		links = append(links, fmt.Sprintf(`<%s>; rel="next"`, pageURL(page+1)), fmt.Sprintf(`<%s>; rel="last"`, pageURL(last)))
	}
	if page > 1 {
		links = append(links, fmt.Sprintf(`<%s>; rel="first"`, pageURL(1)), fmt.Sprintf(`<%s>; rel="prev"`, pageURL(page-1)))
	}
	return start, end, strings.Join(links, ", ")
}
