package rollout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/kit/text"
)

// Rollback goes back wave by wave, last first: every app the rollout touched in the chosen waves is synced to
// the revision it ran before the rollout (AppStep.PreviousRevision, recorded by its first sync intent).
//
// It syncs to that revision rather than calling Argo CD's rollback by history id: the same race-proof
// evidence (argosync) judges it; the store holds a revision, while history ids fall off status.history
// (revisionHistoryLimit, default 10) and a rollback by id would also restore the source spec of that entry,
// undoing unrelated edits of the Application made since; Argo CD refuses both while automated sync is on, so
// the executor switches it off first (and leaves it off: it would sync the merge back). Argo CD then shows the
// apps OutOfSync until the merge is reverted in Git — that is the truth, and the check-run says so.

// touched: the step's app may run the rollout's revision (or be about to).
func touched(s store.AppStep) bool {
	switch s.State {
	case store.StepSynced, store.StepFailed, store.StepIntent, store.StepTriggered, store.StepOutOfPlan:
		return true
	}
	return false
}

// beginRollback marks the waves to roll back (from the named wave on, or all) and moves the rollout to
// rolling-back, in one transaction: a crash cannot leave some waves marked and others not. It returns the reply
// to post.
func (e *Executor) beginRollback(ctx context.Context, id int64, target, actor, reason string) (string, error) {
	for attempt := 0; ; attempt++ {
		reply, err := e.tryBeginRollback(ctx, id, target, actor, reason)
		if !errors.Is(err, store.ErrConflict) || attempt >= 20 {
			return reply, err
		}
	}
}

// tryBeginRollback is one attempt of beginRollback on what the store holds now; ErrConflict when a wave or the
// rollout changed meanwhile.
func (e *Executor) tryBeginRollback(ctx context.Context, id int64, target, actor, reason string) (string, error) {
	r, err := e.st.GetRollout(ctx, id)
	if err != nil {
		return "", err
	}
	switch {
	case r.State == store.RolloutRollingBack:
		return "", refusef("rollout #%d is already rolling back", id)
	case !r.State.CanMoveTo(store.RolloutRollingBack):
		return "", refusef("rollout #%d is %s: nothing to roll back", id, r.State)
	}
	waves, err := e.st.ListWaves(ctx, id)
	if err != nil {
		return "", err
	}
	steps, err := e.st.ListSteps(ctx, id, store.StepFilter{})
	if err != nil {
		return "", err
	}
	from := 0
	if target != "" && !strings.EqualFold(target, "all") {
		from = slices.IndexFunc(waves, func(w store.Wave) bool { return strings.EqualFold(w.Name, target) })
		if from < 0 {
			return "", refusef("rollout #%d has no wave %q (waves: %s)", id, target, waveNames(waves))
		}
	}
	var scope []int
	napps := 0
	for _, w := range waves[from:] {
		n := 0
		for _, s := range steps {
			if s.Wave == w.Index && touched(s) {
				n++
			}
		}
		// A running wave is included even with nothing touched yet: an app may be starting right now.
		// A wave awaiting an approval before it starts has not started: nothing of it to roll back.
		active := w.State == store.WaveRunning || w.State == store.WaveGating ||
			(w.State == store.WaveAwaitingApproval && !w.StartedAt.IsZero())
		if n > 0 || active {
			scope = append(scope, w.Index)
			napps += n
		}
	}
	if len(scope) == 0 {
		return "", refusef("nothing to roll back: no app of rollout #%d was synced from wave %s on", id, waves[from].Name)
	}
	if newer, err := e.newerTouching(ctx, r, steps); err != nil {
		return "", err
	} else if newer != nil {
		return "", refusef("rollout #%d (merge %s) has changed these apps since; roll it back first", newer.ID, text.ShortRev(newer.MergeSHA))
	}
	msg := fmt.Sprintf("rollback requested by %s", actor)
	if reason != "" {
		msg = reason
	}
	marked := make([]store.Wave, 0, len(scope))
	for _, wi := range scope {
		base := map[int64]int{}
		for _, s := range steps {
			if s.Wave == wi {
				base[s.ID] = s.Attempts
			}
		}
		w := waves[wi]
		w.State, w.Message = store.WaveRollingBack, msg
		w.GateState = gateState{RollbackBaseline: base}.raw()
		marked = append(marked, w)
	}
	r.State, r.Message = store.RolloutRollingBack, msg
	if _, _, err := e.st.UpdateRolloutWaves(ctx, r, marked); err != nil {
		if errors.Is(err, store.ErrInvalidTransition) {
			return "", refusef("rollout #%d is no longer running: nothing to roll back", id)
		}
		return "", err
	}
	e.event(ctx, id, actor, "rollback", target, "ok", msg)
	e.nudge(id)
	names := make([]string, len(scope))
	for i, wi := range scope {
		names[len(scope)-1-i] = waves[wi].Name
	}
	return fmt.Sprintf("Rolling back rollout #%d (merge %s): %d apps in waves %s, last wave first, to the revisions they ran before. "+
		"Argo CD will show them OutOfSync until the merge is reverted in Git.", id, text.ShortRev(r.MergeSHA), napps, strings.Join(names, ", ")), nil
}

