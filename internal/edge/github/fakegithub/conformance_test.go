package fakegithub

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/fleetwave/fleetwave/internal/testkit/sharedtest"
)

// The fake's routes and answers are written here; these tests check them against GitHub's REST description
// beside the repository (skipped on a bare clone, failed without it under FLEETWAVE_REQUIRE_SHARED=1).

func sharedDescription(t *testing.T) *description {
	t.Helper()
	d, err := loadDescription(sharedtest.Dir(t, descriptionDir))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Every operation the fake serves is GitHub's: same method, path template and operationId (loadDescription
// refuses any other), and the documentation URL of its errors is the description's.
func TestOperationsAreGitHubs(t *testing.T) {
	d := sharedDescription(t)
	if len(d.routes) != len(operations) {
		t.Fatalf("%d of %d operations bound", len(d.routes), len(operations))
	}
	for _, op := range operations {
		r := d.routes[op.id]
		if r.Operation.ExternalDocs == nil || r.Operation.ExternalDocs.URL != op.doc {
			t.Errorf("%s: documentation %q, GitHub's is %v", op.id, op.doc, r.Operation.ExternalDocs)
		}
	}
	t.Logf("operations from the full description: %v", d.extra)

	// bind can fail: a method or name that is not GitHub's.
	for _, bad := range []operation{
		{id: "pulls/get", method: "POST", template: "/repos/{owner}/{repo}/pulls/{pull_number}"},
		{id: "pulls/fetch", method: "GET", template: "/repos/{owner}/{repo}/pulls/{pull_number}"},
		{id: "pulls/get", method: "GET", template: "/repos/{owner}/{repo}/pull/{pull_number}"},
	} {
		if _, err := bind(d.doc, []operation{bad}); err == nil {
			t.Errorf("%s %s as %s was bound", bad.method, bad.template, bad.id)
		}
	}
}

// checkAnswer validates v as the status answer of operation id against the description.
func checkAnswer(d *description, id string, status int, v any) error {
	r := d.routes[id]
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	in := &openapi3filter.RequestValidationInput{
		Request: httptest.NewRequest(r.Method, "http://fake"+r.Path, nil), Route: r,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true},
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json; charset=utf-8")
	return openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: status, Header: h, Body: io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{MultiError: true},
	})
}

