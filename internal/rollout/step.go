package rollout

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/rollout/argosync"
)

// step does the next thing a rollout needs, reading everything from the store (gitops-engine's
// sync_context.go Sync() has the same shape): settle what a previous run left in flight, then act on the
// rollout's state. A step that syncs apps returns only when the batch's operations have all finished.
func (d *driver) step(ctx context.Context) (stepResult, error) {
	e := d.e
	r, err := e.st.GetRollout(ctx, d.id)
	if err != nil {
		return again, err
	}
	d.cur.Store(&r)
	sp, err := d.plan(r)
	if err != nil {
		return done, err
	}
	waves, err := e.st.ListWaves(ctx, r.ID)
	if err != nil {
		return again, err
	}
	inFlight, err := e.st.ListSteps(ctx, r.ID, store.StepFilter{States: []store.StepState{store.StepIntent, store.StepTriggered}})
	if err != nil {
		return again, err
	}
	if len(inFlight) > 0 {
		// Left by a killed process (or a replica that lost its lease): judge each by what Argo CD shows before
		// anything else touches the app. No sync is sent here.
		if err := d.reconcileInFlight(ctx, r, sp, inFlight); err != nil {
			return again, err
		}
	}
	if r.State.Terminal() {
		return d.finish(ctx, r, sp, waves)
	}
	if r.SupersededBy != 0 && r.State != store.RolloutRollingBack {
		return d.supersede(ctx, r)
	}
	switch r.State {
	case store.RolloutPending:
		return d.stepPending(ctx, r, sp)
	case store.RolloutRunning, store.RolloutAwaitingApproval:
		return d.stepForward(ctx, r, sp, waves)
	case store.RolloutPaused:
		d.publish(ctx, r.ID)
		return stepResult{}, nil
	case store.RolloutRollingBack:
		steps, err := e.st.ListSteps(ctx, r.ID, store.StepFilter{})
		if err != nil {
			return again, err
		}
		return d.stepRollback(ctx, r, sp, waves, steps)
	}
	return done, fmt.Errorf("stepping rollout %d: unknown state %q", r.ID, r.State)
}

func (d *driver) plan(r store.Rollout) (*storedPlan, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sp == nil {
		sp, err := parseStoredPlan(r.Plan)
		if err != nil {
			return nil, err
		}
		d.sp = sp
	}
	return d.sp, nil
}

// finish closes a finished rollout: waves that never ended are cancelled, check-runs get their conclusion.
func (d *driver) finish(ctx context.Context, r store.Rollout, sp *storedPlan, waves []store.Wave) (stepResult, error) {
	if err := d.e.endAutomated(ctx, r, sp); err != nil {
		return again, err
	}
	now := d.e.o.clock.Now()
	for _, w := range waves {
		switch w.State {
		case store.WavePending, store.WaveRunning, store.WaveGating, store.WaveAwaitingApproval, store.WaveRollingBack:
			if _, err := d.e.updateWave(ctx, d.id, w.Index, func(w *store.Wave) (bool, error) {
				w.State, w.FinishedAt = store.WaveCancelled, now
				return true, nil
			}); err != nil {
				return again, err
			}
		}
	}
	d.publish(ctx, r.ID)
	return done, nil
}

// supersede ends a rollout a newer one replaced: nothing is in flight any more (step reconciled it).
func (d *driver) supersede(ctx context.Context, r store.Rollout) (stepResult, error) {
	_, err := d.e.updateRollout(ctx, r.ID, func(x *store.Rollout) (bool, error) {
		if x.State.Terminal() || x.State == store.RolloutRollingBack {
			return false, nil
		}
		x.State = store.RolloutSuperseded
		x.Message = fmt.Sprintf("superseded by rollout #%d", x.SupersededBy)
		return true, nil
	})
	if err != nil {
		return again, err
	}
	d.e.event(ctx, r.ID, "", "superseded", fmt.Sprint(r.SupersededBy), "ok", "")
	d.e.nudge(r.SupersededBy)
	return again, nil
}

// olderTouching lists the unfinished rollouts older than r that touch any of its apps.
func (d *driver) olderTouching(ctx context.Context, r store.Rollout, sp *storedPlan) ([]store.Rollout, error) {
	act, err := d.e.st.ActiveRolloutsTouching(ctx, "", d.e.planKeys(sp))
	if err != nil {
		return nil, err
	}
	var older []store.Rollout
	for _, o := range act {
		if o.ID < r.ID {
			older = append(older, o)
		}
	}
	return older, nil
}

