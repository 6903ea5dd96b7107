package github

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	gh "github.com/google/go-github/v60/github"
)

func TestTruncate(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		limit int
		cut   bool
		check func(string) bool
	}{
		{"fits", "hello", 200, false, func(s string) bool { return s == "hello" }},
		{"exact", strings.Repeat("a", 200), 200, false, func(s string) bool { return len(s) == 200 }},
		{"cut at a line", strings.Repeat("line of text\n", 50), 200, true, func(s string) bool {
			return strings.HasPrefix(s, "line of text\n") && !strings.Contains(s, "line of te\n")
		}},
		{"multi-byte", strings.Repeat("🚀", 100), 150, true, utf8.ValidString},
		{"closes a fence", "```diff\n" + strings.Repeat("+ a\n", 100), 200, true, func(s string) bool {
			return strings.Count(s, "```")%2 == 0
		}},
		{"closes details", "<details>\n" + strings.Repeat("x\n", 200), 200, true, func(s string) bool {
			return strings.Contains(s, "</details>")
		}},
	}
	for _, tt := range tests {
		got, cut := truncate(tt.in, tt.limit, "NOTE")
		if cut != tt.cut || len(got) > tt.limit || !tt.check(got) || (cut && !strings.HasSuffix(got, "NOTE\n")) {
			t.Errorf("%s: cut=%v len=%d %q", tt.name, cut, len(got), got)
		}
	}
	// Whatever the input, the result fits and is valid UTF-8.
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a", "\n", "é", "🚀", "```", "<details>", "</details>", " "}
	for i := range 500 {
		var b strings.Builder
		for range rng.IntN(400) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		limit := 100 + rng.IntN(200)
		got, _ := truncate(b.String(), limit, "✂️ truncated")
		if len(got) > limit || !utf8.ValidString(got) {
			t.Fatalf("case %d: %d bytes > %d or invalid UTF-8", i, len(got), limit)
		}
	}
}

// A tiny server answering a scripted sequence of statuses and recording the bodies it received.
type script struct {
	mu      sync.Mutex
	answers []func(w http.ResponseWriter)
	bodies  []string
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	i := len(s.bodies)
	s.bodies = append(s.bodies, string(b))
	s.mu.Unlock()
	if i < len(s.answers) {
		s.answers[i](w)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func status(code int, headers ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, `{"message":"x"}`)
	}
}

func TestRetryTransport(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	secondary := func(w http.ResponseWriter) {
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"message":"You have exceeded a secondary rate limit."}`)
	}
	tests := []struct {
		name     string
		answers  []func(http.ResponseWriter)
		want     int
		attempts int
		waits    string
	}{
		{"ok", nil, 200, 1, "[]"},
		{"502 twice", []func(http.ResponseWriter){status(502), status(503)}, 200, 3, "2"},
		{"gives up after MaxAttempts", []func(http.ResponseWriter){status(500), status(500), status(500), status(500)}, 500, 4, "3"},
		{"429 Retry-After seconds", []func(http.ResponseWriter){status(429, "Retry-After", "3")}, 200, 2, "[3s]"},
		{"403 Retry-After date", []func(http.ResponseWriter){status(403, "Retry-After", now.Add(5*time.Second).Format(http.TimeFormat))}, 200, 2, "[5s]"},
		{"primary limit waits for reset", []func(http.ResponseWriter){status(403, "X-RateLimit-Remaining", "0",
			"X-RateLimit-Reset", strconv.FormatInt(now.Add(10*time.Second).Unix(), 10))}, 200, 2, "[11s]"},
		{"secondary without Retry-After waits a minute", []func(http.ResponseWriter){secondary}, 200, 2, "[1m0s]"},
		{"plain 403 is final", []func(http.ResponseWriter){status(403)}, 403, 1, "[]"},
		{"404 is final", []func(http.ResponseWriter){status(404)}, 404, 1, "[]"},
		{"422 is final", []func(http.ResponseWriter){status(422)}, 422, 1, "[]"},
		{"wait beyond MaxWait is final", []func(http.ResponseWriter){status(429, "Retry-After", "3600")}, 429, 1, "[]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := &script{answers: tt.answers}
			srv := httptest.NewServer(sc)
			defer srv.Close()
			sl := &sleeps{}
			rt := newRetryTransport(srv.Client().Transport, RetryPolicy{Sleep: sl.sleep})
			rt.now = func() time.Time { return now }
			req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"body":"same every time"}`))
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			waits := sl.got()
			gotWaits := fmtDurations(waits)
			if !strings.HasPrefix(tt.waits, "[") { // jittered backoffs: count them
				gotWaits = strconv.Itoa(len(waits))
			}
			if resp.StatusCode != tt.want || len(sc.bodies) != tt.attempts || gotWaits != tt.waits {
				t.Fatalf("status %d after %d attempts, waits %s; want %d after %d, waits %s",
					resp.StatusCode, len(sc.bodies), gotWaits, tt.want, tt.attempts, tt.waits)
			}
			for i, b := range sc.bodies {
				if b != `{"body":"same every time"}` {
					t.Errorf("attempt %d sent %q", i+1, b)
				}
			}
		})
	}
}

func fmtDurations(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.String()
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func TestRetryStopsWhenContextEnds(t *testing.T) {
	sc := &script{answers: []func(http.ResponseWriter){status(502), status(502)}}
	srv := httptest.NewServer(sc)
	defer srv.Close()
	rt := newRetryTransport(srv.Client().Transport, RetryPolicy{BaseDelay: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	start := time.Now()
	if _, err := rt.RoundTrip(req); err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
}

// The narrow interfaces are satisfied by go-github's services.
var (
	_ IssuesAPI    = (*gh.IssuesService)(nil)
	_ ChecksAPI    = (*gh.ChecksService)(nil)
	_ PullsAPI     = (*gh.PullRequestsService)(nil)
	_ ReposAPI     = (*gh.RepositoriesService)(nil)
	_ TeamsAPI     = (*gh.TeamsService)(nil)
	_ ReactionsAPI = (*gh.ReactionsService)(nil)
)

// A Client built from value fakes: listing errors are reported with the action that failed.
type failingIssues struct{ IssuesAPI }

func (failingIssues) ListComments(context.Context, string, string, int, *gh.IssueListCommentsOptions) ([]*gh.IssueComment, *gh.Response, error) {
	return nil, &gh.Response{Response: &http.Response{StatusCode: 500}}, io.ErrUnexpectedEOF
}

func TestErrorsNameTheAction(t *testing.T) {
	c := NewClient(Services{Issues: failingIssues{}})
	_, err := c.UpsertComment(context.Background(), "acme/gitops", 7, []string{"x"})
	if err == nil || err.Error() != "listing comments on acme/gitops#7: unexpected EOF" {
		t.Fatalf("%v", err)
	}
	if _, err := c.UpsertComment(context.Background(), "gitops", 7, nil); err == nil || !strings.Contains(err.Error(), "owner/name") {
		t.Fatalf("%v", err)
	}
}

// TestFromFork: a pull request is the base repository's own only when its head is there; a deleted fork's pull
// request (no head repository) is a fork.
func TestFromFork(t *testing.T) {
	for _, tt := range []struct {
		head, base string
		fork       bool
	}{
		{"octo/fleet", "octo/fleet", false},
		{"Octo/Fleet", "octo/fleet", false},
		{"mallory/fleet", "octo/fleet", true},
		{"", "octo/fleet", true},
	} {
		if got := (PullRequest{HeadRepo: tt.head, BaseRepo: tt.base}).FromFork(); got != tt.fork {
			t.Errorf("head %q, base %q: FromFork() = %v, want %v", tt.head, tt.base, got, tt.fork)
		}
	}
}
