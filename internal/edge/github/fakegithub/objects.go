package fakegithub

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"net/url"
	"strings"
	"time"
)

// The objects the fake answers with, in GitHub's documented shape (every field the description marks
// required, with its type; the conformance test checks them against the description when it is there) and
// with values of our own, derived from the fake's state: a login, a repository name, an id.

const (
	apiBase = "https://api.github.com"
	webBase = "https://github.com"
	// appOwner is the organization that owns the App.
	appOwner = "fleetwave"
)

// epoch is when the fake's accounts, repositories and App were created.
var epoch = time.Date(2024, 3, 18, 9, 30, 0, 0, time.UTC)

// appEvents are the webhook events the App subscribes to (app.yml).
var appEvents = []any{"check_run", "check_suite", "issue_comment", "merge_group", "pull_request", "push"}

// appPermissions are what the App is granted on an installation (app.yml).
func appPermissions() map[string]any {
	return map[string]any{
		"checks": "write", "contents": "read", "issues": "write", "metadata": "read", "members": "read",
		"pull_requests": "read", "merge_queues": "read",
	}
}

// stableID derives a positive id from a name: the same name always gets the same id.
func stableID(kind, name string) int64 {
	h := fnv.New32a()
	h.Write([]byte(kind + ":" + name))
	return int64(h.Sum32()&0x7fffffff) + 1
}

// nodeID is a GraphQL global id of our own making: a type prefix and the database id.
func nodeID(prefix string, id int64) string { return fmt.Sprintf("%s_fw%d", prefix, id) }

// userJSON is a simple-user: a person ("User"), an organization ("Organization") or an App's bot ("Bot").
func userJSON(login, typ string) map[string]any {
	id := stableID("user", login)
	esc := url.PathEscape(login)
	api := apiBase + "/users/" + esc
	prefix := map[string]string{"Bot": "BOT", "Organization": "O"}[typ]
	if prefix == "" {
		prefix = "U"
	}
	return map[string]any{
		"login":               login,
		"id":                  id,
		"node_id":             nodeID(prefix, id),
		"avatar_url":          fmt.Sprintf("https://avatars.githubusercontent.com/u/%d?v=4", id),
		"gravatar_id":         "",
		"url":                 api,
		"html_url":            webBase + "/" + esc,
		"followers_url":       api + "/followers",
		"following_url":       api + "/following{/other_user}",
		"gists_url":           api + "/gists{/gist_id}",
		"starred_url":         api + "/starred{/owner}{/repo}",
		"subscriptions_url":   api + "/subscriptions",
		"organizations_url":   api + "/orgs",
		"repos_url":           api + "/repos",
		"events_url":          api + "/events{/privacy}",
		"received_events_url": api + "/received_events",
		"type":                typ,
		"user_view_type":      "public",
		"site_admin":          false,
	}
}

// repoURLs are a repository's hypermedia links, below its API URL.
var repoURLs = map[string]string{
	"archive_url":       "/{archive_format}{/ref}",
	"assignees_url":     "/assignees{/user}",
	"blobs_url":         "/git/blobs{/sha}",
	"branches_url":      "/branches{/branch}",
	"collaborators_url": "/collaborators{/collaborator}",
	"comments_url":      "/comments{/number}",
	"commits_url":       "/commits{/sha}",
	"compare_url":       "/compare/{base}...{head}",
	"contents_url":      "/contents/{+path}",
	"contributors_url":  "/contributors",
	"deployments_url":   "/deployments",
	"downloads_url":     "/downloads",
	"events_url":        "/events",
	"forks_url":         "/forks",
	"git_commits_url":   "/git/commits{/sha}",
	"git_refs_url":      "/git/refs{/sha}",
	"git_tags_url":      "/git/tags{/sha}",
	"hooks_url":         "/hooks",
	"issue_comment_url": "/issues/comments{/number}",
	"issue_events_url":  "/issues/events{/number}",
	"issues_url":        "/issues{/number}",
	"keys_url":          "/keys{/key_id}",
	"labels_url":        "/labels{/name}",
	"languages_url":     "/languages",
	"merges_url":        "/merges",
	"milestones_url":    "/milestones{/number}",
	"notifications_url": "/notifications{?since,all,participating}",
	"pulls_url":         "/pulls{/number}",
	"releases_url":      "/releases{/id}",
	"stargazers_url":    "/stargazers",
	"statuses_url":      "/statuses/{sha}",
	"subscribers_url":   "/subscribers",
	"subscription_url":  "/subscription",
	"tags_url":          "/tags",
	"teams_url":         "/teams",
	"trees_url":         "/git/trees{/sha}",
}