// stepPending starts a rollout once no older unfinished rollout touches its apps (never interleaving two
// rollouts on one app), superseding the older ones when asked to. Automated sync is switched off first, so
// Argo CD cannot sync the merge by itself while the rollout waits.
func (d *driver) stepPending(ctx context.Context, r store.Rollout, sp *storedPlan) (stepResult, error) {
	if err := d.prepareAutomated(ctx, r, sp); err != nil {
		return again, err
	}
	older, err := d.olderTouching(ctx, r, sp)
	if err != nil {
		return again, err
	}
	d.flush(ctx) // queued: every check-run appears at once, before anything runs
	for _, o := range older {
		if !d.nudged[o.ID] {
			d.nudged[o.ID] = true
			d.e.nudge(o.ID) // its check-run then says this one waits
		}
	}
	if len(older) > 0 {
		if sp.Execution.OnConflict == ConflictSupersede {
			for _, o := range older {
				if o.SupersededBy != 0 {
					continue
				}
				if _, err := d.e.updateRollout(ctx, o.ID, func(x *store.Rollout) (bool, error) {
					if x.State.Terminal() || x.SupersededBy != 0 {
						return false, nil
					}
					x.SupersededBy = r.ID
					return true, nil
				}); err != nil {
					return again, err
				}
				d.e.event(ctx, o.ID, "", "supersede-requested", fmt.Sprint(r.ID), "ok", "a newer merge touches the same apps")
				d.e.event(ctx, r.ID, "", "superseding", fmt.Sprint(o.ID), "ok", "")
				d.e.nudge(o.ID)
			}
			d.publish(ctx, r.ID)
		}
		return stepResult{}, nil
	}
	d.openForward(ctx, sp) // its stream connects while the rollout starts
	if _, err := d.e.updateRollout(ctx, r.ID, func(x *store.Rollout) (bool, error) {
		if x.State != store.RolloutPending {
			return false, nil
		}
		x.State, x.Message = store.RolloutRunning, ""
		return true, nil
	}); err != nil {
		return again, err
	}
	d.e.event(ctx, r.ID, "", "started", text.ShortRev(r.MergeSHA), "ok", "")
	return again, nil
}

