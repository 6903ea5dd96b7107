package argocdsim

import (
	"bytes"
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
	ch       chan streamEvent
	overflow chan struct{} // closed when the subscriber fell too far behind
}

// streamEvent is one message of the stream, encoded once for every subscriber.
type streamEvent struct {
	key string // namespace/name
	msg []byte // {"result":{"type":...,"application":...}}
}

// eventLocked encodes the app's current view as a stream message (viewJSONLocked: outside a stale window, from
// its last commit's encoding).
func (s *Server) eventLocked(t watch.EventType, st *appState) (streamEvent, *v1alpha1.Application, error) {
	view, appJSON, err := s.viewJSONLocked(st)
	if err != nil {
		return streamEvent{}, nil, err
	}
	msg := make([]byte, 0, len(appJSON)+64)
	msg = append(msg, `{"result":{"type":`...)
	msg = strconv.AppendQuote(msg, string(t))
	msg = append(msg, `,"application":`...)
	msg = append(msg, appJSON...)
	msg = append(msg, "}}"...)
	return streamEvent{key: view.Namespace + "/" + view.Name, msg: msg}, view, nil
}

// broadcastLocked sends the app's current view to every matching stream. A stream that cannot keep up is
// closed (the client reconnects and re-reads) rather than silently missing the event.
func (s *Server) broadcastLocked(t watch.EventType, st *appState) {
	if len(s.subs) == 0 {
		return
	}
	ev, view, err := s.eventLocked(t, st)
	if err != nil {
		panic(fmt.Sprintf("argocdsim: marshaling application: %v", err))
	}
	for sub := range s.subs {
		if !sub.match(view) {
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
// with keepalives when the client asks for text/event-stream; the `fields` parameter (fieldFilter) applied to
// each message; identical consecutive messages per app (after that filter) are suppressed.
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
	sub := &subscriber{match: match, ch: make(chan streamEvent, subscriberBuffer), overflow: make(chan struct{})}
	s.mu.Lock()
	s.totals.Streams++
	var initial []streamEvent
	if q.Get("resourceVersion") == "" || name != "" {
		for _, n := range s.sortedNamesLocked() {
			ev, view, err := s.eventLocked(watch.Added, s.apps[n])
			if err == nil && match(view) {
				initial = append(initial, ev)
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

	fields := parseFieldFilter(q.Get("fields"))
	last := map[string][]byte{}
	// send writes a message; it is flushed once no other is queued (a burst of events goes out in one write,
	// each message still framed on its own).
	send := func(ev streamEvent) bool {
		msg := ev.msg
		if fields != nil {
			var err error
			if msg, err = fields.apply(msg); err != nil {
				return false
			}
		}
		if bytes.Equal(last[ev.key], msg) {
			return true
		}
		last[ev.key] = msg
		s.streamBytes.Add(int64(len(msg) + 1))
		var err error
		if sse {
			_, err = fmt.Fprintf(w, "data: %s \n\n", msg)
		} else {
			if _, err = w.Write(msg); err == nil {
				_, err = w.Write([]byte{'\n'}) // not appended to msg: subscribers share it
			}
		}
		if len(sub.ch) == 0 {
			flusher.Flush()
		}
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
