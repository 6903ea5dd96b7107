package argosync

import (
	"sync"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
)

// watcher fans one application stream out to the apps being waited on. It keeps, per subscribed app, the newest
// object seen (by resourceVersion) from the stream or from the app's own reads. A stream event is decoded only
// when its app is looked at (subscription.get) and is still the newest then: of the versions an operation
// writes in a burst (started, running, finished, reconciled, refreshed), a waiter decodes only those it looks
// at, and none older than an answer of its own requests.
type watcher struct {
	mu        sync.Mutex
	subs      map[string]map[*subscription]struct{}
	connected chan struct{}
	once      sync.Once
	stopped   bool // the stream ended for good: waits fall back to reading
}

func newWatcher() *watcher {
	return &watcher{subs: map[string]map[*subscription]struct{}{}, connected: make(chan struct{})}
}

// subscription is one app's view of the stream.
type subscription struct {
	w      *watcher
	name   string
	notify chan struct{} // capacity 1: "something changed"
	latest *v1alpha1.Application
	// pending is the newest stream event, newer than latest, not decoded yet.
	pending *argocd.Event
	resync  bool // the stream reconnected: events may have been missed
	gone    bool // DELETED
}

func (w *watcher) subscribe(name string, initial *v1alpha1.Application) *subscription {
	s := &subscription{w: w, name: name, notify: make(chan struct{}, 1), latest: initial}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.subs[name] == nil {
		w.subs[name] = map[*subscription]struct{}{}
	}
	w.subs[name][s] = struct{}{}
	return s
}

func (s *subscription) close() {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	delete(s.w.subs[s.name], s)
	if len(s.w.subs[s.name]) == 0 {
		delete(s.w.subs, s.name)
	}
}

// get returns the newest object known, decoding the newest stream event if it is newer than the rest (outside
// the lock: the stream goes on meanwhile). An event that cannot be decoded is dropped: the next event, or the
// read after a silence, brings the app.
func (s *subscription) get() *v1alpha1.Application {
	s.w.mu.Lock()
	p := s.pending
	if p == nil {
		defer s.w.mu.Unlock()
		return s.latest
	}
	s.w.mu.Unlock()
	app, err := p.Application()
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	if s.pending == p {
		s.pending = nil
	}
	if err == nil && newer(app, s.latest) {
		s.latest = app
	}
	return s.latest
}

// offer records an object read directly (a GET or a sync answer) if it is newer than what the stream gave.
func (s *subscription) offer(app *v1alpha1.Application) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	if newer(app, s.latest) {
		s.latest = app
	}
	if s.pending != nil && !argocd.NewerResourceVersion(s.pending.ResourceVersion, s.latest.ResourceVersion) {
		s.pending = nil
	}
}

// takeResync reports (and clears) a reconnection of the stream since the last call.
func (s *subscription) takeResync() bool {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	r := s.resync
	s.resync = false
	return r
}

func (s *subscription) deleted() bool {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	return s.gone
}

func (s *subscription) wake() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

func (w *watcher) onEvent(ev *argocd.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for s := range w.subs[ev.Name] {
		if ev.Type == watch.Deleted {
			s.gone = true
			s.wake()
			continue
		}
		isNewer := s.latest == nil || argocd.NewerResourceVersion(ev.ResourceVersion, s.latest.ResourceVersion)
		if s.pending != nil {
			isNewer = argocd.NewerResourceVersion(ev.ResourceVersion, s.pending.ResourceVersion)
		}
		if isNewer {
			s.pending = ev
			s.wake()
		}
	}
}

func (w *watcher) onConnect(reconnect bool) {
	w.once.Do(func() { close(w.connected) })
	if !reconnect {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, subs := range w.subs {
		for s := range subs {
			s.resync = true
			s.wake()
		}
	}
}

// stop marks the stream as ended for good; waiters are woken to fall back to reading.
func (w *watcher) stop() {
	w.once.Do(func() { close(w.connected) })
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	for _, subs := range w.subs {
		for s := range subs {
			s.wake()
		}
	}
}

func (w *watcher) isStopped() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stopped
}