// stepForward moves the rollout through its waves in order.
func (d *driver) stepForward(ctx context.Context, r store.Rollout, sp *storedPlan, waves []store.Wave) (stepResult, error) {
	wi := slices.IndexFunc(waves, func(w store.Wave) bool { return w.State != store.WaveSucceeded })
	if wi < 0 {
		if _, err := d.e.restoreAutomated(ctx, r, sp); err != nil {
			return again, err
		}
		_, err := d.e.updateRollout(ctx, r.ID, func(x *store.Rollout) (bool, error) {
			if x.State != store.RolloutRunning && x.State != store.RolloutAwaitingApproval {
				return false, nil
			}
			x.State = store.RolloutSucceeded
			x.Message = fmt.Sprintf("%d apps in %d waves", sp.AppCount(), len(waves))
			return true, nil
		})
		if err == nil {
			d.e.event(ctx, r.ID, "", "succeeded", text.ShortRev(r.MergeSHA), "ok", "")
		}
		return again, err
	}
	if wi >= len(sp.Waves) {
		return done, fmt.Errorf("rollout %d: wave %d is not in its plan", r.ID, wi)
	}
	// Apps someone else synced to the merge before their turn (outofplan.go): recorded, and the rollout pauses
	// unless the policy says continue.
	if paused, err := d.detectOutOfPlan(ctx, r, sp); err != nil || paused {
		return again, err
	}
	w := waves[wi]
	if r.State == store.RolloutAwaitingApproval && w.State != store.WaveAwaitingApproval {
		if err := d.setRolloutState(ctx, r.ID, store.RolloutAwaitingApproval, store.RolloutRunning); err != nil {
			return again, err
		}
	}
	// An approval before the wave holds it in awaiting-approval before anything of it starts; one after it holds
	// it there once its batches and other gates are done (gate).
	approval := sp.Waves[wi].Gates.Approval
	startable := w.State == store.WavePending || (w.State == store.WaveAwaitingApproval && approval.Before() && w.ApprovedBy != "")
	var steps []store.AppStep
	if startable || w.State == store.WaveRunning || w.State == store.WaveGating {
		var err error
		if steps, err = d.e.st.ListSteps(ctx, r.ID, store.StepFilter{Waves: []int{wi}}); err != nil {
			return again, err
		}
	}
	switch w.State {
	case store.WavePending:
		if approval.Before() && w.ApprovedBy == "" {
			nw, err := d.e.updateWave(ctx, d.id, wi, func(x *store.Wave) (bool, error) {
				if x.State != store.WavePending {
					return false, nil
				}
				x.State = store.WaveAwaitingApproval
				return true, nil
			})
			if err != nil || nw.State != store.WaveAwaitingApproval {
				return again, err
			}
			d.e.event(ctx, r.ID, "", "awaiting-approval", w.Name, "ok", "before the wave starts")
			return again, nil
		}
		return d.startWave(ctx, r, sp, wi, w, store.WavePending, steps)
	case store.WaveRunning:
		return d.runWave(ctx, r, sp, wi, w, steps)
	case store.WaveGating:
		return d.gate(ctx, r, sp, wi, w, steps)
	case store.WaveAwaitingApproval:
		if w.ApprovedBy != "" {
			if r.State == store.RolloutAwaitingApproval {
				if err := d.setRolloutState(ctx, r.ID, store.RolloutAwaitingApproval, store.RolloutRunning); err != nil {
					return again, err
				}
			}
			if approval.Before() {
				return d.startWave(ctx, r, sp, wi, w, store.WaveAwaitingApproval, steps)
			}
			return d.finishWave(ctx, r, wi, store.WaveAwaitingApproval)
		}
		if r.State != store.RolloutAwaitingApproval {
			if err := d.setRolloutState(ctx, r.ID, store.RolloutRunning, store.RolloutAwaitingApproval); err != nil {
				return again, err
			}
		}
		d.publish(ctx, r.ID)
		return stepResult{}, nil
	case store.WaveFailed:
		// The wave failed but its onFailure action was not applied (interrupted): apply it now.
		return d.applyOnFailure(ctx, r, sp, wi, w.Message)
	}
	return done, fmt.Errorf("rollout %d: wave %s is %s while the rollout runs", r.ID, w.Name, w.State)
}

// startWave moves a wave from pending (or approved before it starts) to running and runs its first batch in the
// same step.
func (d *driver) startWave(ctx context.Context, r store.Rollout, sp *storedPlan, wi int, w store.Wave, from store.WaveState, steps []store.AppStep) (stepResult, error) {
	if paused, err := d.checkStillOff(ctx, r, sp, wi); paused || err != nil {
		return stepResult{}, err
	}
	now := d.e.o.clock.Now()
	nw, err := d.e.updateWave(ctx, d.id, wi, func(x *store.Wave) (bool, error) {
		if x.State != from {
			return false, nil
		}
		x.State, x.StartedAt = store.WaveRunning, now
		return true, nil
	})
	if err != nil || nw.State != store.WaveRunning {
		return again, err
	}
	d.e.event(ctx, r.ID, "", "wave-started", w.Name, "ok", "")
	d.publish(ctx, r.ID)
	return d.runWave(ctx, r, sp, wi, nw, steps)
}

// setRolloutState moves the rollout from one state to another, if it is still in the first.
func (d *driver) setRolloutState(ctx context.Context, id int64, from, to store.RolloutState) error {
	_, err := d.e.updateRollout(ctx, id, func(x *store.Rollout) (bool, error) {
		if x.State != from {
			return false, nil
		}
		x.State = to
		return true, nil
	})
	return err
}

