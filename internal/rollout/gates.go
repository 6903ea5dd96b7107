package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/plan"
)

// Metrics runs Prometheus instant queries for metric gates.
type Metrics interface {
	Query(ctx context.Context, baseURL, query string) ([]Sample, error)
}

// Sample is one series of an instant query's answer.
type Sample struct {
	Metric string // the series' labels, as Prometheus prints them ("{}" for a scalar or a label-less sum)
	Value  float64
}

// PrometheusMetrics queries Prometheus's HTTP API (/api/v1/query, instant queries, evaluated at the server's
// time) through github.com/prometheus/client_golang, which POSTs the form and falls back to GET when the server
// refuses POST (405/501).
type PrometheusMetrics struct {
	Client *http.Client // nil: http.DefaultClient's transport
}

// Query runs query against the Prometheus at baseURL.
func (p PrometheusMetrics) Query(ctx context.Context, baseURL, query string) ([]Sample, error) {
	c, err := promapi.NewClient(promapi.Config{Address: baseURL, Client: p.Client})
	if err != nil {
		return nil, fmt.Errorf("querying prometheus %s: %w", baseURL, err)
	}
	v, _, err := promv1.NewAPI(c).Query(ctx, query, time.Time{})
	if err != nil {
		return nil, fmt.Errorf("querying prometheus %s: %w", baseURL, err)
	}
	switch v := v.(type) {
	case model.Vector:
		out := make([]Sample, 0, len(v))
		for _, s := range v {
			out = append(out, Sample{Metric: s.Metric.String(), Value: float64(s.Value)})
		}
		return out, nil
	case *model.Scalar:
		return []Sample{{Metric: "{}", Value: float64(v.Value)}}, nil
	default:
		return nil, fmt.Errorf("querying prometheus %s: the query returned a %s; a gate needs an instant vector or a scalar", baseURL, v.Type())
	}
}

// checkSamples judges one evaluation of a gate: every series must lie within [Min, Max]. No series at all
// fails: a query that matches nothing (a typo, a metric renamed) must not pass a gate silently.
func checkSamples(g *plan.PrometheusGate, samples []Sample) (bool, string) {
	if len(samples) == 0 {
		return false, "no samples (a query matching nothing fails the gate; append `or vector(0)` if no series means zero)"
	}
	var vals []string
	ok := true
	var why string
	for _, s := range samples {
		v := s.Value
		vals = append(vals, formatValue(v))
		switch {
		case math.IsNaN(v):
			ok, why = false, fmt.Sprintf("%s is NaN", s.Metric)
		case g.Max != nil && v > *g.Max:
			ok, why = false, fmt.Sprintf("%s = %s above max %s", s.Metric, formatValue(v), formatValue(*g.Max))
		case g.Min != nil && v < *g.Min:
			ok, why = false, fmt.Sprintf("%s = %s below min %s", s.Metric, formatValue(v), formatValue(*g.Min))
		}
		if !ok {
			return false, why
		}
	}
	if len(vals) > 3 {
		vals = append(vals[:3], fmt.Sprintf("… (%d series)", len(samples)))
	}
	return true, strings.Join(vals, ", ")
}

func formatValue(v float64) string { return model.SampleValue(v).String() }

// gateState is a wave's gate bookkeeping, kept in the store (Wave.GateState) so a restarted executor continues
// a soak or a metric window where it was instead of starting over.
type gateState struct {
	SoakStartedAt time.Time `json:"soakStartedAt,omitzero"`
	SoakUntil     time.Time `json:"soakUntil,omitzero"`
	SoakDone      bool      `json:"soakDone,omitempty"`
	MetricsSince  time.Time `json:"metricsSince,omitzero"`
	MetricsDone   bool      `json:"metricsDone,omitempty"`
	// Metrics is the last evaluation of each metric gate, for the check-run.
	Metrics []metricEval `json:"metrics,omitempty"`
	// Retry holds the failed apps /resume retries: step id → the step's Attempts when /resume was given (a step
	// whose Attempts moved on has been retried).
	Retry map[int64]int `json:"retry,omitempty"`
	// RollbackBaseline is the Attempts of each step when /rollback was given: a rollback that failed before it is
	// retried by this rollback, one that failed during it is not.
	RollbackBaseline map[int64]int `json:"rollbackBaseline,omitempty"`
	// Window: the running wave is held by sync windows (windows.go).
	Window *windowHold `json:"window,omitempty"`
	// Unreachable: the Argo CD instances holding the running wave's apps on them (unreachable.go).
	Unreachable []unreachableHold `json:"unreachable,omitempty"`
}

