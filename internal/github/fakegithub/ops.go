package fakegithub

import (
	"fmt"
	"hash/fnv"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// dispatch runs the operation; s.mu is held.
func (s *Server) dispatch(c call) answer {
	switch c.route.Operation.OperationID {
	case "apps/create-installation-access-token":
		return s.createToken(c)
	case "apps/get-repo-installation":
		return s.getRepoInstallation(c)
	case "issues/list-comments":
		return s.listComments(c)
	case "issues/create-comment":
		return s.createComment(c)
	case "issues/update-comment":
		return s.updateComment(c)
	case "issues/delete-comment":
		return s.deleteComment(c)
	case "reactions/create-for-issue-comment":
		return s.createReaction(c)
	case "checks/create":
		return s.createCheckRun(c)
	case "checks/update":
		return s.updateCheckRun(c)
	case "checks/list-for-ref":
		return s.listCheckRuns(c)
	case "pulls/get":
		return s.getPull(c)
	case "pulls/list-files":
		return s.listFiles(c)
	case "repos/get-collaborator-permission-level":
		return s.getPermission(c)
	case "teams/get-membership-for-user-in-org":
		return s.getMembership(c)
	}
	s.t.Errorf("fakegithub: %s is described but not implemented by the fake", c.route.Operation.OperationID)
	return message(http.StatusNotImplemented, "not implemented by fakegithub", "")
}

func notFound(c call) answer { return message(http.StatusNotFound, "Not Found", docURL(c.route)) }

// validationFailed is GitHub's 422 for a field it refuses.
func validationFailed(c call, resource, field, msg string) answer {
	return jsonAnswer(http.StatusUnprocessableEntity, map[string]any{
		"message":           "Validation Failed",
		"errors":            []any{map[string]any{"resource": resource, "code": "custom", "field": field, "message": msg}},
		"documentation_url": docURL(c.route),
	})
}

func invalid(c call, msg string) answer {
	return message(http.StatusUnprocessableEntity, "Invalid request.\n\n"+msg, docURL(c.route))
}

func (s *Server) createToken(c call) answer {
	id, err := strconv.ParseInt(c.params["installation_id"], 10, 64)
	if err != nil || id <= 0 {
		return notFound(c)
	}
	tok := s.mintToken(id)
	v := s.spec.example("installation-token")
	delete(v, "repositories")
	v["token"] = tok.Token
	v["expires_at"] = ts(tok.Expires)
	v["repository_selection"] = "all"
	return jsonAnswer(http.StatusCreated, v)
}

func (s *Server) getRepoInstallation(c call) answer {
	repo := c.params["owner"] + "/" + c.params["repo"]
	id, ok := s.o.installs[strings.ToLower(repo)]
	if !ok {
		return notFound(c)
	}
	v := s.spec.example("installation")
	v["id"] = id
	v["app_id"] = s.o.appID
	v["app_slug"] = s.o.appSlug
	v["repository_selection"] = "selected"
	return jsonAnswer(http.StatusOK, v)
}

// --- users -----------------------------------------------------------------------------------------------

func (s *Server) userJSON(login, typ string) map[string]any {
	u := s.spec.example("issue-comment")["user"].(map[string]any)
	h := fnv.New32a()
	h.Write([]byte(login))
	id := int64(h.Sum32())
	u["login"] = login
	u["id"] = id
	u["node_id"] = fmt.Sprintf("U_%d", id)
	u["type"] = typ
	u["html_url"] = "https://github.com/" + login
	u["url"] = "https://api.github.com/users/" + login
	return u
}

func (s *Server) actor(c call) (string, string) {
	if c.installation != 0 {
		return s.BotLogin(), "Bot"
	}
	return "octocat", "User"
}

// --- comments --------------------------------------------------------------------------------------------

func (s *Server) commentJSON(cm *Comment) map[string]any {
	v := s.spec.example("issue-comment")
	v["id"] = cm.ID
	v["node_id"] = fmt.Sprintf("IC_%d", cm.ID)
	v["body"] = cm.Body
	v["user"] = s.userJSON(cm.User, cm.UserType)
	v["created_at"] = ts(cm.CreatedAt)
	v["updated_at"] = ts(cm.UpdatedAt)
	v["html_url"] = fmt.Sprintf("https://github.com/%s/pull/%d#issuecomment-%d", cm.Repo, cm.Number, cm.ID)
	v["issue_url"] = fmt.Sprintf("https://api.github.com/repos/%s/issues/%d", cm.Repo, cm.Number)
	v["url"] = fmt.Sprintf("https://api.github.com/repos/%s/issues/comments/%d", cm.Repo, cm.ID)
	v["author_association"] = "NONE"
	return v
}

func (s *Server) issueExists(repo string, number int) bool {
	_, ok := s.pulls[fmt.Sprintf("%s#%d", repo, number)]
	return ok
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

func (s *Server) reactionJSON(r Reaction, typ string) map[string]any {
	v := s.spec.example("reaction")
	v["id"] = r.ID
	v["node_id"] = fmt.Sprintf("REA_%d", r.ID)
	v["content"] = r.Content
	v["user"] = s.userJSON(r.User, typ)
	v["created_at"] = ts(s.o.now())
	return v
}

// --- check runs ------------------------------------------------------------------------------------------

var shaRe = regexp.MustCompile(`^[0-9a-f]{40}$`)

func (s *Server) checkRunJSON(cr *CheckRun) map[string]any {
	v := s.spec.example("check-run")
	v["id"] = cr.ID
	v["node_id"] = fmt.Sprintf("CR_%d", cr.ID)
	v["name"] = cr.Name
	v["head_sha"] = cr.HeadSHA
	v["status"] = cr.Status
	v["conclusion"] = nil
	if cr.Conclusion != "" {
		v["conclusion"] = cr.Conclusion
	}
	v["started_at"] = ts(cr.StartedAt)
	v["completed_at"] = ts(cr.CompletedAt)
	v["external_id"] = cr.ExternalID
	v["details_url"] = cr.DetailsURL
	v["url"] = fmt.Sprintf("https://api.github.com/repos/%s/check-runs/%d", cr.Repo, cr.ID)
	v["html_url"] = fmt.Sprintf("https://github.com/%s/runs/%d", cr.Repo, cr.ID)
	v["output"] = map[string]any{
		"title": nullable(cr.Title), "summary": nullable(cr.Summary), "text": nullable(cr.Text),
		"annotations_count": len(cr.Annotations),
		"annotations_url":   fmt.Sprintf("https://api.github.com/repos/%s/check-runs/%d/annotations", cr.Repo, cr.ID),
	}
	v["pull_requests"] = []any{}
	if app, ok := v["app"].(map[string]any); ok {
		app["slug"] = s.o.appSlug
		if s.o.appID != 0 {
			app["id"] = s.o.appID
		}
	}
	return v
}

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
			ann := x.(map[string]any)
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
			cr.Actions = append(cr.Actions, x.(map[string]any))
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
		seen := map[string]bool{}
		latest := runs[:0]
		for _, cr := range runs {
			if !seen[cr.Name] {
				seen[cr.Name] = true
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
	v := s.spec.example("pull-request")
	v["number"] = pr.Number
	v["id"] = int64(pr.Number) + 1_000_000
	v["title"] = pr.Title
	v["state"] = pr.State
	v["draft"] = pr.Draft
	v["merged"] = pr.Merged
	v["merge_commit_sha"] = nullable(pr.MergeCommitSHA)
	v["merged_at"] = nil
	if pr.Merged {
		v["merged_at"] = ts(s.o.now())
	}
	v["user"] = s.userJSON(pr.Author, "User")
	v["html_url"] = fmt.Sprintf("https://github.com/%s/pull/%d", c.repo(), pr.Number)
	v["url"] = fmt.Sprintf("https://api.github.com/repos/%s/pulls/%d", c.repo(), pr.Number)
	v["requested_teams"] = []any{} // GitHub's own example lacks the required requested_teams[].type
	v["changed_files"] = len(pr.Files)
	setBranch := func(side map[string]any, repo, ref, sha string) {
		owner, name, _ := strings.Cut(repo, "/")
		side["ref"] = ref
		side["sha"] = sha
		side["label"] = owner + ":" + ref
		if r, ok := side["repo"].(map[string]any); ok {
			r["full_name"] = repo
			r["name"] = name
			r["html_url"] = "https://github.com/" + repo
			r["clone_url"] = "https://github.com/" + repo + ".git"
			r["ssh_url"] = "git@github.com:" + repo + ".git"
			if o, ok := r["owner"].(map[string]any); ok {
				o["login"] = owner
			}
		}
	}
	setBranch(v["head"].(map[string]any), pr.HeadRepo, pr.HeadRef, pr.HeadSHA)
	setBranch(v["base"].(map[string]any), c.repo(), pr.BaseRef, pr.BaseSHA)
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
		v := s.spec.example("diff-entry-items")
		delete(v, "patch")
		v["filename"] = f.Filename
		v["status"] = f.Status
		v["additions"] = f.Additions
		v["deletions"] = f.Deletions
		v["changes"] = f.Additions + f.Deletions
		v["blob_url"] = fmt.Sprintf("https://github.com/%s/blob/%s/%s", c.repo(), pr.HeadSHA, f.Filename)
		v["raw_url"] = fmt.Sprintf("https://github.com/%s/raw/%s/%s", c.repo(), pr.HeadSHA, f.Filename)
		v["contents_url"] = fmt.Sprintf("https://api.github.com/repos/%s/contents/%s?ref=%s", c.repo(), f.Filename, pr.HeadSHA)
		if f.PreviousFilename != "" {
			v["previous_filename"] = f.PreviousFilename
		}
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
	v := s.spec.example("repository-collaborator-permission-response-if-user-has-admin-permissions")
	v["permission"] = permission
	v["role_name"] = role
	u := s.userJSON(user, "User")
	u["role_name"] = role // GitHub's example lacks it although the schema requires it
	v["user"] = u
	return jsonAnswer(http.StatusOK, v)
}

func (s *Server) getMembership(c call) answer {
	team := c.params["org"] + "/" + c.params["team_slug"]
	state, ok := s.teams[team][strings.ToLower(c.params["username"])]
	if !ok {
		return notFound(c)
	}
	v := s.spec.example("team-membership-response-if-user-is-a-team-maintainer")
	v["role"] = "member"
	v["state"] = state
	v["url"] = fmt.Sprintf("https://api.github.com/organizations/1/team/1/memberships/%s", c.params["username"])
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
