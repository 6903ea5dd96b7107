package argocdsim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"google.golang.org/grpc/codes"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
)

// subscriberBuffer is how many events a stream may lag behind before the server gives up on it.
const subscriberBuffer = 8192

type subscriber struct {
	match    func(*v1alpha1.Application) bool
	ch       chan v1alpha1.ApplicationWatchEvent
	overflow chan struct{} // closed when the subscriber fell too far behind
}

// broadcastLocked sends the app's current view to every matching stream. A stream that cannot keep up is
// closed (the client reconnects and re-reads) rather than silently missing the event.
func (s *Server) broadcastLocked(t watch.EventType, st *appState) {
	if len(s.subs) == 0 {
		return
	}
	ev := v1alpha1.ApplicationWatchEvent{Type: t, Application: *s.viewLocked(st)}
	for sub := range s.subs {
		if !sub.match(&ev.Application) {
			continue
		}
		select {
		case sub.ch <- ev:
		default:
			close(sub.overflow)
			delete(s.subs, sub)
		}
	}
}

// handleStream serves GET /api/v1/stream/applications (server/application/application.go Watch and
// argoproj/pkg grpc/http NewStreamForwarder): an initial ADDED per matching app unless resuming with a
// resourceVersion (a name filter always gets it), then changes; newline-delimited JSON, or server-sent events
// with keepalives when the client asks for text/event-stream; identical consecutive messages per app are
// suppressed.
func (s *Server) handleStream(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	sel, err := labels.Parse(q.Get("selector"))
	if err != nil {
		writeError(w, codes.Unknown, fmt.Sprintf("error parsing labels with selectors: %v", err))
		return
	}
	name, ns := q.Get("name"), q.Get("appNamespace")
	projects := append(q["projects"], q["project"]...)
	minVersion := 0
	if v := q.Get("resourceVersion"); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			minVersion = n
		}
	}
	match := func(a *v1alpha1.Application) bool {
		if len(projects) > 0 && !slices.Contains(projects, a.Spec.Project) {
			return false
		}
		if v, err := strconv.Atoi(a.ResourceVersion); err == nil && v < minVersion {
			return false
		}
		if name != "" && (a.Name != name || (ns != "" && a.Namespace != ns)) {
			return false
		}
		return sel.Matches(labels.Set(a.Labels))
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, codes.Internal, "unexpected type of web server")
		return
	}
	sub := &subscriber{match: match, ch: make(chan v1alpha1.ApplicationWatchEvent, subscriberBuffer), overflow: make(chan struct{})}
	s.mu.Lock()
	s.totals.Streams++
	var initial []v1alpha1.ApplicationWatchEvent
	if q.Get("resourceVersion") == "" || name != "" {
		for _, n := range s.sortedNamesLocked() {
			if v := s.viewLocked(s.apps[n]); match(v) {
				initial = append(initial, v1alpha1.ApplicationWatchEvent{Type: watch.Added, Application: *v})
			}
		}
	}
	s.subs[sub] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.subs, sub)
		s.mu.Unlock()
	}()

	sse := r.Header.Get("Accept") == "text/event-stream"
	if sse {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("X-Content-Type-Options", "nosniff")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(http.StatusOK)
	flusher.Flush()

	last := map[string][]byte{}
	send := func(ev v1alpha1.ApplicationWatchEvent) bool {
		b, err := json.Marshal(map[string]any{"result": ev})
		if err != nil {
			return false
		}
		key := ev.Application.Namespace + "/" + ev.Application.Name
		if bytes.Equal(last[key], b) {
			return true
		}
		last[key] = b
		if sse {
			_, err = fmt.Fprintf(w, "data: %s \n\n", b)
		} else {
			_, err = w.Write(append(b, '\n'))
		}
		flusher.Flush()
		return err == nil
	}
	for _, ev := range initial {
		if !send(ev) {
			return
		}
	}
	var keepalive <-chan time.Time
	if sse {
		t := s.clk.NewTicker(s.cfg.KeepaliveInterval)
		defer t.Stop()
		keepalive = t.Chan()
	}
	var drop <-chan time.Time
	if s.cfg.StreamDropMean > 0 {
		t := s.clk.NewTimer(s.expDuration(s.cfg.StreamDropMean))
		defer t.Stop()
		drop = t.Chan()
	}
	for {
		select {
		case ev := <-sub.ch:
			if !send(ev) {
				return
			}
		case <-keepalive:
			if _, err := w.Write([]byte(":\n")); err != nil {
				return
			}
			flusher.Flush()
		case <-drop:
			s.mu.Lock()
			s.totals.StreamDrops++
			s.mu.Unlock()
			return
		case <-sub.overflow:
			return
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		}
	}
}
