// Package metrics is the bot's Prometheus endpoint: the series `serve` exposes on /metrics, on a registry of its
// own (no global state), fed by adapters at the edges so that no use case imports Prometheus:
//
//   - previews: each one's time by trigger and result, and the fleet's apps by status (Previewed, an
//     app.Observer);
//   - webhooks: the server's counters (received by outcome, handled by result, the queue) read at scrape time,
//     and each handled delivery's duration by event (TimeHandler wraps the webhook handler);
//   - upstream calls: every request to GitHub, Argo CD and chart repositories through Transport, by service,
//     method and status class, with GitHub's rate-limit headroom from its response headers;
//   - GitHub write budget: content-creating requests that waited for their installation's budget, and for how
//     long, by reason (budget, rate_limited), and how many wait now (Waiting and Waited, a writebudget.Observer);
//   - rollouts: rollouts, waves and app steps by state, counted in the store at scrape time (Store);
//   - drift: apps in lasting drift by Argo CD instance, project and state, from the drift watcher's last
//     decision (Drift, drift.go; projects past MaxDriftProjects are "other", instances not configured "other");
//   - charts: chart-cache hits and downloads (Charts).
//
// # Cardinality
//
// Every label has a bounded set of values, fixed here: service (github, argocd, charts), instance (the Argo CD
// instances of the instances file, "" otherwise), method (the HTTP verbs,
// else "other"), code (1xx…5xx, or "error" when no response came), event (the events the App handles, else
// "other"), outcome/result/state (the enums of the webhook server and the store). No label carries a repository,
// PR number, app, cluster, URL or installation: those grow with the fleet and belong in logs and the fleet view.
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/report"
	"github.com/fleetwave/fleetwave/webhooks"
)

const namespace = "fleetwave"

// Metrics holds the bot's series.
type Metrics struct {
	reg          *prometheus.Registry
	upstream     *prometheus.CounterVec
	upstreamTime *prometheus.HistogramVec
	rateLimit    *prometheus.GaugeVec
	handled      *prometheus.HistogramVec
	previews     *prometheus.HistogramVec
	previewApps  *prometheus.CounterVec
	budgetWaits  *prometheus.CounterVec
	budgetWait   *prometheus.CounterVec
	budgetNow    prometheus.Gauge
}

// New returns the series on a new registry, with the Go runtime's and the process's.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg: reg,
		upstream: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "upstream_requests_total",
			Help: "Requests to GitHub, Argo CD and chart repositories, by service, Argo CD instance (\"\" for the one Argo CD of a fleet configured with its URL, and for the other services), method and status class (error: no response).",
		}, []string{"service", "instance", "method", "code"}),
		upstreamTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "upstream_request_duration_seconds",
			Help:    "Latency of requests to GitHub, Argo CD and chart repositories, until the response headers, by service, Argo CD instance and method.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"service", "instance", "method"}),
		rateLimit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "github_rate_limit_remaining",
			Help: "GitHub's X-RateLimit-Remaining on the latest response, by resource (core, graphql, …).",
		}, []string{"resource"}),
		handled: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "webhook_handle_duration_seconds",
			Help:    "Time to handle a delivery, by event: for pull_request, the whole preview (render, diff, plan, comment, check-runs).",
			Buckets: []float64{.05, .1, .25, .5, 1, 2, 5, 10, 30, 60, 120, 300, 600},
		}, []string{"event", "result"}),
	}
	m.previews = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "preview_duration_seconds",
		Help:    "Time of a preview (clone, render, diff, plan; not posting), by trigger and result (ok, failed: some app or the plan failed, error: no report).",
		Buckets: []float64{.1, .25, .5, 1, 2, 5, 10, 30, 60, 120, 300, 600},
	}, []string{"trigger", "result"})
	m.previewApps = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "preview_apps_total",
		Help: "Apps of the fleet in previews, by trigger and status (changed, unchanged, added, removed, error, skipped).",
	}, []string{"trigger", "status"})
	m.budgetWaits = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "github_write_budget_waits_total",
		Help: "Content-creating GitHub requests that waited for their installation's write budget, by reason (budget: its buckets were empty; rate_limited: GitHub answered with a rate limit).",
	}, []string{"reason"})
	m.budgetWait = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "github_write_budget_wait_seconds_total",
		Help: "Time content-creating GitHub requests spent waiting for their installation's write budget, by reason.",
	}, []string{"reason"})
	m.budgetNow = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Name: "github_write_budget_waiting",
		Help: "Content-creating GitHub requests waiting for their installation's write budget now.",
	})
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.upstream, m.upstreamTime, m.rateLimit, m.handled, m.previews, m.previewApps, m.budgetWaits, m.budgetWait, m.budgetNow)
	return m
}

