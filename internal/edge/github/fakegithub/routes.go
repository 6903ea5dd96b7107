package fakegithub

import (
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// operation is one of the GitHub REST operations the bot calls, as the fake serves it. id, method and
// template are GitHub's (the conformance test checks them against the description when it is there); doc is
// the documentation_url GitHub puts in its error answers.
type operation struct {
	id       string
	method   string
	template string
	doc      string
	serve    func(*Server, call) answer
}

// operations are exactly the operations fleetwave's GitHub adapter (internal/edge/github) calls.
var operations = []operation{
	{"apps/create-installation-access-token", "POST", "/app/installations/{installation_id}/access_tokens",
		"https://docs.github.com/rest/apps/apps#create-an-installation-access-token-for-an-app", (*Server).createToken},
	{"apps/get-repo-installation", "GET", "/repos/{owner}/{repo}/installation",
		"https://docs.github.com/rest/apps/apps#get-a-repository-installation-for-the-authenticated-app", (*Server).getRepoInstallation},
	{"issues/create", "POST", "/repos/{owner}/{repo}/issues",
		"https://docs.github.com/rest/issues/issues#create-an-issue", (*Server).createIssue},
	{"issues/update", "PATCH", "/repos/{owner}/{repo}/issues/{issue_number}",
		"https://docs.github.com/rest/issues/issues#update-an-issue", (*Server).updateIssue},
	{"issues/list-for-repo", "GET", "/repos/{owner}/{repo}/issues",
		"https://docs.github.com/rest/issues/issues#list-repository-issues", (*Server).listIssues},
	{"issues/list-comments", "GET", "/repos/{owner}/{repo}/issues/{issue_number}/comments",
		"https://docs.github.com/rest/issues/comments#list-issue-comments", (*Server).listComments},
	{"issues/create-comment", "POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments",
		"https://docs.github.com/rest/issues/comments#create-an-issue-comment", (*Server).createComment},
	{"issues/update-comment", "PATCH", "/repos/{owner}/{repo}/issues/comments/{comment_id}",
		"https://docs.github.com/rest/issues/comments#update-an-issue-comment", (*Server).updateComment},
	{"issues/delete-comment", "DELETE", "/repos/{owner}/{repo}/issues/comments/{comment_id}",
		"https://docs.github.com/rest/issues/comments#delete-an-issue-comment", (*Server).deleteComment},
	{"reactions/create-for-issue-comment", "POST", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions",
		"https://docs.github.com/rest/reactions/reactions#create-reaction-for-an-issue-comment", (*Server).createReaction},
	{"issues/add-labels", "POST", "/repos/{owner}/{repo}/issues/{issue_number}/labels",
		"https://docs.github.com/rest/issues/labels#add-labels-to-an-issue", (*Server).addLabels},
	{"issues/remove-label", "DELETE", "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}",
		"https://docs.github.com/rest/issues/labels#remove-a-label-from-an-issue", (*Server).removeLabel},
	{"checks/create", "POST", "/repos/{owner}/{repo}/check-runs",
		"https://docs.github.com/rest/reference/checks#create-a-check-run", (*Server).createCheckRun},
	{"checks/update", "PATCH", "/repos/{owner}/{repo}/check-runs/{check_run_id}",
		"https://docs.github.com/rest/checks/runs#update-a-check-run", (*Server).updateCheckRun},
	{"checks/list-for-ref", "GET", "/repos/{owner}/{repo}/commits/{ref}/check-runs",
		"https://docs.github.com/rest/checks/runs#list-check-runs-for-a-git-reference", (*Server).listCheckRuns},
	{"pulls/get", "GET", "/repos/{owner}/{repo}/pulls/{pull_number}",
		"https://docs.github.com/rest/pulls/pulls#get-a-pull-request", (*Server).getPull},
	{"pulls/list-files", "GET", "/repos/{owner}/{repo}/pulls/{pull_number}/files",
		"https://docs.github.com/rest/pulls/pulls#list-pull-requests-files", (*Server).listFiles},
	{"repos/get-collaborator-permission-level", "GET", "/repos/{owner}/{repo}/collaborators/{username}/permission",
		"https://docs.github.com/rest/collaborators/collaborators#get-repository-permissions-for-a-user", (*Server).getPermission},
	{"teams/get-membership-for-user-in-org", "GET", "/orgs/{org}/teams/{team_slug}/memberships/{username}",
		"https://docs.github.com/rest/teams/members#get-team-membership-for-a-user", (*Server).getMembership},
}

// route matches request paths to an operation.
type route struct {
	op     *operation
	re     *regexp.Regexp
	params []string
}

// greedyParams may contain "/" (go-github sends refs unescaped).
var greedyParams = map[string]bool{"ref": true}

var paramRe = regexp.MustCompile(`\{([^}]+)\}`)

// routes are the operations' path templates as regular expressions, literal segments first: a template
// with fewer parameters is tried before a more general one.
var routes = func() []route {
	var rs []route
	for i := range operations {
		op := &operations[i]
		var params []string
		var b strings.Builder
		b.WriteString("^")
		last := 0
		for _, m := range paramRe.FindAllStringSubmatchIndex(op.template, -1) {
			b.WriteString(regexp.QuoteMeta(op.template[last:m[0]]))
			name := op.template[m[2]:m[3]]
			params = append(params, name)
			if greedyParams[name] {
				b.WriteString("(.+)")
			} else {
				b.WriteString("([^/]+)")
			}
			last = m[1]
		}
		b.WriteString(regexp.QuoteMeta(op.template[last:]) + "$")
		rs = append(rs, route{op: op, re: regexp.MustCompile(b.String()), params: params})
	}
	sort.SliceStable(rs, func(i, j int) bool {
		if len(rs[i].params) != len(rs[j].params) {
			return len(rs[i].params) < len(rs[j].params)
		}
		return rs[i].op.template < rs[j].op.template
	})
	return rs
}()

// findRoute returns the operation for a request path (without the API prefix) and its path parameters.
func findRoute(method, path string) (*operation, map[string]string, bool) {
	for _, r := range routes {
		if r.op.method != method {
			continue
		}
		m := r.re.FindStringSubmatch(path)
		if m == nil {
			continue
		}
		params := map[string]string{}
		for i, name := range r.params {
			v, err := url.PathUnescape(m[i+1])
			if err != nil {
				v = m[i+1]
			}
			params[name] = v
		}
		return r.op, params, true
	}
	return nil, nil, false
}

// operationByID returns the operation named id; it panics on a name the fake does not serve.
func operationByID(id string) *operation {
	for i := range operations {
		if operations[i].id == id {
			return &operations[i]
		}
	}
	panic(fmt.Sprintf("fakegithub: no operation %q", id))
}
