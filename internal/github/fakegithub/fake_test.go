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
	"strings"
	"testing"
	"time"
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

func TestSpecLoadsAndRoutes(t *testing.T) {
	sp, err := loadSpec()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ method, path, op, param, value string }{
		{"GET", "/repos/acme/gitops/commits/feature/x/check-runs", "checks/list-for-ref", "ref", "feature/x"},
		{"GET", "/repos/acme/gitops/contents/apps/guestbook/values.yaml", "repos/get-content", "path", "apps/guestbook/values.yaml"},
		{"GET", "/repos/acme/gitops/git/ref/heads/release/1.2", "git/get-ref", "ref", "heads/release/1.2"},
		{"PATCH", "/repos/acme/gitops/issues/comments/12", "issues/update-comment", "comment_id", "12"},
		{"POST", "/repos/acme/gitops/issues/12/comments", "issues/create-comment", "issue_number", "12"},
		{"GET", "/orgs/acme/teams/sre/memberships/alice", "teams/get-membership-for-user-in-org", "team_slug", "sre"},
	}
	for _, tt := range tests {
		r, params, ok := sp.find(tt.method, tt.path)
		if !ok || r.Operation.OperationID != tt.op || params[tt.param] != tt.value {
			t.Errorf("%s %s: ok=%v op=%v params=%v", tt.method, tt.path, ok, r, params)
		}
	}
	if _, _, ok := sp.find("GET", "/repos/acme/gitops/hooks"); ok {
		t.Error("an undescribed path was routed")
	}
}

func TestInvalidRequestsAnswered422(t *testing.T) {
	s, tok := newFake(t, AllowInvalidRequests())
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
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
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

// capture is a testing.TB that records Errorf instead of failing.
type capture struct {
	testing.TB
	errs []string
}

func (c *capture) Errorf(format string, args ...any) {
	c.errs = append(c.errs, fmt.Sprintf(format, args...))
}

// The fake's own answers are checked: one the description forbids fails the test.
func TestInvalidResponsesFailTheTest(t *testing.T) {
	c := &capture{TB: t}
	s := New(c)
	req, _ := http.NewRequest("GET", s.URL()+"repos/acme/gitops/pulls/7", nil)
	route, params, _ := s.spec.find("GET", "/repos/acme/gitops/pulls/7")
	in, err := s.validateRequest(req, route, params, nil, route.Operation.OperationID)
	if err != nil {
		t.Fatal(err)
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
	// An undescribed endpoint fails the test too.
	tok := s.InstallationToken(1)
	if code, _, _ := do(t, s, "GET", "/repos/acme/gitops/hooks", tok, nil); code != 404 || len(c.errs) != 1 {
		t.Fatalf("undescribed endpoint: %d, %q", code, c.errs)
	}
}
