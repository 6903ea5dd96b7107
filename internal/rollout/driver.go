package rollout

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/rollout/argosync"
)

// driver runs one rollout while this replica holds its lease. Its only memory between steps is caches (the
// parsed plan, what it last published): everything that matters is read from the store at each step.
type driver struct {
	e      *Executor
	id     int64
	cancel context.CancelFunc
	// The store in the roles the driver plays itself (the rest goes through e).
	journal StepJournal
	leases  LeaseKeeper

	pokeCh chan struct{} // a command was given on this replica (read by the control loop only)
	wake   chan struct{} // the control loop re-read the rollout after a poke or a change (read by the step loop only)
	cur    atomic.Pointer[store.Rollout]
	lost   atomic.Bool
	// windowRefusals counts syncs Argo CD refused because of a sync window (record).
	windowRefusals atomic.Int64
	// health: the instances found not answering (unreachable.go); curWave the wave whose batch runs (-1: none).
	health  instanceHealth
	curWave atomic.Int64

	mu        sync.Mutex
	sp        *storedPlan
	fwd       map[string]*argosync.Session // by instance; nil for one not configured
	cache     *appCache                    // fed by fwd's streams; set with them
	pubCh     chan struct{}
	pubMu     sync.Mutex
	published map[string]string // check-run external id → digest of what was last published
	nudged    map[int64]bool    // older rollouts told that this one waits for them
	// outOfPlan names the apps a batch found synced outside the plan (record), for runWave to act on.
	outOfPlan []string
}

func newDriver(e *Executor, id int64, cancel context.CancelFunc) *driver {
	return &driver{e: e, id: id, cancel: cancel, journal: auditedJournal{StepJournal: e.st, e: e}, leases: e.st, pokeCh: make(chan struct{}, 1), wake: make(chan struct{}, 1), pubCh: make(chan struct{}, 1),
		published: map[string]string{}, nudged: map[int64]bool{}}
}

func (d *driver) poke() {
	select {
	case d.pokeCh <- struct{}{}:
	default:
	}
}

func (d *driver) signal() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// control keeps the lease and watches the rollout row for commands (given here or on another replica).
func (d *driver) control(ctx context.Context) {
	o := d.e.o
	renewEvery := o.leaseTTL / 3
	lastRenew := o.clock.Now()
	t := o.clock.NewTicker(min(o.controlPoll, renewEvery))
	defer t.Stop()
	var last store.RolloutState
	var lastSup int64
	for {
		poked := false
		select {
		case <-ctx.Done():
			return
		case <-d.pokeCh:
			poked = true
		case <-t.Chan():
		}
		if o.clock.Since(lastRenew) >= renewEvery {
			ok, err := d.leases.RenewLease(ctx, d.id, o.owner, o.leaseTTL)
			if ctx.Err() != nil {
				return
			}
			if err == nil {
				lastRenew = o.clock.Now()
			}
			// Lost: another replica has it, or the store could not confirm it for two thirds of its life — stop
			// before it can expire under us (another replica takes it only after expiry). What is in flight is
			// reconciled by whoever takes it.
			if (err == nil && !ok) || o.clock.Since(lastRenew) > 2*o.leaseTTL/3 {
				o.log.Warn("lease on rollout lost: stopping", "rollout", d.id, "err", err)
				d.lost.Store(true)
				d.cancel()
				return
			}
		}
		r, err := d.e.st.GetRollout(ctx, d.id)
		if err != nil {
			continue
		}
		d.cur.Store(&r)
		if poked || r.State != last || r.SupersededBy != lastSup {
			// A poke may be about a wave (an approval): the step loop looks again either way.
			last, lastSup = r.State, r.SupersededBy
			d.signal()
		}
	}
}

// stepResult says what the driver does after a step.
type stepResult struct {
	again bool      // step again at once
	done  bool      // the rollout is finished (or not ours): release and stop
	until time.Time // otherwise wait until then (zero: until poked or the poll interval)
}

var (
	again = stepResult{again: true}
	done  = stepResult{done: true}
)

func waitUntil(t time.Time) stepResult { return stepResult{until: t} }

