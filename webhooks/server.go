package webhooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-github/v60/github"
)

// Path is where GitHub delivers the App's webhooks.
const Path = "/webhooks/github"

// MaxPayloadBytes is GitHub's cap on a webhook payload (25 MiB); larger deliveries are never sent by GitHub.
const MaxPayloadBytes = 25 << 20

// Handler does the work for the deliveries it declares in Handles. Handle runs on a worker, off the request,
// with a context detached from the request (it carries LoggerFrom) and cancelled only when a shutdown deadline
// passes. A returned error is logged once by the Server; a panic is recovered and logged.
type Handler interface {
	// Handles lists the deliveries the handler wants: "event" (every action) or "event.action", e.g.
	// "pull_request.opened", "issue_comment.created", "check_run", "push". Anything else is answered 204.
	Handles() []string
	Handle(ctx context.Context, ev Event) error
}

// Stats are the Server's counters since it started.
type Stats struct {
	Accepted     int64 // queued for a handler (202)
	Duplicates   int64 // redeliveries acknowledged without handling (200)
	Ignored      int64 // events or actions no handler wants, and pings (204/200)
	Unauthorized int64 // missing or bad signature (401)
	BadRequests  int64 // malformed deliveries (400/405/413)
	Unavailable  int64 // queue full or shutting down (503)
	Handled      int64 // handler returned nil
	Failed       int64 // handler returned an error or panicked
	Dropped      int64 // accepted but abandoned at a shutdown deadline
}

// Server is the http.Handler for GitHub webhooks: it caps the body, verifies X-Hub-Signature-256, parses the
// payload with go-github, drops redeliveries and queues the rest for a bounded pool of workers.
type Server struct {
	secret  []byte
	handler Handler
	store   DeliveryStore
	routes  map[string]map[string]bool // event → actions (empty: all)
	log     *slog.Logger
	now     func() time.Time

	workers    int
	queueSize  int
	maxBody    int64
	maxReads   int
	jobTimeout time.Duration
	reads      chan struct{} // a token per request body being read

	mu     sync.RWMutex // guards closed; held for reading while a delivery is being enqueued
	closed bool
	slots  chan struct{} // a token per delivery accepted and not yet started
	jobs   chan job

	base      context.Context // parent of every handler context; cancelled at a shutdown deadline
	cancel    context.CancelFunc
	abandon   atomic.Bool
	wg        sync.WaitGroup
	closeOnce sync.Once

	stats struct {
		accepted, duplicates, ignored, unauthorized, badRequests, unavailable, handled, failed, dropped atomic.Int64
	}
}

type job struct {
	ev  Event
	log *slog.Logger
}

// Option configures a Server.
type Option func(*Server)

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.log = l } }

// WithWorkers sets the number of workers running handlers concurrently (default 4).
func WithWorkers(n int) Option { return func(s *Server) { s.workers = n } }

// WithQueueSize sets how many accepted deliveries may wait for a worker before new ones get 503 (default 256).
func WithQueueSize(n int) Option { return func(s *Server) { s.queueSize = n } }

// WithMaxBodyBytes caps the request body (default MaxPayloadBytes).
func WithMaxBodyBytes(n int64) Option { return func(s *Server) { s.maxBody = n } }

// WithMaxConcurrentReads bounds how many request bodies are read at once (default DefaultMaxConcurrentReads);
// a request arriving when all are taken gets 503 before its body is read. With MaxPayloadBytes bodies, this
// bounds the memory strangers can make the server hold.
func WithMaxConcurrentReads(n int) Option { return func(s *Server) { s.maxReads = n } }

// DefaultMaxConcurrentReads is WithMaxConcurrentReads's default: at most 8 × 25 MiB of bodies in memory.
const DefaultMaxConcurrentReads = 8

// WithJobTimeout bounds each Handle call (default: no bound besides the shutdown deadline).
func WithJobTimeout(d time.Duration) Option { return func(s *Server) { s.jobTimeout = d } }

// WithClock sets the clock stamping Event.ReceivedAt (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Server) { s.now = now } }

