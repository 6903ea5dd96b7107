package fakegithub

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/testkit/sharedtest"
)

const (
	repo = "acme/gitops"
	sha  = "0123456789abcdef0123456789abcdef01234567"
)

// do sends a raw request with the given token and returns status and decoded body.
func do(t *testing.T, s *Server, method, path, tok string, body any) (int, map[string]any, http.Header) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, strings.TrimSuffix(s.URL(), "/")+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	if tok != "" {
		req.Header.Set("Authorization", "token "+tok)
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if len(raw) > 0 && raw[0] == '{' {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
	return resp.StatusCode, out, resp.Header
}

func newFake(t *testing.T, opts ...Option) (*Server, string) {
	s := New(t, opts...)
	s.AddPullRequest(repo, PullRequest{Number: 7, HeadSHA: sha, BaseSHA: strings.Repeat("b", 40),
		Files: []File{{Filename: "apps/guestbook/values.yaml", Status: "modified", Additions: 1, Deletions: 1}}})
	return s, s.InstallationToken(42)
}

// validatingFake is newFake for tests of the validation itself: they need GitHub's description (skipped
// without it, failed without it under FLEETWAVE_REQUIRE_SHARED=1).
func validatingFake(t *testing.T, opts ...Option) (*Server, string) {
	t.Helper()
	sharedtest.Dir(t, descriptionDir)
	s, tok := newFake(t, opts...)
	if !s.Validating() {
		t.Fatal("GitHub's description is there but the fake does not validate")
	}
	return s, tok
}

func TestRoutes(t *testing.T) {
	tests := []struct{ method, path, op, param, value string }{
		{"GET", "/repos/acme/gitops/commits/feature/x/check-runs", "checks/list-for-ref", "ref", "feature/x"},
		{"GET", "/repos/acme/gitops/commits/" + sha + "/check-runs", "checks/list-for-ref", "ref", sha},
		{"PATCH", "/repos/acme/gitops/issues/comments/12", "issues/update-comment", "comment_id", "12"},
		{"DELETE", "/repos/acme/gitops/issues/comments/12", "issues/delete-comment", "comment_id", "12"},
		{"POST", "/repos/acme/gitops/issues/comments/12/reactions", "reactions/create-for-issue-comment", "comment_id", "12"},
		{"POST", "/repos/acme/gitops/issues/12/comments", "issues/create-comment", "issue_number", "12"},
		{"GET", "/repos/acme/gitops/pulls/7/files", "pulls/list-files", "pull_number", "7"},
		{"GET", "/repos/acme/gitops/collaborators/alice%5Bbot%5D/permission", "repos/get-collaborator-permission-level", "username", "alice[bot]"},
		{"GET", "/orgs/acme/teams/sre/memberships/alice", "teams/get-membership-for-user-in-org", "team_slug", "sre"},
		{"POST", "/repos/acme/gitops/issues/7/labels", "issues/add-labels", "issue_number", "7"},
		{"DELETE", "/repos/acme/gitops/issues/7/labels/risk:%20crd", "issues/remove-label", "name", "risk: crd"},
		{"POST", "/app/installations/5/access_tokens", "apps/create-installation-access-token", "installation_id", "5"},
	}
	for _, tt := range tests {
		op, params, ok := findRoute(tt.method, tt.path)
		if !ok || op.id != tt.op || params[tt.param] != tt.value {
			t.Errorf("%s %s: ok=%v op=%v params=%v", tt.method, tt.path, ok, op, params)
		}
	}
	for _, tt := range []struct{ method, path string }{
		{"GET", "/repos/acme/gitops/hooks"},                          // not an operation the bot calls
		{"GET", "/repos/acme/gitops/contents/apps/values.yaml"},      // nor this one
		{"POST", "/repos/acme/gitops/pulls/7"},                       // a served path, another method
		{"GET", "/repos/acme/gitops/pulls/7/files/extra"},            // no greedy match past a parameter
		{"PATCH", "/repos/acme/gitops/issues/comments/12/reactions"}, // nor past the template's end
	} {
		if op, _, ok := findRoute(tt.method, tt.path); ok {
			t.Errorf("%s %s was routed to %s", tt.method, tt.path, op.id)
		}
	}
}

func TestInvalidRequestsAnswered422(t *testing.T) {
	s, tok := validatingFake(t, AllowInvalidRequests())
	tests := []struct {
		name, method, path string
		body               any
		want               int
	}{
		{"comment without body", "POST", "/repos/acme/gitops/issues/7/comments", map[string]any{"text": "hi"}, 422},
		{"comment body not a string", "POST", "/repos/acme/gitops/issues/7/comments", map[string]any{"body": 5}, 422},
		{"completed without conclusion", "POST", "/repos/acme/gitops/check-runs",
			map[string]any{"name": "fleetwave/plan", "head_sha": sha, "status": "completed"}, 422},
		{"unknown status", "POST", "/repos/acme/gitops/check-runs",
			map[string]any{"name": "fleetwave/plan", "head_sha": sha, "status": "running"}, 422},
		{"action label too long", "POST", "/repos/acme/gitops/check-runs",
			map[string]any{"name": "x", "head_sha": sha, "actions": []any{map[string]any{"label": strings.Repeat("L", 21), "description": "d", "identifier": "i"}}}, 422},
		{"unknown reaction", "POST", "/repos/acme/gitops/issues/comments/1/reactions", map[string]any{"content": "party"}, 422},
		{"non-numeric issue number", "GET", "/repos/acme/gitops/issues/seven/comments", nil, 422},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body, _ := do(t, s, tt.method, tt.path, tok, tt.body)
			if code != tt.want {
				t.Fatalf("status %d %v, want %d", code, body, tt.want)
			}
		})
	}
	var invalid int
	for _, r := range s.Requests() {
		if r.Invalid != "" {
			invalid++
		}
	}
	if invalid != len(tests) {
		t.Errorf("%d requests recorded invalid, want %d", invalid, len(tests))
	}
}

