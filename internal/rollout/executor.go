package rollout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/jonboulle/clockwork"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/store"
)

// ArgoCD is the part of Argo CD's API the executor uses; *argocd.Client implements it. It includes what
// argosync.Session needs.
type ArgoCD interface {
	GetApplication(ctx context.Context, name string, refresh v1alpha1.RefreshType) (*v1alpha1.Application, error)
	ListApplications(ctx context.Context, q argocd.ListQuery) (*v1alpha1.ApplicationList, error)
	Sync(ctx context.Context, name string, req argocd.SyncRequest) (*v1alpha1.Application, error)
	Patch(ctx context.Context, name, patch string, patchType argocd.PatchType) (*v1alpha1.Application, error)
	Watch(ctx context.Context, q argocd.WatchQuery, h argocd.WatchHandler) error
}

// Option configures an Executor (functional options, as gitops-engine's diff options).
type Option func(*options)

type options struct {
	clock         clockwork.Clock
	owner         string
	concurrency   int
	leaseTTL      time.Duration
	controlPoll   time.Duration
	claimInterval time.Duration
	pollInterval  time.Duration
	gateInterval  time.Duration
	syncTimeout   time.Duration
	stallTimeout  time.Duration
	clockSkew     time.Duration
	intentGrace   time.Duration
	namespace     string
	// lostSyncRetries: per instance, how many times a sync that vanished unstarted is requested again
	// (WithLostSyncRetries; an instance not in it: 0, never).
	lostSyncRetries map[string]int
	metrics         Metrics
	log             *slog.Logger
	instances       map[string]ArgoCD // beside "" (instances.go)
	budgets         map[string]int
}

// WithClock sets the clock of every wait and timestamp the executor makes (default: the real clock). Give the
// store the same clock.
func WithClock(c clockwork.Clock) Option { return func(o *options) { o.clock = c } }

// WithOwner names this replica in the leases (default: hostname-pid). Give each replica a name that survives
// its restarts (a StatefulSet pod name): a restarted replica with the same name takes its rollouts back at
// once, one with a new name waits until the old leases expire. Two live replicas must never share a name.
func WithOwner(name string) Option { return func(o *options) { o.owner = name } }

// WithConcurrency bounds the apps synced at once by this replica, all rollouts together (default 50).
func WithConcurrency(n int) Option { return func(o *options) { o.concurrency = n } }

// WithLeaseTTL sets how long a replica's claim on a rollout lasts without renewal (default 30s); it is renewed
// every third of it. A killed replica's rollouts are taken over after at most this long.
func WithLeaseTTL(d time.Duration) Option { return func(o *options) { o.leaseTTL = d } }

// WithPollIntervals sets how often a driver re-reads its rollout for commands given on another replica
// (control, default 2s), how often the executor looks for rollouts to take (claim, default 5s), and how often an
// operation found in flight after a restart is re-read (operation, default 2s).
func WithPollIntervals(control, claim, operation time.Duration) Option {
	return func(o *options) {
		o.controlPoll, o.claimInterval, o.pollInterval = control, claim, operation
	}
}

// WithGateInterval sets the interval between evaluations of metric gates (default 30s).
func WithGateInterval(d time.Duration) Option { return func(o *options) { o.gateInterval = d } }

// WithSyncTimeouts bounds the work on one app (default 15m) and sets argosync's stall timeout (default 30s)
// and the allowance for a bot clock ahead of Argo CD's (default 2s).
func WithSyncTimeouts(app, stall, clockSkew time.Duration) Option {
	return func(o *options) { o.syncTimeout, o.stallTimeout, o.clockSkew = app, stall, clockSkew }
}