// newerTouching finds a newer rollout of the repository that changed (or is changing) some of r's apps: rolling
// r back would undo it.
func (e *Executor) newerTouching(ctx context.Context, r store.Rollout, steps []store.AppStep) (*store.Rollout, error) {
	mine := map[store.AppKey]bool{}
	for _, s := range steps {
		mine[s.App] = true
	}
	rs, err := e.st.ListRollouts(ctx, store.RolloutFilter{Repo: r.Repo, Limit: 100})
	if err != nil {
		return nil, err
	}
	for _, n := range rs {
		if n.ID <= r.ID {
			continue
		}
		ns, err := e.st.ListSteps(ctx, n.ID, store.StepFilter{States: []store.StepState{store.StepSynced, store.StepFailed, store.StepIntent, store.StepTriggered, store.StepOutOfPlan}})
		if err != nil {
			return nil, err
		}
		for _, s := range ns {
			if mine[s.App] {
				return &n, nil
			}
		}
	}
	return nil, nil
}

func waveNames(ws []store.Wave) string {
	n := make([]string, len(ws))
	for i, w := range ws {
		n[i] = w.Name
	}
	return strings.Join(n, ", ")
}

// rollbackEligible: the step is to be rolled back by the current rollback of its wave.
func rollbackEligible(s store.AppStep, gs gateState) bool {
	if s.PreviousRevision == "" {
		return false
	}
	switch {
	case s.State == store.StepSynced, s.State == store.StepOutOfPlan:
		return true // out-of-plan: it runs the merge all the same
	case s.State == store.StepFailed && s.Op == store.OpSync:
		return true
	case s.State == store.StepFailed && s.Op == store.OpRollback:
		n, ok := gs.RollbackBaseline[s.ID]
		return ok && n == s.Attempts // failed before this rollback was asked: retry it, once
	case s.State == store.StepIntent && s.Op == store.OpRollback:
		return true // reconciled: it never reached Argo CD
	}
	return false
}

