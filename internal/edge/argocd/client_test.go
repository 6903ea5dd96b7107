package argocd

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"google.golang.org/grpc/codes"
)

// newTestClient returns a client of srv with fast retries.
func newTestClient(t *testing.T, srv *httptest.Server, mod ...func(*Options)) *Client {
	t.Helper()
	opts := Options{BaseURL: srv.URL, Token: "s3cr3t-token", RetryInitialInterval: time.Millisecond, RetryMaxInterval: 2 * time.Millisecond, Timeout: 5 * time.Second}
	for _, m := range mod {
		m(&opts)
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = srv.Client()
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// recorded is one request a stub server received.
type recorded struct {
	method, path, rawQuery, auth, accept, contentType string
	body                                              map[string]any
}

// stub answers each request with the next of answers (the last one repeats) and records requests.
type stub struct {
	mu      sync.Mutex
	answers []answer
	reqs    []recorded
}

type answer struct {
	status int
	body   string
	header map[string]string
}

func (s *stub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	rec := recorded{method: r.Method, path: r.URL.EscapedPath(), rawQuery: r.URL.RawQuery, auth: r.Header.Get("Authorization"),
		accept: r.Header.Get("Accept"), contentType: r.Header.Get("Content-Type")}
	if b, _ := io.ReadAll(r.Body); len(b) > 0 {
		_ = json.Unmarshal(b, &rec.body)
	}
	s.reqs = append(s.reqs, rec)
	a := s.answers[min(len(s.reqs)-1, len(s.answers)-1)]
	s.mu.Unlock()
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(a.status)
	_, _ = w.Write([]byte(a.body))
}

func (s *stub) requests() []recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]recorded(nil), s.reqs...)
}

func serve(t *testing.T, answers ...answer) (*stub, *httptest.Server) {
	t.Helper()
	st := &stub{answers: answers}
	srv := httptest.NewServer(st)
	t.Cleanup(srv.Close)
	return st, srv
}

const appJSON = `{"metadata":{"name":"web","namespace":"argocd","resourceVersion":"42"},"spec":{"project":"default"},"status":{"sync":{"status":"Synced","revision":"abc"}}}`