func TestBehavesLikeGitHubWhereTheSpecIsSilent(t *testing.T) {
	s, tok := newFake(t, AllowInvalidRequests())  // some limits below are in the description too
	long := strings.Repeat("é", MaxCommentBody+1) // characters, not bytes, count
	if code, body, _ := do(t, s, "POST", "/repos/acme/gitops/issues/7/comments", tok, map[string]any{"body": long}); code != 422 ||
		!strings.Contains(fmt.Sprint(body["errors"]), "too long") {
		t.Fatalf("over-long comment: %d %v", code, body)
	}
	if code, _, _ := do(t, s, "POST", "/repos/acme/gitops/issues/7/comments", tok, map[string]any{"body": long[:len(long)-2]}); code != 201 {
		t.Fatalf("comment of exactly %d characters: %d", MaxCommentBody, code)
	}
	if code, _, _ := do(t, s, "POST", "/repos/acme/gitops/issues/8/comments", tok, map[string]any{"body": "x"}); code != 404 {
		t.Fatalf("comment on an unknown pull request: %d", code)
	}
	text := strings.Repeat("x", MaxCheckRunText+1)
	for _, f := range []string{"summary", "text"} {
		out := map[string]any{"title": "t", "summary": "s"}
		out[f] = text
		if code, _, _ := do(t, s, "POST", "/repos/acme/gitops/check-runs", tok,
			map[string]any{"name": "fleetwave/diff", "head_sha": sha, "output": out}); code != 422 {
			t.Errorf("check-run %s over %d: %d", f, MaxCheckRunText, code)
		}
	}
	anns := make([]any, 51)
	for i := range anns {
		anns[i] = map[string]any{"path": "a.yaml", "start_line": 1, "end_line": 1, "annotation_level": "failure", "message": "m"}
	}
	if code, _, _ := do(t, s, "POST", "/repos/acme/gitops/check-runs", tok, map[string]any{"name": "n", "head_sha": sha,
		"output": map[string]any{"title": "t", "summary": "s", "annotations": anns}}); code != 422 {
		t.Errorf("51 annotations in one request: %d", code)
	}
	if code, _, _ := do(t, s, "POST", "/repos/acme/gitops/check-runs", tok, map[string]any{"name": "n", "head_sha": "HEAD"}); code != 422 {
		t.Errorf("check run on a non-SHA: %d", code)
	}
	// status transitions
	code, cr, _ := do(t, s, "POST", "/repos/acme/gitops/check-runs", tok, map[string]any{"name": "fleetwave/wave: canary", "head_sha": sha})
	if code != 201 || cr["status"] != "queued" {
		t.Fatalf("create: %d %v", code, cr["status"])
	}
	id := int64(cr["id"].(float64))
	p := fmt.Sprintf("/repos/acme/gitops/check-runs/%d", id)
	for _, step := range []struct {
		body map[string]any
		want int
	}{
		{map[string]any{"status": "in_progress"}, 200},
		{map[string]any{"conclusion": "success"}, 200}, // a conclusion completes the run
		{map[string]any{"status": "in_progress"}, 422},
	} {
		if code, _, _ := do(t, s, "PATCH", p, tok, step.body); code != step.want {
			t.Errorf("update %v: %d, want %d", step.body, code, step.want)
		}
	}
	runs := s.CheckRuns(repo)
	if got := runs[len(runs)-1]; strings.Join(got.History, ">") != "queued>in_progress>completed" || got.Conclusion != "success" || got.CompletedAt.IsZero() {
		t.Errorf("history %v conclusion %q", got.History, got.Conclusion)
	}
	if code, _, _ := do(t, s, "PATCH", "/repos/acme/gitops/check-runs/999999", tok, map[string]any{"status": "in_progress"}); code != 404 {
		t.Errorf("unknown check run: %d", code)
	}
}