// repoJSON is a repository ("owner/name"); fork says it is a fork of another.
func repoJSON(full string, fork bool) map[string]any {
	owner, name, _ := strings.Cut(full, "/")
	id := stableID("repo", full)
	api := apiBase + "/repos/" + full
	v := map[string]any{
		"id":                id,
		"node_id":           nodeID("R", id),
		"name":              name,
		"full_name":         full,
		"owner":             userJSON(owner, "Organization"),
		"private":           false,
		"visibility":        "public",
		"description":       "Argo CD applications of " + owner,
		"fork":              fork,
		"url":               api,
		"html_url":          webBase + "/" + full,
		"clone_url":         webBase + "/" + full + ".git",
		"git_url":           "git://github.com/" + full + ".git",
		"ssh_url":           "git@github.com:" + full + ".git",
		"svn_url":           webBase + "/" + full,
		"mirror_url":        nil,
		"homepage":          nil,
		"language":          nil,
		"license":           nil,
		"default_branch":    "main",
		"archived":          false,
		"disabled":          false,
		"has_issues":        true,
		"has_projects":      false,
		"has_wiki":          false,
		"has_pages":         false,
		"has_downloads":     false,
		"forks":             0,
		"forks_count":       0,
		"open_issues":       0,
		"open_issues_count": 0,
		"stargazers_count":  0,
		"watchers":          0,
		"watchers_count":    0,
		"size":              412,
		"created_at":        ts(epoch),
		"updated_at":        ts(epoch),
		"pushed_at":         ts(epoch),
	}
	for field, suffix := range repoURLs {
		v[field] = api + suffix
	}
	return v
}

// appJSON is the App (a GitHub app object), as check runs and the App's comments show it.
func (s *Server) appJSON() map[string]any {
	id := s.o.appID
	if id == 0 {
		id = stableID("app", s.o.appSlug)
	}
	return map[string]any{
		"id":           id,
		"slug":         s.o.appSlug,
		"node_id":      nodeID("A", id),
		"owner":        userJSON(appOwner, "Organization"),
		"name":         s.o.appSlug,
		"description":  "Plans and rolls out Argo CD application changes from pull requests.",
		"external_url": "https://fleetwave.example.com",
		"html_url":     webBase + "/apps/" + s.o.appSlug,
		"created_at":   ts(epoch),
		"updated_at":   ts(epoch),
		"permissions":  appPermissions(),
		"events":       appEvents,
	}
}

// checkRunAppJSON is the App that created cr: the fake's own, or another (AddCheckRun).
func (s *Server) checkRunAppJSON(cr *CheckRun) map[string]any {
	app := s.appJSON()
	if cr.AppID != 0 && cr.AppID != app["id"] {
		app["id"], app["slug"], app["name"], app["node_id"] = cr.AppID, "other-app", "other-app", nodeID("A", cr.AppID)
		app["html_url"] = webBase + "/apps/other-app"
	}
	return app
}

func (s *Server) installationTokenJSON(tok string, expires time.Time) map[string]any {
	return map[string]any{
		"token":                tok,
		"expires_at":           ts(expires),
		"permissions":          appPermissions(),
		"repository_selection": "all",
	}
}

func (s *Server) installationJSON(id int64, owner string) map[string]any {
	account := userJSON(owner, "Organization")
	return map[string]any{
		"id":                   id,
		"account":              account,
		"repository_selection": "selected",
		"access_tokens_url":    fmt.Sprintf("%s/app/installations/%d/access_tokens", apiBase, id),
		"repositories_url":     apiBase + "/installation/repositories",
		"html_url":             fmt.Sprintf("%s/organizations/%s/settings/installations/%d", webBase, owner, id),
		"app_id":               s.o.appID,
		"app_slug":             s.o.appSlug,
		"target_id":            account["id"],
		"target_type":          "Organization",
		"permissions":          appPermissions(),
		"events":               appEvents,
		"created_at":           ts(epoch),
		"updated_at":           ts(epoch),
		"single_file_name":     nil,
		"suspended_by":         nil,
		"suspended_at":         nil,
	}
}