func TestRequestsOnTheWire(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name      string
		call      func(c *Client) error
		answer    string
		method    string
		path      string
		query     string
		body      map[string]any
		wantJSONC bool
	}{
		{
			name: "list with selector, projects, repo",
			call: func(c *Client) error {
				_, err := c.ListApplications(ctx, ListQuery{Selector: "env=prd,region in (eu)", Projects: []string{"a", "b"}, Repo: "https://git/x.git"})
				return err
			},
			answer: `{"metadata":{"resourceVersion":"7"},"items":[` + appJSON + `]}`,
			method: "GET", path: "/api/v1/applications",
			query: "projects=a&projects=b&repo=https%3A%2F%2Fgit%2Fx.git&selector=env%3Dprd%2Cregion+in+%28eu%29",
		},
		{
			name: "get with refresh in another namespace",
			call: func(c *Client) error {
				_, err := c.GetApplication(ctx, "team-a/web", v1alpha1.RefreshTypeNormal)
				return err
			},
			answer: appJSON, method: "GET", path: "/api/v1/applications/web", query: "appNamespace=team-a&refresh=normal",
		},
		{
			name: "sync single source",
			call: func(c *Client) error {
				_, err := c.Sync(ctx, "web", SyncRequest{Revision: "abc", Prune: true, SyncOptions: []string{"ServerSideApply=true"}})
				return err
			},
			answer: appJSON, method: "POST", path: "/api/v1/applications/web/sync",
			body:      map[string]any{"name": "web", "revision": "abc", "prune": true, "syncOptions": map[string]any{"items": []any{"ServerSideApply=true"}}},
			wantJSONC: true,
		},
		{
			name: "sync multi source",
			call: func(c *Client) error {
				_, err := c.Sync(ctx, "web", SyncRequest{Revisions: []string{"abc"}, SourcePositions: []int64{2}, DryRun: true})
				return err
			},
			answer: appJSON, method: "POST", path: "/api/v1/applications/web/sync",
			body:      map[string]any{"name": "web", "revisions": []any{"abc"}, "sourcePositions": []any{float64(2)}, "dryRun": true},
			wantJSONC: true,
		},
		{
			name: "rollback",
			call: func(c *Client) error {
				_, err := c.Rollback(ctx, "web", RollbackRequest{ID: 0, Prune: true})
				return err
			},
			answer: appJSON, method: "POST", path: "/api/v1/applications/web/rollback",
			body:      map[string]any{"name": "web", "id": float64(0), "prune": true},
			wantJSONC: true,
		},
		{
			name:   "terminate",
			call:   func(c *Client) error { return c.TerminateOperation(ctx, "web") },
			answer: `{}`, method: "DELETE", path: "/api/v1/applications/web/operation",
		},
		{
			name: "merge patch",
			call: func(c *Client) error {
				_, err := c.Patch(ctx, "web", `{"spec":{"syncPolicy":{"automated":null}}}`, PatchMerge)
				return err
			},
			answer: appJSON, method: "PATCH", path: "/api/v1/applications/web",
			body:      map[string]any{"name": "web", "patch": `{"spec":{"syncPolicy":{"automated":null}}}`, "patchType": "merge"},
			wantJSONC: true,
		},
		{
			name:   "manifests at a revision",
			call:   func(c *Client) error { _, err := c.Manifests(ctx, "web", "abc"); return err },
			answer: `{"manifests":["{}"],"revision":"abc"}`, method: "GET", path: "/api/v1/applications/web/manifests", query: "revision=abc",
		},
		{
			name:   "managed resources",
			call:   func(c *Client) error { _, err := c.ManagedResources(ctx, "web"); return err },
			answer: `{"items":[{"kind":"ConfigMap","name":"x","liveState":"null","targetState":"{}"}]}`,
			method: "GET", path: "/api/v1/applications/web/managed-resources",
		},
		{
			name:   "clusters",
			call:   func(c *Client) error { _, err := c.ListClusters(ctx); return err },
			answer: `{"items":[{"name":"in-cluster","server":"https://kubernetes.default.svc"}]}`, method: "GET", path: "/api/v1/clusters",
		},
		{
			name:   "settings",
			call:   func(c *Client) error { _, err := c.Settings(ctx); return err },
			answer: `{"appLabelKey":"app.kubernetes.io/instance","trackingMethod":"annotation"}`, method: "GET", path: "/api/v1/settings",
		},
		{
			name: "version",
			call: func(c *Client) error {
				v, err := c.Version(ctx)
				if err == nil && v != "v3.6.1+4d1e5a2" {
					err = fmt.Errorf("version %q", v)
				}
				return err
			},
			answer: `{"Version":"v3.6.1+4d1e5a2","BuildDate":"2026-11-02T10:00:00Z"}`, method: "GET", path: "/api/version",
		},
		{
			name:   "sync windows",
			call:   func(c *Client) error { _, err := c.SyncWindows(ctx, "web"); return err },
			answer: `{"canSync":true}`, method: "GET", path: "/api/v1/applications/web/syncwindows",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, srv := serve(t, answer{status: 200, body: tt.answer})
			c := newTestClient(t, srv)
			if err := tt.call(c); err != nil {
				t.Fatalf("call: %v", err)
			}
			reqs := st.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.method != tt.method || r.path != tt.path || r.rawQuery != tt.query {
				t.Errorf("request %s %s?%s, want %s %s?%s", r.method, r.path, r.rawQuery, tt.method, tt.path, tt.query)
			}
			if r.auth != "Bearer s3cr3t-token" {
				t.Errorf("Authorization %q", r.auth)
			}
			if tt.body != nil {
				got, _ := json.Marshal(r.body)
				want, _ := json.Marshal(tt.body)
				if string(got) != string(want) {
					t.Errorf("body %s, want %s", got, want)
				}
			}
			if tt.wantJSONC && r.contentType != "application/json" {
				t.Errorf("Content-Type %q", r.contentType)
			}
		})
	}
}

