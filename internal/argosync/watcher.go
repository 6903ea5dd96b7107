package argosync

import (
	"sync"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/watch"
)

// watcher fans one application stream out to the apps being waited on. It keeps, per subscribed app, the newest
// object seen (by resourceVersion) from the stream or from the app's own reads.
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
	resync bool // the stream reconnected: events may have been missed
	gone   bool // DELETED
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

// get returns the newest object known.
func (s *subscription) get() *v1alpha1.Application {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	return s.latest
}

// offer records an object read directly (a GET or a sync answer) if it is newer than what the stream gave.
func (s *subscription) offer(app *v1alpha1.Application) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	if newer(app, s.latest) {
		s.latest = app
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

func (w *watcher) onEvent(ev v1alpha1.ApplicationWatchEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for s := range w.subs[ev.Application.Name] {
		if ev.Type == watch.Deleted {
			s.gone = true
			s.wake()
			continue
		}
		if newer(&ev.Application, s.latest) {
			app := ev.Application
			s.latest = &app
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
