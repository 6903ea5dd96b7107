package rollout_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"

	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/health"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/rollout"
)

// degrading makes one app look Degraded from a given time on while it runs newRev, in every answer and on the
// stream (with an event at that time), as a new version crashing later would make Argo CD report it. The
// simulator has no way to degrade a Healthy app without a sync.
type degrading struct {
	rollout.ArgoCD
	app string
	at  time.Time
}

func (d *degrading) rewrite(a *v1alpha1.Application) {
	if a != nil && a.Name == d.app && !time.Now().Before(d.at) && len(a.Status.History) > 0 &&
		a.Status.History.LastRevisionHistory().Revision == newRev {
		a.Status.Health.Status = health.HealthStatusDegraded
		for i := range a.Status.Resources {
			if r := &a.Status.Resources[i]; r.Kind == "Deployment" {
				r.Health = &v1alpha1.HealthStatus{Status: health.HealthStatusDegraded, Message: "0/3 replicas ready"}
			}
		}
	}
}

func (d *degrading) GetApplication(ctx context.Context, name string, refresh v1alpha1.RefreshType) (*v1alpha1.Application, error) {
	a, err := d.ArgoCD.GetApplication(ctx, name, refresh)
	d.rewrite(a)
	return a, err
}

func (d *degrading) ListApplications(ctx context.Context, q argocd.ListQuery) (*v1alpha1.ApplicationList, error) {
	l, err := d.ArgoCD.ListApplications(ctx, q)
	if l != nil {
		for i := range l.Items {
			d.rewrite(&l.Items[i])
		}
	}
	return l, err
}

func (d *degrading) Watch(ctx context.Context, q argocd.WatchQuery, h argocd.WatchHandler) error {
	var mu sync.Mutex // the handler sees one event at a time, as from the stream
	deliver := func(t watch.EventType, a *v1alpha1.Application) {
		mu.Lock()
		defer mu.Unlock()
		if h.OnRawEvent != nil {
			h.OnRawEvent(argocd.NewEvent(t, a))
		}
		if h.OnEvent != nil {
			h.OnEvent(v1alpha1.ApplicationWatchEvent{Type: t, Application: *a})
		}
	}
	inner := argocd.WatchHandler{OnConnect: h.OnConnect, OnRawEvent: func(ev *argocd.Event) {
		app, err := ev.Application()
		if err != nil {
			return
		}
		a := app.DeepCopy()
		d.rewrite(a)
		deliver(ev.Type, a)
	}}
	done := make(chan struct{})
	defer close(done)
	go func() {
		wait := time.Until(d.at)
		if wait < 0 {
			return
		}
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		case <-done:
			return
		}
		a, err := d.ArgoCD.GetApplication(ctx, d.app, "")
		if err != nil {
			return
		}
		d.rewrite(a)
		deliver(watch.Modified, a)
	}()
	return d.ArgoCD.Watch(ctx, q, inner)
}

// fakeProm answers Prometheus's instant query API (GET or POST /api/v1/query) in the real wire format:
// {"status":"success","data":{"resultType":"vector","result":[{"metric":{...},"value":[<ts>,"<v>"]}]}}.
type fakeProm struct {
	mu      sync.Mutex
	value   func(now time.Time) (string, bool) // the sample's value; false: empty vector
	status  int                                // non-zero: answer this HTTP status with an error body
	queries []string
	methods []string
}

func (p *fakeProm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/query" {
		http.NotFound(w, r)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	p.queries = append(p.queries, r.Form.Get("query"))
	p.methods = append(p.methods, r.Method)
	status, value := p.status, p.value
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if status != 0 {
		w.WriteHeader(status)
		fmt.Fprint(w, `{"status":"error","errorType":"internal","error":"query timed out in expression evaluation"}`)
		return
	}
	now := time.Now()
	result := "[]"
	if v, ok := value(now); ok {
		ts := strconv.FormatFloat(float64(now.UnixMilli())/1000, 'f', 3, 64)
		result = `[{"metric":{"job":"web"},"value":[` + ts + `,"` + v + `"]}]`
	}
	fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":%s}}`, result)
}

func (p *fakeProm) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.queries)
}

// handlerTransport serves requests with a handler in-process (no sockets: synctest's virtual time advances).
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

func promClient(p *fakeProm) rollout.Metrics {
	return rollout.PrometheusMetrics{Client: &http.Client{Transport: handlerTransport{p}}}
}