type metricEval struct {
	Query  string    `json:"query"`
	At     time.Time `json:"at"`
	OK     bool      `json:"ok"`
	Result string    `json:"result"`
}

func readGateState(w store.Wave) gateState {
	var gs gateState
	if len(w.GateState) > 0 {
		_ = json.Unmarshal(w.GateState, &gs) // bookkeeping only: unreadable means start the gates over
	}
	return gs
}

func (gs gateState) raw() json.RawMessage {
	b, _ := json.Marshal(gs)
	return b
}

// setGate writes a gating wave's gate state; false when the wave is no longer gating (a command moved it).
func (d *driver) setGate(ctx context.Context, wi int, gs gateState) (bool, error) {
	moved := false
	_, err := d.e.updateWave(ctx, d.id, wi, func(w *store.Wave) (bool, error) {
		if w.State != store.WaveGating {
			moved = true
			return false, nil
		}
		w.GateState = gs.raw()
		return true, nil
	})
	return !moved, err
}

// gate runs the gates of a wave whose batches are done: the soak (health watched throughout), the metric
// gates, then an approval asked for after the wave (one asked for before it was given before it started).
func (d *driver) gate(ctx context.Context, r store.Rollout, sp *storedPlan, wi int, w store.Wave, steps []store.AppStep) (stepResult, error) {
	c := d.e.o.clock
	g := sp.Waves[wi].Gates
	gs := readGateState(w)
	if g.Soak > 0 && !gs.SoakDone {
		if gs.SoakUntil.IsZero() {
			gs.SoakStartedAt = c.Now()
			gs.SoakUntil = gs.SoakStartedAt.Add(time.Duration(g.Soak))
			if ok, err := d.setGate(ctx, wi, gs); !ok || err != nil {
				return again, err
			}
			d.e.event(ctx, r.ID, "", "soak-started", w.Name, "ok", "until "+gs.SoakUntil.UTC().Format(time.RFC3339))
			d.publish(ctx, r.ID)
		}
		bad, why, interrupted, err := d.watchHealth(ctx, waveApps(steps, wi), gs.SoakUntil)
		if err != nil {
			return again, err
		}
		if bad != "" {
			return d.failWave(ctx, r, sp, wi, fmt.Sprintf("app %s became %s during the soak", bad, why))
		}
		if interrupted {
			return again, nil
		}
		gs.SoakDone = true
		if ok, err := d.setGate(ctx, wi, gs); !ok || err != nil {
			return again, err
		}
		d.e.event(ctx, r.ID, "", "soak-passed", w.Name, "ok", "")
	}
	if len(g.Metrics) > 0 && !gs.MetricsDone {
		if gs.MetricsSince.IsZero() {
			gs.MetricsSince = c.Now()
			if ok, err := d.setGate(ctx, wi, gs); !ok || err != nil {
				return again, err
			}
		}
		failure, interrupted, err := d.evalMetrics(ctx, r, g, wi, &gs)
		if err != nil {
			return again, err
		}
		if failure != "" {
			return d.failWave(ctx, r, sp, wi, failure)
		}
		if interrupted {
			return again, nil
		}
		gs.MetricsDone = true
		if ok, err := d.setGate(ctx, wi, gs); !ok || err != nil {
			return again, err
		}
		d.e.event(ctx, r.ID, "", "metrics-passed", w.Name, "ok", "")
	}
	if g.Approval.After() && w.ApprovedBy == "" {
		if _, err := d.e.updateWave(ctx, d.id, wi, func(w *store.Wave) (bool, error) {
			if w.State != store.WaveGating {
				return false, nil
			}
			w.State = store.WaveAwaitingApproval
			return true, nil
		}); err != nil {
			return again, err
		}
		d.e.event(ctx, r.ID, "", "awaiting-approval", w.Name, "ok", "after the wave, before the next")
		return again, nil
	}
	return d.finishWave(ctx, r, wi, store.WaveGating)
}

