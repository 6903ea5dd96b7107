package rollout_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/edge/github"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/rollout"
)

func firstStart(steps []store.AppStep, wave int) time.Time {
	var t time.Time
	for _, s := range steps {
		if s.Wave == wave && !s.OpStartedAt.IsZero() && (t.IsZero() || s.OpStartedAt.Before(t)) {
			t = s.OpStartedAt
		}
	}
	return t
}

func lastEnd(steps []store.AppStep, wave int) time.Time {
	var t time.Time
	for _, s := range steps {
		if s.Wave == wave && s.OpFinishedAt.After(t) {
			t = s.OpFinishedAt
		}
	}
	return t
}

func TestSoakHoldsTheNextWave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: 20 * time.Second}})
		r := e.submit(basePolicy("soak: 10m", "", ""), newRev)
		r = e.wait(r.ID, store.RolloutSucceeded, store.RolloutPaused, store.RolloutFailed)
		if r.State != store.RolloutSucceeded {
			t.Fatalf("rollout %s: %s", r.State, r.Message)
		}
		steps := e.steps(r.ID)
		if gap := firstStart(steps, 1).Sub(lastEnd(steps, 0)); gap < 10*time.Minute || gap > 11*time.Minute {
			t.Errorf("staging started %s after canary finished, want the 10m soak", gap)
		}
		e.expectSyncs(counts(names(e.apps, ""), 1))
		cr, _ := e.rep.Latest("fleetwave/wave: canary")
		if !strings.Contains(cr.Output.Summary, "passed (no app Degraded or Missing)") {
			t.Errorf("canary check-run summary:\n%s", cr.Output.Summary)
		}
	})
}

func TestDegradationDuringSoakFailsTheWave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		deg := &degrading{app: "web-test-1", at: t0.Add(5 * time.Minute)}
		e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: 20 * time.Second},
			wrap: func(a rollout.ArgoCD) rollout.ArgoCD { deg.ArgoCD = a; return deg }})
		r := e.submit(basePolicy("soak: 30m", "", ""), newRev)
		r = e.wait(r.ID, store.RolloutSucceeded, store.RolloutPaused, store.RolloutFailed)
		if r.State != store.RolloutPaused || !strings.Contains(r.Message, "web-test-1 became Degraded (Deployment web-test-1: 0/3 replicas ready) during the soak") {
			t.Fatalf("rollout %s: %q", r.State, r.Message)
		}
		// Noticed through the stream when it happened, not at the end of the 30m soak.
		if took := time.Since(t0); took > 6*time.Minute {
			t.Errorf("the degradation at 5m was noticed after %s", took)
		}
		e.expectSyncs(map[string]int{"web-test-1": 1}) // staging and production never started
		w := e.waitWave(r.ID, 0, store.WaveFailed)
		if !strings.Contains(w.Message, "during the soak") {
			t.Errorf("wave message %q", w.Message)
		}
		cr, _ := e.rep.Latest("fleetwave/wave: canary")
		if cr.Conclusion != github.ConclusionFailure || len(cr.Actions) == 0 || cr.Actions[0].Identifier != "resume" {
			t.Errorf("canary check-run: %s %s %+v", cr.Status, cr.Conclusion, cr.Actions)
		}
		// A human rolls the canary back.
		if _, err := e.ex.Rollback(context.Background(), r.ID, "all", "alice"); err != nil {
			t.Fatal(err)
		}
		r = e.wait(r.ID, store.RolloutRolledBack, store.RolloutFailed)
		if r.State != store.RolloutRolledBack {
			dumpSteps(t, e, r.ID)
			t.Fatalf("after /rollback: %s %s", r.State, r.Message)
		}
		e.expectSyncs(map[string]int{"web-test-1": 2})
		e.expectLive(oldRev, "web-test-1")
	})
}

