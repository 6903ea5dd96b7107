package rollout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/plan"
)

// ErrRefused marks a command the rollout's state does not allow; the error's text is the reply to post.
var ErrRefused = errors.New("refused")

type refusal struct{ msg string }

func (r *refusal) Error() string        { return r.msg }
func (r *refusal) Is(target error) bool { return target == ErrRefused }

func refusef(format string, args ...any) error { return &refusal{fmt.Sprintf(format, args...)} }

// The command methods write the wanted state into the store (compare-and-set) and wake the rollout's driver,
// here or — through its poll of the store — on whichever replica holds the lease. They authorise nobody: the
// caller checks the actor with internal/command first. Each returns the reply to post, or an error; errors.Is(err,
// ErrRefused) when the state does not allow the command (the error's text is then the reply).

// Pause stops starting syncs: those in flight finish and are recorded; /resume continues.
func (e *Executor) Pause(ctx context.Context, id int64, actor string) (string, error) {
	r, err := e.updateRollout(ctx, id, func(x *store.Rollout) (bool, error) {
		switch x.State {
		case store.RolloutPending, store.RolloutRunning, store.RolloutAwaitingApproval:
			x.State, x.Message = store.RolloutPaused, "paused by @"+actor
			return true, nil
		case store.RolloutPaused:
			return false, refusef("rollout #%d is already paused (%s)", id, x.Message)
		}
		return false, refusef("rollout #%d is %s: there is nothing to pause", id, x.State)
	})
	if err != nil {
		return "", err
	}
	e.event(ctx, id, actor, "pause", "", "ok", "")
	e.nudge(id)
	return fmt.Sprintf("Paused rollout #%d (merge %s): the syncs in flight finish, no new one starts. `/resume` continues.", id, text.ShortRev(r.MergeSHA)), nil
}

// Resume continues a paused rollout. When it was paused because a wave failed, the wave's failed apps are
// retried (once each) and its gates run again.
func (e *Executor) Resume(ctx context.Context, id int64, actor string) (string, error) {
	r, err := e.st.GetRollout(ctx, id)
	if err != nil {
		return "", err
	}
	if r.State != store.RolloutPaused {
		return "", refusef("rollout #%d is %s, not paused", id, r.State)
	}
	waves, err := e.st.ListWaves(ctx, id)
	if err != nil {
		return "", err
	}
	retried := 0
	if wi := slices.IndexFunc(waves, func(w store.Wave) bool { return w.State != store.WaveSucceeded }); wi >= 0 && waves[wi].State == store.WaveFailed {
		steps, err := e.st.ListSteps(ctx, id, store.StepFilter{Waves: []int{wi}, States: []store.StepState{store.StepFailed}})
		if err != nil {
			return "", err
		}
		retry := map[int64]int{}
		for _, s := range steps {
			retry[s.ID] = s.Attempts
		}
		retried = len(retry)
		if _, err := e.updateWave(ctx, id, wi, func(w *store.Wave) (bool, error) {
			if w.State != store.WaveFailed {
				return false, nil
			}
			w.State, w.Message = store.WaveRunning, "resumed by @"+actor
			w.GateState = gateState{Retry: retry}.raw()
			return true, nil
		}); err != nil {
			return "", err
		}
	}
	if _, err := e.updateRollout(ctx, id, func(x *store.Rollout) (bool, error) {
		if x.State != store.RolloutPaused {
			return false, refusef("rollout #%d is %s, not paused", id, x.State)
		}
		x.State, x.Message = store.RolloutRunning, ""
		if !slices.ContainsFunc(waves, func(w store.Wave) bool { return w.State != store.WavePending }) {
			x.State = store.RolloutPending // paused before it started: it still waits for older rollouts
		}
		return true, nil
	}); err != nil {
		return "", err
	}
	e.event(ctx, id, actor, "resume", "", "ok", fmt.Sprintf("%d failed apps retried", retried))
	e.nudge(id)
	msg := fmt.Sprintf("Resumed rollout #%d (merge %s).", id, text.ShortRev(r.MergeSHA))
	if retried > 0 {
		msg += fmt.Sprintf(" The failed wave retries its %d failed apps, then runs its gates again.", retried)
	}
	return msg, nil
}

