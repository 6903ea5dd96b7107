package isolate

import (
	"context"
	"sync"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/render"
)

// Tenant renders in a Pool on behalf of one tenant (under serve: one GitHub App installation): its renders wait
// for a worker in the pool's fair order, and it holds at most Options.Share workers at once. It implements
// preview.Renderer.
type Tenant struct {
	p    *Pool
	name string
}

// For returns the renderer of tenant's renders. Renders through Pool.Render itself belong to the tenant "".
func (p *Pool) For(tenant string) *Tenant { return &Tenant{p: p, name: tenant} }

// Render is Pool.Render, scheduled as the tenant's.
func (t *Tenant) Render(ctx context.Context, req render.Request) (*render.Result, error) {
	return t.p.render(ctx, t.name, req)
}

// Fetches is Pool.Fetches.
func (t *Tenant) Fetches(src *v1alpha1.ApplicationSource) bool { return t.p.Fetches(src) }

// Share is the most workers one tenant holds at once.
func (p *Pool) Share() int { return p.sched.share }

// scheduler hands the pool's workers to renders fairly among tenants: a tenant holds at most share of them at
// once, and a freed worker goes to the waiting tenant that holds the fewest (the longest waiting among equals).
// A tenant flooding the pool with renders, each held to the time cap, thus leaves capacity-share workers to the
// others, and a tenant arriving later is served at the next free worker, ahead of the flood's queue.
type scheduler struct {
	capacity, share int

	mu      sync.Mutex
	running int
	held    map[string]int
	queue   []*waiter // in arrival order
	peak    map[string]int
}

type waiter struct {
	tenant  string
	ready   chan struct{} // closed when granted
	granted bool
}

func newScheduler(capacity, share int) *scheduler {
	if share <= 0 || share > capacity {
		share = capacity
	}
	return &scheduler{capacity: capacity, share: share, held: map[string]int{}, peak: map[string]int{}}
}

// acquire waits for a worker slot for tenant; it fails only with ctx's error.
func (s *scheduler) acquire(ctx context.Context, tenant string) error {
	return s.wait(ctx, s.enqueue(tenant))
}

// enqueue queues a request of tenant for a slot, granted at once if one is free to it.
func (s *scheduler) enqueue(tenant string) *waiter {
	w := &waiter{tenant: tenant, ready: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, w)
	s.dispatch()
	return w
}

// wait waits until w is granted, or leaves the queue when ctx ends first.
func (s *scheduler) wait(ctx context.Context, w *waiter) error {
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.granted {
		s.releaseLocked(w.tenant) // granted as the caller gave up: hand it on
		return ctx.Err()
	}
	for i, q := range s.queue {
		if q == w {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			break
		}
	}
	return ctx.Err()
}

// release gives tenant's slot back.
func (s *scheduler) release(tenant string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseLocked(tenant)
}

func (s *scheduler) releaseLocked(tenant string) {
	s.running--
	if s.held[tenant]--; s.held[tenant] <= 0 {
		delete(s.held, tenant)
	}
	s.dispatch()
}

// dispatch grants free slots to waiters: each time to the first waiter, in arrival order, of the tenants under
// their share that hold the fewest. Call with s.mu held.
func (s *scheduler) dispatch() {
	for s.running < s.capacity {
		best := -1
		for i, w := range s.queue {
			n := s.held[w.tenant]
			if n >= s.share {
				continue
			}
			if best < 0 || n < s.held[s.queue[best].tenant] {
				best = i
			}
		}
		if best < 0 {
			return
		}
		w := s.queue[best]
		s.queue = append(s.queue[:best], s.queue[best+1:]...)
		s.running++
		s.held[w.tenant]++
		s.peak[w.tenant] = max(s.peak[w.tenant], s.held[w.tenant])
		w.granted = true
		close(w.ready)
	}
}

// Peak reports, per tenant, the most workers it held at once so far (for tests and logs).
func (p *Pool) Peak() map[string]int {
	s := p.sched
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.peak))
	for k, v := range s.peak {
		out[k] = v
	}
	return out
}
