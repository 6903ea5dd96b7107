package app

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/fleetwave/fleetwave/internal/autosync"
	"github.com/fleetwave/fleetwave/internal/edge/github"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/plan"
)

// AutomatedSyncHolds switches Argo CD automated sync off before a merge can land and back on when the change
// lets go of it (internal/autosync; *autosync.Holder satisfies it).
type AutomatedSyncHolds interface {
	// Hold records the owner's holds of apps and switches their automated sync off; a pull request's head lets
	// go of its earlier heads' holds of other apps.
	Hold(ctx context.Context, o autosync.Owner, apps []store.AppKey) (autosync.Result, error)
	// Release lets go of a pull request's holds (every head, its merge groups' too), restoring the apps nobody
	// else holds.
	Release(ctx context.Context, repo string, pr int, head string) (autosync.Result, error)
}

// holdOutcome is what the hold did for a plan check.
type holdOutcome struct {
	applies bool   // the policy and the plan ask for a hold
	held    int    // apps held off
	failure string // one line: why the check cannot pass ("" when held)
}

// holdAutomated switches automated sync off for the apps of a change's plan that have it, before its plan check
// can pass, when the policy at head says automatedSync: disable-during-rollout — Argo CD would otherwise sync
// them to the merge within a second of the push, before any rollout starts (docs/policy.md). A pull request's
// head that plans no such app (or breaks the policy) lets go of what its earlier heads held. Forks and branches
// of deleted repositories are never held: anyone can open those. group holds for a merge group (its head).
func (a *App) holdAutomated(ctx context.Context, ch Change, out *outcome, group bool) holdOutcome {
	if a.holds == nil || out == nil || out.err != nil || out.policyErr != nil || out.rep == nil {
		return holdOutcome{}
	}
	pl, policy := out.plan, out.policy
	if pl == nil || policy == nil {
		return holdOutcome{}
	}
	var apps []store.AppKey
	if policy.AutomatedSync == plan.AutomatedSyncDisableDuringRollout && pl.OK() && pl.Complete() {
		apps = autosync.PlannedApps(pl)
	}
	log := logFrom(ctx)
	if ch.Fork || ch.HeadRepoGone {
		if len(apps) == 0 {
			return holdOutcome{}
		}
		where := "a fork"
		if ch.HeadRepoGone {
			where = "a deleted repository"
		}
		return holdOutcome{applies: true, failure: fmt.Sprintf("%s of this change have Argo CD automated sync: fleetwave switches it off "+
			"before the merge (automatedSync: disable-during-rollout) only for branches of this repository, and this head is in %s; "+
			"push the branch to this repository", text.Plural(len(apps), "app"), where)}
	}
	owner := autosync.Owner{Repo: ch.Repo, PR: ch.Number, Head: ch.Head, Group: group}
	if len(apps) == 0 {
		if group || ch.Number == 0 {
			return holdOutcome{}
		}
		// Nothing to hold at this head: what earlier heads held goes.
		res, err := a.holds.Hold(ctx, owner, nil)
		logHold(log, res, err)
		return holdOutcome{}
	}
	res, err := a.holds.Hold(ctx, owner, apps)
	logHold(log, res, err)
	switch {
	case err != nil:
		return holdOutcome{applies: true, failure: "automated sync could not be held off: " + postable(err)}
	case len(res.Failed) > 0:
		f := res.Failed[0]
		more := ""
		if len(res.Failed) > 1 {
			more = fmt.Sprintf(" (and %s more)", text.Plural(len(res.Failed)-1, "app"))
		}
		return holdOutcome{applies: true, failure: fmt.Sprintf("automated sync of app %s could not be switched off%s: %s", f.App.Name, more, postable(f.Err))}
	}
	return holdOutcome{applies: true, held: len(res.Held)}
}

// applyHold makes the plan check say what the hold did: green only once every hold is in place.
func applyHold(run *github.CheckRun, h holdOutcome) {
	if !h.applies || run.Output == nil {
		return
	}
	if h.failure != "" {
		run.Conclusion = github.ConclusionFailure
		run.Output.Title = "Automated sync not held off: " + text.FirstLine(h.failure)
		if len(run.Output.Title) > 200 {
			run.Output.Title = run.Output.Title[:199] + "…"
		}
		run.Output.Summary = text.FirstLine(h.failure) + "\n\n" + run.Output.Summary
		return
	}
	if run.Conclusion == github.ConclusionSuccess {
		run.Output.Summary = strings.TrimRight(run.Output.Summary, "\n") + "\n\n" + heldLine(h.held) + "\n"
	}
}

// heldLine is the plan check's line for a hold in place.
func heldLine(n int) string {
	return fmt.Sprintf("Automated sync held off for %s until the rollout ends or the PR closes (automatedSync: disable-during-rollout).", text.Plural(n, "app"))
}

// releaseHolds lets go of a pull request's holds (closed, merged): each app nobody else holds gets its automated
// sync back as it was. Failures are logged; the holds of apps not restored stay recorded for the next try.
func (a *App) releaseHolds(ctx context.Context, repo string, number int, why string) {
	if a.holds == nil {
		return
	}
	res, err := a.holds.Release(context.WithoutCancel(ctx), repo, number, "")
	log := logFrom(ctx).With(slog.String("why", why))
	logHold(log, res, err)
}

func logHold(log *slog.Logger, res autosync.Result, err error) {
	if err != nil {
		log.Warn("automated sync hold", slog.Any("error", err))
		return
	}
	for _, f := range res.Failed {
		log.Warn("automated sync hold: an app could not be switched", slog.String("app", f.App.String()), slog.Any("error", f.Err))
	}
	if len(res.Switched)+len(res.Restored)+len(res.Kept) > 0 {
		log.Info("automated sync hold", slog.Int("held", len(res.Held)), slog.Int("switched_off", len(res.Switched)),
			slog.Int("restored", len(res.Restored)), slog.Int("kept_off", len(res.Kept)))
	}
}