func (s *Server) commentJSON(cm *Comment) map[string]any {
	v := map[string]any{
		"id":                 cm.ID,
		"node_id":            nodeID("IC", cm.ID),
		"url":                fmt.Sprintf("%s/repos/%s/issues/comments/%d", apiBase, cm.Repo, cm.ID),
		"html_url":           fmt.Sprintf("%s/%s/pull/%d#issuecomment-%d", webBase, cm.Repo, cm.Number, cm.ID),
		"issue_url":          fmt.Sprintf("%s/repos/%s/issues/%d", apiBase, cm.Repo, cm.Number),
		"body":               cm.Body,
		"user":               userJSON(cm.User, cm.UserType),
		"created_at":         ts(cm.CreatedAt),
		"updated_at":         ts(cm.UpdatedAt),
		"author_association": "NONE",
	}
	if cm.UserType == "Bot" {
		v["performed_via_github_app"] = s.appJSON()
	} else {
		v["author_association"] = "MEMBER"
	}
	return v
}

func (s *Server) reactionJSON(r Reaction, typ string) map[string]any {
	return map[string]any{
		"id":         r.ID,
		"node_id":    nodeID("REA", r.ID),
		"user":       userJSON(r.User, typ),
		"content":    r.Content,
		"created_at": ts(s.o.now()),
	}
}

func (s *Server) checkRunJSON(cr *CheckRun) map[string]any {
	var conclusion any
	if cr.Conclusion != "" {
		conclusion = cr.Conclusion
	}
	return map[string]any{
		"id":           cr.ID,
		"node_id":      nodeID("CR", cr.ID),
		"name":         cr.Name,
		"head_sha":     cr.HeadSHA,
		"status":       cr.Status,
		"conclusion":   conclusion,
		"started_at":   ts(cr.StartedAt),
		"completed_at": ts(cr.CompletedAt),
		"external_id":  cr.ExternalID,
		"details_url":  cr.DetailsURL,
		"url":          fmt.Sprintf("%s/repos/%s/check-runs/%d", apiBase, cr.Repo, cr.ID),
		"html_url":     fmt.Sprintf("%s/%s/runs/%d", webBase, cr.Repo, cr.ID),
		"output": map[string]any{
			"title": nullable(cr.Title), "summary": nullable(cr.Summary), "text": nullable(cr.Text),
			"annotations_count": len(cr.Annotations),
			"annotations_url":   fmt.Sprintf("%s/repos/%s/check-runs/%d/annotations", apiBase, cr.Repo, cr.ID),
		},
		"check_suite":   map[string]any{"id": stableID("suite", cr.Repo+"@"+cr.HeadSHA)},
		"app":           s.checkRunAppJSON(cr),
		"pull_requests": []any{},
	}
}

