package metrics

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fleetwave/fleetwave/internal/report"
	"github.com/fleetwave/fleetwave/webhooks"
)

func TestPreviewed(t *testing.T) {
	m := New()
	rep := &report.Report{Apps: []report.App{{Status: report.StatusChanged}, {Status: report.StatusChanged}, {Status: report.StatusError}, {Status: "surprising"}}}
	rep.Summarize()
	m.Previewed("pull_request", 2*time.Second, rep, nil)
	m.Previewed("check_suite", time.Second, nil, errors.New("clone failed"))
	for _, c := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"pull_request", "changed"}, 2}, {[]string{"pull_request", "error"}, 1}, {[]string{"pull_request", "other"}, 1},
	} {
		if got := testutil.ToFloat64(m.previewApps.WithLabelValues(c.labels...)); got != c.want {
			t.Errorf("preview_apps_total%v = %v, want %v", c.labels, got, c.want)
		}
	}
	if n := testutil.CollectAndCount(m.previews); n != 2 {
		t.Errorf("%d preview duration series, want 2 (pull_request/failed, other/error)", n)
	}
}

func TestWriteBudgetWaits(t *testing.T) {
	m := New()
	m.Waiting(1)
	m.Waiting(1)
	m.Waiting(-1)
	m.Waited("budget", 1500*time.Millisecond)
	m.Waited("budget", 500*time.Millisecond)
	m.Waited("rate_limited", time.Minute)
	m.Waited("an installation id, say", time.Second) // bounded: counted as other
	for _, c := range []struct {
		reason      string
		waits, secs float64
	}{{"budget", 2, 2}, {"rate_limited", 1, 60}, {"other", 1, 1}} {
		if got := testutil.ToFloat64(m.budgetWaits.WithLabelValues(c.reason)); got != c.waits {
			t.Errorf("github_write_budget_waits_total{reason=%q} = %v, want %v", c.reason, got, c.waits)
		}
		if got := testutil.ToFloat64(m.budgetWait.WithLabelValues(c.reason)); got != c.secs {
			t.Errorf("github_write_budget_wait_seconds_total{reason=%q} = %v, want %v", c.reason, got, c.secs)
		}
	}
	if n := testutil.CollectAndCount(m.budgetWaits); n != 3 {
		t.Errorf("%d reason series, want 3", n)
	}
	if got := testutil.ToFloat64(m.budgetNow); got != 1 {
		t.Errorf("github_write_budget_waiting = %v, want 1", got)
	}
}

func TestTransportCountsAndReadsRateLimits(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-RateLimit-Remaining", "4321")
		w.Header().Set("X-RateLimit-Resource", r.URL.Query().Get("resource"))
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	m := New()
	c := &http.Client{Transport: m.Transport("github", nil)}
	for _, u := range []string{"?resource=core", "?resource=graphql", "?resource=made-up-by-someone"} {
		resp, err := c.Get(srv.URL + u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	resp, err := c.Post(srv.URL, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	bad := &http.Client{Transport: m.Transport("argocd", nil)}
	if _, err := bad.Get("http://127.0.0.1:1/"); err == nil {
		t.Fatal("a closed port answered")
	}
	eu := &http.Client{Transport: m.ArgoCDTransport("eu", nil)}
	if _, err := eu.Get("http://127.0.0.1:1/"); err == nil {
		t.Fatal("a closed port answered")
	}
	for _, c := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"github", "", "GET", "2xx"}, 3}, {[]string{"github", "", "POST", "4xx"}, 1}, {[]string{"argocd", "", "GET", "error"}, 1},
		{[]string{"argocd", "eu", "GET", "error"}, 1},
	} {
		if got := testutil.ToFloat64(m.upstream.WithLabelValues(c.labels...)); got != c.want {
			t.Errorf("upstream_requests_total%v = %v, want %v", c.labels, got, c.want)
		}
	}
	for _, res := range []string{"core", "graphql", "other"} {
		if got := testutil.ToFloat64(m.rateLimit.WithLabelValues(res)); got != 4321 {
			t.Errorf("rate limit %s = %v", res, got)
		}
	}
}

type handler struct{ err error }

func (h handler) Handles() []string                            { return []string{"pull_request.opened", "push"} }
func (h handler) Handle(context.Context, webhooks.Event) error { return h.err }

func TestTimeHandlerBoundsEvents(t *testing.T) {
	m := New()
	h := m.TimeHandler(handler{})
	for _, ty := range []string{"pull_request", "push", "something-else", "another"} {
		_ = h.Handle(context.Background(), webhooks.Event{Type: ty})
	}
	_ = m.TimeHandler(handler{err: errors.New("x")}).Handle(context.Background(), webhooks.Event{Type: "push"})
	if n := testutil.CollectAndCount(m.handled); n != 4 {
		t.Errorf("%d handle-duration series, want 4 (pull_request/ok, push/ok, push/error, other/ok)", n)
	}
	if h.Handles()[0] != "pull_request.opened" {
		t.Error("Handles not passed through")
	}
}