func TestListDecodesApplications(t *testing.T) {
	_, srv := serve(t, answer{status: 200, body: `{"metadata":{"resourceVersion":"7"},"items":[` + appJSON + `]}`})
	list, err := newTestClient(t, srv).ListApplications(context.Background(), ListQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "web" || list.Items[0].Status.Sync.Revision != "abc" || list.ResourceVersion != "7" {
		t.Fatalf("decoded %+v", list)
	}
}

func TestErrorMapping(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		body     string
		is       []error
		isNot    []error
		code     codes.Code
		attempts int
	}{
		{"operation in progress", 400, `{"error":"error setting app operation: another operation is already in progress","code":9,"message":"error setting app operation: another operation is already in progress"}`,
			[]error{ErrFailedPrecondition, ErrOperationInProgress}, []error{ErrInvalidArgument}, codes.FailedPrecondition, 1},
		{"auto-sync refusal", 400, `{"error":"Cannot sync to abc: auto-sync currently set to HEAD","code":9,"message":"Cannot sync to abc: auto-sync currently set to HEAD"}`,
			[]error{ErrFailedPrecondition}, []error{ErrOperationInProgress}, codes.FailedPrecondition, 1},
		{"invalid argument", 400, `{"error":"x","code":3,"message":"Unable to terminate operation. No operation is in progress"}`,
			[]error{ErrInvalidArgument}, []error{ErrFailedPrecondition}, codes.InvalidArgument, 1},
		{"not found", 404, `{"error":"x","code":5,"message":"applications.argoproj.io \"web\" not found"}`, []error{ErrNotFound}, nil, codes.NotFound, 1},
		{"permission denied", 403, `{"error":"permission denied","code":7,"message":"permission denied"}`, []error{ErrPermissionDenied}, nil, codes.PermissionDenied, 1},
		{"unauthenticated", 401, `{"error":"no session information","code":16,"message":"no session information"}`, []error{ErrUnauthenticated}, nil, codes.Unauthenticated, 1},
		// A sync is not sent again after a proxy's 502: Argo CD may have acted on it (a read would be retried).
		{"proxy 502 page", 502, `<html><body>502 Bad Gateway</body></html>`, nil, []error{ErrNotFound}, codes.Unknown, 1},
		{"unavailable is retried", 503, `{"error":"x","code":14,"message":"simulated outage"}`, []error{ErrUnavailable}, nil, codes.Unavailable, 5},
		{"unknown 500 is retried", 500, `{"error":"x","code":2,"message":"error decoding json patch"}`, nil, nil, codes.Unknown, 5},
		{"429 is retried", 429, `{"error":"x","code":8,"message":"slow down"}`, nil, nil, codes.ResourceExhausted, 5},
		{"501 is not retried", 501, `{"error":"x","code":12,"message":"nope"}`, nil, nil, codes.Unimplemented, 1},
		{"plain 404 without body", 404, `Not Found`, []error{ErrNotFound}, nil, codes.NotFound, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, srv := serve(t, answer{status: tt.status, body: tt.body})
			_, err := newTestClient(t, srv).Sync(context.Background(), "web", SyncRequest{Revision: "abc"})
			if err == nil {
				t.Fatal("no error")
			}
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("error %v is not an *APIError", err)
			}
			if ae.Code != tt.code || ae.HTTPStatus != tt.status {
				t.Errorf("code %v status %d, want %v %d", ae.Code, ae.HTTPStatus, tt.code, tt.status)
			}
			for _, target := range tt.is {
				if !errors.Is(err, target) {
					t.Errorf("errors.Is(%v, %v) = false", err, target)
				}
			}
			for _, target := range tt.isNot {
				if errors.Is(err, target) {
					t.Errorf("errors.Is(%v, %v) = true", err, target)
				}
			}
			if n := len(st.requests()); n != tt.attempts {
				t.Errorf("%d attempts, want %d", n, tt.attempts)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error leaks the token: %v", err)
			}
			if !strings.HasPrefix(err.Error(), `syncing application "web": `) {
				t.Errorf("error %q does not name the action", err)
			}
		})
	}
}