// Abort ends the rollout: no new sync starts and nothing is rolled back (/rollback does that, also after an
// abort). Operations in flight are left to finish and are recorded, not terminated: terminating a sync midway
// (DELETE .../operation) leaves an app half-applied — some resources at the new revision, some at the old,
// hooks cut short — which is worse than either revision, and Argo CD's own terminate is meant for stuck syncs.
func (e *Executor) Abort(ctx context.Context, id int64, actor string) (string, error) {
	return e.AbortWith(ctx, id, actor, AbortOptions{})
}

// AbortOptions are the choices of an abort.
type AbortOptions struct {
	// KeepAutomatedOff leaves the apps' automated sync switched off (`/abort keep-automated-off`, `rollout abort
	// --keep-automated-off`); by default the aborted rollout restores it.
	KeepAutomatedOff bool
}

// AbortWith is Abort with options. Unless o.KeepAutomatedOff, the apps' automated sync is restored as the
// rollout ends (by its driver, or here when no driver runs it: the process that ran it was killed).
func (e *Executor) AbortWith(ctx context.Context, id int64, actor string, o AbortOptions) (string, error) {
	r, err := e.updateRollout(ctx, id, func(x *store.Rollout) (bool, error) {
		switch x.State {
		case store.RolloutPending, store.RolloutRunning, store.RolloutAwaitingApproval, store.RolloutPaused:
			x.State, x.Message = store.RolloutAborted, "aborted by @"+actor
			if o.KeepAutomatedOff {
				x.Message += "; " + KeepAutomatedOffNote
			}
			return true, nil
		case store.RolloutRollingBack:
			return false, refusef("rollout #%d is rolling back; a rollback cannot be aborted", id)
		}
		return false, refusef("rollout #%d is already %s", id, x.State)
	})
	if err != nil {
		return "", err
	}
	e.event(ctx, id, actor, "abort", "", "ok", "")
	e.nudge(id)
	msg := fmt.Sprintf("Aborted rollout #%d (merge %s): no new sync starts, the ones in flight finish. Nothing was rolled back; `/rollback` does that.", id, text.ShortRev(r.MergeSHA))
	// The end of the rollout leaves automated sync as the abort wants it; done here too, so that an abort of a
	// rollout nobody drives any more (its process was killed) does it. Idempotent with the driver's.
	if sp, perr := parseStoredPlan(r.Plan); perr == nil && sp.Execution.AutomatedSync == plan.AutomatedSyncDisableDuringRollout {
		if !e.hasArgoCD() {
			if !o.KeepAutomatedOff {
				msg += " Automated sync of its apps is restored by the process running it; if none does (it was killed), `" + ReleaseCommand(id) + "` restores it."
			}
		} else if err := e.endAutomated(ctx, r, sp); err != nil {
			msg += " Automated sync could not be restored yet (" + text.FirstLine(err.Error()) + "): `" + ReleaseCommand(id) + "` restores it."
		} else if o.KeepAutomatedOff {
			msg += " Automated sync stays off for its apps: `" + ReleaseCommand(id) + "` restores it."
		} else {
			msg += " Automated sync is restored for its apps that no pull request or other rollout holds off."
		}
	}
	return msg, nil
}

