// Package writebudget is the per-installation budget of GitHub's content-creating requests (POST, PATCH, PUT,
// DELETE). GitHub's secondary rate limits refuse an installation that makes more than about 80 of them a minute
// or 500 an hour (docs.github.com, "Rate limits for the REST API", secondary rate limits); once refused, it
// must wait for Retry-After or a minute. A Budget slows down before that: every write of an installation, from
// every handler, takes a token from that installation's buckets, and waits — never drops — when they are
// empty. A rate-limit answer that gets through anyway pauses the installation for as long as GitHub asks.
//
// Each limit is a token bucket (N tokens per Per, at most Burst held). Reservations are made in order: a
// caller that finds the bucket empty is given the time its token will exist and waits until then, so waiters
// are served first come, first served, and the rate over any window stays within the limit.
package writebudget

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Limit is one token bucket: N requests per Per, up to Burst at once.
type Limit struct {
	N     int
	Per   time.Duration
	Burst int
}

// DefaultLimits stay under GitHub's secondary limits for content-creating requests (80 a minute, 500 an hour)
// with room for the requests fleetwave does not count (a replica's neighbour, a person's token on the same
// installation): 60 a minute in bursts of at most 20, and 480 an hour.
var DefaultLimits = []Limit{{N: 60, Per: time.Minute, Burst: 20}, {N: 480, Per: time.Hour, Burst: 480}}

// Clock is the time source; github.com/jonboulle/clockwork's clocks satisfy it.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Reasons a write waited, the values of Observer's reason.
const (
	ReasonBudget      = "budget"       // the installation's buckets were empty
	ReasonRateLimited = "rate_limited" // GitHub answered with a rate limit: the installation is paused
)

// Observer is told of every wait (metrics). Waiting is called with +1 when a write starts waiting and -1 when
// it stops; Waited once it may go, with how long it waited.
type Observer interface {
	Waiting(delta int)
	Waited(reason string, d time.Duration)
}

// Options configure a Budget.
type Options struct {
	Limits   []Limit // default DefaultLimits
	Clock    Clock   // default the system clock
	Observer Observer
	// Log gets a line for each wait of a second or more (default: none).
	Log *slog.Logger
}

// Budget holds the buckets of every installation. It is safe for concurrent use.
type Budget struct {
	limits []Limit
	clock  Clock
	obs    Observer
	log    *slog.Logger

	mu   sync.Mutex
	inst map[int64]*installation
}

type installation struct {
	buckets     []bucket
	pausedUntil time.Time
}

// bucket holds tokens as of at; tokens below zero are reserved by waiters.
type bucket struct {
	tokens float64
	at     time.Time
}

// New returns a Budget with o's limits.
func New(o Options) (*Budget, error) {
	if o.Limits == nil {
		o.Limits = DefaultLimits
	}
	for _, l := range o.Limits {
		if l.N <= 0 || l.Per <= 0 || l.Burst <= 0 {
			return nil, fmt.Errorf("GitHub write budget %d per %s (burst %d): every figure must be positive", l.N, l.Per, l.Burst)
		}
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	return &Budget{limits: o.Limits, clock: o.Clock, obs: o.Observer, log: o.Log, inst: map[int64]*installation{}}, nil
}

func (b *Budget) installation(id int64, now time.Time) *installation {
	in, ok := b.inst[id]
	if !ok {
		in = &installation{buckets: make([]bucket, len(b.limits))}
		for i, l := range b.limits {
			in.buckets[i] = bucket{tokens: float64(l.Burst), at: now}
		}
		b.inst[id] = in
	}
	return in
}

// reserve takes one token of each bucket of installation id and returns when the write may go (now or later).
func (b *Budget) reserve(id int64) (now, at time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now = b.clock.Now()
	in := b.installation(id, now)
	at = now
	for i, l := range b.limits {
		bk := &in.buckets[i]
		rate := float64(l.N) / float64(l.Per) // tokens per nanosecond
		if now.After(bk.at) {
			bk.tokens = min(float64(l.Burst), bk.tokens+rate*float64(now.Sub(bk.at)))
			bk.at = now
		}
		bk.tokens--
		if bk.tokens < 0 {
			if t := bk.at.Add(time.Duration(-bk.tokens / rate)); t.After(at) {
				at = t
			}
		}
	}
	return now, at
}

// unreserve gives back the tokens of a write that will not be made (its context ended while it waited).
func (b *Budget) unreserve(id int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	in := b.inst[id]
	for i := range in.buckets {
		in.buckets[i].tokens++
	}
}

func (b *Budget) paused(id int64) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if in, ok := b.inst[id]; ok {
		return in.pausedUntil
	}
	return time.Time{}
}

// Take waits until installation id may make one more content-creating request, and counts it. It returns
// ctx's error (and counts nothing) when ctx ends first.
func (b *Budget) Take(ctx context.Context, id int64) error {
	start, at := b.reserve(id)
	reason := ReasonBudget
	waited := false
	for {
		if until := b.paused(id); until.After(at) {
			at, reason = until, ReasonRateLimited
		}
		now := b.clock.Now()
		if !at.After(now) {
			break
		}
		if !waited {
			waited = true
			if b.obs != nil {
				b.obs.Waiting(1)
				defer b.obs.Waiting(-1)
			}
			if d := at.Sub(now); d >= time.Second && b.log != nil {
				b.log.InfoContext(ctx, "waiting for the installation's GitHub write budget", slog.Int64("installation", id),
					slog.String("reason", reason), slog.Duration("wait", d.Round(time.Millisecond)))
			}
		}
		select {
		case <-b.clock.After(at.Sub(now)):
		case <-ctx.Done():
			b.unreserve(id)
			return fmt.Errorf("waiting for installation %d's GitHub write budget: %w", id, context.Cause(ctx))
		}
	}
	if waited && b.obs != nil {
		b.obs.Waited(reason, b.clock.Now().Sub(start))
	}
	return nil
}

// Pause holds every write of installation id for d from now (GitHub answered with a rate limit and
// Retry-After d). A shorter pause never shortens a longer one.
func (b *Budget) Pause(id int64, d time.Duration) {
	if d <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	in := b.installation(id, now)
	if until := now.Add(d); until.After(in.pausedUntil) {
		in.pausedUntil = until
	}
	if b.log != nil {
		b.log.Warn("GitHub rate-limited the installation: its writes are paused", slog.Int64("installation", id), slog.Duration("for", d))
	}
}
