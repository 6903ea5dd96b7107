package drift

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/inventory"
)

type sinkFunc func(Decision)

func (f sinkFunc) Decided(_ context.Context, d Decision) { f(d) }

type rollouts struct {
	mu    sync.Mutex
	keys  []store.AppKey
	err   error
	asked chan struct{} // told of a question, when not nil and not full
}

func (r *rollouts) AppsAboutToSync(context.Context) ([]store.AppKey, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case r.asked <- struct{}{}: // nil: never
	default:
	}
	return r.keys, r.err
}

func (r *rollouts) set(keys []store.AppKey, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys, r.err = keys, err
}

// TestWatcherRuns: Run evaluates at once, on a change of the inventory, when a threshold is crossed with no
// event, and every Recheck (a rollout finishing changes the store only); a store that cannot answer decides
// nothing.
func TestWatcherRuns(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	inv := inventory.New(clock.Now)
	ro := &rollouts{}
	decisions := make(chan Decision, 10)
	w := NewWatcher(inv, ro, Options{After: 30 * time.Minute, Clock: clock, Recheck: time.Hour, Settle: -1, // settling would race the fake clock

		Sinks: []Sink{sinkFunc(func(d Decision) { decisions <- d })}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	next := func(step string, alerts int) Decision {
		t.Helper()
		select {
		case d := <-decisions:
			if len(d.Alerts) != alerts {
				t.Fatalf("%s: %d alerts %+v; want %d", step, len(d.Alerts), d.Alerts, alerts)
			}
			return d
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no decision", step)
		}
		return Decision{}
	}
	waiting := func() { // the loop waits on its timer
		t.Helper()
		bctx, bcancel := context.WithTimeout(ctx, 10*time.Second)
		defer bcancel()
		if err := clock.BlockUntilContext(bctx, 1); err != nil {
			t.Fatal(err)
		}
	}
	next("at once", 0)
	waiting()

	inv.Apply(inventory.App{Key: inventory.Key{Namespace: "argocd", Name: "web"}, Sync: "OutOfSync", Health: "Healthy"})
	next("on the change", 0)

	waiting()
	clock.Advance(30 * time.Minute) // no event: the threshold's timer fires
	if d := next("threshold crossed", 1); d.Alerts[0].App.Name != "web" || !d.At.Equal(t0.Add(30*time.Minute)) {
		t.Fatalf("decision %+v", d)
	}

	// A rollout is about to sync it now: only the store says so, found at the next Recheck.
	ro.set([]store.AppKey{{Namespace: "argocd", Name: "web"}}, nil)
	waiting()
	clock.Advance(time.Hour)
	next("recheck", 0)

	// The store fails: no decision, and Alerts keeps the last one.
	ro.set(nil, errors.New("database is locked"))
	waiting()
	ro.mu.Lock()
	ro.asked = make(chan struct{}, 1)
	ro.mu.Unlock()
	clock.Advance(time.Hour)
	<-ro.asked // the store was asked, and failed
	select {
	case d := <-decisions:
		t.Fatalf("a decision without the store: %+v", d)
	default:
	}
	ro.set(nil, nil)
	waiting()
	clock.Advance(time.Hour)
	next("the store answers again", 1)
	if len(w.Alerts()) != 1 {
		t.Errorf("Alerts() = %+v", w.Alerts())
	}
}
