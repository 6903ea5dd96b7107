package app

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/store"
)

// Previews remembers what was done per pull request change and per head, so that another delivery naming the
// change — reopened, ready_for_review, a redelivery under a new id —, a restart or a second replica does not
// redo it: which changes (repo, PR, head, base) are previewed or being previewed, the check runs created on
// each head, and the sticky comment posted per change with the one the pull request shows (so that a head
// returning to a commit already previewed gets its comment back without a preview). *store.Store satisfies it (durable, shared by replicas); without one, an App keeps them in memory.
type Previews interface {
	// ClaimPreview claims a change for ttl: false when it is done (unless force: a re-run, /plan) or running.
	ClaimPreview(ctx context.Context, k store.PreviewKey, force bool, ttl time.Duration) (bool, error)
	// FinishPreview marks a claimed change done (its results posted).
	FinishPreview(ctx context.Context, k store.PreviewKey) error
	// ReleasePreview gives up a claim (cancelled, stale): the next delivery naming the change claims it.
	ReleasePreview(ctx context.Context, k store.PreviewKey) error
	// CheckRunID is the id of the check run name created on head, 0 when none.
	CheckRunID(ctx context.Context, repo, head, name string) (int64, error)
	// SaveCheckRunID records the check run name created on head.
	SaveCheckRunID(ctx context.Context, repo, head, name string, id int64) error
	// SaveComment records the comment posted for a change, now shown on its pull request.
	SaveComment(ctx context.Context, k store.PreviewKey, parts []string) error
	// ShowComment records that the pull request shows the change's comment, recorded before, again.
	ShowComment(ctx context.Context, k store.PreviewKey) error
	// Comment is the comment recorded for a change, nil when none.
	Comment(ctx context.Context, k store.PreviewKey) ([]string, error)
	// ShownComment is the change whose comment the pull request shows, the zero key when none is recorded.
	ShownComment(ctx context.Context, repo string, pr int) (store.PreviewKey, error)
}

// WithPreviews keeps what was previewed, and the check runs created per head, in p (serve: the store), instead
// of in the App's memory — so that a restart or another replica does not preview a change again nor create its
// check runs twice.
func WithPreviews(p Previews) Option { return func(a *App) { a.previews = p } }

// claimTTL is how long a preview's claim holds: a replica killed while previewing leaves its change to the
// next delivery after that. It outlasts any preview (the render budget of a change is minutes).
const claimTTL = 30 * time.Minute

// memPreviews is the Previews of an App without a store: this process's memory, the oldest forgotten first
// beyond max changes, max check runs and max comments.
type memPreviews struct {
	mu       sync.Mutex
	now      func() time.Time
	max      int
	changes  map[store.PreviewKey]memClaim
	order    []store.PreviewKey
	runs     map[memRun]int64
	runList  []memRun
	comments map[store.PreviewKey][]string
	comList  []store.PreviewKey
	shown    map[prKey]store.PreviewKey
}

type memClaim struct {
	done  bool
	until time.Time
}

type memRun struct{ repo, head, name string }

func newMemPreviews(now func() time.Time, max int) *memPreviews {
	return &memPreviews{now: now, max: max, changes: map[store.PreviewKey]memClaim{}, runs: map[memRun]int64{},
		comments: map[store.PreviewKey][]string{}, shown: map[prKey]store.PreviewKey{}}
}

func (m *memPreviews) ClaimPreview(_ context.Context, k store.PreviewKey, force bool, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	c, ok := m.changes[k]
	if ok && !(c.done && force) && !(!c.done && now.After(c.until)) {
		return false, nil
	}
	if !ok {
		m.order = append(m.order, k)
		if len(m.order) > m.max {
			delete(m.changes, m.order[0])
			m.order = m.order[1:]
		}
	}
	m.changes[k] = memClaim{until: now.Add(ttl)}
	return true, nil
}

func (m *memPreviews) FinishPreview(_ context.Context, k store.PreviewKey) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.changes[k]; ok {
		m.changes[k] = memClaim{done: true}
	}
	return nil
}

func (m *memPreviews) ReleasePreview(_ context.Context, k store.PreviewKey) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.changes[k]; ok && !c.done {
		m.changes[k] = memClaim{} // expired: the next claim takes it, keeping its place in order
	}
	return nil
}

func (m *memPreviews) CheckRunID(_ context.Context, repo, head, name string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.runs[memRun{repo, head, name}], nil
}

func (m *memPreviews) SaveCheckRunID(_ context.Context, repo, head, name string, id int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := memRun{repo, head, name}
	if _, ok := m.runs[r]; !ok {
		m.runList = append(m.runList, r)
		if len(m.runList) > m.max {
			delete(m.runs, m.runList[0])
			m.runList = m.runList[1:]
		}
	}
	m.runs[r] = id
	return nil
}

func (m *memPreviews) SaveComment(_ context.Context, k store.PreviewKey, parts []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.comments[k]; !ok {
		m.comList = append(m.comList, k)
		if len(m.comList) > m.max {
			old := m.comList[0]
			delete(m.comments, old)
			m.comList = m.comList[1:]
			if pk := (prKey{old.Repo, old.PR}); m.shown[pk] == old {
				delete(m.shown, pk)
			}
		}
	}
	m.comments[k] = append([]string{}, parts...)
	m.shown[prKey{k.Repo, k.PR}] = k
	return nil
}

func (m *memPreviews) ShowComment(_ context.Context, k store.PreviewKey) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.comments[k]; !ok {
		return fmt.Errorf("recording the comment of %s as shown: no comment is recorded for it", k)
	}
	m.shown[prKey{k.Repo, k.PR}] = k
	return nil
}

func (m *memPreviews) Comment(_ context.Context, k store.PreviewKey) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.comments[k], nil
}

func (m *memPreviews) ShownComment(_ context.Context, repo string, pr int) (store.PreviewKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.shown[prKey{repo, pr}], nil
}