func TestMetricGate(t *testing.T) {
	gate := func(query string) string {
		return `gates:
  - prometheus: {url: "http://prometheus:9090", query: '` + query + `', max: 0.01, for: 5m}`
	}
	tests := []struct {
		name    string
		prom    *fakeProm
		state   store.RolloutState
		message string
		queries [2]int // min, max
	}{
		{name: "holds for 5m", prom: &fakeProm{value: func(time.Time) (string, bool) { return "0.001", true }},
			state: store.RolloutSucceeded, queries: [2]int{6, 7}},
		{name: "breach at minute 3 fails at once", state: store.RolloutPaused, message: `{job="web"} = 0.5 above max 0.01`,
			queries: [2]int{4, 5}},
		{name: "no samples fail", prom: &fakeProm{value: func(time.Time) (string, bool) { return "", false }},
			state: store.RolloutPaused, message: "no samples", queries: [2]int{1, 1}},
		{name: "NaN fails", prom: &fakeProm{value: func(time.Time) (string, bool) { return "NaN", true }},
			state: store.RolloutPaused, message: "is NaN", queries: [2]int{1, 1}},
		{name: "prometheus down three times fails", prom: &fakeProm{status: http.StatusServiceUnavailable},
			state: store.RolloutPaused, message: "3 queries in a row failed", queries: [2]int{3, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := tt.prom
				if p == nil {
					p = &fakeProm{}
				}
				if p.value == nil {
					var since time.Time
					p.value = func(now time.Time) (string, bool) {
						if since.IsZero() {
							since = now
						}
						if now.Sub(since) >= 3*time.Minute {
							return "0.5", true
						}
						return "0.002", true
					}
				}
				e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: 20 * time.Second},
					opts: []rollout.Option{rollout.WithMetrics(promClient(p))}})
				r := e.submit(basePolicy(gate(`sum(rate(http_5xx[5m]))`), "", ""), newRev)
				r = e.wait(r.ID, store.RolloutSucceeded, store.RolloutPaused, store.RolloutFailed)
				if r.State != tt.state || !strings.Contains(r.Message, tt.message) {
					t.Fatalf("rollout %s: %q; want %s with %q", r.State, r.Message, tt.state, tt.message)
				}
				if n := p.count(); n < tt.queries[0] || n > tt.queries[1] {
					t.Errorf("%d queries, want %d..%d", n, tt.queries[0], tt.queries[1])
				}
				for _, q := range p.queries {
					if q != `sum(rate(http_5xx[5m]))` {
						t.Errorf("query %q", q)
					}
				}
				if tt.state == store.RolloutSucceeded {
					steps := e.steps(r.ID)
					if gap := firstStart(steps, 1).Sub(lastEnd(steps, 0)); gap < 5*time.Minute {
						t.Errorf("staging started %s after canary, before the metric held for 5m", gap)
					}
				} else {
					e.expectSyncs(map[string]int{"web-test-1": 1})
				}
			})
		})
	}
}

