package storetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var deliveryTests = []test{
	{"first time then duplicate", func(t *testing.T, e *env) {
		for _, c := range []struct {
			id   string
			want bool
		}{{"d-1", true}, {"d-1", false}, {"d-2", true}, {"d-1", false}, {"D-1", true}} {
			got, err := e.s.MarkDelivery(e.ctx, c.id)
			if err != nil || got != c.want {
				t.Fatalf("MarkDelivery(%q) = %v, %v; want %v", c.id, got, err, c.want)
			}
		}
		if _, err := e.s.MarkDelivery(e.ctx, ""); err == nil {
			t.Fatal("MarkDelivery(\"\") succeeded")
		}
	}},
	{"100 goroutines on two replicas, one first time", func(t *testing.T, e *env) {
		replicas := []interface {
			MarkDelivery(context.Context, string) (bool, error)
		}{e.s, e.open()}
		var firsts atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := 0; i < 100; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				<-start
				first, err := replicas[i%2].MarkDelivery(e.ctx, "72d3162e-cc78-11e3-81ab-4c9367dc0958")
				if err != nil {
					t.Errorf("MarkDelivery: %v", err)
				}
				if first {
					firsts.Add(1)
				}
			}(i)
		}
		close(start)
		wg.Wait()
		if n := firsts.Load(); n != 1 {
			t.Fatalf("%d calls got firstTime = true; want exactly 1", n)
		}
	}},
	{"unmark lets a redelivery through", func(t *testing.T, e *env) {
		if first, err := e.s.MarkDelivery(e.ctx, "d"); err != nil || !first {
			t.Fatalf("MarkDelivery = %v, %v", first, err)
		}
		if err := e.s.UnmarkDelivery(e.ctx, "d"); err != nil {
			t.Fatal(err)
		}
		if first, err := e.s.MarkDelivery(e.ctx, "d"); err != nil || !first {
			t.Fatalf("MarkDelivery after UnmarkDelivery = %v, %v; want true", first, err)
		}
	}},
	{"prune forgets only old deliveries", func(t *testing.T, e *env) {
		mark := func(id string, want bool) {
			t.Helper()
			if got, err := e.s.MarkDelivery(e.ctx, id); err != nil || got != want {
				t.Fatalf("MarkDelivery(%q) = %v, %v; want %v", id, got, err, want)
			}
		}
		mark("old", true)
		e.clock.Advance(6 * 24 * time.Hour)
		mark("mid", true)
		e.clock.Advance(2 * 24 * time.Hour)
		mark("new", true)
		n, err := e.s.PruneDeliveries(e.ctx, 7*24*time.Hour)
		if err != nil || n != 1 {
			t.Fatalf("PruneDeliveries(7d) = %d, %v; want 1", n, err)
		}
		mark("old", true)
		mark("mid", false)
		mark("new", false)
		if _, err := e.s.PruneDeliveries(e.ctx, 0); err == nil {
			t.Fatal("PruneDeliveries(0) succeeded")
		}
	}},
	{"a cancelled context fails", func(t *testing.T, e *env) {
		ctx, cancel := context.WithCancel(e.ctx)
		cancel()
		if _, err := e.s.MarkDelivery(ctx, "c"); !errors.Is(err, context.Canceled) {
			t.Fatalf("MarkDelivery with a cancelled context: %v; want context.Canceled", err)
		}
	}},
}