// New returns a Server and starts its workers; call Shutdown to drain them. secret is the App's webhook secret
// (required: an unsigned webhook endpoint would accept anything).
func New(secret []byte, h Handler, store DeliveryStore, opts ...Option) (*Server, error) {
	if len(secret) == 0 {
		return nil, errors.New("creating webhook server: empty webhook secret")
	}
	if h == nil || store == nil {
		return nil, errors.New("creating webhook server: handler and delivery store are required")
	}
	s := &Server{
		secret:    append([]byte(nil), secret...),
		handler:   h,
		store:     store,
		log:       slog.New(slog.DiscardHandler),
		now:       time.Now,
		workers:   4,
		queueSize: 256,
		maxBody:   MaxPayloadBytes,
		maxReads:  DefaultMaxConcurrentReads,
	}
	for _, o := range opts {
		o(s)
	}
	if s.workers < 1 || s.queueSize < 1 || s.maxBody < 1 || s.maxReads < 1 {
		return nil, fmt.Errorf("creating webhook server: workers (%d), queue size (%d), body cap (%d) and concurrent reads (%d) must be positive",
			s.workers, s.queueSize, s.maxBody, s.maxReads)
	}
	s.reads = make(chan struct{}, s.maxReads)
	routes, err := parseRoutes(h.Handles())
	if err != nil {
		return nil, fmt.Errorf("creating webhook server: %w", err)
	}
	s.routes = routes
	s.slots = make(chan struct{}, s.queueSize)
	s.jobs = make(chan job, s.queueSize)
	// The workers' context belongs to the Server, not to any request: a delivery is handled after its request
	// has been answered. It is cancelled only when Shutdown's deadline passes.
	s.base, s.cancel = context.WithCancel(context.Background())
	for range s.workers {
		s.wg.Add(1)
		go s.work()
	}
	return s, nil
}

func parseRoutes(keys []string) (map[string]map[string]bool, error) {
	routes := map[string]map[string]bool{}
	for _, k := range keys {
		event, action, _ := strings.Cut(k, ".")
		if event == "" {
			return nil, fmt.Errorf("handler declares an empty event in %q", k)
		}
		if github.EventForType(event) == nil {
			return nil, fmt.Errorf("handler declares event %q that go-github cannot parse", event)
		}
		if routes[event] == nil {
			routes[event] = map[string]bool{}
		}
		if action != "" {
			routes[event][action] = true
		} else {
			routes[event][""] = true // all actions
		}
	}
	return routes, nil
}

