package github

import (
	"context"
	"net/http"
)

// installationKey carries the installation of a request in its context, for the retry transport below
// ghinstallation (shared by every installation) to pause the right budget.
type installationKey struct{}

// installationTransport is the top of one installation's transport stack, under go-github: it takes a token of
// the installation's write budget before each content-creating request, and pauses the budget when GitHub's
// final answer is a rate limit the retry transport did not wait out (Retry-After longer than its MaxWait, or
// its attempts spent). go-github then returns *github.AbuseRateLimitError (or *RateLimitError) to the caller and
// refuses further requests itself until the reset (go-github v60 github.go, checkSecondaryRateLimitBeforeDo):
// the budget makes the other writes of the installation wait for it instead of failing at once.
type installationTransport struct {
	next   http.RoundTripper
	id     int64
	budget WriteBudget // nil: no budget
	retry  *retryTransport
}

// contentCreating reports whether a request counts against GitHub's secondary limit on content creation.
func contentCreating(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPatch, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

func (t *installationTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.budget == nil {
		return t.next.RoundTrip(req)
	}
	ctx := context.WithValue(req.Context(), installationKey{}, t.id)
	if contentCreating(req.Method) {
		if err := t.budget.Take(ctx, t.id); err != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, err
		}
	}
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err == nil && (resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusTooManyRequests) {
		if wait, limited := t.retry.rateLimitWait(resp); limited {
			t.budget.Pause(t.id, wait)
		}
	}
	return resp, err
}
