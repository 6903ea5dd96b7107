package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/fleetwave/fleetwave/internal/app"
	"github.com/fleetwave/fleetwave/internal/checkrun"
	"github.com/fleetwave/fleetwave/internal/command"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/rollout"
)

// Rollouts is the part of *rollout.Executor the adapter drives.
type Rollouts interface {
	Submit(ctx context.Context, req rollout.Request) (store.Rollout, error)
	Latest(ctx context.Context, repo string, pr int) (store.Rollout, error)
	Pause(ctx context.Context, id int64, actor string) (string, error)
	Resume(ctx context.Context, id int64, actor string) (string, error)
	AbortWith(ctx context.Context, id int64, actor string, o rollout.AbortOptions) (string, error)
	Approve(ctx context.Context, id int64, wave, actor string) (string, error)
	ApprovalWave(ctx context.Context, id int64, wave string) (string, error)
	Rollback(ctx context.Context, id int64, target, actor string) (string, error)
}

// Adapter is the app's Merges and Commands ports over the rollout executor.
type Adapter struct {
	rollouts Rollouts
	log      *slog.Logger
}

var (
	_ app.Merges   = (*Adapter)(nil)
	_ app.Commands = (*Adapter)(nil)
)

// New returns the adapter over r. log may be nil.
func New(r Rollouts, log *slog.Logger) *Adapter {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Adapter{rollouts: r, log: log}
}

// OnMerge submits the merge's plan as a rollout.
func (a *Adapter) OnMerge(ctx context.Context, m app.Merge) error {
	if m.Plan == nil {
		return fmt.Errorf("submitting the rollout of %s@%s: no plan", m.Repo, text.Short(m.MergeSHA, 7))
	}
	req := rollout.NewRequest(rollout.Change{
		Repo: m.Repo, PRNumber: m.PRNumber, MergeSHA: m.MergeSHA, BaseSHA: m.BaseSHA, InstallationID: m.InstallationID,
		Plan: m.Plan, Policy: m.Policy, PRPlanDigest: m.PRPlanDigest, RepoURL: m.RepoURL, Branch: m.Branch,
		MergedBy: m.Sender,
	})
	r, err := a.rollouts.Submit(ctx, req)
	if err != nil {
		return fmt.Errorf("submitting the rollout of %s@%s: %w", m.Repo, text.Short(m.MergeSHA, 7), err)
	}
	a.log.InfoContext(ctx, "rollout submitted", slog.String("repo", m.Repo), slog.Int("pr", m.PRNumber),
		slog.String("merge", m.MergeSHA), slog.Int64("rollout", r.ID), slog.String("state", string(r.State)),
		slog.String("by", m.Sender))
	return nil
}

// OnCommand runs a rollout command on the rollout it names and returns the reply to post.
func (a *Adapter) OnCommand(ctx context.Context, req app.CommandRequest) (string, error) {
	id, reply, err := a.target(ctx, req)
	if err != nil || reply != "" {
		return reply, err
	}
	var answer string
	switch req.Command {
	case command.Pause:
		answer, err = a.rollouts.Pause(ctx, id, req.Actor)
	case command.Resume:
		answer, err = a.rollouts.Resume(ctx, id, req.Actor)
	case command.Abort:
		keep := len(req.Args) == 1 && strings.EqualFold(req.Args[0], command.KeepAutomatedOff)
		answer, err = a.rollouts.AbortWith(ctx, id, req.Actor, rollout.AbortOptions{KeepAutomatedOff: keep})
	case command.Approve:
		answer, err = a.rollouts.Approve(ctx, id, req.Target, req.Actor)
	case command.Rollback:
		target := req.Target
		if target == "" {
			target = command.TargetAll
		}
		answer, err = a.rollouts.Rollback(ctx, id, target, req.Actor)
	default:
		return fmt.Sprintf("@%s: `/%s` is not a rollout command.", req.Actor, req.Command), nil
	}
	switch {
	case errors.Is(err, rollout.ErrRefused):
		return fmt.Sprintf("@%s: %s", req.Actor, err.Error()), nil
	case errors.Is(err, store.ErrNotFound):
		return fmt.Sprintf("@%s: `/%s`: rollout #%d does not exist.", req.Actor, req.Command, id), nil
	case err != nil:
		return "", fmt.Errorf("running /%s on rollout #%d: %w", req.Command, id, err)
	}
	return fmt.Sprintf("@%s: %s", req.Actor, answer), nil
}

// ApprovalWave resolves the wave an approval is for (rollout.Executor.ApprovalWave) on the rollout the request
// names, before the app authorises it. A refusal is the reply, and nothing is approved.
func (a *Adapter) ApprovalWave(ctx context.Context, req app.CommandRequest) (wave, reply string, err error) {
	id, reply, err := a.target(ctx, req)
	if err != nil || reply != "" {
		return "", reply, err
	}
	wave, err = a.rollouts.ApprovalWave(ctx, id, req.Target)
	switch {
	case errors.Is(err, rollout.ErrRefused):
		return "", fmt.Sprintf("@%s: %s", req.Actor, err.Error()), nil
	case errors.Is(err, store.ErrNotFound):
		return "", fmt.Sprintf("@%s: `/%s`: rollout #%d does not exist.", req.Actor, req.Command, id), nil
	case err != nil:
		return "", "", fmt.Errorf("finding the wave to approve of rollout #%d: %w", id, err)
	}
	return wave, "", nil
}

// target finds the rollout a command acts on: the one the clicked check-run names, else the pull request's
// newest. A non-empty reply answers the command instead (there is no rollout to act on).
func (a *Adapter) target(ctx context.Context, req app.CommandRequest) (id int64, reply string, err error) {
	if req.CheckRunExternalID != "" {
		if ref, ok := checkrun.ParseExternalID(req.CheckRunExternalID); ok {
			return ref.RolloutID, "", nil
		}
	}
	if req.PRNumber == 0 {
		return 0, fmt.Sprintf("@%s: `/%s`: this check run names no rollout; nothing was done.", req.Actor, req.Command), nil
	}
	r, err := a.rollouts.Latest(ctx, req.Repo, req.PRNumber)
	if errors.Is(err, store.ErrNotFound) {
		return 0, fmt.Sprintf("@%s: `/%s`: this pull request has no rollout (yet); nothing was done.", req.Actor, req.Command), nil
	}
	if err != nil {
		return 0, "", fmt.Errorf("finding the rollout of %s#%d: %w", req.Repo, req.PRNumber, err)
	}
	return r.ID, "", nil
}
