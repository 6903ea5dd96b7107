package argocd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/cenkalti/backoff/v4"
	"google.golang.org/grpc/codes"
)

// WatchQuery selects the applications of GET /api/v1/stream/applications.
type WatchQuery struct {
	Selector     string
	Name         string
	AppNamespace string
	Projects     []string
	// ResourceVersion resumes after this version: the server then sends no initial ADDED snapshot (unless Name is
	// set) and only changes with a higher version (server/application/application.go Watch).
	ResourceVersion string
	// OmitFields are paths in the Application ("status.resources") the server leaves out of every event: the
	// stream's `fields` parameter in its exclude form ("-result.application.status.resources,..."), which Argo
	// CD applies with argoproj/pkg's grpc/http marshaler (pkg/apiclient/application/forwarder_overwrite.go,
	// the same mechanism its UI uses to slim its own watch). Dot-joined object keys, arrays transparent. A
	// server that ignores the parameter sends whole objects, which consumers must accept anyway.
	OmitFields []string
}

// WatchHandler receives a stream's events. Both functions run on the stream's goroutine, in order; a slow
// handler slows the stream (and the server drops events for slow subscribers), so hand work off.
type WatchHandler struct {
	// OnEvent is called for every ADDED, MODIFIED and DELETED event, decoded.
	OnEvent func(v1alpha1.ApplicationWatchEvent)
	// OnRawEvent is called for every event too, its application decoded only if asked (Event.Application): for
	// consumers that keep only the newest version of each app. A message whose application cannot be decoded
	// ends the connection (as with OnEvent) only when OnEvent is set.
	OnRawEvent func(*Event)
	// OnConnect is called when a connection is established (its answer's headers arrived), with reconnect
	// false the first time. Events that happened while the stream was down are not replayed: re-read what you
	// are waiting for. Argo CD sends the headers with its first message, so after a resumed reconnect (no
	// snapshot) this comes with the first event, or the first keepalive (15s) of an SSE stream.
	OnConnect func(reconnect bool)
	// OnDisconnect is called when a connection attempt fails or an open connection ends (not when ctx ends),
	// with why, before the backoff: a consumer that must re-read everything after a gap (a resumed stream does
	// not replay what happened meanwhile, deletions included) learns of the gap here, without waiting for the
	// next connection's first message.
	OnDisconnect func(err error)
}