// runWave runs the next batch of a wave, or moves it to its gates when every batch is done. The failure
// threshold is checked before each batch and while it runs (no app starts once it is crossed).
func (d *driver) runWave(ctx context.Context, r store.Rollout, sp *storedPlan, wi int, w store.Wave, steps []store.AppStep) (stepResult, error) {
	gs := readGateState(w)
	tolerated := sp.Waves[wi].Gates.ToleratedFailures
	retry := func(s store.AppStep) bool {
		n, ok := gs.Retry[s.ID]
		return ok && s.State == store.StepFailed && n == s.Attempts
	}
	var ws []store.AppStep
	failed := 0
	for _, s := range steps {
		if s.Wave != wi {
			continue
		}
		ws = append(ws, s)
		if s.State == store.StepFailed && !retry(s) {
			failed++
		}
	}
	if failed > tolerated {
		return d.failWave(ctx, r, sp, wi, fmt.Sprintf("%d of %d apps failed (the wave tolerates %d)", failed, len(ws), tolerated))
	}
	batch := -1
	for _, s := range ws {
		if (s.State == store.StepPending || retry(s)) && (batch < 0 || s.Batch < batch) {
			batch = s.Batch
		}
	}
	if batch < 0 {
		nw, err := d.e.updateWave(ctx, d.id, wi, func(x *store.Wave) (bool, error) {
			if x.State != store.WaveRunning {
				return false, nil
			}
			x.State, x.GateState = store.WaveGating, nil
			return true, nil
		})
		if err != nil || nw.State != store.WaveGating {
			return again, err
		}
		d.publish(ctx, r.ID)
		return d.gate(ctx, r, sp, wi, nw, steps) // the gates, in the same step
	}
	var todo []store.AppStep
	for _, s := range ws {
		if s.Batch == batch && (s.State == store.StepPending || retry(s)) {
			todo = append(todo, s)
		}
	}
	// Sync windows (windows.go): the apps a window blocks now wait; when nothing else is left, the wave waits.
	todo, hold := d.checkWindows(ctx, todo)
	if len(todo) == 0 && hold != nil {
		return d.holdWave(ctx, r, wi, w, hold)
	}
	if err := d.releaseHold(ctx, r, wi, w); err != nil {
		return again, err
	}
	refusedBefore := d.windowRefusals.Load()
	if err := d.runBatch(ctx, sp, todo, failed, tolerated); err != nil {
		return again, err
	}
	if found := d.takeOutOfPlan(); len(found) > 0 {
		if _, err := d.afterOutOfPlan(ctx, r, sp, found); err != nil {
			return again, err
		}
	}
	if d.windowRefusals.Load() != refusedBefore && d.mayStart(ctx, store.RolloutRunning) {
		h, err := d.refusedHold(ctx, r, wi)
		if err != nil {
			return again, err
		}
		nw, err := d.e.st.ListWaves(ctx, r.ID)
		if err != nil || wi >= len(nw) {
			return again, err
		}
		return d.holdWave(ctx, r, wi, nw[wi], h)
	}
	d.publish(ctx, r.ID)
	return again, nil
}

// runBatch syncs a batch's apps concurrently (bounded by the executor's concurrency and by each instance's
// budget), starting none once the rollout stops running or the wave's failure threshold is crossed, and returns
// when every started operation has finished and is recorded. Each instance's apps start on their own, so an
// instance whose budget is full holds back only its own apps.
func (d *driver) runBatch(ctx context.Context, sp *storedPlan, todo []store.AppStep, failed, tolerated int) error {
	if len(todo) > 0 {
		d.curWave.Store(int64(todo[0].Wave))
		defer d.curWave.Store(-1)
	}
	insts, by := groupByInstance(todo)
	sessions := make(map[string]*argosync.Session, len(insts))
	for _, inst := range insts {
		sessions[inst] = d.forwardSession(ctx, sp, inst)
	}
	// The session's stream starts with a snapshot of every app, which costs less than a GET per app: the batch
	// starts once the snapshot brought all its apps (at most 2 s; an app still missing then is read on its own).
	// Starting each app as it arrives would make the apps' work compete with reading the rest of the snapshot,
	// and the batch's last sync would leave later.
	if c := d.appCache(); c != nil {
		snap, cancel := context.WithTimeout(ctx, 2*time.Second)
		for _, s := range todo {
			if sessions[s.App.Instance] != nil {
				c.await(snap, s.App)
			}
		}
		cancel()
	}
	var failures atomic.Int64
	failures.Store(int64(failed))
	stop := func() bool { return !d.mayStart(ctx, store.RolloutRunning) || failures.Load() > int64(tolerated) }
	var wg sync.WaitGroup
	for _, inst := range insts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var apps sync.WaitGroup
			defer apps.Wait()
			sess := sessions[inst]
			for _, s := range by[inst] {
				// An instance that does not answer holds its apps here (unreachable.go); the others go on.
				if stop() || !d.awaitInstance(ctx, inst, s.App, store.RolloutRunning) || d.e.acquireInstance(ctx, inst) != nil {
					return
				}
				if stop() || d.e.acquire(ctx) != nil {
					d.e.releaseInstance(inst)
					return
				}
				if stop() {
					d.e.release()
					d.e.releaseInstance(inst)
					return
				}
				apps.Add(1)
				// The instance's place is freed when the app's operation is over (before its health wait), or
				// when the app is done, whichever comes first.
				releaseInstance := sync.OnceFunc(func() { d.e.releaseInstance(inst) })
				go func() {
					defer apps.Done()
					defer releaseInstance()
					defer d.e.release()
					if d.syncApp(ctx, sess, sp, s, releaseInstance) == store.StepFailed {
						failures.Add(1)
					}
				}()
			}
		}()
	}
	if c := d.appCache(); c != nil && len(todo) > 0 {
		if keys := d.nextBatchKeys(sp, todo[0].Wave, todo[0].Batch); len(keys) > 0 {
			pctx, cancel := context.WithCancel(ctx)
			defer cancel() // the next batch starts: what is not prepared by then is decoded when read
			go func() {
				if d.pause(pctx, prepareDelay) {
					c.prepare(pctx, keys)
				}
			}()
		}
	}
	wg.Wait()
	return nil
}