func TestSecondaryRateLimitAndAuth(t *testing.T) {
	s, tok := newFake(t)
	s.InjectSecondaryRateLimit(2, 3*time.Second)
	for i := range 2 {
		code, body, h := do(t, s, "GET", "/repos/acme/gitops/pulls/7", tok, nil)
		if code != 403 || h.Get("Retry-After") != "3" || !strings.Contains(body["message"].(string), "secondary rate limit") {
			t.Fatalf("request %d: %d %v %v", i, code, h, body)
		}
	}
	if code, _, _ := do(t, s, "GET", "/repos/acme/gitops/pulls/7", tok, nil); code != 200 {
		t.Fatalf("after the limit: %d", code)
	}
	if code, _, _ := do(t, s, "GET", "/repos/acme/gitops/pulls/7", "ghs_forged", nil); code != 401 {
		t.Fatalf("unknown token: %d", code)
	}
	if code, _, _ := do(t, s, "GET", "/repos/acme/gitops/pulls/7", "", nil); code != 401 {
		t.Fatalf("no token: %d", code)
	}
	s.SetLatency(50 * time.Millisecond)
	start := time.Now()
	if code, _, _ := do(t, s, "GET", "/repos/acme/gitops/pulls/7", tok, nil); code != 200 || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("with latency: %d after %v", code, time.Since(start))
	}
}