// finishWave marks a wave succeeded.
func (d *driver) finishWave(ctx context.Context, r store.Rollout, wi int, from store.WaveState) (stepResult, error) {
	now := d.e.o.clock.Now()
	w, err := d.e.updateWave(ctx, d.id, wi, func(w *store.Wave) (bool, error) {
		if w.State != from {
			return false, nil
		}
		w.State, w.FinishedAt = store.WaveSucceeded, now
		return true, nil
	})
	if err != nil {
		return again, err
	}
	if w.State == store.WaveSucceeded {
		d.e.event(ctx, r.ID, "", "wave-succeeded", w.Name, "ok", "")
		d.publish(ctx, r.ID)
	}
	return again, nil
}

func waveApps(steps []store.AppStep, wi int) []store.AppKey {
	var out []store.AppKey
	for _, s := range steps {
		if s.Wave == wi && (s.State == store.StepSynced || s.State == store.StepSkipped || s.State == store.StepOutOfPlan) {
			out = append(out, s.App)
		}
	}
	return out
}

// watchHealth watches apps until `until` through Argo CD's application stream (with a list at the start, after
// each reconnect, and at the end, since the stream does not replay what it missed). It returns the first app
// found Degraded or Missing (or deleted), or interrupted when the rollout left the running state, the replica
// drains or the lease is lost.
func (d *driver) watchHealth(ctx context.Context, apps []store.AppKey, until time.Time) (bad, why string, interrupted bool, err error) {
	by := map[string][]store.AppKey{}
	for _, k := range apps {
		by[k.Instance] = append(by[k.Instance], k)
	}
	if len(by) <= 1 {
		inst := ""
		if len(apps) > 0 {
			inst = apps[0].Instance
		}
		return d.watchHealthOn(ctx, inst, apps, until)
	}
	// One watch per instance; the first problem found on any of them ends the soak of all.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type res struct {
		bad, why    string
		interrupted bool
		err         error
	}
	out := make(chan res, len(by))
	for inst, keys := range by {
		go func() {
			b, w, i, e := d.watchHealthOn(wctx, inst, keys, until)
			out <- res{b, w, i, e}
		}()
	}
	var first res
	for range by {
		r := <-out
		if first == (res{}) && (r.bad != "" || r.err != nil || r.interrupted) {
			first = r
			cancel() // the others end as interrupted
		}
	}
	return first.bad, first.why, first.interrupted, first.err
}