// prepareDelay is how long after a batch starts the cached state of the next batch's apps is decoded (appCache
// prepare): once the batch's burst of requests is out, while its operations run.
const prepareDelay = 250 * time.Millisecond

// nextBatchKeys names the apps of the batch after the given one in the plan: the wave's next batch, or the next
// wave's first. nil after the last.
func (d *driver) nextBatchKeys(sp *storedPlan, wave, batch int) []store.AppKey {
	if wave < 0 || wave >= len(sp.Waves) {
		return nil
	}
	if batch+1 >= len(sp.Waves[wave].Batches) {
		wave, batch = wave+1, -1
		if wave >= len(sp.Waves) {
			return nil
		}
	}
	if batch+1 >= len(sp.Waves[wave].Batches) {
		return nil
	}
	var keys []store.AppKey
	for _, a := range sp.Waves[wave].Batches[batch+1].Apps {
		keys = append(keys, d.e.appKey(a))
	}
	return keys
}

// failWave marks a wave failed and applies its onFailure action.
func (d *driver) failWave(ctx context.Context, r store.Rollout, sp *storedPlan, wi int, reason string) (stepResult, error) {
	now := d.e.o.clock.Now()
	w, err := d.e.updateWave(ctx, d.id, wi, func(x *store.Wave) (bool, error) {
		if x.State != store.WaveRunning && x.State != store.WaveGating {
			return false, nil
		}
		x.State, x.Message, x.FinishedAt = store.WaveFailed, reason, now
		return true, nil
	})
	if err != nil {
		return again, err
	}
	if w.State != store.WaveFailed {
		return again, nil // a command moved the wave meanwhile
	}
	d.e.event(ctx, r.ID, "", "wave-failed", w.Name, "failed", reason)
	return d.applyOnFailure(ctx, r, sp, wi, reason)
}

// applyOnFailure pauses the rollout (waiting for /resume, /rollback or /abort) or rolls back every app the
// rollout touched, per the wave's onFailure.
func (d *driver) applyOnFailure(ctx context.Context, r store.Rollout, sp *storedPlan, wi int, reason string) (stepResult, error) {
	name := sp.Waves[wi].Name
	if sp.Waves[wi].Gates.OnFailure == plan.OnFailureRollback {
		if _, err := d.e.beginRollback(ctx, r.ID, "", "fleetwave", fmt.Sprintf("wave %s failed: %s (onFailure: rollback)", name, reason)); err != nil {
			return again, err
		}
		d.publish(ctx, r.ID)
		return again, nil
	}
	_, err := d.e.updateRollout(ctx, r.ID, func(x *store.Rollout) (bool, error) {
		if x.State != store.RolloutRunning && x.State != store.RolloutAwaitingApproval {
			return false, nil
		}
		x.State = store.RolloutPaused
		x.Message = fmt.Sprintf("wave %s failed: %s. /resume retries its failed apps; /rollback or /abort", name, reason)
		return true, nil
	})
	if err != nil {
		return again, err
	}
	d.e.event(ctx, r.ID, "", "paused", name, "ok", "onFailure: pause")
	d.publish(ctx, r.ID)
	return again, nil
}
