package app_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/app"
)

// A pull request from a fork is previewed under the base repository's names (the webhook's repository, which
// is what Applications name), not the fork's: the apps render and the change shows.
func TestForkPullRequestPreviewsUnderTheBaseRepository(t *testing.T) {
	f := newFixture(t, fleetChange(t))
	h := newHarness(t, nil)
	h.openPR(f, f.head())
	body := payload(t, "pull_request/opened.json", map[string]any{
		"repository.clone_url":             f.cloneURL(),
		"pull_request.head.sha":            f.head(),
		"pull_request.base.sha":            f.base,
		"pull_request.head.repo.full_name": "alice/Hello-World-fork",
		"pull_request.head.repo.name":      "Hello-World-fork",
		"pull_request.head.repo.html_url":  "https://github.com/alice/Hello-World-fork",
		"pull_request.head.repo.clone_url": "https://github.com/alice/Hello-World-fork.git",
		"pull_request.head.repo.ssh_url":   "git@github.com:alice/Hello-World-fork.git",
	})
	if code := h.send("pull_request", "", body); code != http.StatusAccepted {
		t.Fatalf("delivery answered %d", code)
	}
	h.wait()
	runs := h.runsOn(f.head())
	if len(runs[app.CheckDiff]) != 1 {
		t.Fatalf("check runs %v", runs)
	}
	d := runs[app.CheckDiff][0]
	if d.Conclusion != "success" || strings.Contains(d.Summary, "no app takes a source") {
		t.Errorf("fleetwave/diff of a fork's pull request: %s %q\n%s", d.Conclusion, d.Title, d.Summary)
	}
}