func (s *Server) wants(event, action string) bool {
	actions, ok := s.routes[event]
	if !ok {
		return false
	}
	return actions[""] || actions[action]
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		s.stats.badRequests.Add(1)
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "webhooks are POSTed", http.StatusMethodNotAllowed)
		return
	}
	deliveryID := r.Header.Get(github.DeliveryIDHeader)
	eventType := r.Header.Get(github.EventTypeHeader)
	sig := r.Header.Get(github.SHA256SignatureHeader)

	// Everything that can be refused from the headers is, before a byte of the body is read: a stranger's
	// request costs no memory (issue 38). The signature itself needs the body.
	if !wellFormedSignature(sig) {
		s.stats.unauthorized.Add(1)
		s.log.Warn("webhook refused: missing or malformed X-Hub-Signature-256", slog.String("remote", r.RemoteAddr))
		http.Error(w, "missing or malformed X-Hub-Signature-256", http.StatusUnauthorized)
		return
	}
	if !headerToken(eventType, 64) || !visibleASCII(deliveryID, 128) {
		s.stats.badRequests.Add(1)
		http.Error(w, "missing or malformed X-GitHub-Event or X-GitHub-Delivery header", http.StatusBadRequest)
		return
	}
	log := s.log.With(slog.String("delivery", deliveryID), slog.String("event", eventType))
	if r.ContentLength > s.maxBody {
		s.stats.badRequests.Add(1)
		log.Warn("webhook refused: body too large", slog.Int64("limit", s.maxBody))
		http.Error(w, fmt.Sprintf("payload exceeds %d bytes", s.maxBody), http.StatusRequestEntityTooLarge)
		return
	}
	select {
	case s.reads <- struct{}{}:
	default:
		s.stats.unavailable.Add(1)
		log.Warn("webhook refused: too many bodies being read", slog.Int("concurrent", s.maxReads))
		w.Header().Set("Retry-After", "5")
		http.Error(w, "too many deliveries being read", http.StatusServiceUnavailable)
		return
	}
	body, err := s.readBody(w, r)
	<-s.reads
	if err != nil {
		s.stats.badRequests.Add(1)
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			log.Warn("webhook refused: body too large", slog.Int64("limit", tooBig.Limit))
			http.Error(w, fmt.Sprintf("payload exceeds %d bytes", tooBig.Limit), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "reading payload failed", http.StatusBadRequest)
		return
	}

	// Authenticate before parsing: only GitHub knows the secret. Only the SHA-256 header is accepted
	// (X-Hub-Signature, SHA-1, is legacy).
	if err := github.ValidateSignature(sig, body, s.secret); err != nil {
		s.stats.unauthorized.Add(1)
		log.Warn("webhook refused: bad signature", slog.String("remote", r.RemoteAddr))
		http.Error(w, "signature does not match the payload", http.StatusUnauthorized)
		return
	}

	contentType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		s.stats.badRequests.Add(1)
		http.Error(w, "bad Content-Type", http.StatusBadRequest)
		return
	}
	payload := body
	if contentType != "application/json" {
		// A webhook may be configured to send application/x-www-form-urlencoded: go-github extracts the JSON
		// from the "payload" field (checking the signature again, cheaply) and refuses other content types.
		payload, err = github.ValidatePayloadFromBody(contentType, bytes.NewReader(body), sig, s.secret)
		if err != nil {
			s.stats.badRequests.Add(1)
			http.Error(w, fmt.Sprintf("reading payload: %v", err), http.StatusBadRequest)
			return
		}
	}

	if eventType == "ping" {
		s.stats.ignored.Add(1)
		log.Info("webhook ping")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "pong\n")
		return
	}
	if _, ok := s.routes[eventType]; !ok {
		s.stats.ignored.Add(1)
		w.WriteHeader(http.StatusNoContent)
		return
	}

	parsed, err := github.ParseWebHook(eventType, payload)
	if err != nil {
		s.stats.badRequests.Add(1)
		log.Warn("webhook refused: unparseable payload", slog.Any("error", err))
		http.Error(w, fmt.Sprintf("parsing %s payload: %v", eventType, err), http.StatusBadRequest)
		return
	}
	ev := Event{Type: eventType, DeliveryID: deliveryID, Payload: parsed, Raw: payload, ReceivedAt: s.now()}
	ev.describe()
	if !s.wants(ev.Type, ev.Action) {
		s.stats.ignored.Add(1)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	log = s.log.With(ev.logAttrs()...)
	code, msg := s.enqueue(r.Context(), ev, log)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "5")
	}
	w.WriteHeader(code)
	_, _ = io.WriteString(w, msg+"\n")
}