// watchHealthOn is watchHealth for the apps of one instance.
func (d *driver) watchHealthOn(ctx context.Context, inst string, apps []store.AppKey, until time.Time) (bad, why string, interrupted bool, err error) {
	argo, err := d.e.argoFor(inst)
	if err != nil {
		return "", "", false, fmt.Errorf("watching apps during the soak: %w", err)
	}
	set := make(map[store.AppKey]bool, len(apps))
	for _, k := range apps {
		set[k] = true
	}
	var mu sync.Mutex
	found := func(name, what string) {
		mu.Lock()
		if bad == "" {
			bad, why = name, what
		}
		mu.Unlock()
	}
	result := func() (string, string) {
		mu.Lock()
		defer mu.Unlock()
		return bad, why
	}
	check := func() error {
		l, err := argo.ListApplications(ctx, argocd.ListQuery{})
		if err != nil {
			if argocd.IsTransient(err) {
				return nil // the stream and the next list catch up
			}
			return fmt.Errorf("listing apps during the soak: %w", err)
		}
		seen := map[store.AppKey]bool{}
		for i := range l.Items {
			a := &l.Items[i]
			k := d.keyOn(inst, a)
			if !set[k] {
				continue
			}
			seen[k] = true
			if p := healthProblem(a); p != "" {
				found(a.Name, p)
			}
		}
		for k := range set {
			if !seen[k] {
				found(k.Name, "deleted")
			}
		}
		return nil
	}
	if len(set) > 0 {
		relist := make(chan struct{}, 1)
		notify := make(chan struct{}, 1)
		poke := func(ch chan struct{}) {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
		wctx, cancel := context.WithCancel(ctx)
		wdone := make(chan struct{})
		go func() {
			defer close(wdone)
			_ = argo.Watch(wctx, argocd.WatchQuery{}, argocd.WatchHandler{
				OnEvent: func(ev v1alpha1.ApplicationWatchEvent) {
					a := &ev.Application
					if !set[d.keyOn(inst, a)] {
						return
					}
					if ev.Type == "DELETED" {
						found(a.Name, "deleted")
					} else if p := healthProblem(a); p != "" {
						found(a.Name, p)
					}
					poke(notify)
				},
				OnConnect: func(reconnect bool) {
					if reconnect {
						poke(relist)
					}
				},
			})
		}()
		defer func() {
			cancel()
			<-wdone
		}()
		if err := check(); err != nil {
			return "", "", false, err
		}
		for {
			if b, w := result(); b != "" {
				return b, w, false, nil
			}
			wait := until.Sub(d.e.o.clock.Now())
			if wait <= 0 {
				if err := check(); err != nil {
					return "", "", false, err
				}
				b, w := result()
				return b, w, false, nil
			}
			t := d.e.o.clock.NewTimer(wait)
			select {
			case <-t.Chan():
			case <-notify:
			case <-relist:
				if err := check(); err != nil {
					t.Stop()
					return "", "", false, err
				}
			case <-d.wake:
				if d.interrupted(ctx, store.RolloutRunning) {
					t.Stop()
					return "", "", true, nil
				}
			case <-d.e.drainCh:
				t.Stop()
				return "", "", true, nil
			case <-ctx.Done():
				t.Stop()
				return "", "", true, nil
			}
			t.Stop()
		}
	}
	if !d.waitGate(ctx, until) {
		return "", "", true, nil
	}
	return "", "", false, nil
}

// waitGate waits until t inside a gate; false when interrupted.
func (d *driver) waitGate(ctx context.Context, t time.Time) bool {
	for {
		wait := t.Sub(d.e.o.clock.Now())
		if wait <= 0 {
			return true
		}
		tm := d.e.o.clock.NewTimer(wait)
		select {
		case <-tm.Chan():
			return true
		case <-d.wake:
			tm.Stop()
			if d.interrupted(ctx, store.RolloutRunning) {
				return false
			}
		case <-d.e.drainCh:
			tm.Stop()
			return false
		case <-ctx.Done():
			tm.Stop()
			return false
		}
	}
}

// maxQueryErrors is how many evaluations in a row a metric gate may fail to query before it fails the wave.
const maxQueryErrors = 3

// evalMetrics evaluates a wave's metric gates every gate interval until the longest `for` has elapsed since
// gs.MetricsSince; every evaluation must pass ("for" as in Prometheus alerting rules: the condition holds across
// repeated evaluations for that long; one evaluation when it is 0). A violation fails the wave at once.
func (d *driver) evalMetrics(ctx context.Context, r store.Rollout, g plan.Gates, wi int, gs *gateState) (failure string, interrupted bool, err error) {
	c := d.e.o.clock
	var window time.Duration
	for _, m := range g.Metrics {
		if m.Prometheus != nil {
			window = max(window, time.Duration(m.Prometheus.For))
		}
	}
	errs := make([]int, len(g.Metrics))
	for {
		gs.Metrics = gs.Metrics[:0]
		allOK := true
		for i, m := range g.Metrics {
			p := m.Prometheus
			if p == nil {
				continue
			}
			ev := metricEval{Query: p.Query, At: c.Now()}
			samples, qerr := d.e.o.metrics.Query(ctx, p.URL, p.Query)
			switch {
			case qerr != nil:
				if ctx.Err() != nil {
					return "", true, nil
				}
				errs[i]++
				allOK = false
				ev.Result = qerr.Error()
				if errs[i] >= maxQueryErrors {
					return fmt.Sprintf("metric gate %q: %d queries in a row failed: %v", p.Query, errs[i], qerr), false, nil
				}
			default:
				errs[i] = 0
				ok, desc := checkSamples(p, samples)
				ev.OK, ev.Result = ok, desc
				if !ok {
					gs.Metrics = append(gs.Metrics, ev)
					_, _ = d.setGate(ctx, wi, *gs)
					return fmt.Sprintf("metric gate %q: %s", p.Query, desc), false, nil
				}
			}
			gs.Metrics = append(gs.Metrics, ev)
		}
		if ok, err := d.setGate(ctx, wi, *gs); err != nil || !ok {
			return "", true, err
		}
		d.publish(ctx, r.ID)
		end := gs.MetricsSince.Add(window)
		now := c.Now()
		if allOK && !now.Before(end) {
			return "", false, nil
		}
		next := now.Add(d.e.o.gateInterval)
		if end.After(now) && end.Before(next) {
			next = end
		}
		if !d.waitGate(ctx, next) {
			return "", true, nil
		}
	}
}
