package app_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/app"
	"github.com/fleetwave/fleetwave/internal/discover"
	"github.com/fleetwave/fleetwave/internal/preview"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

// TestInstancesReachThePreviewAndTheMerge: with WithInstances, the pull request's preview compares each app with
// the live state of the instance that holds it (never the instance "" of WithArgoCD), the comment names each
// app's instance and links it to that instance's UI, and the plan handed over at the merge carries the instance
// of every app.
func TestInstancesReachThePreviewAndTheMerge(t *testing.T) {
	f := newFixture(t, fleetChange(t))
	gittest.Run(t, f.dir, "merge", "-q", "--no-ff", "-m", "Merge pull request #2", "changes")
	merge := gittest.Run(t, f.dir, "rev-parse", "HEAD")
	single, eu := &countingLive{}, &countingLive{}
	h := newHarness(t, nil, app.WithArgoCD(preview.ArgoCD{Live: single}), app.WithArgoCDURL("https://argocd.example"),
		app.WithInstances(app.Instances{
			Of: func(discover.App) (string, error) { return "eu", nil },
			List: func(context.Context) (map[string]preview.Instance, error) {
				return map[string]preview.Instance{"eu": {ArgoCD: preview.ArgoCD{Live: eu}}}, nil
			},
			URLs: map[string]string{"eu": "https://argocd-eu.example"},
		}))
	h.open(f)
	if eu.apps.Load() == 0 || single.apps.Load() != 0 {
		t.Errorf("live state compared by eu for %d apps and by the instance \"\" for %d; want eu alone", eu.apps.Load(), single.apps.Load())
	}
	comments := h.fake.Comments(repoFullName, prNumber)
	if len(comments) == 0 {
		t.Fatal("no comment")
	}
	body := comments[0].Body
	if !strings.Contains(body, "→ eu/") || !strings.Contains(body, "https://argocd-eu.example/applications/argocd/") ||
		strings.Contains(body, "https://argocd.example/") {
		t.Errorf("the comment does not show the apps on eu with eu's links:\n%s", body)
	}
	closed := payload(t, "pull_request/closed-merged.json", map[string]any{
		"repository.clone_url": f.cloneURL(), "pull_request.head.sha": f.head(), "pull_request.base.sha": f.base,
		"pull_request.merged": true, "pull_request.merge_commit_sha": merge,
	})
	if code := h.send("pull_request", "", closed); code != http.StatusAccepted {
		t.Fatalf("closed answered %d", code)
	}
	h.wait()
	if len(h.merges.merges) != 1 || h.merges.merges[0].Plan == nil || h.merges.merges[0].Plan.AppCount() == 0 {
		t.Fatalf("merges handed over: %+v", h.merges.merges)
	}
	for _, w := range h.merges.merges[0].Plan.Waves {
		for _, b := range w.Batches {
			for _, a := range b.Apps {
				if a.Instance != "eu" {
					t.Errorf("merge plan: %s on instance %q, want eu", a.Name, a.Instance)
				}
			}
		}
	}
}
