package executor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/fleetwave/fleetwave/internal/checkrun"
	"github.com/fleetwave/fleetwave/internal/edge/github"
)

// CheckRuns is what the Reporter does on GitHub for one installation; *github.Client satisfies it.
type CheckRuns interface {
	CreateCheckRun(ctx context.Context, repo string, run github.CheckRun) (int64, error)
	UpdateCheckRun(ctx context.Context, repo string, id int64, run github.CheckRun) error
}

// Reporter writes the rollout check-runs internal/checkrun builds through the GitHub adapter, with the token of
// the installation stored with the rollout: it is the checkrun.Writer handed to checkrun.NewPublisher, the
// executor's Reporter port.
type Reporter struct {
	github func(installationID int64) (CheckRuns, error)
	find   func(ctx context.Context, repo string) (int64, error)

	mu    sync.Mutex
	found map[string]int64 // lower-case repository → installation, for rollouts stored without one
}

var _ checkrun.Writer = (*Reporter)(nil)

// NewReporter returns a Reporter over a per-installation GitHub client factory (github.App.Client). find
// (github.App.RepoInstallation; nil: none) answers for a rollout recorded without its installation (before the
// store kept it); its answers are remembered.
func NewReporter(clients func(installationID int64) (CheckRuns, error), find func(ctx context.Context, repo string) (int64, error)) *Reporter {
	return &Reporter{github: clients, find: find}
}

// WriteCheckRun creates the check-run (id 0) or updates it, and returns its id. A check-run that no longer
// exists on GitHub is created again (a new id, which the executor stores).
func (r *Reporter) WriteCheckRun(ctx context.Context, installationID int64, repo string, id int64, run github.CheckRun) (int64, error) {
	inst, err := r.installation(ctx, installationID, repo)
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

// installation is the rollout's installation, or for a rollout stored without one, the installation GitHub
// says covers repo (asked once per repository).
func (r *Reporter) installation(ctx context.Context, id int64, repo string) (int64, error) {
	if id > 0 {
		return id, nil
	}
	key := strings.ToLower(repo)
	r.mu.Lock()
	known, ok := r.found[key]
	r.mu.Unlock()
	if ok {
		return known, nil
	}
	if r.find == nil {
		return 0, errors.New("the rollout names no App installation")
	}
	found, err := r.find(ctx, repo)
	if err != nil {
		return 0, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.found == nil {
		r.found = map[string]int64{}
	}
	r.found[key] = found
	return found, nil
}
