package app

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/edge/github"
)

// clientCalls are the GitHub calls fleetwave makes, by method of internal/edge/github's Client, with the permission
// each needs (GitHub's REST reference, "Fine-grained permissions" of each endpoint). A new method of the Client
// fails TestManifestMatchesTheCode until it is listed here, so app.yml follows the code.
var clientCalls = map[string]string{
	"Permission":       "metadata:read",      // GET /repos/{o}/{r}/collaborators/{user}/permission
	"IsTeamMember":     "members:read",       // GET /orgs/{org}/teams/{team}/memberships/{user}
	"CreateCheckRun":   "checks:write",       // POST /repos/{o}/{r}/check-runs
	"UpdateCheckRun":   "checks:write",       // PATCH /repos/{o}/{r}/check-runs/{id}
	"ListCheckRuns":    "checks:read",        // GET /repos/{o}/{r}/commits/{ref}/check-runs
	"UpsertComment":    "issues:write",       // POST/PATCH /repos/{o}/{r}/issues/{n}/comments (PR comments are issue comments)
	"Reply":            "issues:write",       // POST /repos/{o}/{r}/issues/{n}/comments
	"React":            "issues:write",       // POST /repos/{o}/{r}/issues/comments/{id}/reactions
	"AddLabels":        "issues:write",       // POST /repos/{o}/{r}/issues/{n}/labels (issues:write or pull_requests:write; the App has the first)
	"RemoveLabel":      "issues:write",       // DELETE /repos/{o}/{r}/issues/{n}/labels/{name} (likewise)
	"PullRequest":      "pull_requests:read", // GET /repos/{o}/{r}/pulls/{n}
	"CreateIssue":      "issues:write",       // POST /repos/{o}/{r}/issues (drift reports)
	"EditIssue":        "issues:write",       // PATCH /repos/{o}/{r}/issues/{n}
	"CloseIssue":       "issues:write",       // PATCH /repos/{o}/{r}/issues/{n}, after a comment
	"OpenIssues":       "issues:read",        // GET /repos/{o}/{r}/issues
	"PullRequestFiles": "pull_requests:read", // GET /repos/{o}/{r}/pulls/{n}/files
}

// otherNeeds are the permissions needed outside the Client: cloning (git over https with the installation token)
// and GitHub's own rules for the subscribed events (a merge_group subscription needs merge_queues).
var otherNeeds = []string{"contents:read", "merge_queues:read"}

// eventPermission is the permission GitHub requires to subscribe to each event (webhook events reference,
// "Availability").
var eventPermission = map[string][]string{
	"pull_request":  {"pull_requests"},
	"issue_comment": {"issues", "pull_requests"},
	"check_run":     {"checks"},
	"check_suite":   {"checks"},
	"push":          {"contents"},
	"merge_group":   {"merge_queues"},
}

var levels = map[string]int{"read": 1, "write": 2}

// TestManifestMatchesTheCode: app.yml subscribes to exactly the events the App handles, asks for every permission
// the code's calls need, and for nothing more (least privilege).
func TestManifestMatchesTheCode(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "app.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Name           string            `json:"name"`
		URL            string            `json:"url"`
		HookAttributes map[string]any    `json:"hook_attributes"`
		Permissions    map[string]string `json:"default_permissions"`
		Events         []string          `json:"default_events"`
		Public         *bool             `json:"public"`
		// The other keys of GitHub's manifest format.
		Description           string   `json:"description"`
		RedirectURL           string   `json:"redirect_url"`
		CallbackURLs          []string `json:"callback_urls"`
		SetupURL              string   `json:"setup_url"`
		RequestOAuthOnInstall bool     `json:"request_oauth_on_install"`
		SetupOnUpdate         bool     `json:"setup_on_update"`
	}
	if err := yaml.UnmarshalStrict(raw, &m); err != nil {
		// Unknown keys are not part of GitHub's manifest format (Registering a GitHub App from a manifest).
		t.Fatalf("app.yml is not a GitHub App manifest: %v", err)
	}
	if m.Name == "" || m.URL == "" || m.HookAttributes["url"] == nil || m.Public == nil {
		t.Errorf("app.yml lacks name, url, hook_attributes.url or public: %+v", m)
	}

	// Events: exactly those the App handles.
	var handled []string
	for _, h := range (&App{}).Handles() {
		name, _, _ := strings.Cut(h, ".")
		if !slices.Contains(handled, name) {
			handled = append(handled, name)
		}
	}
	sort.Strings(handled)
	events := slices.Clone(m.Events)
	sort.Strings(events)
	if !slices.Equal(events, handled) {
		t.Errorf("app.yml subscribes to %v; the App handles %v", events, handled)
	}
	for _, ev := range m.Events {
		ok := false
		for _, p := range eventPermission[ev] {
			ok = ok || m.Permissions[p] != ""
		}
		if !ok {
			t.Errorf("event %s needs one of the permissions %v", ev, eventPermission[ev])
		}
	}

	// Permissions: what the calls need, at the level they need, and nothing else.
	var methods []string
	ct := reflect.TypeOf(&github.Client{})
	for i := 0; i < ct.NumMethod(); i++ {
		methods = append(methods, ct.Method(i).Name)
	}
	need := map[string]int{}
	for _, name := range methods {
		p, ok := clientCalls[name]
		if !ok {
			t.Errorf("github.Client.%s is not in clientCalls: say which permission it needs", name)
			continue
		}
		perm, lvl, _ := strings.Cut(p, ":")
		need[perm] = max(need[perm], levels[lvl])
	}
	for _, p := range otherNeeds {
		perm, lvl, _ := strings.Cut(p, ":")
		need[perm] = max(need[perm], levels[lvl])
	}
	for perm, lvl := range need {
		if levels[m.Permissions[perm]] < lvl {
			t.Errorf("app.yml gives %s %q; the code needs %s", perm, m.Permissions[perm], []string{"", "read", "write"}[lvl])
		}
	}
	for perm, lvl := range m.Permissions {
		if levels[lvl] == 0 {
			t.Errorf("app.yml: %s: %q is not read or write", perm, lvl)
		}
		if levels[lvl] > need[perm] {
			t.Errorf("app.yml gives %s %q, more than the code needs (%d)", perm, lvl, need[perm])
		}
	}
}
