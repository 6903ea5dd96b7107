package drift

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/inventory"
)

// Inventory is the view of the fleet the watcher decides on: internal/inventory's *Inventory.
type Inventory interface {
	Snapshot() inventory.Snapshot
	// Changed is closed once the inventory is past version.
	Changed(version uint64) <-chan struct{}
}

// Rollouts says which apps a rollout is about to sync: the store's AppsAboutToSync.
type Rollouts interface {
	AppsAboutToSync(ctx context.Context) ([]store.AppKey, error)
}

// Decision is one evaluation: the snapshot it was made on, when, and the apps in lasting drift.
type Decision struct {
	At       time.Time
	Snapshot inventory.Snapshot
	Alerts   []Alert
	// AboutToSync are the apps a rollout was about to sync, left out of the alerts.
	AboutToSync map[inventory.Key]bool
}

// Sink receives every decision, in order, from the watcher's goroutine.
type Sink interface {
	Decided(ctx context.Context, d Decision)
}

// Options configure a Watcher.
type Options struct {
	// After is the threshold of every app (FLEETWAVE_DRIFT_AFTER); 0: only those AfterFor gives one.
	After time.Duration
	// AfterFor, when set, is an app's own threshold (a repository's policy); 0 falls back to After.
	AfterFor func(inventory.App) time.Duration
	// Clock is the watcher's clock (default the real one).
	Clock clockwork.Clock
	// Recheck is the longest time between two evaluations (default a minute): a rollout that finishes changes
	// the store, not the inventory.
	Recheck time.Duration
	// Settle is the shortest time between two evaluations after changes of the inventory (default a second),
	// so that a burst of events costs one evaluation; negative: none.
	Settle time.Duration
	Log    *slog.Logger
	Sinks  []Sink
}

// Watcher evaluates the inventory on every change and on a timer, and hands each decision to its sinks.
type Watcher struct {
	inv      Inventory
	rollouts Rollouts
	o        Options

	mu     sync.Mutex
	alerts []Alert
}

// NewWatcher returns a watcher of inv; Run starts it.
func NewWatcher(inv Inventory, rollouts Rollouts, o Options) *Watcher {
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	if o.Recheck <= 0 {
		o.Recheck = time.Minute
	}
	if o.Settle == 0 {
		o.Settle = time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Watcher{inv: inv, rollouts: rollouts, o: o}
}

// after is an app's threshold.
func (w *Watcher) after(a inventory.App) time.Duration {
	if w.o.AfterFor != nil {
		if d := w.o.AfterFor(a); d != 0 {
			return d
		}
	}
	return w.o.After
}

// Alerts are the apps in lasting drift at the last decision.
func (w *Watcher) Alerts() []Alert {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.alerts)
}

// Evaluate decides once on the inventory as it is now, records the decision for Alerts and hands it to the
// sinks. It returns when the next app will cross its threshold if nothing changes (zero: none). When the store
// cannot say which apps rollouts are about to sync, nothing is decided: an app a rollout is about to sync is
// never reported for want of knowing.
func (w *Watcher) Evaluate(ctx context.Context) (Decision, time.Time, error) {
	snap := w.inv.Snapshot()
	keys, err := w.rollouts.AppsAboutToSync(ctx)
	if err != nil {
		return Decision{Snapshot: snap}, time.Time{}, err
	}
	about := make(map[inventory.Key]bool, len(keys))
	for _, k := range keys {
		about[inventory.Key{Instance: k.Instance, Namespace: k.Namespace, Name: k.Name}] = true
	}
	now := w.o.Clock.Now()
	alerts, next := Decide(Input{Apps: snap.Apps, Now: now, After: w.after, AboutToSync: about})
	d := Decision{At: now, Snapshot: snap, Alerts: alerts, AboutToSync: about}
	w.mu.Lock()
	w.alerts = alerts
	w.mu.Unlock()
	for _, s := range w.o.Sinks {
		s.Decided(ctx, d)
	}
	return d, next, nil
}

// Run evaluates until ctx ends: at once, then after every change of the inventory (at most once a Settle),
// when the next app crosses its threshold, and at least every Recheck.
func (w *Watcher) Run(ctx context.Context) {
	for {
		d, next, err := w.Evaluate(ctx)
		if err != nil {
			w.o.Log.Warn("drift: not evaluated", slog.Any("error", err))
		}
		wait := w.o.Recheck
		if !next.IsZero() {
			wait = min(wait, max(next.Sub(w.o.Clock.Now()), 0))
		}
		timer := w.o.Clock.NewTimer(wait)
		var changed <-chan struct{}
		if err == nil {
			changed = w.inv.Changed(d.Snapshot.Version)
		}
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.Chan():
		case <-changed:
			timer.Stop()
			if w.o.Settle > 0 {
				select {
				case <-ctx.Done():
					return
				case <-w.o.Clock.After(w.o.Settle):
				}
			}
		}
	}
}
