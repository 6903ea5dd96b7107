package isolate

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/render"
)

// Tenant renders in a Pool on behalf of one tenant (under serve: one GitHub App installation) and, within it,
// one group (a pull request): its renders wait for a worker in the pool's fair order, and its tenant holds at
// most Options.Share workers at once. It implements preview.Renderer.
type Tenant struct {
	p   *Pool
	who who
	out *outputBudget // nil: none
}

// outputBudget counts the manifests' bytes of a view's renders against Options.ChangeOutput.
type outputBudget struct {
	max  int64
	used atomic.Int64
}

// take counts objects in, or refuses them past the budget (they are dropped before being decoded).
func (b *outputBudget) take(n int64) error {
	if b == nil {
		return nil
	}
	if b.used.Add(n) > b.max {
		b.used.Add(-n)
		return fmt.Errorf("refused (pr-output): the change's manifests exceeded %s", FormatBytes(b.max))
	}
	return nil
}

// who names a render's tenant and, within the tenant, its group.
type who struct{ tenant, group string }

// For returns the renderer of the renders of group (a pull request) of tenant (an installation): call it for
// each preview of a change, as the manifests of its renders count in a budget of their own
// (Options.ChangeOutput). Renders through Pool.Render itself belong to the tenant "" and its group "", and count
// in no budget.
func (p *Pool) For(tenant, group string) *Tenant {
	t := &Tenant{p: p, who: who{tenant, group}}
	if p.opts.ChangeOutput > 0 {
		t.out = &outputBudget{max: p.opts.ChangeOutput}
	}
	return t
}

// Render is Pool.Render, scheduled as the tenant's.
func (t *Tenant) Render(ctx context.Context, req render.Request) (*render.Result, error) {
	return t.p.render(ctx, t.who, t.out, req)
}

// Fetches is Pool.Fetches.
func (t *Tenant) Fetches(src *v1alpha1.ApplicationSource) bool { return t.p.Fetches(src) }

// ChangeOutput is the cap on the manifests of one For view's renders (Options.ChangeOutput; ≤ 0: none).
func (p *Pool) ChangeOutput() int64 { return p.opts.ChangeOutput }

// Share is the most workers one tenant holds at once.
func (p *Pool) Share() int { return p.sched.share }

// scheduler hands the pool's workers to renders fairly among tenants: a tenant holds at most share of them at
// once, and a freed worker goes to the waiting tenant that holds the fewest. Within that tenant it goes to the
// group that has been given the fewest workers so far (a pull request arriving behind another's queue of
// bombs is served at the next worker of its tenant, not after the queue), and among equals to the render
// waiting longest. A tenant flooding the pool with renders, each held to the time cap, thus leaves
// capacity-share workers to the others, and a tenant arriving later is served at the next free worker, ahead
// of the flood's queue.
type scheduler struct {
	capacity, share int

	mu      sync.Mutex
	running int
	held    map[string]int    // workers held, by tenant
	groups  map[who]*groupUse // groups that wait or hold
	queue   []*waiter         // in arrival order
	peak    map[string]int    // most workers held at once, by tenant
}

// groupUse is what a group waits for, holds and was given.
type groupUse struct{ waiting, held, given int }

type waiter struct {
	who     who
	ready   chan struct{} // closed when granted
	granted bool
}

func newScheduler(capacity, share int) *scheduler {
	if share <= 0 || share > capacity {
		share = capacity
	}
	return &scheduler{capacity: capacity, share: share, held: map[string]int{}, groups: map[who]*groupUse{}, peak: map[string]int{}}
}

// acquire waits for a worker slot for w; it fails only with ctx's error.
func (s *scheduler) acquire(ctx context.Context, w who) error {
	return s.wait(ctx, s.enqueue(w))
}

// enqueue queues a request of w for a slot, granted at once if one is free to it.
func (s *scheduler) enqueue(w who) *waiter {
	q := &waiter{who: w, ready: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, q)
	s.group(w).waiting++
	s.dispatch()
	return q
}

func (s *scheduler) group(w who) *groupUse {
	g := s.groups[w]
	if g == nil {
		g = &groupUse{}
		s.groups[w] = g
	}
	return g
}

// forget drops a group's record once it neither waits nor holds: a later render of it starts afresh.
func (s *scheduler) forget(w who) {
	if g := s.groups[w]; g != nil && g.waiting == 0 && g.held == 0 {
		delete(s.groups, w)
	}
}

// wait waits until q is granted, or leaves the queue when ctx ends first.
func (s *scheduler) wait(ctx context.Context, q *waiter) error {
	select {
	case <-q.ready:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if q.granted {
		s.releaseLocked(q.who) // granted as the caller gave up: hand it on
		return ctx.Err()
	}
	for i, x := range s.queue {
		if x == q {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			s.groups[q.who].waiting--
			s.forget(q.who)
			break
		}
	}
	return ctx.Err()
}

// release gives w's slot back.
func (s *scheduler) release(w who) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseLocked(w)
}

func (s *scheduler) releaseLocked(w who) {
	s.running--
	if s.held[w.tenant]--; s.held[w.tenant] <= 0 {
		delete(s.held, w.tenant)
	}
	s.groups[w].held--
	s.forget(w)
	s.dispatch()
}

// dispatch grants free slots to waiters: each time to the first waiter, in arrival order, of the group given
// the fewest workers so far, of the tenants under their share that hold the fewest. Call with s.mu held.
func (s *scheduler) dispatch() {
	for s.running < s.capacity {
		best := -1
		for i, q := range s.queue {
			n := s.held[q.who.tenant]
			if n >= s.share {
				continue
			}
			if best < 0 {
				best = i
				continue
			}
			b := s.queue[best]
			if bn := s.held[b.who.tenant]; n < bn || n == bn && s.groups[q.who].given < s.groups[b.who].given {
				best = i
			}
		}
		if best < 0 {
			return
		}
		q := s.queue[best]
		s.queue = append(s.queue[:best], s.queue[best+1:]...)
		g := s.groups[q.who]
		g.waiting--
		g.held++
		g.given++
		s.running++
		s.held[q.who.tenant]++
		s.peak[q.who.tenant] = max(s.peak[q.who.tenant], s.held[q.who.tenant])
		q.granted = true
		close(q.ready)
	}
}
