package webhooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/fleetwave/fleetwave/webhooks/webhooktest"
)

const testSecret = "s3cr3t-webhook-key"

// recorder is a Handler made of values: the deliveries it wants, and what it does with one.
type recorder struct {
	handles []string
	fn      func(ctx context.Context, ev Event) error

	mu     sync.Mutex
	events []Event
}

func (r *recorder) Handles() []string { return r.handles }

func (r *recorder) Handle(ctx context.Context, ev Event) error {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
	if r.fn != nil {
		return r.fn(ctx, ev)
	}
	return nil
}

func (r *recorder) got() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// appHandles is what the App's use cases subscribe to.
var appHandles = []string{
	"pull_request", "issue_comment.created", "check_run.rerequested", "check_run.requested_action",
	"check_suite.rerequested", "push", "merge_group.checks_requested", "merge_group.destroyed",
}

func newTestServer(t *testing.T, h Handler, store DeliveryStore, opts ...Option) *Server {
	t.Helper()
	if store == nil {
		store = NewMemoryDeliveries(0)
	}
	s, err := New([]byte(testSecret), h, store, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return s
}

func delivery(event, id string, body []byte, signature string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("User-Agent", "GitHub-Hookshot/044aadd")
	if event != "" {
		r.Header.Set("X-GitHub-Event", event)
	}
	if id != "" {
		r.Header.Set("X-GitHub-Delivery", id)
	}
	if signature != "" {
		r.Header.Set("X-Hub-Signature-256", signature)
	}
	return r
}

func serve(s http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

// fixtureDir holds the webhook payloads written for the tests, in GitHub's shape (see its README.md).
var fixtureDir = filepath.Join("..", "testdata", "fixtures", "webhooks")

// readPayload reads a payload fixture, rel being "<event>/<name>.json".
func readPayload(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func drain(t *testing.T, s *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// GitHub's documented X-Hub-Signature-256 example ("Testing the webhook payload validation" in
// https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries).
const (
	vectorSecret    = "It's a Secret to Everybody" // ASCII apostrophe
	vectorPayload   = "Hello, World!"              // 13 bytes, no newline
	vectorSignature = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
)

// GitHub's documented test vector, checked through go-github's function and through the Server.
func TestSignatureTestVector(t *testing.T) {
	secret, payload, header := vectorSecret, vectorPayload, vectorSignature
	if err := github.ValidateSignature(header, []byte(payload), []byte(secret)); err != nil {
		t.Fatalf("go-github rejects GitHub's own test vector: %v", err)
	}
	if got := webhooktest.Sign(secret, []byte(payload)); got != header {
		t.Fatalf("test signer = %s, GitHub documents %s", got, header)
	}
	if err := github.ValidateSignature(header, []byte(payload+" "), []byte(secret)); err == nil {
		t.Fatal("a modified payload validates")
	}

	rec := &recorder{handles: appHandles}
	s, err := New([]byte(secret), rec, NewMemoryDeliveries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer drain(t, s)
	// A ping is acknowledged without parsing, so the vector's non-JSON payload exercises the signature path.
	if w := serve(s, delivery("ping", "vector-1", []byte(payload), header)); w.Code != http.StatusOK {
		t.Fatalf("test vector through the server: %d %s", w.Code, w.Body)
	}
	flipped := header[:len(header)-1] + "f" // last hex digit of ...3e17 changed
	if w := serve(s, delivery("ping", "vector-2", []byte(payload), flipped)); w.Code != http.StatusUnauthorized {
		t.Fatalf("altered signature: %d, want 401", w.Code)
	}
}

type want struct {
	code   int
	action string
	inst   int64
	repo   string
	number int
}

// Every payload fixture, signed as GitHub signs it, gets the right answer and reaches the handler with the
// right metadata and the values the App reads. (TestRecordedDeliveries does the same with GitHub's own
// recordings, where they are available.)
func TestFixtures(t *testing.T) {
	const repo = "Codertocat/Hello-World"
	cases := map[string]want{ // every file under fixtureDir must be listed
		"check_run/requested_action.json":            {code: 202, action: "requested_action", inst: 1, repo: repo, number: 2},
		"check_run/rerequested.json":                 {code: 202, action: "rerequested", inst: 1, repo: repo},
		"check_suite/rerequested.json":               {code: 202, action: "rerequested", inst: 1, repo: repo, number: 2},
		"installation/created.json":                  {code: 204},
		"issue_comment/created-on-pull-request.json": {code: 202, action: "created", inst: 1, repo: repo, number: 2},
		"merge_group/checks_requested.json":          {code: 202, action: "checks_requested", inst: 1, repo: repo},
		"merge_group/destroyed.json":                 {code: 202, action: "destroyed", inst: 1, repo: repo},
		"ping/app-hook.json":                         {code: 200},
		"pull_request/closed-merged.json":            {code: 202, action: "closed", inst: 1, repo: repo, number: 2},
		"pull_request/opened.json":                   {code: 202, action: "opened", inst: 1, repo: repo, number: 2},
		"pull_request/synchronize.json":              {code: 202, action: "synchronize", inst: 1, repo: repo, number: 2},
		"push/to-default-branch.json":                {code: 202, inst: 1, repo: repo},
	}
	files := fixtureFiles(t)
	if len(files) != len(cases) {
		t.Fatalf("%d fixtures, %d expectations: list every file", len(files), len(cases))
	}
	rec := &recorder{handles: appHandles}
	s := newTestServer(t, rec, nil)
	wantDispatched := map[string]want{}
	for i, name := range files {
		w, ok := cases[name]
		if !ok {
			t.Errorf("%s: no expectation", name)
			continue
		}
		body := readPayload(t, name)
		event := path.Dir(name)
		// Every fixture parses as go-github's type for its event, subscribed to or not.
		if _, err := github.ParseWebHook(event, body); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		id := fmt.Sprintf("fixture-%03d", i)
		resp := serve(s, delivery(event, id, body, webhooktest.Sign(testSecret, body)))
		if resp.Code != w.code {
			t.Errorf("%s: status %d (%s), want %d", name, resp.Code, strings.TrimSpace(resp.Body.String()), w.code)
		}
		if w.code == 202 {
			wantDispatched[id] = w
		}
	}
	drain(t, s)
	got := rec.got()
	if len(got) != len(wantDispatched) {
		t.Fatalf("dispatched %d events, want %d", len(got), len(wantDispatched))
	}
	for _, ev := range got {
		w := wantDispatched[ev.DeliveryID]
		if ev.Action != w.action || ev.InstallationID != w.inst || ev.Repo != w.repo || ev.Number != w.number {
			t.Errorf("%s: dispatched %+v, want %+v", ev.DeliveryID, want{202, ev.Action, ev.InstallationID, ev.Repo, ev.Number}, w)
		}
		if ev.Sender != "Codertocat" || len(ev.Raw) == 0 || ev.ReceivedAt.IsZero() {
			t.Errorf("%s: sender %q, raw body or receipt time missing", ev.DeliveryID, ev.Sender)
		}
		// The values the App's use cases read, as go-github parses them.
		var bad bool
		switch p := ev.Payload.(type) {
		case *github.PullRequestEvent:
			pr := p.GetPullRequest()
			bad = pr.GetHead().GetRef() != "changes" || pr.GetBase().GetRef() != "master" || len(pr.GetHead().GetSHA()) != 40 ||
				len(pr.GetBase().GetSHA()) != 40 || p.GetRepo().GetCloneURL() != "https://github.com/"+repo+".git" ||
				p.GetRepo().GetHTMLURL() != "https://github.com/"+repo || p.GetRepo().GetDefaultBranch() != "master" ||
				(p.GetAction() == "closed") != (pr.GetMerged() && len(pr.GetMergeCommitSHA()) == 40)
		case *github.IssueCommentEvent:
			bad = !p.GetIssue().IsPullRequest() || p.GetComment().GetBody() != "/plan" || p.GetComment().GetID() == 0
		case *github.CheckRunEvent:
			cr := p.GetCheckRun()
			bad = cr.GetApp().GetID() != 4242 || cr.GetExternalID() == "" || len(cr.GetHeadSHA()) != 40 ||
				(p.GetAction() == "requested_action") != (p.GetRequestedAction() != nil && p.GetRequestedAction().Identifier == "approve")
		case *github.CheckSuiteEvent:
			cs := p.GetCheckSuite()
			bad = cs.GetApp().GetID() != 4242 || len(cs.GetHeadSHA()) != 40 || len(cs.PullRequests) != 1 ||
				cs.PullRequests[0].GetBase().GetSHA() == ""
		case *github.PushEvent:
			bad = p.GetRef() != "refs/heads/master" || p.GetDeleted() || len(p.GetBefore()) != 40 || len(p.GetAfter()) != 40 ||
				p.GetRepo().GetCloneURL() != "https://github.com/"+repo+".git"
		case *github.MergeGroupEvent:
			mg := p.GetMergeGroup()
			bad = len(mg.GetHeadSHA()) != 40 || len(mg.GetBaseSHA()) != 40 || mg.GetBaseRef() != "refs/heads/master" ||
				!strings.HasPrefix(mg.GetHeadRef(), "refs/heads/gh-readonly-queue/master/pr-2-") ||
				mg.GetHeadCommit().GetMessage() == "" || p.GetRepo().GetCloneURL() != "https://github.com/"+repo+".git"
		default:
			bad = true
		}
		if bad {
			t.Errorf("%s: %T does not carry what the App reads", ev.DeliveryID, ev.Payload)
		}
	}
}

// fixtureFiles lists the payload fixtures as "<event>/<name>.json", sorted.
func fixtureFiles(t testing.TB) []string {
	t.Helper()
	all, err := filepath.Glob(filepath.Join(fixtureDir, "*", "*.json"))
	if err != nil || len(all) == 0 {
		t.Fatalf("no payload fixtures in %s: %v", fixtureDir, err)
	}
	var out []string
	for _, f := range all {
		rel, _ := filepath.Rel(fixtureDir, f)
		out = append(out, filepath.ToSlash(rel))
	}
	sort.Strings(out)
	return out
}

func TestRefusedDeliveries(t *testing.T) {
	body := readPayload(t, "pull_request/opened.json")
	good := webhooktest.Sign(testSecret, body)
	tests := []struct {
		name   string
		req    func() *http.Request
		code   int
		substr string
	}{
		{"unsigned", func() *http.Request { return delivery("pull_request", "d1", body, "") }, 401, "X-Hub-Signature-256"},
		{"wrong secret", func() *http.Request { return delivery("pull_request", "d2", body, webhooktest.Sign("other", body)) }, 401, "signature"},
		{"tampered body", func() *http.Request {
			b := bytes.Replace(body, []byte(`"opened"`), []byte(`"closed"`), 1)
			return delivery("pull_request", "d3", b, good)
		}, 401, "signature"},
		{"legacy sha1 header only", func() *http.Request {
			r := delivery("pull_request", "d4", body, "")
			r.Header.Set("X-Hub-Signature", "sha1=0000")
			return r
		}, 401, "X-Hub-Signature-256"},
		{"sha512 prefix", func() *http.Request { return delivery("pull_request", "d5", body, "sha512=00") }, 401, ""},
		{"not hex", func() *http.Request { return delivery("pull_request", "d6", body, "sha256=zz") }, 401, ""},
		{"GET", func() *http.Request {
			r := delivery("pull_request", "d7", body, good)
			r.Method = http.MethodGet
			return r
		}, 405, ""},
		{"no event header", func() *http.Request { return delivery("", "d8", body, good) }, 400, "X-GitHub-Event"},
		{"no delivery header", func() *http.Request { return delivery("pull_request", "", body, good) }, 400, "X-GitHub-Delivery"},
		{"bad content type", func() *http.Request {
			r := delivery("pull_request", "d9", body, good)
			r.Header.Set("Content-Type", "text/plain")
			return r
		}, 400, "Content-Type"},
		{"not JSON", func() *http.Request {
			b := []byte("{not json")
			return delivery("pull_request", "d10", b, webhooktest.Sign(testSecret, b))
		}, 400, "parsing pull_request payload"},
		{"event go-github does not know", func() *http.Request {
			return delivery("brand_new_event", "d11", body, good)
		}, 204, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{handles: appHandles}
			s := newTestServer(t, rec, nil)
			w := serve(s, tt.req())
			if w.Code != tt.code || !strings.Contains(w.Body.String(), tt.substr) {
				t.Fatalf("status %d %q, want %d containing %q", w.Code, w.Body, tt.code, tt.substr)
			}
			drain(t, s)
			if n := len(rec.got()); n != 0 {
				t.Fatalf("%d events dispatched, want none", n)
			}
		})
	}
}

func TestBodyCap(t *testing.T) {
	rec := &recorder{handles: appHandles}
	s := newTestServer(t, rec, nil, WithMaxBodyBytes(1024))
	body := readPayload(t, "pull_request/opened.json") // 8 kB
	w := serve(s, delivery("pull_request", "big", body, webhooktest.Sign(testSecret, body)))
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413", w.Code)
	}
	drain(t, s)
	if len(rec.got()) != 0 {
		t.Fatal("an oversized delivery was dispatched")
	}
}

// GitHub may be configured to send application/x-www-form-urlencoded; the signature covers the form body.
func TestFormEncodedDelivery(t *testing.T) {
	rec := &recorder{handles: appHandles}
	s := newTestServer(t, rec, nil)
	payload := readPayload(t, "push/to-default-branch.json")
	form := []byte(url.Values{"payload": {string(payload)}}.Encode())
	r := delivery("push", "form-1", form, webhooktest.Sign(testSecret, form))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if w := serve(s, r); w.Code != http.StatusAccepted {
		t.Fatalf("status %d %s", w.Code, w.Body)
	}
	drain(t, s)
	if got := rec.got(); len(got) != 1 || got[0].Repo != "Codertocat/Hello-World" || !bytes.Equal(got[0].Raw, payload) {
		t.Fatalf("dispatched %d events", len(got))
	}
}

func TestRedeliveryDispatchedOnce(t *testing.T) {
	rec := &recorder{handles: appHandles}
	store := NewMemoryDeliveries(0)
	s := newTestServer(t, rec, store)
	body := readPayload(t, "pull_request/synchronize.json")
	sig := webhooktest.Sign(testSecret, body)
	var codes []int
	for range 3 {
		codes = append(codes, serve(s, delivery("pull_request", "same-guid", body, sig)).Code)
	}
	// and concurrently, another delivery redelivered 20 times at once
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted := 0
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if serve(s, delivery("pull_request", "racing-guid", body, sig)).Code == http.StatusAccepted {
				mu.Lock()
				accepted++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	drain(t, s)
	if fmt.Sprint(codes) != "[202 200 200]" || accepted != 1 {
		t.Fatalf("codes %v, concurrent accepted %d", codes, accepted)
	}
	if n := len(rec.got()); n != 2 {
		t.Fatalf("dispatched %d, want 2", n)
	}
	// After a restart with the same (persistent) store, a redelivery is still a duplicate.
	rec2 := &recorder{handles: appHandles}
	s2 := newTestServer(t, rec2, store)
	if w := serve(s2, delivery("pull_request", "same-guid", body, sig)); w.Code != http.StatusOK {
		t.Fatalf("redelivery after restart: %d", w.Code)
	}
	drain(t, s2)
	if len(rec2.got()) != 0 {
		t.Fatal("redelivery after restart dispatched")
	}
}

func TestFullQueueThenRedelivery(t *testing.T) {
	started := make(chan string, 10)
	release := make(chan struct{})
	rec := &recorder{handles: appHandles, fn: func(ctx context.Context, ev Event) error {
		started <- ev.DeliveryID
		<-release
		return nil
	}}
	s := newTestServer(t, rec, nil, WithWorkers(1), WithQueueSize(1))
	body := readPayload(t, "pull_request/opened.json")
	sig := webhooktest.Sign(testSecret, body)
	if w := serve(s, delivery("pull_request", "a", body, sig)); w.Code != 202 {
		t.Fatalf("a: %d", w.Code)
	}
	<-started // the only worker is busy with a
	if w := serve(s, delivery("pull_request", "b", body, sig)); w.Code != 202 {
		t.Fatalf("b: %d", w.Code) // waits in the queue
	}
	w := serve(s, delivery("pull_request", "c", body, sig))
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Fatalf("c with a full queue: %d, want 503 with Retry-After", w.Code)
	}
	close(release)
	<-started // b
	// GitHub redelivers c with the same GUID: it must be handled, not taken for a duplicate.
	deadline := time.Now().Add(5 * time.Second)
	for {
		w = serve(s, delivery("pull_request", "c", body, sig))
		if w.Code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond) // b still occupies the queue slot until the worker takes it
	}
	if w.Code != http.StatusAccepted {
		t.Fatalf("redelivered c: %d, want 202", w.Code)
	}
	drain(t, s)
	var ids []string
	for _, ev := range rec.got() {
		ids = append(ids, ev.DeliveryID)
	}
	if strings.Join(ids, ",") != "a,b,c" {
		t.Fatalf("handled %v, want a,b,c once each", ids)
	}
	if st := s.Stats(); st.Unavailable < 1 || st.Accepted != 3 || st.Handled != 3 {
		t.Fatalf("stats %+v", st)
	}
}

func TestHandlerPanicAndErrorAreContained(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rec := &recorder{handles: appHandles, fn: func(ctx context.Context, ev Event) error {
		LoggerFrom(ctx).Info("handling")
		switch ev.DeliveryID {
		case "panics":
			panic("boom")
		case "fails":
			return errors.New("rendering app \"guestbook\": chart not found")
		}
		return nil
	}}
	s := newTestServer(t, rec, nil, WithWorkers(1), WithLogger(logger))
	body := readPayload(t, "pull_request/opened.json")
	for _, id := range []string{"panics", "fails", "fine"} {
		if w := serve(s, delivery("pull_request", id, body, webhooktest.Sign(testSecret, body))); w.Code != 202 {
			t.Fatalf("%s: %d", id, w.Code)
		}
	}
	drain(t, s)
	st := s.Stats()
	if st.Failed != 2 || st.Handled != 1 {
		t.Fatalf("stats %+v: the worker must survive a panic", st)
	}
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	// The handler's own log line carries the delivery's identity, although it ran off the request.
	for _, want := range []string{
		`"msg":"handling","delivery":"fine","event":"pull_request","action":"opened","installation":1,"repo":"Codertocat/Hello-World","pr":2`,
		`"msg":"webhook handler panicked","delivery":"panics"`,
		`"msg":"webhook handler failed","delivery":"fails"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s\n%s", want, out)
		}
	}
	if strings.Contains(out, testSecret) {
		t.Error("the webhook secret reached the log")
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestShutdownDrainsThenRefuses(t *testing.T) {
	var mu sync.Mutex
	done := 0
	rec := &recorder{handles: appHandles, fn: func(ctx context.Context, ev Event) error {
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		done++
		mu.Unlock()
		return nil
	}}
	s := newTestServer(t, rec, nil, WithWorkers(2), WithQueueSize(16))
	body := readPayload(t, "push/to-default-branch.json")
	for i := range 10 {
		if w := serve(s, delivery("push", fmt.Sprint("p", i), body, webhooktest.Sign(testSecret, body))); w.Code != 202 {
			t.Fatalf("%d: %d", i, w.Code)
		}
	}
	drain(t, s)
	if done != 10 {
		t.Fatalf("%d of 10 queued deliveries finished before Shutdown returned", done)
	}
	if w := serve(s, delivery("push", "late", body, webhooktest.Sign(testSecret, body))); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("delivery after shutdown: %d, want 503", w.Code)
	}
}

func TestShutdownDeadlineForgetsUnstarted(t *testing.T) {
	store := NewMemoryDeliveries(0)
	block := make(chan struct{})
	var sawCancel sync.WaitGroup
	sawCancel.Add(1)
	rec := &recorder{handles: appHandles, fn: func(ctx context.Context, ev Event) error {
		<-ctx.Done() // a long handler that honours cancellation
		sawCancel.Done()
		<-block
		return ctx.Err()
	}}
	s, err := New([]byte(testSecret), rec, store, WithWorkers(1), WithQueueSize(4))
	if err != nil {
		t.Fatal(err)
	}
	body := readPayload(t, "push/to-default-branch.json")
	for _, id := range []string{"running", "queued-1", "queued-2"} {
		if w := serve(s, delivery("push", id, body, webhooktest.Sign(testSecret, body))); w.Code != 202 {
			t.Fatalf("%s: %d", id, w.Code)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want deadline exceeded", err)
	}
	sawCancel.Wait() // the running handler saw its context cancelled
	close(block)
	if st := s.Stats(); st.Dropped != 2 {
		t.Fatalf("dropped %d, want 2", st.Dropped)
	}
	// The abandoned deliveries were forgotten: their redelivery to the next process is handled.
	rec2 := &recorder{handles: appHandles}
	s2 := newTestServer(t, rec2, store)
	for id, code := range map[string]int{"queued-1": 202, "queued-2": 202, "running": 200} {
		if w := serve(s2, delivery("push", id, body, webhooktest.Sign(testSecret, body))); w.Code != code {
			t.Errorf("redelivered %s: %d, want %d", id, w.Code, code)
		}
	}
}

func TestNewValidates(t *testing.T) {
	rec := &recorder{handles: appHandles}
	if _, err := New(nil, rec, NewMemoryDeliveries(0)); err == nil {
		t.Error("empty secret accepted")
	}
	if _, err := New([]byte("x"), &recorder{handles: []string{"pull_requests"}}, NewMemoryDeliveries(0)); err == nil ||
		!strings.Contains(err.Error(), `"pull_requests"`) {
		t.Errorf("misspelt event: %v", err)
	}
	if _, err := New([]byte("x"), rec, NewMemoryDeliveries(0), WithWorkers(0)); err == nil {
		t.Error("zero workers accepted")
	}
}

func TestMemoryDeliveriesEvictsOldest(t *testing.T) {
	m := NewMemoryDeliveries(2)
	ctx := context.Background()
	for _, id := range []string{"a", "b", "c"} {
		if dup, _ := m.Seen(ctx, id); dup {
			t.Fatalf("%s first seen reported as dup", id)
		}
	}
	if dup, _ := m.Seen(ctx, "c"); !dup {
		t.Error("c forgotten")
	}
	if dup, _ := m.Seen(ctx, "a"); dup {
		t.Error("a should have been evicted")
	}
}
