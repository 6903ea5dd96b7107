package cli

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/testkit/logtest"
)

type fakePruneStore struct {
	mu         sync.Mutex
	calls      []string
	deliveries int64
	err        error
}

func (f *fakePruneStore) PruneDeliveries(_ context.Context, olderThan time.Duration) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "deliveries "+olderThan.String())
	return f.deliveries, nil
}

func (f *fakePruneStore) PrunePreviews(_ context.Context, olderThan time.Duration) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "previews "+olderThan.String())
	return 0, f.err
}

// serve prunes the delivery ids and previews past their retention at start and at every tick, logs what it
// deleted and what failed, and stops with its context.
func TestPruneLoop(t *testing.T) {
	st := &fakePruneStore{deliveries: 3, err: errors.New("database is closed")}
	var buf logtest.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { pruneLoop(ctx, st, log, 10*time.Millisecond); close(done) }()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		st.mu.Lock()
		n := len(st.calls)
		st.mu.Unlock()
		if n >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d prune calls after 5 s, want a round at start and one per tick", n)
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the loop did not stop with its context")
	}
	st.mu.Lock()
	first := st.calls[:2]
	st.mu.Unlock()
	if first[0] != "deliveries 336h0m0s" || first[1] != "previews 720h0m0s" {
		t.Fatalf("first round %q: want deliveries kept 14 days, previews 30", first)
	}
	out := buf.String()
	for _, want := range []string{`msg="pruned the store" what=deliveries deleted=3`, `msg="pruning the store" what=previews error="database is closed"`} {
		if !strings.Contains(out, want) {
			t.Fatalf("log lacks %q:\n%s", want, out)
		}
	}
}