// Approve passes the approval gate of a wave (by name, case-insensitive; "" = the wave awaiting approval).
// Only a wave awaiting approval (its batches done, its soak and metric gates passed) can be approved.
func (e *Executor) Approve(ctx context.Context, id int64, wave, actor string) (string, error) {
	waves, wi, err := e.approvalTarget(ctx, id, wave)
	if err != nil {
		return "", err
	}
	w, approved, err := e.st.ApproveWave(ctx, id, wi, actor)
	if err != nil {
		return "", err
	}
	if !approved {
		return "", refusef("wave %s was already approved by @%s", w.Name, w.ApprovedBy)
	}
	e.event(ctx, id, actor, "approve", w.Name, "ok", "")
	e.nudge(id)
	next := "the rollout completes"
	if w.StartedAt.IsZero() {
		next = "it starts now"
	} else if wi+1 < len(waves) {
		next = "wave " + waves[wi+1].Name + " starts"
	}
	return fmt.Sprintf("Approved wave %s of rollout #%d: %s.", w.Name, id, next), nil
}

// approvalTarget is the one rule Approve and ApprovalWave share: the rollout's waves and the index of the wave
// an approval naming wave ("" = the wave awaiting approval) would pass, or a refusal.
func (e *Executor) approvalTarget(ctx context.Context, id int64, wave string) ([]store.Wave, int, error) {
	r, err := e.st.GetRollout(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	if r.State.Terminal() {
		return nil, 0, refusef("rollout #%d is %s", id, r.State)
	}
	waves, err := e.st.ListWaves(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	wi, err := waveToApprove(r, waves, wave)
	if err != nil {
		return nil, 0, err
	}
	return waves, wi, nil
}

// ApprovalWave says which wave Approve(id, wave) would approve, by its own name, without approving it: the wave
// awaiting approval when wave is "", else the wave named so (case-insensitively), which must await approval.
// The App resolves the wave this way before it authorises an approval, so that the wave's approval teams
// apply to a bare /approve and to the rollout check-run's button; a refusal (ErrRefused) says why nothing
// can be approved.
func (e *Executor) ApprovalWave(ctx context.Context, id int64, wave string) (string, error) {
	waves, wi, err := e.approvalTarget(ctx, id, wave)
	if err != nil {
		return "", err
	}
	return waves[wi].Name, nil
}

// waveToApprove is the index of the wave an approval of wave ("" = the one awaiting approval) is for, or a
// refusal: one rule for Approve and ApprovalWave.
func waveToApprove(r store.Rollout, waves []store.Wave, wave string) (int, error) {
	if wave == "" {
		wi := slices.IndexFunc(waves, func(w store.Wave) bool { return w.State == store.WaveAwaitingApproval })
		if wi < 0 {
			return 0, refusef("no wave of rollout #%d is awaiting approval", r.ID)
		}
		return wi, nil
	}
	wi := slices.IndexFunc(waves, func(w store.Wave) bool { return strings.EqualFold(w.Name, wave) })
	if wi < 0 {
		return 0, refusef("rollout #%d has no wave %q (waves: %s)", r.ID, wave, waveNames(waves))
	}
	if waves[wi].State != store.WaveAwaitingApproval {
		return 0, refusef("wave %s is %s, not awaiting approval: %s", waves[wi].Name, waves[wi].State, approveWhen(r, wi))
	}
	return wi, nil
}

// Rollback rolls back the apps the rollout touched, from the named wave on ("" or "all": every wave), last
// wave first, to the revisions they ran before the rollout; it has its own check-run. Refused when a newer
// rollout has changed those apps since.
func (e *Executor) Rollback(ctx context.Context, id int64, target, actor string) (string, error) {
	return e.beginRollback(ctx, id, target, actor, "")
}

// approveWhen says when wave wi of r can be approved, from its plan.
func approveWhen(r store.Rollout, wi int) string {
	sp, err := parseStoredPlan(r.Plan)
	if err != nil || wi >= len(sp.Waves) || sp.Waves[wi].Gates.Approval == nil || !sp.Waves[wi].Gates.Approval.Required {
		return "it has no approval gate"
	}
	if sp.Waves[wi].Gates.Approval.Before() {
		return "approve it once the waves before it have succeeded (it waits for approval before it starts)"
	}
	return "approve it once its batches are done and its gates passed"
}