// TestPrometheusMetricsOverHTTP checks the client against a real HTTP server speaking Prometheus's format: a
// server that refuses POST gets a GET /api/v1/query?query=…; scalars and errors are read.
func TestPrometheusMetricsOverHTTP(t *testing.T) {
	var methods []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		methods = append(methods, r.Method)
		if r.Method != http.MethodGet {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Query().Get("query") {
		case "vector":
			w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"up","job":"a"},"value":[1700000000.123,"1"]},{"metric":{"job":"b"},"value":[1700000000.123,"0.25"]}]}}`))
		case "scalar":
			w.Write([]byte(`{"status":"success","data":{"resultType":"scalar","result":[1700000000,"42"]}}`))
		case "matrix":
			w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[]}}`))
		default:
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"status":"error","errorType":"bad_data","error":"1:1: parse error: unexpected end of input"}`))
		}
	}))
	defer srv.Close()
	m := rollout.PrometheusMetrics{Client: srv.Client()}
	ctx := context.Background()
	got, err := m.Query(ctx, srv.URL, "vector")
	if err != nil || len(got) != 2 || got[0].Value != 1 || got[0].Metric != `up{job="a"}` || got[1].Value != 0.25 {
		t.Errorf("vector: %+v, %v", got, err)
	}
	if len(methods) < 2 || methods[0] != http.MethodPost || methods[1] != http.MethodGet {
		t.Errorf("methods %v, want POST then GET", methods)
	}
	if got, err := m.Query(ctx, srv.URL, "scalar"); err != nil || len(got) != 1 || got[0].Value != 42 {
		t.Errorf("scalar: %+v, %v", got, err)
	}
	if _, err := m.Query(ctx, srv.URL, "matrix"); err == nil || !strings.Contains(err.Error(), "instant vector or a scalar") {
		t.Errorf("matrix: %v", err)
	}
	if _, err := m.Query(ctx, srv.URL, "bad("); err == nil || !strings.Contains(err.Error(), "parse error") {
		t.Errorf("bad query: %v", err)
	}
}

// The default approval holds its wave before it starts: no app of it syncs until someone approves.
func TestApprovalBeforeTheWave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: 20 * time.Second}})
		r := e.submit(basePolicy("", "approval: {teams: [org/sre]}", ""), newRev)
		ctx := context.Background()
		r = e.wait(r.ID, store.RolloutAwaitingApproval)
		w := e.waitWave(r.ID, 1, store.WaveAwaitingApproval)
		if !w.StartedAt.IsZero() {
			t.Errorf("staging started at %s before its approval", w.StartedAt)
		}
		time.Sleep(20 * time.Minute)                    // nothing moves without the approval
		e.expectSyncs(counts(names(e.apps, "test"), 1)) // canary only: no staging app synced
		cr, _ := e.rep.Latest("fleetwave/wave: staging")
		if cr.Status != github.StatusInProgress || len(cr.Actions) == 0 || cr.Actions[0].Identifier != "approve" ||
			!strings.HasPrefix(cr.Output.Title, "Awaiting approval before it starts") ||
			!strings.Contains(cr.Output.Summary, "Who may approve: write permission, and membership of org/sre.") {
			t.Errorf("staging check-run while awaiting approval: %s %q %+v\n%s", cr.Status, cr.Output.Title, cr.Actions, cr.Output.Summary)
		}
		if rc, _ := e.rep.Latest("fleetwave/rollout"); rc.Output.Title != "Awaiting approval to start wave staging" {
			t.Errorf("rollout check-run title %q", rc.Output.Title)
		}
		if _, err := e.ex.Approve(ctx, r.ID, "production", "alice"); err == nil || !strings.Contains(err.Error(), "no approval gate") {
			t.Errorf("approving a wave without an approval gate: %v", err)
		}
		msg, err := e.ex.Approve(ctx, r.ID, "", "carol")
		if err != nil || msg != "Approved wave staging of rollout #1: it starts now." {
			t.Fatalf("approve: %q, %v", msg, err)
		}
		r = e.wait(r.ID, store.RolloutSucceeded, store.RolloutFailed)
		if r.State != store.RolloutSucceeded {
			t.Fatalf("rollout %s: %s", r.State, r.Message)
		}
		w = e.waitWave(r.ID, 1, store.WaveSucceeded)
		if w.ApprovedBy != "carol" || w.StartedAt.Before(w.ApprovedAt) {
			t.Errorf("staging approved by %q at %s, started at %s", w.ApprovedBy, w.ApprovedAt, w.StartedAt)
		}
		if first := firstStart(e.steps(r.ID), 1); first.Before(w.ApprovedAt) {
			t.Errorf("a staging app synced at %s, before the approval at %s", first, w.ApprovedAt)
		}
		e.expectSyncs(counts(names(e.apps, ""), 1))
	})
}

// when: after keeps the wave's own syncs and gates first, and holds the next wave.
func TestApprovalAfterTheWave(t *testing.T) {
	testApprovalAfter(t, "approval: {when: after, teams: [org/sre]}", nil)
}

// A rollout stored before approvals had a timing (its plan's approval has no "when") keeps the meaning it was
// planned with: the approval comes after the wave, as it did then.
func TestApprovalOfAPlanStoredBeforeTimings(t *testing.T) {
	testApprovalAfter(t, "approval: {teams: [org/sre]}", func(req *rollout.Request) {
		a := req.Plan.Waves[1].Gates.Approval
		a.When, a.Approvers = "", "" // what the previous version stored
	})
}

func testApprovalAfter(t *testing.T, approval string, mod func(*rollout.Request)) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: 20 * time.Second}})
		var mods []func(*rollout.Request)
		if mod != nil {
			mods = append(mods, mod)
		}
		r := e.submit(basePolicy("", approval, ""), newRev, mods...)
		ctx := context.Background()
		// Too early: staging is not awaiting approval yet.
		e.waitWave(r.ID, 0, store.WaveRunning)
		if _, err := e.ex.Approve(ctx, r.ID, "staging", "alice"); err == nil || !strings.Contains(err.Error(), "approve it once its batches are done") {
			t.Errorf("early approval: %v", err)
		}
		r = e.wait(r.ID, store.RolloutAwaitingApproval)
		time.Sleep(20 * time.Minute) // nothing moves without the approval
		e.expectSyncs(merge(counts(names(e.apps, "test"), 1), counts(names(e.apps, "stg"), 1)))
		cr, _ := e.rep.Latest("fleetwave/wave: staging")
		if cr.Status != github.StatusInProgress || len(cr.Actions) == 0 || cr.Actions[0].Identifier != "approve" ||
			!strings.HasPrefix(cr.Output.Title, "Awaiting approval before the next wave") || !strings.Contains(cr.Output.Summary, "org/sre") {
			t.Errorf("staging check-run while awaiting approval: %s %q %+v\n%s", cr.Status, cr.Output.Title, cr.Actions, cr.Output.Summary)
		}
		if _, err := e.ex.Approve(ctx, r.ID, "nope", "alice"); err == nil || !strings.Contains(err.Error(), `no wave "nope"`) {
			t.Errorf("unknown wave: %v", err)
		}
		msg, err := e.ex.Approve(ctx, r.ID, "", "carol")
		if err != nil || msg != "Approved wave staging of rollout #1: wave production starts." {
			t.Fatalf("approve: %q, %v", msg, err)
		}
		if _, err := e.ex.Approve(ctx, r.ID, "staging", "dave"); err == nil {
			t.Error("second approval accepted")
		}
		r = e.wait(r.ID, store.RolloutSucceeded, store.RolloutFailed)
		if r.State != store.RolloutSucceeded {
			t.Fatalf("rollout %s: %s", r.State, r.Message)
		}
		w := e.waitWave(r.ID, 1, store.WaveSucceeded)
		if w.ApprovedBy != "carol" {
			t.Errorf("approved by %q", w.ApprovedBy)
		}
		if first := firstStart(e.steps(r.ID), 2); first.Before(w.ApprovedAt) {
			t.Errorf("a production app synced at %s, before staging's approval at %s", first, w.ApprovedAt)
		}
		e.expectSyncs(counts(names(e.apps, ""), 1))
	})
}

func dumpSteps(t *testing.T, e *env, id int64) {
	for _, s := range e.steps(id) {
		t.Logf("%s w%d b%d %s op=%s att=%d prev=%s intent=%s started=%s finished=%s msg=%s", s.App.Name, s.Wave, s.Batch, s.State, s.Op,
			s.Attempts, text.Short(s.PreviousRevision, 7), s.IntentAt.Format("04:05.000"), s.OpStartedAt.Format("04:05"), s.OpFinishedAt.Format("04:05"), s.Message)
	}
}