// Every object the fake answers with, in each of the states it can be in, has GitHub's documented shape.
func TestAnswersHaveGitHubsShape(t *testing.T) {
	d := sharedDescription(t)
	now := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	s := &Server{o: options{appSlug: "fleetwave", appID: 99, now: func() time.Time { return now }}}
	other := &Server{o: options{appSlug: "other-app", now: time.Now}} // no App id configured

	bot := &Comment{ID: 11, Repo: repo, Number: 7, Body: "plan", User: "fleetwave[bot]", UserType: "Bot", CreatedAt: now, UpdatedAt: now}
	person := &Comment{ID: 12, Repo: repo, Number: 7, Body: "/fleetwave plan", User: "alice", UserType: "User", CreatedAt: now, UpdatedAt: now.Add(time.Minute)}
	queued := &CheckRun{ID: 21, Repo: repo, Name: "fleetwave/plan", HeadSHA: sha, Status: "queued"}
	running := &CheckRun{ID: 22, Repo: repo, Name: "fleetwave/wave: canary", HeadSHA: sha, Status: "in_progress", StartedAt: now,
		ExternalID: "rollout-1", DetailsURL: "https://fleetwave.example.com/rollouts/1", Title: "Wave 1 of 3", Summary: "2 of 4 apps synced"}
	done := &CheckRun{ID: 23, Repo: repo, Name: "fleetwave/diff", HeadSHA: sha, Status: "completed", Conclusion: "failure",
		StartedAt: now, CompletedAt: now.Add(time.Minute), Title: "Diff", Summary: "s", Text: "t",
		Annotations: []map[string]any{{"path": "a.yaml"}}}
	open := &PullRequest{Number: 7, Title: "Bump guestbook", Author: "alice", State: "open", HeadSHA: sha, HeadRef: "bump",
		HeadRepo: repo, BaseSHA: strings.Repeat("b", 40), BaseRef: "main",
		Files:  []File{{Filename: "apps/guestbook/values.yaml", Status: "modified", Additions: 2, Deletions: 1}},
		Labels: []string{"risk: crd", "images"}}
	draftFork := &PullRequest{Number: 8, Title: "From a fork", Author: "bob", State: "open", Draft: true, HeadSHA: sha,
		HeadRef: "patch-1", HeadRepo: "bob/gitops", BaseSHA: sha, BaseRef: "main"}
	merged := &PullRequest{Number: 9, Title: "Merged", Author: "alice", State: "closed", Merged: true,
		MergeCommitSHA: strings.Repeat("c", 40), HeadSHA: sha, HeadRef: "done", HeadRepo: repo, BaseSHA: sha, BaseRef: "main"}
	closed := &PullRequest{Number: 10, Title: "Closed", Author: "alice", State: "closed", HeadSHA: sha, HeadRef: "nope",
		HeadRepo: repo, BaseSHA: sha, BaseRef: "main"}
	files := []any{
		fileJSON(repo, open, File{Filename: "apps/guestbook/values.yaml", Status: "modified", Additions: 2, Deletions: 1}),
		fileJSON(repo, open, File{Filename: "apps/new app/kustomization.yaml", Status: "added", Additions: 9}),
		fileJSON(repo, open, File{Filename: "apps/b.yaml", PreviousFilename: "apps/a.yaml", Status: "renamed"}),
		fileJSON(repo, open, File{Filename: "apps/old.yaml", Status: "removed", Deletions: 4}),
	}
	openIssue := &Issue{Repo: repo, Number: 11, Title: "Drift: argocd/web-eu", Body: "<!-- fleetwave:drift -->\nOutOfSync", State: "open",
		User: "fleetwave[bot]", UserType: "Bot", CreatedAt: now, UpdatedAt: now}
	closedIssue := &Issue{Repo: repo, Number: 12, Title: "Drift: argocd/web-us", State: "closed", StateReason: "completed",
		User: "fleetwave[bot]", UserType: "Bot", CreatedAt: now, UpdatedAt: now.Add(time.Hour), ClosedAt: now.Add(time.Hour)}
	personsIssue := &Issue{Repo: repo, Number: 13, Title: "Question", Body: "", State: "open", User: "alice", UserType: "User",
		CreatedAt: now, UpdatedAt: now}
	notFound := map[string]any{"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}
	refused := validationFailed(call{op: operationByID("issues/create-comment")}, "IssueComment", "body", "body cannot be blank")
	var refusedBody any
	if err := json.Unmarshal(refused.body, &refusedBody); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		op     string
		status int
		v      any
	}{
		{"token", "apps/create-installation-access-token", 201, s.installationTokenJSON("ghs_x", now.Add(time.Hour))},
		{"installation", "apps/get-repo-installation", 200, s.installationJSON(5, "acme")},
		{"installation of an App without id", "apps/get-repo-installation", 200, other.installationJSON(5, "acme")},
		{"no installation", "apps/get-repo-installation", 404, notFound},
		{"created issue", "issues/create", 201, s.issueJSON(openIssue)},
		{"refused issue", "issues/create", 422, refusedBody},
		{"edited issue", "issues/update", 200, s.issueJSON(openIssue)},
		{"closed issue", "issues/update", 200, s.issueJSON(closedIssue)},
		{"no issue", "issues/update", 404, notFound},
		{"issues and pull requests", "issues/list-for-repo", 200, []any{s.issueJSON(openIssue), s.issueJSON(personsIssue), s.pullIssueJSON(repo, open), s.pullIssueJSON(repo, merged)}},
		{"no issues", "issues/list-for-repo", 200, []any{}},
		{"comments", "issues/list-comments", 200, []any{s.commentJSON(bot), s.commentJSON(person)}},
		{"no comments", "issues/list-comments", 200, []any{}},
		{"created comment", "issues/create-comment", 201, s.commentJSON(bot)},
		{"refused comment", "issues/create-comment", 422, refusedBody},
		{"edited comment", "issues/update-comment", 200, s.commentJSON(bot)},
		{"labels added", "issues/add-labels", 200, labelsJSON(repo, []string{"risk: crd", "images"})},
		{"label refused", "issues/add-labels", 422, refusedBody},
		{"label removed", "issues/remove-label", 200, labelsJSON(repo, []string{"images"})},
		{"last label removed", "issues/remove-label", 200, labelsJSON(repo, nil)},
		{"label not there", "issues/remove-label", 404, map[string]any{"message": "Label does not exist", "documentation_url": "https://docs.github.com/rest"}},
		{"reaction created", "reactions/create-for-issue-comment", 201, s.reactionJSON(Reaction{ID: 31, CommentID: 12, Content: "eyes", User: "fleetwave[bot]"}, "Bot")},
		{"reaction exists", "reactions/create-for-issue-comment", 200, s.reactionJSON(Reaction{ID: 31, CommentID: 12, Content: "+1", User: "alice"}, "User")},
		{"queued run", "checks/create", 201, s.checkRunJSON(queued)},
		{"run of an App without id", "checks/create", 201, other.checkRunJSON(queued)},
		{"running run", "checks/update", 200, s.checkRunJSON(running)},
		{"completed run", "checks/update", 200, s.checkRunJSON(done)},
		{"runs", "checks/list-for-ref", 200, map[string]any{"total_count": 3, "check_runs": []any{s.checkRunJSON(done), s.checkRunJSON(running), s.checkRunJSON(queued)}}},
		{"open pull request", "pulls/get", 200, s.pullJSON(repo, open)},
		{"draft from a fork", "pulls/get", 200, s.pullJSON(repo, draftFork)},
		{"merged", "pulls/get", 200, s.pullJSON(repo, merged)},
		{"closed", "pulls/get", 200, s.pullJSON(repo, closed)},
		{"no pull request", "pulls/get", 404, notFound},
		{"files", "pulls/list-files", 200, files},
		{"admin", "repos/get-collaborator-permission-level", 200, permissionJSON("alice", "admin", "admin")},
		{"maintainer", "repos/get-collaborator-permission-level", 200, permissionJSON("alice", "write", "maintain")},
		{"no access", "repos/get-collaborator-permission-level", 200, permissionJSON("mallory", "none", "none")},
		{"active member", "teams/get-membership-for-user-in-org", 200, membershipJSON("acme", "sre", "alice", "active")},
		{"pending member", "teams/get-membership-for-user-in-org", 200, membershipJSON("acme", "sre", "bob", "pending")},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		seen[tt.op] = true
		if err := checkAnswer(d, tt.op, tt.status, tt.v); err != nil {
			t.Errorf("%s (%s %d): %s", tt.name, tt.op, tt.status, clip(err.Error(), 2000))
		}
	}
	for _, op := range operations {
		if !seen[op.id] && op.id != "issues/delete-comment" { // 204, no body
			t.Errorf("no answer of %s checked", op.id)
		}
	}

	// The check can fail: a required field missing, a field of the wrong type.
	broken := s.pullJSON(repo, open)
	delete(broken["head"].(map[string]any)["repo"].(map[string]any), "clone_url")
	if err := checkAnswer(d, "pulls/get", 200, broken); err == nil {
		t.Error("a pull request whose head repository has no clone_url passed")
	}
	wrong := s.checkRunJSON(done)
	wrong["id"] = "23"
	if err := checkAnswer(d, "checks/update", 200, wrong); err == nil {
		t.Error("a check run with a string id passed")
	}
}