// wellFormedSignature reports whether sig is "sha256=" and 64 hexadecimal digits, as GitHub sends it.
func wellFormedSignature(sig string) bool {
	hexSum, ok := strings.CutPrefix(sig, "sha256=")
	if !ok || len(hexSum) != 64 {
		return false
	}
	for _, c := range hexSum {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// headerToken reports whether v is 1 to limit characters of letters, digits, '-', '_' and '.': GitHub's event
// names ("pull_request") are.
func headerToken(v string, limit int) bool {
	if v == "" || len(v) > limit {
		return false
	}
	for _, c := range v {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// visibleASCII reports whether v is 1 to limit printable ASCII characters without spaces: a delivery id (a
// GUID from GitHub) goes into logs and the store as it is.
func visibleASCII(v string, limit int) bool {
	if v == "" || len(v) > limit {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] <= ' ' || v[i] > '~' {
			return false
		}
	}
	return true
}

// readBody reads the whole body, at most s.maxBody bytes, in one allocation when Content-Length is known.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	var buf bytes.Buffer
	if n := r.ContentLength; n > 0 && n <= s.maxBody {
		buf.Grow(int(n) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, s.maxBody))
	return buf.Bytes(), err
}

// enqueue holds a queue slot before recording the delivery as seen: a delivery refused because the queue is
// full (503) is not recorded, so GitHub's redelivery of it is handled rather than dropped as a duplicate.
func (s *Server) enqueue(ctx context.Context, ev Event, log *slog.Logger) (int, string) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		s.stats.unavailable.Add(1)
		return http.StatusServiceUnavailable, "shutting down"
	}
	select {
	case s.slots <- struct{}{}:
	default:
		s.stats.unavailable.Add(1)
		log.Warn("webhook refused: queue full", slog.Int("queue", s.queueSize))
		return http.StatusServiceUnavailable, "queue full"
	}
	dup, err := s.store.Seen(ctx, ev.DeliveryID)
	if err != nil {
		<-s.slots
		s.stats.unavailable.Add(1)
		log.Error("webhook refused: recording delivery", slog.Any("error", err))
		return http.StatusServiceUnavailable, "cannot record delivery"
	}
	if dup {
		<-s.slots
		s.stats.duplicates.Add(1)
		log.Info("webhook redelivery ignored")
		return http.StatusOK, "duplicate delivery"
	}
	s.jobs <- job{ev: ev, log: log} // never blocks: len(jobs) <= len(slots) <= cap(jobs)
	s.stats.accepted.Add(1)
	log.Debug("webhook queued")
	return http.StatusAccepted, "accepted"
}

func (s *Server) work() {
	defer s.wg.Done()
	for j := range s.jobs {
		<-s.slots
		if s.abandon.Load() {
			s.drop(j)
			continue
		}
		s.run(j)
	}
}

func (s *Server) run(j job) {
	ctx := ContextWithLogger(s.base, j.log)
	if s.jobTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.jobTimeout)
		defer cancel()
	}
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			s.stats.failed.Add(1)
			j.log.Error("webhook handler panicked", slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
		}
	}()
	if err := s.handler.Handle(ctx, j.ev); err != nil {
		s.stats.failed.Add(1)
		j.log.Error("webhook handler failed", slog.Any("error", err), slog.Duration("took", time.Since(start)))
		return
	}
	s.stats.handled.Add(1)
	j.log.Debug("webhook handled", slog.Duration("took", time.Since(start)))
}

func (s *Server) drop(j job) {
	s.stats.dropped.Add(1)
	j.log.Warn("webhook abandoned at shutdown")
	if f, ok := s.store.(DeliveryForgetter); ok {
		// The base context is cancelled by now; forgetting is a short local write that must still happen.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(s.base), 5*time.Second)
		defer cancel()
		if err := f.Forget(ctx, j.ev.DeliveryID); err != nil {
			j.log.Error("forgetting abandoned delivery", slog.Any("error", err))
		}
	}
}

// Shutdown stops accepting deliveries (new ones get 503) and waits for the queued ones to be handled. When ctx
// ends first, the handlers' context is cancelled, deliveries not yet started are abandoned (and forgotten when
// the store implements DeliveryForgetter) and ctx's error is returned. Call it after http.Server.Shutdown, so
// no request is still being enqueued.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		close(s.jobs)
		s.mu.Unlock()
	})
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		s.cancel()
		return nil
	case <-ctx.Done():
		s.abandon.Store(true)
		s.cancel()
		// Workers still busy in a handler will not take more jobs; abandon the ones nobody started.
		for j := range s.jobs {
			<-s.slots
			s.drop(j)
		}
		return fmt.Errorf("draining webhook queue: %w", ctx.Err())
	}
}

// Stats returns the Server's counters.
func (s *Server) Stats() Stats {
	return Stats{
		Accepted:     s.stats.accepted.Load(),
		Duplicates:   s.stats.duplicates.Load(),
		Ignored:      s.stats.ignored.Load(),
		Unauthorized: s.stats.unauthorized.Load(),
		BadRequests:  s.stats.badRequests.Load(),
		Unavailable:  s.stats.unavailable.Load(),
		Handled:      s.stats.handled.Load(),
		Failed:       s.stats.failed.Load(),
		Dropped:      s.stats.dropped.Load(),
	}
}