func TestRetryThenSuccess(t *testing.T) {
	st, srv := serve(t,
		answer{status: 503, body: `{"code":14,"message":"down"}`},
		answer{status: 500, body: `oops`},
		answer{status: 200, body: appJSON})
	app, err := newTestClient(t, srv).GetApplication(context.Background(), "web", "")
	if err != nil {
		t.Fatal(err)
	}
	if app.Name != "web" || len(st.requests()) != 3 {
		t.Fatalf("app %q after %d requests", app.Name, len(st.requests()))
	}
}

func TestRetriesDisabled(t *testing.T) {
	st, srv := serve(t, answer{status: 503, body: `{"code":14,"message":"down"}`})
	c := newTestClient(t, srv, func(o *Options) { o.MaxRetries = -1 })
	if _, err := c.GetApplication(context.Background(), "web", ""); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err %v", err)
	}
	if n := len(st.requests()); n != 1 {
		t.Fatalf("%d requests", n)
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	st, srv := serve(t,
		answer{status: 429, body: `{"code":8,"message":"slow"}`, header: map[string]string{"Retry-After": "1"}},
		answer{status: 200, body: appJSON})
	start := time.Now()
	if _, err := newTestClient(t, srv).GetApplication(context.Background(), "web", ""); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Fatalf("retried after %s, Retry-After asked 1s", d)
	}
	if len(st.requests()) != 2 {
		t.Fatalf("%d requests", len(st.requests()))
	}
}

func TestConnectionErrorsAreRetried(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) < 3 {
			hj, _ := w.(http.Hijacker)
			conn, _, _ := hj.Hijack()
			_ = conn.Close() // connection reset before an answer
			return
		}
		_, _ = w.Write([]byte(appJSON))
	}))
	defer srv.Close()
	if _, err := newTestClient(t, srv).GetApplication(context.Background(), "web", ""); err != nil {
		t.Fatal(err)
	}
	if n.Load() != 3 {
		t.Fatalf("%d attempts, want 3", n.Load())
	}
}

func TestContextCancelStopsRetries(t *testing.T) {
	_, srv := serve(t, answer{status: 503, body: `{"code":14}`})
	c := newTestClient(t, srv, func(o *Options) { o.RetryInitialInterval = time.Hour; o.RetryMaxInterval = time.Hour })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.GetApplication(ctx, "web", ""); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v", err)
	}
}

func TestAttemptTimeout(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			<-r.Context().Done() // hang until the client gives up on this attempt
			return
		}
		_, _ = w.Write([]byte(appJSON))
	}))
	defer srv.Close()
	c := newTestClient(t, srv, func(o *Options) { o.Timeout = 100 * time.Millisecond })
	if _, err := c.GetApplication(context.Background(), "web", ""); err != nil {
		t.Fatal(err)
	}
	if n.Load() != 2 {
		t.Fatalf("%d attempts", n.Load())
	}
}