func TestTokenExpiryAndAppJWT(t *testing.T) {
	key, _ := AppKey()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return now }
	s, tok := newFake(t, WithApp(99, &key.PublicKey), WithClock(clock), WithTokenTTL(time.Hour))
	if code, _, _ := do(t, s, "GET", "/repos/acme/gitops/pulls/7", tok, nil); code != 200 {
		t.Fatalf("fresh token: %d", code)
	}
	now = now.Add(time.Hour)
	if code, _, _ := do(t, s, "GET", "/repos/acme/gitops/pulls/7", tok, nil); code != 401 {
		t.Fatalf("expired token: %d", code)
	}
	jwt := func(iss int64, k *rsa.PrivateKey) string {
		enc := base64.RawURLEncoding.EncodeToString
		h := enc([]byte(`{"alg":"RS256","typ":"JWT"}`))
		c := enc([]byte(fmt.Sprintf(`{"iss":"%d","iat":%d,"exp":%d}`, iss, now.Unix()-30, now.Unix()+90)))
		d := sha256.Sum256([]byte(h + "." + c))
		sig, err := rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, d[:])
		if err != nil {
			t.Fatal(err)
		}
		return h + "." + c + "." + enc(sig)
	}
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	for _, tt := range []struct {
		name string
		jwt  string
		want int
	}{
		{"signed by the App", jwt(99, key), 201},
		{"other issuer", jwt(98, key), 401},
		{"other key", jwt(99, other), 401},
	} {
		req, _ := http.NewRequest("POST", s.URL()+"app/installations/5/access_tokens", strings.NewReader("null"))
		req.Header.Set("Authorization", "Bearer "+tt.jwt)
		req.Header.Set("Content-Type", "application/json")
		resp, err := s.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, resp.StatusCode, tt.want)
		}
	}
}

func TestPaginationAndListing(t *testing.T) {
	s, tok := newFake(t)
	for i := range 5 {
		s.AddComment(repo, 7, "alice", fmt.Sprintf("comment %d", i))
	}
	code, _, h := do(t, s, "GET", "/repos/acme/gitops/issues/7/comments?per_page=2&page=2", tok, nil)
	if code != 200 || !strings.Contains(h.Get("Link"), `page=3&per_page=2>; rel="next"`) {
		t.Fatalf("%d Link %q", code, h.Get("Link"))
	}
	for _, name := range []string{"fleetwave/diff", "fleetwave/diff", "fleetwave/plan"} {
		if code, _, _ := do(t, s, "POST", "/repos/acme/gitops/check-runs", tok, map[string]any{"name": name, "head_sha": sha}); code != 201 {
			t.Fatal(code)
		}
	}
	for _, tt := range []struct {
		ref, query string
		want       float64
	}{
		{sha, "", 2}, {sha, "?filter=all", 3}, {sha, "?check_name=fleetwave/plan", 1}, {"change-7", "", 2}, {"feature/other", "", 0},
	} {
		code, body, _ := do(t, s, "GET", "/repos/acme/gitops/commits/"+tt.ref+"/check-runs"+tt.query, tok, nil)
		if code != 200 || body["total_count"] != tt.want {
			t.Errorf("%s%s: %d total %v, want %v", tt.ref, tt.query, code, body["total_count"], tt.want)
		}
	}
}

// capture is a testing.TB that records Errorf, Fatalf and Logf instead of failing and logging. Fatalf ends
// the goroutine, as testing's does: call what may fail in a goroutine of its own (see fatal).
type capture struct {
	testing.TB
	mu               sync.Mutex
	errs, fatal, log []string
}

func (c *capture) Errorf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, fmt.Sprintf(format, args...))
}

func (c *capture) Fatalf(format string, args ...any) {
	c.mu.Lock()
	c.fatal = append(c.fatal, fmt.Sprintf(format, args...))
	c.mu.Unlock()
	runtime.Goexit()
}

func (c *capture) Logf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = append(c.log, fmt.Sprintf(format, args...))
}

// newCaptured runs New(c) in a goroutine of its own, so that a Fatalf ends that goroutine only; it returns
// nil when New failed.
func newCaptured(c *capture, opts ...Option) *Server {
	var s *Server
	done := make(chan struct{})
	go func() {
		defer close(done)
		s = New(c, opts...)
	}()
	<-done
	return s
}

