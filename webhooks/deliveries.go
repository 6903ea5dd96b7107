package webhooks

import (
	"container/list"
	"context"
	"sync"
)

// DeliveryStore remembers which deliveries were accepted, so that a redelivery (same X-GitHub-Delivery GUID,
// e.g. after a timeout or a manual "Redeliver") is acknowledged without being handled twice.
//
// Seen records id and reports whether it was already recorded, atomically: of two concurrent calls with the
// same id exactly one returns dup == false. A persistent implementation (internal/edge/store) keeps the answer
// across restarts. The Server calls Seen only once it holds a queue slot for the delivery, so a delivery
// refused with 503 is never recorded and its redelivery is handled.
type DeliveryStore interface {
	Seen(ctx context.Context, id string) (dup bool, err error)
}

// DeliveryForgetter is optionally implemented by a DeliveryStore. When the Server abandons deliveries it had
// accepted but not started (shutdown deadline), it calls Forget so that a redelivery is handled.
type DeliveryForgetter interface {
	Forget(ctx context.Context, id string) error
}

// MemoryDeliveries is an in-memory DeliveryStore for tests and single-process development. It remembers at
// most max ids (oldest forgotten first); it does not survive a restart.
type MemoryDeliveries struct {
	mu    sync.Mutex
	max   int
	ids   map[string]*list.Element
	order *list.List
}

// NewMemoryDeliveries returns a MemoryDeliveries remembering up to max ids (max <= 0: 100,000).
func NewMemoryDeliveries(max int) *MemoryDeliveries {
	if max <= 0 {
		max = 100_000
	}
	return &MemoryDeliveries{max: max, ids: map[string]*list.Element{}, order: list.New()}
}

// Seen implements DeliveryStore.
func (m *MemoryDeliveries) Seen(_ context.Context, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ids[id]; ok {
		return true, nil
	}
	m.ids[id] = m.order.PushBack(id)
	for m.order.Len() > m.max {
		oldest := m.order.Front()
		m.order.Remove(oldest)
		delete(m.ids, oldest.Value.(string))
	}
	return false, nil
}

// Forget implements DeliveryForgetter.
func (m *MemoryDeliveries) Forget(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.ids[id]; ok {
		m.order.Remove(e)
		delete(m.ids, id)
	}
	return nil
}