// Handler serves the registry in Prometheus' exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry is the registry (tests gather from it).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Webhooks exposes the webhook server's counters, read at each scrape.
func (m *Metrics) Webhooks(stats func() webhooks.Stats) {
	received := []struct {
		outcome string
		get     func(webhooks.Stats) int64
	}{
		{"accepted", func(s webhooks.Stats) int64 { return s.Accepted }},
		{"duplicate", func(s webhooks.Stats) int64 { return s.Duplicates }},
		{"ignored", func(s webhooks.Stats) int64 { return s.Ignored }},
		{"unauthorized", func(s webhooks.Stats) int64 { return s.Unauthorized }},
		{"bad_request", func(s webhooks.Stats) int64 { return s.BadRequests }},
		{"unavailable", func(s webhooks.Stats) int64 { return s.Unavailable }},
	}
	for _, r := range received {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: namespace, Name: "webhooks_received_total", Help: "Webhook deliveries received, by outcome.",
			ConstLabels: prometheus.Labels{"outcome": r.outcome},
		}, func() float64 { return float64(r.get(stats())) }))
	}
	results := []struct {
		result string
		get    func(webhooks.Stats) int64
	}{
		{"handled", func(s webhooks.Stats) int64 { return s.Handled }},
		{"failed", func(s webhooks.Stats) int64 { return s.Failed }},
		{"dropped", func(s webhooks.Stats) int64 { return s.Dropped }},
	}
	for _, r := range results {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: namespace, Name: "webhooks_finished_total", Help: "Accepted deliveries finished, by result.",
			ConstLabels: prometheus.Labels{"result": r.result},
		}, func() float64 { return float64(r.get(stats())) }))
	}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: namespace, Name: "webhook_queue_depth", Help: "Accepted deliveries not finished yet (queued or being handled).",
	}, func() float64 {
		s := stats()
		return float64(s.Accepted - s.Handled - s.Failed - s.Dropped)
	}))
}

// Previewed records a preview (app.Observer): its time by trigger and result, and its apps by status.
func (m *Metrics) Previewed(trigger string, took time.Duration, rep *report.Report, err error) {
	if trigger != "pull_request" && trigger != "merge_group" {
		trigger = "other"
	}
	result := "ok"
	switch {
	case err != nil || rep == nil:
		result = "error"
	case rep.HasErrors():
		result = "failed"
	}
	m.previews.WithLabelValues(trigger, result).Observe(took.Seconds())
	if rep == nil {
		return
	}
	for _, a := range rep.Apps {
		status := string(a.Status)
		switch a.Status {
		case report.StatusChanged, report.StatusUnchanged, report.StatusAdded, report.StatusRemoved, report.StatusError, report.StatusSkipped:
		default:
			status = "other"
		}
		m.previewApps.WithLabelValues(trigger, status).Inc()
	}
}

// Waiting counts the GitHub writes waiting for their budget (writebudget.Observer).
func (m *Metrics) Waiting(delta int) { m.budgetNow.Add(float64(delta)) }

// Waited records a GitHub write that waited d for its budget (writebudget.Observer).
func (m *Metrics) Waited(reason string, d time.Duration) {
	if reason != "budget" && reason != "rate_limited" {
		reason = "other"
	}
	m.budgetWaits.WithLabelValues(reason).Inc()
	m.budgetWait.WithLabelValues(reason).Add(d.Seconds())
}

// TimeHandler wraps the webhook handler to time each delivery by event.
func (m *Metrics) TimeHandler(h webhooks.Handler) webhooks.Handler {
	known := map[string]bool{}
	for _, e := range h.Handles() {
		name, _, _ := strings.Cut(e, ".")
		known[name] = true
	}
	return &timedHandler{h: h, m: m, known: known}
}

type timedHandler struct {
	h     webhooks.Handler
	m     *Metrics
	known map[string]bool
}

func (t *timedHandler) Handles() []string { return t.h.Handles() }

func (t *timedHandler) Handle(ctx context.Context, ev webhooks.Event) error {
	start := time.Now()
	err := t.h.Handle(ctx, ev)
	event := ev.Type
	if !t.known[event] {
		event = "other"
	}
	result := "ok"
	if err != nil {
		result = "error"
	}
	t.m.handled.WithLabelValues(event, result).Observe(time.Since(start).Seconds())
	return err
}