// run steps the rollout until it is finished, the replica drains, or the lease is lost.
func (d *driver) run(ctx context.Context) {
	defer d.closeSessions()
	log := d.e.o.log.With("rollout", d.id)
	backoff := time.Second
	for {
		if ctx.Err() != nil || d.lost.Load() {
			return
		}
		res, err := d.step(ctx)
		if err != nil {
			if ctx.Err() != nil || d.lost.Load() {
				return
			}
			if errors.Is(err, store.ErrLeaseLost) {
				log.Warn("lease on rollout lost: stopping", "err", err)
				d.lost.Store(true)
				return
			}
			log.Error("stepping the rollout", "err", err)
			res = waitUntil(d.e.o.clock.Now().Add(backoff))
			backoff = min(2*backoff, time.Minute)
		} else {
			backoff = time.Second
		}
		if res.done {
			// Finished: publish the end, then let the rollout go. The lease is kept while GitHub has not taken the
			// final check-runs (or the process dies first): a finished rollout with a lease is claimed again
			// (Store.ListUnreleased), after a wait that doubles up to 30 min, until they are published, for at
			// most a day.
			published := d.flush(ctx)
			d.e.publishDeferred(d.id, published)
			if published || d.gaveUpPublishing(ctx) {
				d.releaseLease(ctx)
			} else {
				log.Warn("final check-runs not published yet: retried later")
			}
			return
		}
		if d.e.draining.Load() {
			// Draining with everything in flight finished (steps return only then): publish the last state and
			// hand the rollout over.
			d.flush(ctx)
			d.releaseLease(ctx)
			return
		}
		if res.again {
			continue
		}
		if !d.sleep(ctx, res.until) {
			if d.e.draining.Load() && ctx.Err() == nil {
				d.flush(ctx)
				d.releaseLease(ctx)
			}
			return
		}
	}
}

// publishRetryLimit is how long after a rollout finished its final check-runs are still retried.
const publishRetryLimit = 24 * time.Hour

// gaveUpPublishing: the rollout finished more than publishRetryLimit ago (GitHub keeps refusing its check-runs,
// e.g. the App was uninstalled), or the store cannot tell.
func (d *driver) gaveUpPublishing(ctx context.Context) bool {
	r, err := d.e.st.GetRollout(ctx, d.id)
	return err != nil || d.e.o.clock.Now().Sub(r.UpdatedAt) > publishRetryLimit
}

func (d *driver) releaseLease(ctx context.Context) {
	if err := d.leases.ReleaseLease(context.WithoutCancel(ctx), d.id, d.e.o.owner); err != nil {
		d.e.o.log.Warn("releasing the lease of a rollout", "rollout", d.id, "err", err)
	}
}

// sleep waits until t (zero: the control poll interval), a poke, a change seen by the control loop, or the
// drain. It reports false when the driver must stop.
func (d *driver) sleep(ctx context.Context, t time.Time) bool {
	c := d.e.o.clock
	wait := d.e.o.controlPoll
	if !t.IsZero() {
		wait = t.Sub(c.Now())
	}
	if wait <= 0 {
		return true
	}
	tm := c.NewTimer(wait)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-d.e.drainCh:
		return false
	case <-d.wake:
		return true
	case <-tm.Chan():
		return true
	}
}

// interrupted reports whether a long wait inside a step (soak, metric gate) must end: the replica drains, the
// lease is lost, or the rollout left the state the step started in.
func (d *driver) interrupted(ctx context.Context, want store.RolloutState) bool {
	if ctx.Err() != nil || d.lost.Load() || d.e.draining.Load() {
		return true
	}
	r := d.cur.Load()
	return r != nil && (r.State != want || r.SupersededBy != 0)
}

// mayStart reports whether a new app operation may start: for forward syncs the rollout must still be running,
// not superseded; for rollbacks it must still be rolling back.
func (d *driver) mayStart(ctx context.Context, want store.RolloutState) bool {
	if ctx.Err() != nil || d.lost.Load() || d.e.draining.Load() {
		return false
	}
	r := d.cur.Load()
	if r == nil {
		return true
	}
	if r.State != want {
		return false
	}
	return want == store.RolloutRollingBack || r.SupersededBy == 0
}