// Watch streams application events until ctx is done (it then returns ctx.Err()) or the server refuses the
// stream with a 4xx (returned as *APIError). A dropped or idle connection is reopened with jittered backoff,
// resuming after the highest resourceVersion seen.
func (c *Client) Watch(ctx context.Context, q WatchQuery, h WatchHandler) error {
	rv := q.ResourceVersion
	b := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(c.opts.RetryInitialInterval),
		backoff.WithMaxInterval(30*time.Second),
		backoff.WithRandomizationFactor(0.5),
		backoff.WithMaxElapsedTime(0),
	)
	connected := false
	for {
		delivered, opened, err := c.watchOnce(ctx, q, &rv, h, connected)
		connected = connected || opened
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if h.OnDisconnect != nil {
			h.OnDisconnect(err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var ae *APIError
		if errors.As(err, &ae) && !ae.retryable() {
			return fmt.Errorf("watching applications: %w", err)
		}
		if delivered {
			b.Reset()
		}
		t := time.NewTimer(b.NextBackOff())
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// watchOnce runs one connection of the stream. delivered reports whether it carried at least one event.
func (c *Client) watchOnce(ctx context.Context, q WatchQuery, rv *string, h WatchHandler, reconnect bool) (delivered, opened bool, err error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	v := url.Values{}
	setNonEmpty(v, "selector", q.Selector)
	setNonEmpty(v, "name", q.Name)
	setNonEmpty(v, "appNamespace", q.AppNamespace)
	setNonEmpty(v, "resourceVersion", *rv)
	for _, p := range q.Projects {
		v.Add("projects", p)
	}
	if len(q.OmitFields) > 0 {
		paths := make([]string, len(q.OmitFields))
		for i, f := range q.OmitFields {
			paths[i] = "result.application." + f
		}
		v.Set("fields", "-"+strings.Join(paths, ","))
	}
	req, err := http.NewRequestWithContext(sctx, "GET", c.url(apiPath("stream", "applications"), v), nil)
	if err != nil {
		return false, false, fmt.Errorf("building request: %w", err)
	}
	if err := c.setHeaders(req); err != nil {
		return false, false, err
	}
	if c.opts.StreamFormat == StreamSSE {
		req.Header.Set("Accept", "text/event-stream")
	}

	// The idle timer also covers waiting for the answer's headers.
	var idle *time.Timer
	if c.opts.StreamIdleTimeout > 0 {
		idle = time.AfterFunc(c.opts.StreamIdleTimeout, cancel)
		defer idle.Stop()
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return false, false, fmt.Errorf("opening application stream: %w", redactURLError(err))
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return false, false, parseAPIError(resp)
	}
	if h.OnConnect != nil {
		h.OnConnect(reconnect)
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	dec := newStreamDecoder(resp.Body, mt == "text/event-stream")
	for {
		msg, err := dec.next(func() {
			if idle != nil {
				idle.Reset(c.opts.StreamIdleTimeout)
			}
		})
		if err != nil {
			if errors.Is(err, io.EOF) {
				return delivered, true, errors.New("application stream closed by the server")
			}
			return delivered, true, fmt.Errorf("reading application stream: %w", err)
		}
		ev, serr, err := parseEvent(msg)
		if err != nil {
			return delivered, true, fmt.Errorf("decoding application stream message: %w", err)
		}
		if serr != nil {
			return delivered, true, serr.apiError()
		}
		if ev == nil {
			continue
		}
		if h.OnEvent != nil {
			app, err := ev.Application()
			if err != nil {
				return delivered, true, fmt.Errorf("decoding application stream message: %w", err)
			}
			if h.OnRawEvent != nil {
				h.OnRawEvent(ev)
			}
			h.OnEvent(v1alpha1.ApplicationWatchEvent{Type: ev.Type, Application: *app})
		} else if h.OnRawEvent != nil {
			h.OnRawEvent(ev)
		}
		if newer(ev.ResourceVersion, *rv) {
			*rv = ev.ResourceVersion
		}
		delivered = true
	}
}

// streamError is grpc-gateway v1's error chunk inside a stream (runtime/handler.go errorChunk).
type streamError struct {
	GRPCCode   codes.Code `json:"grpc_code"`
	HTTPCode   int        `json:"http_code"`
	Message    string     `json:"message"`
	HTTPStatus string     `json:"http_status"`
}

func (e *streamError) apiError() *APIError {
	status := e.HTTPCode
	if status == 0 {
		status = http.StatusInternalServerError
	}
	return &APIError{HTTPStatus: status, Code: e.GRPCCode, Message: e.Message, fromArgoCD: true}
}

// newer reports whether resourceVersion a is after b (integers compared as such, see ResourceVersion).
func newer(a, b string) bool {
	if b == "" {
		return a != ""
	}
	na, okA := ResourceVersion(a)
	nb, okB := ResourceVersion(b)
	if okA && okB {
		return na > nb
	}
	return a != b
}

// maxStreamMessage caps one message of the stream (an Application with thousands of resources is a few MB).
const maxStreamMessage = 64 << 20

// streamDecoder splits the stream into JSON messages: one per line, or, for server-sent events, the data lines
// of one event (keepalive comments ":" skipped). Argo CD writes "data: {...} \n\n" (argoproj/pkg grpc/http).
type streamDecoder struct {
	r   *bufio.Reader
	sse bool
}

func newStreamDecoder(r io.Reader, sse bool) *streamDecoder {
	return &streamDecoder{r: bufio.NewReaderSize(r, 64<<10), sse: sse}
}

// next returns the next message; onLine is called after every line read (liveness).
func (d *streamDecoder) next(onLine func()) ([]byte, error) {
	var data []byte
	for {
		line, err := d.readLine()
		if err != nil {
			return nil, err
		}
		onLine()
		line = bytes.TrimRight(line, "\r\n")
		if !d.sse {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			return line, nil
		}
		switch {
		case len(line) == 0:
			if len(data) > 0 {
				return data, nil
			}
		case line[0] == ':':
			// keepalive comment
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, v...)
			if len(data) > maxStreamMessage {
				return nil, errors.New("stream message too large")
			}
		}
	}
}

func (d *streamDecoder) readLine() ([]byte, error) {
	var line []byte
	for {
		frag, err := d.r.ReadSlice('\n')
		line = append(line, frag...)
		if len(line) > maxStreamMessage {
			return nil, errors.New("stream message too large")
		}
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return line, nil
		default:
			return nil, err
		}
	}
}
