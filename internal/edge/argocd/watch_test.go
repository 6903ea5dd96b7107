package argocd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
)

func TestStreamDecoder(t *testing.T) {
	tests := []struct {
		name string
		sse  bool
		in   string
		want []string
	}{
		{"ndjson", false, "{\"a\":1}\n\n{\"a\":2}\n{\"a\":3}", []string{`{"a":1}`, `{"a":2}`, `{"a":3}`}},
		{"ndjson crlf", false, "{\"a\":1}\r\n{\"a\":2}\r\n", []string{`{"a":1}`, `{"a":2}`}},
		{"sse as argo cd writes it", true, "data: {\"a\":1} \n\n:\ndata: {\"a\":2} \n\n", []string{`{"a":1} `, `{"a":2} `}},
		{"sse multi-line data and other fields", true, "event: x\nid: 3\ndata: {\"a\":\ndata: 1}\n\n", []string{"{\"a\":\n1}"}},
		{"sse incomplete last event is dropped", true, "data: {\"a\":1}\n\ndata: {\"a\":2}\n", []string{`{"a":1}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newStreamDecoder(strings.NewReader(tt.in), tt.sse)
			var got []string
			lines := 0
			for {
				m, err := d.next(func() { lines++ })
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, string(m))
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			if lines == 0 {
				t.Fatal("onLine never called")
			}
		})
	}
}

func TestStreamDecoderLongLine(t *testing.T) {
	long := `{"a":"` + strings.Repeat("x", 300<<10) + `"}`
	d := newStreamDecoder(strings.NewReader(long+"\n"), false)
	m, err := d.next(func() {})
	if err != nil || string(m) != long {
		t.Fatalf("len %d err %v", len(m), err)
	}
}

func event(typ, name, rv string) string {
	return fmt.Sprintf(`{"result":{"type":%q,"application":{"metadata":{"name":%q,"resourceVersion":%q}}}}`, typ, name, rv)
}

// streamServer serves one scripted connection per entry; it records each connection's query.
type streamServer struct {
	mu      sync.Mutex
	conns   []func(w http.ResponseWriter, r *http.Request)
	queries []string
	accepts []string
}

func (s *streamServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	i := len(s.queries)
	s.queries = append(s.queries, r.URL.RawQuery)
	s.accepts = append(s.accepts, r.Header.Get("Accept"))
	s.mu.Unlock()
	if i >= len(s.conns) {
		<-r.Context().Done()
		return
	}
	s.conns[i](w, r)
}

func writeLines(lines ...string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		for _, l := range lines {
			_, _ = io.WriteString(w, l)
			w.(http.Flusher).Flush()
		}
	}
}

func TestWatchReconnectsAndResumes(t *testing.T) {
	ss := &streamServer{conns: []func(http.ResponseWriter, *http.Request){
		writeLines(event("ADDED", "a", "10")+"\n", event("MODIFIED", "a", "12")+"\n"), // then EOF: dropped
		func(w http.ResponseWriter, r *http.Request) { http.Error(w, "bad gateway", http.StatusBadGateway) },
		writeLines(event("MODIFIED", "b", "15")+"\n", `{"error":{"grpc_code":14,"http_code":503,"message":"transport closing","http_status":"Service Unavailable"}}`+"\n"),
		writeLines(event("MODIFIED", "a", "20") + "\n"),
	}}
	srv := httptest.NewServer(ss)
	defer srv.Close()
	c := newTestClient(t, srv, func(o *Options) { o.StreamFormat = StreamNDJSON })

	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var got []string
	var connects []bool
	var disconnects []string
	errc := make(chan error, 1)
	go func() {
		errc <- c.Watch(ctx, WatchQuery{Selector: "env=prd"}, WatchHandler{
			OnDisconnect: func(err error) {
				mu.Lock()
				defer mu.Unlock()
				disconnects = append(disconnects, err.Error())
			},
			OnEvent: func(ev v1alpha1.ApplicationWatchEvent) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, fmt.Sprintf("%s %s %s", ev.Type, ev.Application.Name, ev.Application.ResourceVersion))
				if ev.Application.ResourceVersion == "20" {
					cancel()
				}
			},
			OnConnect: func(reconnect bool) {
				mu.Lock()
				defer mu.Unlock()
				connects = append(connects, reconnect)
			},
		})
	}()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Watch returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Watch did not finish")
	}
	mu.Lock()
	defer mu.Unlock()
	if want := "[ADDED a 10 MODIFIED a 12 MODIFIED b 15 MODIFIED a 20]"; fmt.Sprint(got) != want {
		t.Errorf("events %v, want %s", got, want)
	}
	if fmt.Sprint(connects) != "[false true true]" {
		t.Errorf("connects %v", connects)
	}
	if len(disconnects) != 3 || !strings.Contains(disconnects[0], "closed by the server") || !strings.Contains(disconnects[1], "502") ||
		!strings.Contains(disconnects[2], "transport closing") {
		t.Errorf("disconnects %q; want the closed stream, the 502 and the stream's error, not the end of ctx", disconnects)
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	wantQ := []string{"selector=env%3Dprd", "resourceVersion=12&selector=env%3Dprd", "resourceVersion=12&selector=env%3Dprd", "resourceVersion=15&selector=env%3Dprd"}
	if fmt.Sprint(ss.queries[:4]) != fmt.Sprint(wantQ) {
		t.Errorf("queries %q, want %q", ss.queries[:4], wantQ)
	}
	if ss.accepts[0] != "" {
		t.Errorf("NDJSON client sent Accept %q", ss.accepts[0])
	}
}

func TestWatchSSE(t *testing.T) {
	ss := &streamServer{conns: []func(http.ResponseWriter, *http.Request){
		func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			writeLines(":\n", "data: "+event("ADDED", "a", "3")+" \n\n", ":\n", "data: "+event("MODIFIED", "a", "4")+" \n\n")(w, r)
			<-r.Context().Done()
		},
	}}
	srv := httptest.NewServer(ss)
	defer srv.Close()
	c := newTestClient(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []string
	err := c.Watch(ctx, WatchQuery{Name: "a"}, WatchHandler{OnEvent: func(ev v1alpha1.ApplicationWatchEvent) {
		got = append(got, ev.Application.ResourceVersion)
		if len(got) == 2 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) || fmt.Sprint(got) != "[3 4]" {
		t.Fatalf("err %v events %v", err, got)
	}
	if ss.accepts[0] != "text/event-stream" {
		t.Fatalf("Accept %q", ss.accepts[0])
	}
}

func TestWatchStopsOn4xx(t *testing.T) {
	ss := &streamServer{conns: []func(http.ResponseWriter, *http.Request){
		func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `{"error":"permission denied","code":7,"message":"permission denied"}`)
		},
	}}
	srv := httptest.NewServer(ss)
	defer srv.Close()
	err := newTestClient(t, srv).Watch(context.Background(), WatchQuery{}, WatchHandler{})
	if !errors.Is(err, ErrPermissionDenied) {
		t.Fatalf("err %v", err)
	}
}

func TestWatchIdleTimeoutReconnects(t *testing.T) {
	ss := &streamServer{conns: []func(http.ResponseWriter, *http.Request){
		func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			writeLines("data: "+event("ADDED", "a", "3")+"\n\n")(w, r)
			<-r.Context().Done() // silent: no keepalive
		},
		func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			writeLines("data: "+event("MODIFIED", "a", "9")+"\n\n")(w, r)
			<-r.Context().Done()
		},
	}}
	srv := httptest.NewServer(ss)
	defer srv.Close()
	c := newTestClient(t, srv, func(o *Options) { o.StreamIdleTimeout = 100 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []string
	_ = c.Watch(ctx, WatchQuery{}, WatchHandler{OnEvent: func(ev v1alpha1.ApplicationWatchEvent) {
		got = append(got, ev.Application.ResourceVersion)
		if len(got) == 2 {
			cancel()
		}
	}})
	if fmt.Sprint(got) != "[3 9]" {
		t.Fatalf("events %v", got)
	}
}

func TestNewerResourceVersion(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{{"10", "9", true}, {"9", "10", false}, {"10", "10", false}, {"5", "", true}, {"", "", false}, {"x", "y", true}, {"x", "x", false}}
	for _, tt := range tests {
		if got := newer(tt.a, tt.b); got != tt.want {
			t.Errorf("newer(%q, %q) = %v", tt.a, tt.b, got)
		}
	}
}

// TestWatchRawEventsDecodeOnDemand: OnRawEvent gets every event with its metadata read and its application
// left undecoded until asked; an application that cannot be decoded reaches it (and fails when decoded) without
// ending the stream, which OnEvent's decoding does.
func TestWatchRawEventsDecodeOnDemand(t *testing.T) {
	bad := `{"result":{"type":"MODIFIED","application":{"metadata":{"name":"a","resourceVersion":"11"},"status":{"health":7}}}}`
	for _, tc := range []struct {
		name    string
		onEvent bool
		want    []string
	}{
		{"raw only", false, []string{"ADDED a 10 undecoded", "MODIFIED a 11 undecoded", "MODIFIED b 12 undecoded"}},
		{"raw and decoded", true, []string{"ADDED a 10 decoded", "stream ended", "MODIFIED c 13 decoded"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss := &streamServer{conns: []func(http.ResponseWriter, *http.Request){
				writeLines(event("ADDED", "a", "10")+"\n", bad+"\n", event("MODIFIED", "b", "12")+"\n"),
				writeLines(event("MODIFIED", "c", "13") + "\n"),
			}}
			srv := httptest.NewServer(ss)
			defer srv.Close()
			c := newTestClient(t, srv, func(o *Options) { o.StreamFormat = StreamNDJSON })
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var got []string
			var evs []*Event
			h := WatchHandler{
				OnRawEvent: func(ev *Event) {
					state := "undecoded"
					if ev.raw == nil {
						state = "decoded"
					}
					got = append(got, fmt.Sprintf("%s %s %s %s", ev.Type, ev.Name, ev.ResourceVersion, state))
					evs = append(evs, ev)
				},
				OnConnect: func(reconnect bool) {
					if reconnect {
						got = append(got, "stream ended")
					}
				},
			}
			if tc.onEvent {
				h.OnEvent = func(v1alpha1.ApplicationWatchEvent) {}
			}
			orig := h.OnRawEvent
			h.OnRawEvent = func(ev *Event) {
				orig(ev)
				if ev.Name == "b" || ev.Name == "c" {
					cancel()
				}
			}
			_ = c.Watch(ctx, WatchQuery{}, h)
			if strings.Join(got, "; ") != strings.Join(tc.want, "; ") {
				t.Fatalf("events: %q, want %q", got, tc.want)
			}
			if tc.onEvent {
				return
			}
			if a, err := evs[0].Application(); err != nil || a.Name != "a" || a.ResourceVersion != "10" {
				t.Errorf("first event decodes to %+v, %v", a, err)
			}
			if _, err := evs[1].Application(); err == nil {
				t.Error("the malformed application decoded without an error")
			}
		})
	}
}
