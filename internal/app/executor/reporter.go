package executor

import (
	"context"
	"errors"
	"fmt"

	"github.com/fleetwave/fleetwave/internal/checkrun"
	"github.com/fleetwave/fleetwave/internal/github"
)

// CheckRuns is what the Reporter does on GitHub for one installation; *github.Client satisfies it.
type CheckRuns interface {
	CreateCheckRun(ctx context.Context, repo string, run github.CheckRun) (int64, error)
	UpdateCheckRun(ctx context.Context, repo string, id int64, run github.CheckRun) error
}

// Reporter writes the rollout check-runs internal/checkrun builds through the GitHub adapter, with the token of
// the installation Installations knows for the check-run's repository: it is the checkrun.Writer handed to
// checkrun.NewPublisher, the executor's Reporter port.
type Reporter struct {
	github   func(installationID int64) (CheckRuns, error)
	installs *Installations
}

var _ checkrun.Writer = (*Reporter)(nil)

// NewReporter returns a Reporter over a per-installation GitHub client factory (github.App.Client) and the
// repository → installation map the Adapter fills.
func NewReporter(clients func(installationID int64) (CheckRuns, error), installs *Installations) *Reporter {
	return &Reporter{github: clients, installs: installs}
}

// WriteCheckRun creates the check-run (id 0) or updates it, and returns its id. A check-run that no longer
// exists on GitHub is created again (a new id, which the executor stores).
func (r *Reporter) WriteCheckRun(ctx context.Context, repo string, id int64, run github.CheckRun) (int64, error) {
	inst, err := r.installs.Resolve(ctx, repo)
	if err != nil {
		return 0, fmt.Errorf("publishing check run %q on %s: %w", run.Name, repo, err)
	}
	client, err := r.github(inst)
	if err != nil {
		return 0, fmt.Errorf("publishing check run %q on %s: %w", run.Name, repo, err)
	}
	if id != 0 {
		err := client.UpdateCheckRun(ctx, repo, id, run)
		if !errors.Is(err, github.ErrNotFound) {
			return id, err
		}
	}
	return client.CreateCheckRun(ctx, repo, run)
}
