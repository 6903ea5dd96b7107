package executor

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/checkrun"
	"github.com/fleetwave/fleetwave/internal/edge/github"
	"github.com/fleetwave/fleetwave/internal/edge/github/fakegithub"
)

const appID = 4242

// newGitHub is a GitHub App over fakegithub, which validates every request against GitHub's OpenAPI
// description.
func newGitHub(t *testing.T, opts ...fakegithub.Option) (*fakegithub.Server, func(int64) (CheckRuns, error)) {
	t.Helper()
	fake, ghApp := newGitHubApp(t, opts...)
	return fake, func(id int64) (CheckRuns, error) { return ghApp.Client(id) }
}

func newGitHubApp(t *testing.T, opts ...fakegithub.Option) (*fakegithub.Server, *github.App) {
	t.Helper()
	key, keyPEM := fakegithub.AppKey()
	fake := fakegithub.New(t, append([]fakegithub.Option{fakegithub.WithApp(appID, &key.PublicKey)}, opts...)...)
	ghApp, err := github.NewApp(github.AppConfig{
		AppID: appID, PrivateKey: keyPEM,
		APIURL: fake.URL(), Transport: fake.Client().Transport,
		Retry: github.RetryPolicy{MaxAttempts: 1, BaseDelay: time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	return fake, ghApp
}

func TestReporterPublishesCheckRuns(t *testing.T) {
	fake, clients := newGitHub(t)
	rep := NewReporter(clients, nil)
	ctx := context.Background()
	started := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

	cr := github.CheckRun{HeadSHA: mergeSHA, Name: checkrun.CheckWavePrefix + "canary",
		ExternalID: "fleetwave:12:wave:canary", Status: github.StatusQueued, Output: &github.CheckOutput{Title: "Waiting", Summary: "Waits for wave 0."}}
	id, err := rep.WriteCheckRun(ctx, 7, repo, 0, cr)
	if err != nil || id == 0 {
		t.Fatalf("create: id %d, err %v", id, err)
	}
	cr.Status, cr.StartedAt = github.StatusInProgress, started
	cr.Output = &github.CheckOutput{Title: "Syncing 2 apps", Summary: "Batch 1 of 1.", Text: "| app | state |\n|---|---|\n| a | synced |"}
	cr.Actions = []github.CheckAction{{Label: "Pause", Description: "Stop starting syncs", Identifier: "pause"}}
	if got, err := rep.WriteCheckRun(ctx, 7, repo, id, cr); err != nil || got != id {
		t.Fatalf("update: id %d, err %v; want %d", got, err, id)
	}
	cr.Status, cr.Conclusion, cr.CompletedAt = github.StatusCompleted, github.ConclusionFailure, started.Add(time.Minute)
	cr.Output = &github.CheckOutput{Title: "1 app failed", Summary: "1 app failed"} // checkrun: the title stands in for a missing summary, as GitHub needs one
	if got, err := rep.WriteCheckRun(ctx, 7, repo, id, cr); err != nil || got != id {
		t.Fatalf("complete: id %d, err %v; want %d", got, err, id)
	}

	runs := fake.CheckRuns(repo)
	if len(runs) != 1 {
		t.Fatalf("%d check runs, want 1: %+v", len(runs), runs)
	}
	r := runs[0]
	if r.Name != "fleetwave/wave: canary" || r.HeadSHA != mergeSHA || r.ExternalID != "fleetwave:12:wave:canary" ||
		r.Status != "completed" || r.Conclusion != "failure" || r.Title != "1 app failed" || r.Summary != "1 app failed" {
		t.Errorf("check run = %+v", r)
	}
	if got := strings.Join(r.History, " → "); got != "queued → in_progress → completed" {
		t.Errorf("history %s", got)
	}
	if len(r.Actions) != 1 || r.Actions[0]["identifier"] != "pause" {
		t.Errorf("actions %v", r.Actions)
	}
	// started_at is set when a run is created (GitHub's update takes none; go-github sends none).
	if !r.CompletedAt.Equal(started.Add(time.Minute)) {
		t.Errorf("completed %v, want %v", r.CompletedAt, started.Add(time.Minute))
	}
	checkCalls := 0
	for _, req := range fake.Requests() {
		if strings.HasPrefix(req.Operation, "checks/") {
			checkCalls++
			if req.Installation != 7 {
				t.Errorf("%s %s with the token of installation %d, want 7", req.Method, req.Path, req.Installation)
			}
		}
	}
	if checkCalls != 3 {
		t.Errorf("%d check-run requests, want 3 (create, 2 updates)", checkCalls)
	}
}

func TestReporterUnknownInstallation(t *testing.T) {
	fake, clients := newGitHub(t)
	rep := NewReporter(clients, nil)
	_, err := rep.WriteCheckRun(context.Background(), 0, repo, 0, github.CheckRun{HeadSHA: mergeSHA, Name: checkrun.CheckRollout, Status: github.StatusQueued})
	if err == nil || !strings.Contains(err.Error(), "the rollout names no App installation") {
		t.Errorf("err = %v", err)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

// A rollout recorded before the store kept its installation: the Reporter asks GitHub which installation covers
// the repository (with the App's JWT), once, and publishes with that installation's token.
func TestReporterFindsTheInstallation(t *testing.T) {
	fake, ghApp := newGitHubApp(t, fakegithub.WithInstallation(repo, 31))
	rep := NewReporter(func(id int64) (CheckRuns, error) { return ghApp.Client(id) }, ghApp.RepoInstallation)
	ctx := context.Background()
	for range 2 {
		if _, err := rep.WriteCheckRun(ctx, 0, repo, 0, github.CheckRun{HeadSHA: mergeSHA, Name: checkrun.CheckRollout, Status: github.StatusQueued}); err != nil {
			t.Fatal(err)
		}
	}
	lookups := 0
	for _, req := range fake.Requests() {
		switch {
		case req.Operation == "apps/get-repo-installation":
			lookups++
		case strings.HasPrefix(req.Operation, "checks/") && req.Installation != 31:
			t.Errorf("%s with the token of installation %d, want 31", req.Operation, req.Installation)
		}
	}
	if lookups != 1 {
		t.Errorf("%d installation lookups, want 1 (then remembered)", lookups)
	}
	_, err := rep.WriteCheckRun(ctx, 0, "octo/not-installed", 0, github.CheckRun{HeadSHA: mergeSHA, Name: checkrun.CheckRollout, Status: github.StatusQueued})
	if !errors.Is(err, github.ErrNotFound) {
		t.Errorf("publishing on a repository without the App: %v; want ErrNotFound", err)
	}
}

func TestReporterRecreatesAVanishedCheckRun(t *testing.T) {
	fake, clients := newGitHub(t)
	rep := NewReporter(clients, nil)
	id, err := rep.WriteCheckRun(context.Background(), 7, repo, 987654, github.CheckRun{HeadSHA: mergeSHA,
		Name: checkrun.CheckRollout, ExternalID: "fleetwave:12", Status: github.StatusInProgress, Output: &github.CheckOutput{Title: "Running", Summary: "Wave 1 of 2."}})
	if err != nil || id == 0 || id == 987654 {
		t.Fatalf("id %d, err %v; want a new check run", id, err)
	}
	if runs := fake.CheckRuns(repo); len(runs) != 1 || runs[0].ID != id || runs[0].Status != "in_progress" {
		t.Errorf("check runs %+v", runs)
	}
}