// stepRollback rolls back the marked waves, last first, one pass per wave; then ends the rollout.
func (d *driver) stepRollback(ctx context.Context, r store.Rollout, sp *storedPlan, waves []store.Wave, steps []store.AppStep) (stepResult, error) {
	wi := -1
	for i := len(waves) - 1; i >= 0; i-- {
		if waves[i].State == store.WaveRollingBack {
			wi = i
			break
		}
	}
	if wi < 0 {
		return d.endRollback(ctx, r, steps)
	}
	w := waves[wi]
	gs := readGateState(w)
	var todo []store.AppStep
	for _, s := range steps {
		if s.Wave == wi && rollbackEligible(s, gs) {
			todo = append(todo, s)
		}
	}
	d.publish(ctx, r.ID)
	if len(todo) > 0 {
		insts, by := groupByInstance(todo)
		var wg sync.WaitGroup
		for _, inst := range insts {
			wg.Add(1)
			go func() { // each instance's apps on their own, within its budget
				defer wg.Done()
				sess := d.newSession(ctx, sp, true, inst)
				if sess != nil {
					defer sess.Close()
					sess.WaitConnected(ctx, 10*time.Second)
				}
				var apps sync.WaitGroup
				defer apps.Wait()
				for _, s := range by[inst] {
					if !d.mayStart(ctx, store.RolloutRollingBack) || d.e.acquireInstance(ctx, inst) != nil {
						return
					}
					if d.e.acquire(ctx) != nil {
						d.e.releaseInstance(inst)
						return
					}
					apps.Add(1)
					go func() {
						defer apps.Done()
						defer d.e.releaseInstance(inst)
						defer d.e.release()
						d.rollbackApp(ctx, sess, r, sp, s)
					}()
				}
			}()
		}
		wg.Wait()
		if !d.mayStart(ctx, store.RolloutRollingBack) {
			return again, nil // drained or lost: the next run continues this pass
		}
		var err2 error
		if steps, err2 = d.e.st.ListSteps(ctx, r.ID, store.StepFilter{Waves: []int{wi}}); err2 != nil {
			return again, err2
		}
	}
	var failedApps []string
	for _, s := range steps {
		notBack := s.State == store.StepSynced || s.State == store.StepOutOfPlan || s.State == store.StepFailed || (s.State.InFlight() && s.Op == store.OpRollback)
		if s.Wave == wi && s.PreviousRevision != "" && notBack {
			failedApps = append(failedApps, s.App.Name)
		}
	}
	now := d.e.o.clock.Now()
	_, err := d.e.updateWave(ctx, d.id, wi, func(x *store.Wave) (bool, error) {
		if x.State != store.WaveRollingBack {
			return false, nil
		}
		x.FinishedAt = now
		if len(failedApps) > 0 {
			x.State = store.WaveFailed
			x.Message = fmt.Sprintf("rollback failed for %d apps: %s", len(failedApps), strings.Join(failedApps, ", "))
		} else {
			x.State, x.Message = store.WaveRolledBack, ""
		}
		return true, nil
	})
	if err != nil {
		return again, err
	}
	result := "ok"
	if len(failedApps) > 0 {
		result = "failed"
	}
	d.e.event(ctx, r.ID, "", "wave-rolled-back", w.Name, result, strings.Join(failedApps, ", "))
	d.publish(ctx, r.ID)
	return again, nil
}

// endRollback ends the rollout once no wave is left rolling back: rolled-back when every app it touched is back,
// failed when some rollback failed (/rollback retries them), aborted when earlier waves were left as they are
// (a /rollback from a later wave).
func (d *driver) endRollback(ctx context.Context, r store.Rollout, steps []store.AppStep) (stepResult, error) {
	var failed, left, firstDeploy int
	for _, s := range steps {
		switch {
		case s.State == store.StepFailed && s.Op == store.OpRollback:
			failed++
		case (s.State == store.StepSynced || s.State == store.StepOutOfPlan || s.State == store.StepFailed) && s.PreviousRevision == "":
			firstDeploy++
		case s.State == store.StepSynced || s.State == store.StepOutOfPlan || s.State == store.StepFailed:
			left++
		}
	}
	state, msg := store.RolloutRolledBack, "rolled back"
	switch {
	case failed > 0:
		state, msg = store.RolloutFailed, fmt.Sprintf("rollback failed for %d apps; /rollback retries them", failed)
	case left > 0:
		state, msg = store.RolloutAborted, fmt.Sprintf("partially rolled back: %d apps of earlier waves stay at %s", left, text.ShortRev(r.MergeSHA))
	}
	if firstDeploy > 0 {
		msg += fmt.Sprintf("; %d apps had no earlier revision (first deployment) and were left as they are", firstDeploy)
	}
	_, err := d.e.updateRollout(ctx, r.ID, func(x *store.Rollout) (bool, error) {
		if x.State != store.RolloutRollingBack {
			return false, nil
		}
		x.State, x.Message = state, msg
		return true, nil
	})
	if err != nil {
		return again, err
	}
	d.e.event(ctx, r.ID, "", "rollback-finished", string(state), "ok", msg)
	return again, nil
}