func TestInvalidNames(t *testing.T) {
	c, err := New(Options{BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"", "..", "ns/", "a/b/c", "ns/.."} {
		if _, err := c.GetApplication(context.Background(), n, ""); err == nil || !strings.Contains(err.Error(), "not valid") {
			t.Errorf("name %q: err %v", n, err)
		}
	}
}

func TestNewValidatesURL(t *testing.T) {
	for _, u := range []string{"", "ftp://x", "://x"} {
		if _, err := New(Options{BaseURL: u}); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
	c, err := New(Options{BaseURL: "https://argocd.example.com/argo-cd/"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.url(apiPath("applications", "web"), nil); got != "https://argocd.example.com/argo-cd/api/v1/applications/web" {
		t.Fatalf("url %s", got)
	}
}

func TestTLSOptions(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`{}`)) }))
	defer srv.Close()
	ctx := context.Background()
	quick := func(o Options) Options { o.BaseURL, o.MaxRetries = srv.URL, -1; return o }

	c, err := New(quick(Options{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Settings(ctx); err == nil {
		t.Fatal("an unknown CA was trusted")
	}

	c, err = New(quick(Options{Insecure: true}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Settings(ctx); err != nil {
		t.Fatalf("insecure: %v", err)
	}

	ca := filepath.Join(t.TempDir(), "ca.pem")
	cert := srv.Certificate()
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = New(quick(Options{CAFile: ca}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Settings(ctx); err != nil {
		t.Fatalf("with CA file: %v", err)
	}

	bad := filepath.Join(t.TempDir(), "bad.pem")
	_ = os.WriteFile(bad, []byte("not a certificate"), 0o600)
	if _, err := New(quick(Options{CAFile: bad})); err == nil {
		t.Fatal("a CA file without certificates was accepted")
	}
}

// TestAnswerCutShortIsRetried: an answer whose JSON ends early (the connection closed mid-body) is a
// connection error, retried; malformed JSON of full length is not.
func TestAnswerCutShortIsRetried(t *testing.T) {
	for _, tc := range []struct {
		name    string
		body    string
		retried bool
	}{
		{"cut short", `{"metadata":{"name":"a","resourceVer`, true},
		{"malformed", `{"metadata":{"name":"a"}}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if calls.Add(1) == 1 {
					_, _ = io.WriteString(w, tc.body)
					return
				}
				_, _ = io.WriteString(w, `{"metadata":{"name":"a","resourceVersion":"7"}}`)
			}))
			defer srv.Close()
			c := newTestClient(t, srv)
			app, err := c.GetApplication(context.Background(), "a", "")
			if tc.retried {
				if err != nil || app.ResourceVersion != "7" || calls.Load() != 2 {
					t.Fatalf("got %v, %v after %d calls; want the retried answer", app, err, calls.Load())
				}
				return
			}
			if err == nil || calls.Load() != 1 {
				t.Fatalf("got %v after %d calls; want a decoding error, not retried", err, calls.Load())
			}
		})
	}
}

// burstServer is a server whose application GETs are held until width of them are in flight (each then needs a
// connection of its own, as a wave's syncs do), and /api/version likewise; it counts the connections dialled.
type burstServer struct {
	*httptest.Server
	dials atomic.Int64
}

func newBurstServer(t *testing.T, width int) *burstServer {
	t.Helper()
	var (
		mu      sync.Mutex
		arrived = map[string]int{}
		full    = map[string]chan struct{}{}
	)
	barrier := func(kind string) <-chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		ch, ok := full[kind]
		if !ok {
			ch = make(chan struct{})
			full[kind] = ch
		}
		if arrived[kind]++; arrived[kind] == width {
			close(ch)
			delete(full, kind)
			arrived[kind] = 0
		}
		return ch
	}
	bs := &burstServer{}
	bs.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-barrier(r.URL.Path):
		case <-time.After(5 * time.Second):
			http.Error(w, "the burst never filled", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"metadata":{"name":"a","namespace":"argocd"}}`)
	}))
	bs.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			bs.dials.Add(1)
		}
	}
	bs.Start()
	t.Cleanup(bs.Close)
	return bs
}

// burst makes width GETs of one app at once.
func burst(t *testing.T, c *Client, width int) {
	t.Helper()
	errs := make(chan error, width)
	for range width {
		go func() {
			_, err := c.GetApplication(context.Background(), "a", "")
			errs <- err
		}()
	}
	for range width {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestBurstsReuseConnections: a rollout calls the server from as many goroutines as its concurrency, in bursts
// (a wave's syncs, then its confirmations). Over HTTP/1.1 each call in flight holds a connection; the second
// burst must find them all idle in the pool instead of dialling again — net/http's default transport keeps
// only 100 idle connections in all, whatever the per-host limit says.
func TestBurstsReuseConnections(t *testing.T) {
	const width = 200
	srv := newBurstServer(t, width)
	c, err := New(Options{BaseURL: srv.URL, Token: "t", Timeout: 10 * time.Second}) // the client's own transport
	if err != nil {
		t.Fatal(err)
	}
	burst(t, c, width)
	if got := srv.dials.Load(); got != width {
		t.Fatalf("first burst: %d connections, want %d", got, width)
	}
	burst(t, c, width)
	if got := srv.dials.Load() - width; got != 0 {
		t.Errorf("second burst dialled %d new connections, want 0 (idle connections were dropped between bursts)", got)
	}
}

// TestOperationRequestsAreNotResentAfterALostAnswer: a sync whose connection is lost after the request was sent
// may have started an operation; sending it again once that operation finished would start a second one. So the
// client returns the transient error after one request (the caller looks for the operation first), while a read
// is retried, and a sync is retried when the connection was never made or the answer says it was not acted on.
func TestOperationRequestsAreNotResentAfterALostAnswer(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		hj, _ := w.(http.Hijacker)
		conn, _, _ := hj.Hijack()
		_ = conn.Close() // the request arrived; the answer is lost
	}))
	defer srv.Close()
	c := newTestClient(t, srv)
	_, err := c.Sync(context.Background(), "web", SyncRequest{Revision: "abc"})
	if err == nil || !IsTransient(err) || n.Load() != 1 {
		t.Fatalf("sync: %v (transient %v) after %d requests; want a transient error after 1", err, IsTransient(err), n.Load())
	}
	n.Store(0)
	if _, err := c.Rollback(context.Background(), "web", RollbackRequest{ID: 1}); err == nil || n.Load() != 1 {
		t.Fatalf("rollback: %v after %d requests; want an error after 1", err, n.Load())
	}
	n.Store(0)
	if _, err := c.GetApplication(context.Background(), "web", ""); err == nil || n.Load() != 5 {
		t.Fatalf("get: %v after %d requests; want an error after 5 (retried)", err, n.Load())
	}

	// An answer that says the sync was not acted on is sent again; a proxy's 500, 502 or 504 is not: Argo CD may
	// have started the operation behind it (a gateway timeout usually means it got the request).
	for _, tc := range []struct {
		name     string
		first    answer
		requests int
	}{
		{"Argo CD's 503", answer{status: 503, body: `{"code":14,"message":"down"}`}, 2},
		{"a proxy's 503", answer{status: 503, body: "<html>no healthy upstream</html>"}, 2},
		{"a 429", answer{status: 429, body: "slow down"}, 2},
		{"Argo CD's own 500", answer{status: 500, body: `{"code":13,"message":"internal"}`}, 2},
		{"a proxy's 502", answer{status: 502, body: "<html>Bad Gateway</html>"}, 1},
		{"a proxy's 504", answer{status: 504, body: "<html>Gateway Timeout</html>"}, 1},
		{"a proxy's 500", answer{status: 500, body: "upstream reset"}, 1},
	} {
		st, srv := serve(t, tc.first, answer{status: 200, body: appJSON})
		_, err := newTestClient(t, srv).Sync(context.Background(), "web", SyncRequest{Revision: "abc"})
		if len(st.requests()) != tc.requests || (tc.requests == 1) != (err != nil) || (err != nil && !IsTransient(err)) {
			t.Errorf("sync after %s: %v after %d requests; want %d (an error, transient, when not sent again)", tc.name, err, len(st.requests()), tc.requests)
		}
	}
	st, srv502 := serve(t, answer{status: 502, body: "<html>Bad Gateway</html>"}, answer{status: 200, body: appJSON})
	if _, err := newTestClient(t, srv502).GetApplication(context.Background(), "web", ""); err != nil || len(st.requests()) != 2 {
		t.Errorf("a read after a proxy's 502: %v after %d requests; want it retried", err, len(st.requests()))
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	url := closed.URL
	closed.Close()
	c2, err := New(Options{BaseURL: url, Token: "t", RetryInitialInterval: time.Millisecond, RetryMaxInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Sync(context.Background(), "web", SyncRequest{Revision: "abc"}); err == nil || !neverSent(err) {
		t.Fatalf("sync to a closed port: %v; want the dial error, retried", err)
	}
}