// Transport counts and times the requests base carries for service ("github", "argocd", "charts"), and reads
// GitHub's rate-limit headers.
func (m *Metrics) Transport(service string, base http.RoundTripper) http.RoundTripper {
	return m.transport(service, "", base)
}

// ArgoCDTransport is Transport for the requests to the Argo CD instance named in an instances file: service
// "argocd", and the instance as its own label, a set as bounded as the file.
func (m *Metrics) ArgoCDTransport(instance string, base http.RoundTripper) http.RoundTripper {
	return m.transport("argocd", instance, base)
}

func (m *Metrics) transport(service, instance string, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		method := req.Method
		switch method {
		case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead:
		default:
			method = "other"
		}
		start := time.Now()
		resp, err := base.RoundTrip(req)
		m.upstreamTime.WithLabelValues(service, instance, method).Observe(time.Since(start).Seconds())
		code := "error"
		if err == nil {
			code = strconv.Itoa(resp.StatusCode/100) + "xx"
			if service == "github" {
				m.readRateLimit(resp.Header)
			}
		}
		m.upstream.WithLabelValues(service, instance, method, code).Inc()
		return resp, err
	})
}

// gitHubResources are the rate-limit resources GitHub names in X-RateLimit-Resource (REST docs, "Rate limits for
// the REST API"); any other value is counted as "other", keeping the label bounded.
var gitHubResources = map[string]bool{"core": true, "search": true, "graphql": true, "integration_manifest": true,
	"code_scanning_upload": true, "actions_runner_registration": true, "scim": true, "dependency_snapshots": true, "code_search": true}

func (m *Metrics) readRateLimit(h http.Header) {
	v := h.Get("X-RateLimit-Remaining")
	if v == "" {
		return
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return
	}
	res := h.Get("X-RateLimit-Resource")
	if res == "" {
		res = "core"
	} else if !gitHubResources[res] {
		res = "other"
	}
	m.rateLimit.WithLabelValues(res).Set(n)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Store exposes the rollouts, waves and app steps by state, counted at each scrape (bounded by a 5 s timeout; a
// failing count is reported by fleetwave_store_up 0, not by dropping the scrape).
func (m *Metrics) Store(counts func(context.Context) (store.Counts, error)) {
	m.reg.MustRegister(&storeCollector{counts: counts})
}

var (
	rolloutsDesc = prometheus.NewDesc(namespace+"_rollouts", "Rollouts in the store, by state.", []string{"state"}, nil)
	wavesDesc    = prometheus.NewDesc(namespace+"_waves", "Waves of all rollouts in the store, by state.", []string{"state"}, nil)
	stepsDesc    = prometheus.NewDesc(namespace+"_app_steps", "App steps (one app's sync in a rollout) in the store, by state.", []string{"state"}, nil)
	storeUpDesc  = prometheus.NewDesc(namespace+"_store_up", "1 when the store answered the last count.", nil, nil)
)

type storeCollector struct {
	counts func(context.Context) (store.Counts, error)
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- rolloutsDesc
	ch <- wavesDesc
	ch <- stepsDesc
	ch <- storeUpDesc
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := c.counts(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(storeUpDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(storeUpDesc, prometheus.GaugeValue, 1)
	// Every known state is exposed, zero included, so that a state emptying shows as 0, not as a missing series.
	for _, st := range store.RolloutStates {
		ch <- prometheus.MustNewConstMetric(rolloutsDesc, prometheus.GaugeValue, float64(counts.Rollouts[st]), string(st))
	}
	for _, st := range store.WaveStates {
		ch <- prometheus.MustNewConstMetric(wavesDesc, prometheus.GaugeValue, float64(counts.Waves[st]), string(st))
	}
	for _, st := range store.StepStates {
		ch <- prometheus.MustNewConstMetric(stepsDesc, prometheus.GaugeValue, float64(counts.Steps[st]), string(st))
	}
}

// Charts exposes the chart fetcher's request counts by kind (index, archive, cache hit…), read at each scrape.
func (m *Metrics) Charts(requests func(kind string) int, kinds []string) {
	for _, k := range kinds {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: namespace, Name: "chart_requests_total", Help: "Chart fetcher requests, by kind (downloads and cache hits).",
			ConstLabels: prometheus.Labels{"kind": k},
		}, func() float64 { return float64(requests(k)) }))
	}
}
