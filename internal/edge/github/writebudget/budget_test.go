package writebudget_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/fleetwave/fleetwave/internal/edge/github/writebudget"
)

// observed records what a Budget tells its Observer.
type observed struct {
	mu      sync.Mutex
	waiting int
	waits   map[string][]time.Duration
}

func (o *observed) Waiting(d int) { o.mu.Lock(); o.waiting += d; o.mu.Unlock() }
func (o *observed) Waited(reason string, d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.waits == nil {
		o.waits = map[string][]time.Duration{}
	}
	o.waits[reason] = append(o.waits[reason], d)
}

func (o *observed) get(reason string) []time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]time.Duration(nil), o.waits[reason]...)
}

func newBudget(t *testing.T, limits ...writebudget.Limit) (*writebudget.Budget, *clockwork.FakeClock, *observed) {
	t.Helper()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC))
	obs := &observed{}
	b, err := writebudget.New(writebudget.Options{Limits: limits, Clock: clock, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	return b, clock, obs
}

// takeNow takes n tokens that must be available at once (no clock advance happens meanwhile).
func takeNow(t *testing.T, b *writebudget.Budget, id int64, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := b.Take(ctx, id)
		cancel()
		if err != nil {
			t.Fatalf("take %d of %d without waiting: %v", i+1, n, err)
		}
	}
}

// takeLater starts a Take that must wait, and returns its result channel once it waits on the clock.
func takeLater(t *testing.T, b *writebudget.Budget, clock *clockwork.FakeClock, ctx context.Context, id int64, waiters int) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- b.Take(ctx, id) }()
	bctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := clock.BlockUntilContext(bctx, waiters); err != nil {
		select {
		case err := <-done:
			t.Fatalf("Take did not wait: returned %v", err)
		default:
		}
		t.Fatalf("Take never waited on the clock: %v", err)
	}
	return done
}

func notYet(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("%s: Take returned %v before its time", what, err)
	case <-time.After(20 * time.Millisecond):
	}
}

func returned(t *testing.T, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: Take still waiting", what)
		return nil
	}
}

func TestBudget(t *testing.T) {
	tests := []struct {
		name   string
		limits []writebudget.Limit
		burst  int           // writes that go at once
		next   time.Duration // when the next one may go
	}{
		{"default: 20 at once, then one a second", nil, 20, time.Second},
		{"a minute bucket", []writebudget.Limit{{N: 6, Per: time.Minute, Burst: 3}}, 3, 10 * time.Second},
		{"the tighter of two buckets", []writebudget.Limit{{N: 60, Per: time.Minute, Burst: 20}, {N: 10, Per: time.Hour, Burst: 5}}, 5, 6 * time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, clock, obs := newBudget(t, tc.limits...)
			takeNow(t, b, 1, tc.burst)
			done := takeLater(t, b, clock, context.Background(), 1, 1)
			clock.Advance(tc.next - time.Millisecond)
			notYet(t, done, "1ms early")
			clock.Advance(time.Millisecond)
			if err := returned(t, done, "on time"); err != nil {
				t.Fatal(err)
			}
			if got := obs.get(writebudget.ReasonBudget); len(got) != 1 || got[0] != tc.next {
				t.Fatalf("observed budget waits %v; want [%s]", got, tc.next)
			}
			if obs.waiting != 0 {
				t.Fatalf("waiting gauge %d after the wait; want 0", obs.waiting)
			}
			// Another installation has its own buckets.
			takeNow(t, b, 2, tc.burst)
		})
	}
}

func TestBudgetWaitersQueueInOrder(t *testing.T) {
	b, clock, _ := newBudget(t, writebudget.Limit{N: 1, Per: time.Second, Burst: 1})
	takeNow(t, b, 7, 1)
	first := takeLater(t, b, clock, context.Background(), 7, 1)
	second := takeLater(t, b, clock, context.Background(), 7, 2)
	clock.Advance(time.Second)
	if err := returned(t, first, "first waiter after 1s"); err != nil {
		t.Fatal(err)
	}
	notYet(t, second, "second waiter after 1s")
	clock.Advance(time.Second)
	if err := returned(t, second, "second waiter after 2s"); err != nil {
		t.Fatal(err)
	}
}

func TestBudgetPauseAfterRateLimit(t *testing.T) {
	b, clock, obs := newBudget(t)
	b.Pause(3, 30*time.Second)
	b.Pause(3, 5*time.Second) // a shorter pause does not shorten it
	done := takeLater(t, b, clock, context.Background(), 3, 1)
	clock.Advance(29 * time.Second)
	notYet(t, done, "during the pause")
	clock.Advance(time.Second)
	if err := returned(t, done, "after the pause"); err != nil {
		t.Fatal(err)
	}
	if got := obs.get(writebudget.ReasonRateLimited); len(got) != 1 || got[0] != 30*time.Second {
		t.Fatalf("observed rate-limited waits %v; want [30s]", got)
	}
	takeNow(t, b, 4, 1) // other installations are not paused
}

func TestBudgetCancelledWaitGivesItsTokenBack(t *testing.T) {
	b, clock, _ := newBudget(t, writebudget.Limit{N: 1, Per: time.Minute, Burst: 1})
	takeNow(t, b, 1, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := takeLater(t, b, clock, ctx, 1, 1)
	cancel()
	if err := returned(t, done, "cancelled"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Take = %v; want context.Canceled", err)
	}
	clock.Advance(time.Minute)
	takeNow(t, b, 1, 1) // the cancelled reservation was given back: one token again after a minute
}

func TestNewRefusesEmptyLimits(t *testing.T) {
	for _, l := range []writebudget.Limit{{N: 0, Per: time.Minute, Burst: 1}, {N: 1, Per: 0, Burst: 1}, {N: 1, Per: time.Minute}} {
		if _, err := writebudget.New(writebudget.Options{Limits: []writebudget.Limit{l}}); err == nil {
			t.Errorf("New(%+v) succeeded", l)
		}
	}
}
