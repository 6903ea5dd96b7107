package github

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryPolicy says how the adapter retries GitHub's transient failures: 5xx answers and transport errors with
// exponential backoff, rate limits (secondary: 403/429 with Retry-After; primary: X-RateLimit-Remaining 0) by
// waiting as long as GitHub asks. Other 4xx answers are returned at once.
// See https://docs.github.com/rest/using-the-rest-api/best-practices-for-using-the-rest-api#handle-rate-limit-errors-appropriately
type RetryPolicy struct {
	// MaxAttempts counts the first try (default 4).
	MaxAttempts int
	// BaseDelay is the first backoff after a 5xx or transport error, doubled on each retry (default 1s).
	BaseDelay time.Duration
	// MaxDelay caps one backoff (default 30s).
	MaxDelay time.Duration
	// MaxWait is the longest rate-limit wait honoured; when GitHub asks for longer the answer is returned to the
	// caller instead (default 2m).
	MaxWait time.Duration
	// Sleep waits for d or until ctx ends (default: a timer). Tests replace it to record the waits.
	Sleep func(ctx context.Context, d time.Duration) error
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 4
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = time.Second
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 30 * time.Second
	}
	if p.MaxWait <= 0 {
		p.MaxWait = 2 * time.Minute
	}
	if p.Sleep == nil {
		p.Sleep = sleep
	}
	return p
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// retryTransport applies a RetryPolicy to every request, including ghinstallation's token requests.
type retryTransport struct {
	next   http.RoundTripper
	policy RetryPolicy
	now    func() time.Time
	// budget, when set, is paused for the installation of the request (installationTransport puts it in the
	// context) while a rate-limited request waits: its other writes wait too, instead of meeting the limit.
	budget WriteBudget
}

func newRetryTransport(next http.RoundTripper, p RetryPolicy) *retryTransport {
	return &retryTransport{next: next, policy: p.withDefaults(), now: time.Now}
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	hasBody := req.Body != nil && req.Body != http.NoBody
	if hasBody && req.GetBody == nil {
		return t.next.RoundTrip(req) // cannot be replayed: one attempt
	}
	for attempt := 1; ; attempt++ {
		try := req
		if attempt > 1 {
			try = req.Clone(ctx)
			if hasBody {
				body, err := req.GetBody()
				if err != nil {
					return nil, fmt.Errorf("retrying GitHub request: %w", err)
				}
				try.Body = body
			}
		}
		resp, err := t.next.RoundTrip(try)
		wait, retry, limited := t.decide(attempt, resp, err)
		if !retry {
			return resp, err
		}
		if id, ok := ctx.Value(installationKey{}).(int64); ok && limited && t.budget != nil {
			t.budget.Pause(id, wait)
		}
		if resp != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		}
		if serr := t.policy.Sleep(ctx, wait); serr != nil {
			if err == nil {
				err = fmt.Errorf("waiting to retry %s %s after %s: %w", req.Method, req.URL.Path, resp.Status, serr)
			}
			return nil, err
		}
	}
}

// decide reports whether to retry, after how long, and whether the wait is a rate limit's. It may replace
// resp.Body (to peek at it).
func (t *retryTransport) decide(attempt int, resp *http.Response, err error) (wait time.Duration, retry, limited bool) {
	if attempt >= t.policy.MaxAttempts {
		return 0, false, false
	}
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return 0, false, false
		}
		return t.backoff(attempt), true, false
	}
	switch {
	case resp.StatusCode >= 500 && resp.StatusCode != http.StatusNotImplemented:
		return t.backoff(attempt), true, false
	case resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusTooManyRequests:
		wait, limited := t.rateLimitWait(resp)
		if !limited || wait > t.policy.MaxWait {
			return 0, false, false
		}
		return wait, true, true
	}
	return 0, false, false
}

// rateLimitWait recognises GitHub's rate-limit answers and how long they ask to wait. A plain 403 (permission
// denied) is not one.
func (t *retryTransport) rateLimitWait(resp *http.Response) (time.Duration, bool) {
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		if secs, err := strconv.Atoi(strings.TrimSpace(ra)); err == nil && secs >= 0 {
			return time.Duration(secs) * time.Second, true
		}
		if at, err := http.ParseTime(ra); err == nil {
			return max(at.Sub(t.now()), 0), true
		}
	}
	if resp.Header.Get("X-RateLimit-Remaining") == "0" {
		if reset, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			return max(time.Unix(reset, 0).Sub(t.now()), 0) + time.Second, true
		}
	}
	// A secondary rate limit without Retry-After: GitHub asks to wait at least a minute.
	peek, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(peek), resp.Body), resp.Body}
	if bytes.Contains(bytes.ToLower(peek), []byte("secondary rate limit")) {
		return time.Minute, true
	}
	return 0, false
}

func (t *retryTransport) backoff(attempt int) time.Duration {
	d := t.policy.BaseDelay << (attempt - 1)
	if d > t.policy.MaxDelay || d <= 0 {
		d = t.policy.MaxDelay
	}
	// ±20% jitter so that many installations do not retry in lockstep.
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}
