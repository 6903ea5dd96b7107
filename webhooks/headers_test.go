package webhooks

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/webhooks/webhooktest"
)

// watchedBody is a request body that counts its reads and, when gate is set, blocks its first read until gate is
// closed (signalling reading first).
type watchedBody struct {
	r       io.Reader
	reads   atomic.Int64
	reading chan struct{}
	gate    chan struct{}
}

func (b *watchedBody) Read(p []byte) (int, error) {
	if b.reads.Add(1) == 1 && b.gate != nil {
		close(b.reading)
		<-b.gate
	}
	return b.r.Read(p)
}

// An unsigned or malformed request is refused from its headers alone: its body is never read (issue 38 item 10).
func TestHeadersRefusedBeforeTheBodyIsRead(t *testing.T) {
	s := newTestServer(t, &recorder{handles: appHandles}, nil)
	body := []byte(`{"zen":"x","hook_id":1}`)
	good := webhooktest.Sign(testSecret, body)
	for _, tc := range []struct {
		name, event, id, sig string
		code                 int
	}{
		{"no signature", "ping", "d-1", "", http.StatusUnauthorized},
		{"sha1 only", "ping", "d-1", "sha1=" + strings.Repeat("a", 40), http.StatusUnauthorized},
		{"short signature", "ping", "d-1", "sha256=abc", http.StatusUnauthorized},
		{"not hex", "ping", "d-1", "sha256=" + strings.Repeat("z", 64), http.StatusUnauthorized},
		{"no event", "", "d-1", good, http.StatusBadRequest},
		{"no delivery", "ping", "", good, http.StatusBadRequest},
		{"odd event", "ping\x00", "d-1", good, http.StatusBadRequest},
		{"odd delivery", "ping", "d 1\n", good, http.StatusBadRequest},
		{"long delivery", "ping", strings.Repeat("d", 129), good, http.StatusBadRequest},
	} {
		wb := &watchedBody{r: strings.NewReader(string(body))}
		r := delivery("", "", nil, "")
		r.Body = io.NopCloser(wb)
		r.ContentLength = int64(len(body))
		for k, v := range map[string]string{"X-GitHub-Event": tc.event, "X-GitHub-Delivery": tc.id, "X-Hub-Signature-256": tc.sig} {
			if v != "" {
				r.Header[k] = []string{v}
			}
		}
		w := serve(s, r)
		if w.Code != tc.code {
			t.Errorf("%s: %d %q, want %d", tc.name, w.Code, w.Body.String(), tc.code)
		}
		if n := wb.reads.Load(); n != 0 {
			t.Errorf("%s: the body was read (%d reads) before the headers were checked", tc.name, n)
		}
	}
	// A Content-Length over the cap is refused unread as well.
	wb := &watchedBody{r: strings.NewReader("{}")}
	r := delivery("ping", "d-2", nil, good)
	r.Body, r.ContentLength = io.NopCloser(wb), MaxPayloadBytes+1
	if w := serve(s, r); w.Code != http.StatusRequestEntityTooLarge || wb.reads.Load() != 0 {
		t.Errorf("oversized: %d, %d reads", w.Code, wb.reads.Load())
	}
	// The well-formed ping still passes.
	if w := serve(s, delivery("ping", "d-3", body, good)); w.Code != http.StatusOK {
		t.Errorf("ping: %d %s", w.Code, w.Body.String())
	}
}

// Concurrent body reads are bounded: with every read slot taken, a delivery gets 503 (Retry-After) without its
// body being read, and is served again once a slot frees (issue 38 item 10).
func TestConcurrentBodyReadsBounded(t *testing.T) {
	s := newTestServer(t, &recorder{handles: appHandles}, nil, WithMaxConcurrentReads(1))
	body := []byte(`{"zen":"x","hook_id":1}`)
	sig := webhooktest.Sign(testSecret, body)
	slow := &watchedBody{r: strings.NewReader(string(body)), reading: make(chan struct{}), gate: make(chan struct{})}
	r := delivery("ping", "slow", nil, sig)
	r.Body, r.ContentLength = io.NopCloser(slow), int64(len(body))
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- serve(s, r) }()
	select {
	case <-slow.reading:
	case <-time.After(10 * time.Second):
		t.Fatal("the first delivery's body was never read")
	}
	second := &watchedBody{r: strings.NewReader(string(body))}
	r2 := delivery("ping", "second", nil, sig)
	r2.Body, r2.ContentLength = io.NopCloser(second), int64(len(body))
	w := serve(s, r2)
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" || second.reads.Load() != 0 {
		t.Errorf("with the read slot taken: %d (Retry-After %q), %d reads; want 503 unread", w.Code, w.Header().Get("Retry-After"), second.reads.Load())
	}
	close(slow.gate)
	if w := <-done; w.Code != http.StatusOK {
		t.Errorf("the slow delivery: %d %s", w.Code, w.Body.String())
	}
	if w := serve(s, delivery("ping", "third", body, sig)); w.Code != http.StatusOK {
		t.Errorf("after the slot freed: %d %s", w.Code, w.Body.String())
	}
	if _, err := New([]byte(testSecret), &recorder{handles: appHandles}, NewMemoryDeliveries(0), WithMaxConcurrentReads(0)); err == nil {
		t.Error("zero concurrent reads accepted")
	}
}