// extractOperations follows references from the operations it extracts, and only those; it needs no
// third-party material to be tested: this description is ours.
func TestExtractOperations(t *testing.T) {
	full := map[string]any{
		"openapi": "3.0.3",
		"paths": map[string]any{
			"/orgs/{org}/widgets/{id}": map[string]any{
				"parameters": []any{map[string]any{"$ref": "#/components/parameters/org"}},
				"get": map[string]any{"operationId": "widgets/get", "x-octokit": map[string]any{"x": 1},
					"responses": map[string]any{"200": map[string]any{"$ref": "#/components/responses/widget"}}},
				"delete": map[string]any{"operationId": "widgets/delete",
					"responses": map[string]any{"204": map[string]any{"$ref": "#/components/responses/gone"}}},
			},
		},
		"components": map[string]any{
			"parameters": map[string]any{"org": map[string]any{"name": "org", "in": "path"}},
			"responses": map[string]any{
				"widget": map[string]any{"content": map[string]any{"application/json": map[string]any{
					"schema": map[string]any{"$ref": "#/components/schemas/widget"}}}},
				"gone": map[string]any{"description": "gone"},
			},
			"schemas": map[string]any{
				"widget": map[string]any{"properties": map[string]any{"owner": map[string]any{"$ref": "#/components/schemas/owner"}}},
				"owner":  map[string]any{"type": "object"},
				"unused": map[string]any{"type": "string"},
			},
		},
	}
	gz := filepath.Join(t.TempDir(), "api.json.gz")
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(full); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gz, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	get := &operation{id: "widgets/get", method: "GET", template: "/orgs/{org}/widgets/{id}"}
	got, err := extractOperations(gz, []*operation{get})
	if err != nil {
		t.Fatal(err)
	}
	item := got["paths"].(map[string]any)["/orgs/{org}/widgets/{id}"].(map[string]any)
	if _, ok := item["delete"]; ok || item["parameters"] == nil || item["get"].(map[string]any)["x-octokit"] != nil {
		t.Errorf("path item %v: want get without x-octokit, the parameters, no delete", item)
	}
	comps := got["components"].(map[string]any)
	for kind, names := range map[string][]string{"parameters": {"org"}, "responses": {"widget"}, "schemas": {"widget", "owner"}} {
		if len(comps[kind].(map[string]any)) != len(names) {
			t.Errorf("%s: %v, want %v", kind, comps[kind], names)
		}
		for _, n := range names {
			if comps[kind].(map[string]any)[n] == nil {
				t.Errorf("%s/%s not extracted", kind, n)
			}
		}
	}

	base := map[string]any{"paths": map[string]any{}, "components": map[string]any{"schemas": map[string]any{"owner": "ours"}}}
	merge(base, got)
	if base["components"].(map[string]any)["schemas"].(map[string]any)["owner"] != "ours" || base["paths"].(map[string]any)["/orgs/{org}/widgets/{id}"] == nil {
		t.Errorf("merged: %v", base)
	}

	for _, missing := range []*operation{
		{id: "widgets/list", method: "GET", template: "/orgs/{org}/widgets"},
		{id: "widgets/remove", method: "DELETE", template: "/orgs/{org}/widgets/{id}"}, // GitHub names it otherwise
	} {
		if _, err := extractOperations(gz, []*operation{missing}); err == nil || !strings.Contains(err.Error(), missing.id) {
			t.Errorf("%s: %v", missing.id, err)
		}
	}
}