// pullJSON is pull request pr of repo.
func (s *Server) pullJSON(repo string, pr *PullRequest) map[string]any {
	api := fmt.Sprintf("%s/repos/%s", apiBase, repo)
	self := fmt.Sprintf("%s/pulls/%d", api, pr.Number)
	html := fmt.Sprintf("%s/%s/pull/%d", webBase, repo, pr.Number)
	issue := fmt.Sprintf("%s/issues/%d", api, pr.Number)
	link := func(href string) map[string]any { return map[string]any{"href": href} }
	branch := func(full, ref, sha string) map[string]any {
		owner, _, _ := strings.Cut(full, "/")
		return map[string]any{
			"label": owner + ":" + ref, "ref": ref, "sha": sha,
			"user": userJSON(owner, "Organization"), "repo": repoJSON(full, full != repo),
		}
	}
	additions, deletions := 0, 0
	for _, f := range pr.Files {
		additions += f.Additions
		deletions += f.Deletions
	}
	created := s.o.now().Add(-time.Hour).UTC().Truncate(time.Second)
	id := stableID("pull", fmt.Sprintf("%s#%d", repo, pr.Number))
	v := map[string]any{
		"id":                    id,
		"node_id":               nodeID("PR", id),
		"number":                pr.Number,
		"title":                 pr.Title,
		"body":                  nil,
		"state":                 pr.State,
		"draft":                 pr.Draft,
		"locked":                false,
		"user":                  userJSON(pr.Author, "User"),
		"author_association":    "MEMBER",
		"url":                   self,
		"html_url":              html,
		"diff_url":              html + ".diff",
		"patch_url":             html + ".patch",
		"issue_url":             issue,
		"commits_url":           self + "/commits",
		"review_comments_url":   self + "/comments",
		"review_comment_url":    api + "/pulls/comments{/number}",
		"comments_url":          issue + "/comments",
		"statuses_url":          api + "/statuses/" + pr.HeadSHA,
		"head":                  branch(pr.HeadRepo, pr.HeadRef, pr.HeadSHA),
		"base":                  branch(repo, pr.BaseRef, pr.BaseSHA),
		"created_at":            ts(created),
		"updated_at":            ts(created),
		"closed_at":             nil,
		"merged":                pr.Merged,
		"merged_at":             nil,
		"merged_by":             nil,
		"merge_commit_sha":      nullable(pr.MergeCommitSHA),
		"mergeable":             nil,
		"mergeable_state":       "unknown",
		"maintainer_can_modify": false,
		"assignee":              nil,
		"assignees":             []any{},
		"requested_reviewers":   []any{},
		"requested_teams":       []any{},
		"labels":                labelsJSON(repo, pr.Labels),
		"milestone":             nil,
		"auto_merge":            nil,
		"comments":              0,
		"review_comments":       0,
		"commits":               1,
		"additions":             additions,
		"deletions":             deletions,
		"changed_files":         len(pr.Files),
		"_links": map[string]any{
			"self": link(self), "html": link(html), "issue": link(issue), "comments": link(issue + "/comments"),
			"review_comments": link(self + "/comments"), "review_comment": link(api + "/pulls/comments{/number}"),
			"commits": link(self + "/commits"), "statuses": link(api + "/statuses/" + pr.HeadSHA),
		},
	}
	if pr.State == "open" && !pr.Draft {
		v["mergeable"] = true
		v["mergeable_state"] = "clean"
	}
	if pr.State == "closed" || pr.Merged {
		v["closed_at"] = ts(s.o.now())
	}
	if pr.Merged {
		v["merged_at"] = ts(s.o.now())
		v["merged_by"] = userJSON(pr.Author, "User")
	}
	return v
}

// fileJSON is a diff entry of pull request pr of repo.
func fileJSON(repo string, pr *PullRequest, f File) map[string]any {
	blob := sha1.Sum([]byte(pr.HeadSHA + ":" + f.Filename))
	path := escapePath(f.Filename)
	v := map[string]any{
		"sha":          hex.EncodeToString(blob[:]),
		"filename":     f.Filename,
		"status":       f.Status,
		"additions":    f.Additions,
		"deletions":    f.Deletions,
		"changes":      f.Additions + f.Deletions,
		"blob_url":     fmt.Sprintf("%s/%s/blob/%s/%s", webBase, repo, pr.HeadSHA, path),
		"raw_url":      fmt.Sprintf("%s/%s/raw/%s/%s", webBase, repo, pr.HeadSHA, path),
		"contents_url": fmt.Sprintf("%s/repos/%s/contents/%s?ref=%s", apiBase, repo, path, pr.HeadSHA),
	}
	if f.PreviousFilename != "" {
		v["previous_filename"] = f.PreviousFilename
	}
	return v
}

// escapePath escapes each segment of a slash-separated path.
func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

// permissionJSON is a collaborator's permission on a repository: permission is the legacy level (admin,
// write, read, none), role the role behind it.
func permissionJSON(user, permission, role string) map[string]any {
	u := userJSON(user, "User")
	u["role_name"] = role
	return map[string]any{"permission": permission, "role_name": role, "user": u}
}

func membershipJSON(org, team, user, state string) map[string]any {
	return map[string]any{
		"url":   fmt.Sprintf("%s/organizations/%d/team/%d/memberships/%s", apiBase, stableID("org", org), stableID("team", org+"/"+team), url.PathEscape(user)),
		"role":  "member",
		"state": state,
	}
}

// labelJSON is label name of repo as GitHub answers it: a label GitHub created when it was first added has no
// description and GitHub's default colour.
func labelJSON(repo, name string) map[string]any {
	id := stableID("label", repo+":"+strings.ToLower(name))
	return map[string]any{
		"id": id, "node_id": nodeID("LA", id), "name": name, "description": nil, "color": "ededed", "default": false,
		"url": fmt.Sprintf("%s/repos/%s/labels/%s", apiBase, repo, url.PathEscape(name)),
	}
}

// labelsJSON are the labels names of repo.
func labelsJSON(repo string, names []string) []any {
	out := []any{}
	for _, n := range names {
		out = append(out, labelJSON(repo, n))
	}
	return out
}