// Without GitHub's description the fake serves unchecked and says so once; under FLEETWAVE_REQUIRE_SHARED=1
// it fails the test instead, and a shared folder with a partial copy always does.
func TestWithoutTheDescription(t *testing.T) {
	empty := t.TempDir()
	t.Setenv(sharedtest.EnvDir, empty)
	t.Setenv(sharedtest.EnvRequire, "")

	c := &capture{TB: t}
	s := newCaptured(c)
	if s == nil || s.Validating() || len(c.fatal) != 0 {
		t.Fatalf("New without the description: server %v, fatal %q", s, c.fatal)
	}
	if len(c.log) != 1 || !strings.Contains(c.log[0], "not validated") || !strings.Contains(c.log[0], sharedtest.EnvDir) {
		t.Errorf("New said %q, want one line saying nothing is validated", c.log)
	}
	s.AddPullRequest(repo, PullRequest{Number: 7, HeadSHA: sha, BaseSHA: strings.Repeat("b", 40)})
	tok := s.InstallationToken(42)
	if code, pr, _ := do(t, s, "GET", "/repos/acme/gitops/pulls/7", tok, nil); code != 200 || pr["head"].(map[string]any)["sha"] != sha {
		t.Errorf("pulls/get unchecked: %d %v", code, pr)
	}
	// GitHub would refuse this reaction; only the description says so.
	id := s.AddComment(repo, 7, "alice", "/fleetwave plan")
	if code, _, _ := do(t, s, "POST", fmt.Sprintf("/repos/acme/gitops/issues/comments/%d/reactions", id), tok, map[string]any{"content": "party"}); code != 201 {
		t.Errorf("unchecked reaction: %d", code)
	}
	if len(c.errs) != 0 {
		t.Errorf("errors without the description: %q", c.errs)
	}

	t.Setenv(sharedtest.EnvRequire, "1")
	c = &capture{TB: t}
	if s := newCaptured(c); s != nil || len(c.fatal) != 1 || !strings.Contains(c.fatal[0], sharedtest.EnvRequire+"=1") {
		t.Errorf("required and missing: server %v, fatal %q", s, c.fatal)
	}

	t.Setenv(sharedtest.EnvRequire, "")
	if err := os.MkdirAll(filepath.Join(empty, filepath.FromSlash(descriptionDir)), 0o755); err != nil {
		t.Fatal(err)
	}
	c = &capture{TB: t}
	if s := newCaptured(c); s != nil || len(c.fatal) != 1 || !strings.Contains(c.fatal[0], "incomplete") {
		t.Errorf("partial copy: server %v, fatal %q", s, c.fatal)
	}
}

// The fake's own answers are checked: one the description forbids fails the test.
func TestInvalidResponsesFailTheTest(t *testing.T) {
	sharedtest.Dir(t, descriptionDir)
	c := &capture{TB: t}
	s := New(c)
	req, _ := http.NewRequest("GET", s.URL()+"repos/acme/gitops/pulls/7", nil)
	op, params, _ := findRoute("GET", "/repos/acme/gitops/pulls/7")
	in, err := s.validateRequest(req, op, params, nil)
	if err != nil || in == nil {
		t.Fatalf("validating a valid request: %v, input %v", err, in)
	}
	s.validateResponse(in, jsonAnswer(200, map[string]any{"number": "seven"}))
	if len(c.errs) != 1 || !strings.Contains(c.errs[0], "would serve an invalid 200") {
		t.Fatalf("errors %q", c.errs)
	}
	c.errs = nil
	s.validateResponse(in, message(404, "Not Found", "https://docs.github.com/rest")) // a described status
	if len(c.errs) != 0 {
		t.Fatalf("valid 404 flagged: %q", c.errs)
	}
}

// A path the fake does not serve fails the test, with or without GitHub's description.
func TestUnservedPathFailsTheTest(t *testing.T) {
	c := &capture{TB: t}
	s := New(c)
	tok := s.InstallationToken(1)
	if code, _, _ := do(t, s, "GET", "/repos/acme/gitops/hooks", tok, nil); code != 404 || len(c.errs) != 1 ||
		!strings.Contains(c.errs[0], "not one of the operations the fake serves") {
		t.Fatalf("unserved endpoint: %d, %q", code, c.errs)
	}
}