// WithIntentGrace sets how long after a sync request the executor still expects its operation to show up in
// Argo CD before concluding it never started (default 15s): a request sent just before a kill, or by a replica
// that lost its lease, may be on its way, and Argo CD's API may show an app as it was before a request for a
// while (its cache lags). Used when resuming a step left in intent, when argosync concluded "skip" or "fail"
// after the executor had announced a sync, and as argosync's LostAnswerGrace (a sync request whose answer was
// lost).
func WithIntentGrace(d time.Duration) Option { return func(o *options) { o.intentGrace = d } }

// WithNamespace is the Argo CD control-plane namespace of apps whose plan entry names none (default argocd).
func WithNamespace(ns string) Option { return func(o *options) { o.namespace = ns } }

// DefaultLostSyncRetries is what an argocd-agent principal (an instance marked agent) gets: a sync that vanished
// without starting is requested again at most this many times, then the app fails.
const DefaultLostSyncRetries = 3

// WithLostSyncRetries makes the executor require, for the apps of the Argo CD instance named instance ("" is the
// one instance of a fleet configured the old way), evidence that each accepted sync started an operation, and
// request a sync that vanished without one again, at most n times with back-off (argosync's
// Options.LostSyncRetries: an argocd-agent principal can accept a sync and lose it, argocd-agent #841, #809).
// Each re-request is logged and recorded as a rollout event (sync-requested-again); after the last one the app
// fails with one line. n <= 0 turns it off (the default of every instance). Wire DefaultLostSyncRetries for
// each instance marked `agent: true` in the instances file.
func WithLostSyncRetries(instance string, n int) Option {
	return func(o *options) {
		if o.lostSyncRetries == nil {
			o.lostSyncRetries = map[string]int{}
		}
		o.lostSyncRetries[instance] = max(n, 0)
	}
}

// WithMetrics replaces the Prometheus client of metric gates (default: PrometheusMetrics over
// http.DefaultClient).
func WithMetrics(m Metrics) Option { return func(o *options) { o.metrics = m } }

// WithLogger sets the logger (default: discard). Errors are logged once, where the driver handles them.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// Executor runs rollouts: one driver per rollout this replica holds the lease of. See doc.go.
type Executor struct {
	st   Store
	argo ArgoCD // instance ""
	inst instanceSet
	rep  Reporter
	o    options

	sem      chan struct{} // bounds concurrent app operations
	kick     chan struct{} // wakes the claim loop
	draining atomic.Bool
	drainCh  chan struct{}
	drainOne sync.Once
	// ownUsers are the Argo CD usernames the executor's syncs are recorded under (operation.initiatedBy), by
	// instance (each instance may know fleetwave's token as another account), learned from Argo CD's answer to
	// the executor's first sync there: what the out-of-plan check tells its own syncs by.
	ownUsers sync.Map // instance → string

	mu      sync.Mutex
	drivers map[int64]*driver
	// republish holds, per finished rollout whose final check-runs GitHub refused, when to try again and the
	// wait after that (doubling from the claim interval up to maxRepublishWait).
	republish map[int64]republishAt
	running   bool
	wg        sync.WaitGroup
	done      chan struct{} // closed when Run returns
}

