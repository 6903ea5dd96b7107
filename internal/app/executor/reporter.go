package executor

import (
	"context"
	"errors"
	"fmt"

	"github.com/fleetwave/fleetwave/internal/github"
	"github.com/fleetwave/fleetwave/internal/rollout"
)

// CheckRuns is what the Reporter does on GitHub for one installation; *github.Client satisfies it.
type CheckRuns interface {
	CreateCheckRun(ctx context.Context, repo string, run github.CheckRun) (int64, error)
	UpdateCheckRun(ctx context.Context, repo string, id int64, run github.CheckRun) error
}

// Reporter is a rollout.Reporter publishing check-runs through the GitHub adapter, with the token of the
// installation Installations knows for the check-run's repository.
type Reporter struct {
	github   func(installationID int64) (CheckRuns, error)
	installs *Installations
}

var _ rollout.Reporter = (*Reporter)(nil)

// NewReporter returns a Reporter over a per-installation GitHub client factory (github.App.Client) and the
// repository → installation map the Adapter fills.
func NewReporter(clients func(installationID int64) (CheckRuns, error), installs *Installations) *Reporter {
	return &Reporter{github: clients, installs: installs}
}

// Publish creates the check-run (cr.ID == 0) or updates it, and returns its id. A check-run that no longer
// exists on GitHub is created again (a new id, which the executor stores).
func (r *Reporter) Publish(ctx context.Context, cr rollout.CheckRun) (int64, error) {
	inst, err := r.installs.Resolve(ctx, cr.Repo)
	if err != nil {
		return 0, fmt.Errorf("publishing check run %q on %s: %w", cr.Name, cr.Repo, err)
	}
	client, err := r.github(inst)
	if err != nil {
		return 0, fmt.Errorf("publishing check run %q on %s: %w", cr.Name, cr.Repo, err)
	}
	run := checkRun(cr)
	if cr.ID != 0 {
		err := client.UpdateCheckRun(ctx, cr.Repo, cr.ID, run)
		if !errors.Is(err, github.ErrNotFound) {
			return cr.ID, err
		}
	}
	return client.CreateCheckRun(ctx, cr.Repo, run)
}

// checkRun is the GitHub adapter's form of a rollout check-run.
func checkRun(cr rollout.CheckRun) github.CheckRun {
	run := github.CheckRun{
		Name: cr.Name, HeadSHA: cr.HeadSHA, Status: string(cr.Status), ExternalID: cr.ExternalID,
		StartedAt: cr.StartedAt, CompletedAt: cr.CompletedAt,
	}
	if cr.Status == rollout.StatusCompleted {
		run.Conclusion = string(cr.Conclusion)
	}
	if cr.Title != "" || cr.Summary != "" || cr.Text != "" {
		// GitHub takes an output only with both a title and a summary.
		title, summary := cr.Title, cr.Summary
		if title == "" {
			title = cr.Name
		}
		if summary == "" {
			summary = title
		}
		run.Output = &github.CheckOutput{Title: title, Summary: summary, Text: cr.Text}
	}
	for _, a := range cr.Actions {
		run.Actions = append(run.Actions, github.CheckAction{Label: a.Label, Description: a.Description, Identifier: a.Identifier})
	}
	return run
}