// New builds an executor over a store, Argo CD and a reporter (check-runs). Run starts it.
func New(st Store, argo ArgoCD, rep Reporter, opts ...Option) *Executor {
	o := options{
		concurrency: 50, leaseTTL: 30 * time.Second, controlPoll: 2 * time.Second, claimInterval: 5 * time.Second,
		pollInterval: 2 * time.Second, gateInterval: 30 * time.Second, syncTimeout: 15 * time.Minute,
		intentGrace: 15 * time.Second, namespace: "argocd",
	}
	for _, opt := range opts {
		opt(&o)
	}
	if o.clock == nil {
		o.clock = clockwork.NewRealClock()
	}
	if o.owner == "" {
		host, _ := os.Hostname()
		o.owner = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if o.concurrency <= 0 {
		o.concurrency = 50
	}
	if o.metrics == nil {
		o.metrics = PrometheusMetrics{}
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	if rep == nil {
		rep = nopReporter{}
	}
	return &Executor{
		st: st, argo: argo, inst: newInstanceSet(argo, o), rep: rep, o: o,
		sem:     make(chan struct{}, o.concurrency),
		kick:    make(chan struct{}, 1),
		drainCh: make(chan struct{}),
		drivers: map[int64]*driver{}, republish: map[int64]republishAt{},
		done: make(chan struct{}),
	}
}

// Owner is the name this replica holds leases under.
func (e *Executor) Owner() string { return e.o.owner }

// Run resumes every unfinished rollout this replica can take (no lease, an expired one, or its own from before
// a restart), reconciling each with Argo CD before doing anything else, and keeps taking new and orphaned ones
// until ctx ends or Stop drains it. Cancelling ctx abandons the work in flight (as a crash would: the state
// stays resumable); Stop is the graceful way out.
func (e *Executor) Run(ctx context.Context) error {
	e.mu.Lock()
	if e.running {
		e.mu.Unlock()
		return errors.New("running the executor: already running")
	}
	e.running = true
	e.mu.Unlock()
	defer close(e.done)
	t := e.o.clock.NewTicker(e.o.claimInterval)
	defer t.Stop()
	first := true
	for {
		if !e.draining.Load() {
			err := e.claim(ctx, first)
			if err == nil {
				first = false
			} else if ctx.Err() == nil {
				e.o.log.Warn("looking for rollouts to run", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			e.wg.Wait()
			return ctx.Err()
		case <-e.drainCh:
			e.wg.Wait()
			return nil
		case <-e.kick:
		case <-t.Chan():
		}
	}
}

// Stop drains the executor: no new sync starts, the syncs in flight finish and are recorded, gates stop
// waiting, and every lease is released so another replica (or the next start) resumes at once. It returns
// when Run has returned, or with ctx's error when ctx ends first (Run's context must then be cancelled; what
// was in flight is reconciled at the next start).
func (e *Executor) Stop(ctx context.Context) error {
	e.drainOne.Do(func() {
		e.draining.Store(true)
		close(e.drainCh)
	})
	e.mu.Lock()
	running := e.running
	e.mu.Unlock()
	if !running {
		return nil
	}
	select {
	case <-e.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("draining the rollout executor: %w", ctx.Err())
	}
}

// claim starts a driver for every unfinished rollout whose lease this replica gets, oldest first: at start every
// unfinished rollout (this replica's own leases from before a restart are still live), then those nobody holds;
// and for every finished one whose lease was not released (the driver publishes its final check-runs, then
// releases it).
func (e *Executor) claim(ctx context.Context, all bool) error {
	var rs []store.Rollout
	var err error
	if all {
		rs, err = e.st.ListRollouts(ctx, store.RolloutFilter{Unfinished: true})
		slices.Reverse(rs) // oldest first: an older rollout goes before a newer one touching the same apps
	} else {
		rs, err = e.st.ListClaimable(ctx)
	}
	if err != nil {
		return err
	}
	// Finished rollouts whose lease was never released: their replica died before publishing the end, or GitHub
	// refused it (retried with a growing wait).
	unreleased, err := e.st.ListUnreleased(ctx, e.o.owner)
	if err != nil {
		return err
	}
	now := e.o.clock.Now()
	e.mu.Lock()
	for _, r := range unreleased {
		if at, ok := e.republish[r.ID]; !ok || !now.Before(at.next) {
			rs = append(rs, r)
		}
	}
	e.mu.Unlock()
	for _, r := range rs {
		e.mu.Lock()
		_, driving := e.drivers[r.ID]
		e.mu.Unlock()
		if driving {
			continue
		}
		ok, err := e.st.AcquireLease(ctx, r.ID, e.o.owner, e.o.leaseTTL)
		if err != nil {
			return err
		}
		if ok {
			e.startDriver(ctx, r.ID)
		}
	}
	return nil
}

// maxRepublishWait bounds the wait between attempts to publish a finished rollout's check-runs.
const maxRepublishWait = 30 * time.Minute

type republishAt struct {
	next time.Time
	wait time.Duration
}

// publishDeferred notes that a finished rollout's final check-runs were refused (ok false) or published.
func (e *Executor) publishDeferred(id int64, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ok {
		delete(e.republish, id)
		return
	}
	at := e.republish[id]
	at.wait = min(max(2*at.wait, e.o.claimInterval), maxRepublishWait)
	at.next = e.o.clock.Now().Add(at.wait)
	e.republish[id] = at
}

func (e *Executor) startDriver(ctx context.Context, id int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.drivers[id]; ok || e.draining.Load() {
		return
	}
	dctx, cancel := context.WithCancel(ctx)
	d := newDriver(e, id, cancel)
	d.curWave.Store(-1)
	e.drivers[id] = d
	e.wg.Add(3)
	go func() {
		defer e.wg.Done()
		d.control(dctx)
	}()
	go func() {
		defer e.wg.Done()
		d.publisher(dctx)
	}()
	go func() {
		defer e.wg.Done()
		d.run(dctx)
		cancel()
		e.mu.Lock()
		delete(e.drivers, id)
		e.mu.Unlock()
	}()
}

// nudge tells the local driver of a rollout (if any) that its state changed, and the claim loop to look.
func (e *Executor) nudge(id int64) {
	e.mu.Lock()
	d := e.drivers[id]
	e.mu.Unlock()
	if d != nil {
		d.poke()
	}
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// acquire takes a slot of the concurrency bound.
func (e *Executor) acquire(ctx context.Context) error {
	select {
	case e.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *Executor) release() { <-e.sem }

// event appends to a rollout's audit log; a failure to log is logged, never fatal.
func (e *Executor) event(ctx context.Context, id int64, actor, action, target, result, msg string) {
	if actor == "" {
		actor = "fleetwave"
	}
	_, err := e.st.AppendEvent(context.WithoutCancel(ctx), store.Event{RolloutID: id, Actor: actor, Action: action,
		Target: target, Result: result, Message: msg})
	if err != nil {
		e.o.log.Warn("appending a rollout event", "rollout", id, "action", action, "err", err)
	}
}

// updateRollout re-reads the rollout and applies change until the compare-and-set succeeds. change returns
// false to leave the rollout as it is (it then comes back unchanged), or an error to give up.
func (e *Executor) updateRollout(ctx context.Context, id int64, change func(*store.Rollout) (bool, error)) (store.Rollout, error) {
	for attempt := 0; ; attempt++ {
		r, err := e.st.GetRollout(ctx, id)
		if err != nil {
			return r, err
		}
		ok, err := change(&r)
		if err != nil || !ok {
			return r, err
		}
		nr, err := e.st.UpdateRollout(ctx, r)
		if err == nil {
			return nr, nil
		}
		if !errors.Is(err, store.ErrConflict) || attempt >= 20 {
			return r, err
		}
	}
}

// updateWave does the same for a wave.
func (e *Executor) updateWave(ctx context.Context, id int64, index int, change func(*store.Wave) (bool, error)) (store.Wave, error) {
	for attempt := 0; ; attempt++ {
		ws, err := e.st.ListWaves(ctx, id)
		if err != nil {
			return store.Wave{}, err
		}
		if index < 0 || index >= len(ws) {
			return store.Wave{}, fmt.Errorf("updating wave %d of rollout %d: %w", index, id, store.ErrNotFound)
		}
		w := ws[index]
		ok, err := change(&w)
		if err != nil || !ok {
			return w, err
		}
		nw, err := e.st.UpdateWave(ctx, w)
		if err == nil {
			return nw, nil
		}
		if !errors.Is(err, store.ErrConflict) || attempt >= 20 {
			return w, err
		}
	}
}
