package argocdsim_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/health"
	synccommon "github.com/argoproj/argo-cd/gitops-engine/v3/pkg/sync/common"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/jonboulle/clockwork"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
)

const (
	oldRev = "0000000000000000000000000000000000000000"
	newRev = "1111111111111111111111111111111111111111"
)

// appSpec builds a single-source app tracking HEAD.
func appSpec(name string, mods ...func(*v1alpha1.Application)) *v1alpha1.Application {
	a := &v1alpha1.Application{}
	a.Name = name
	a.Labels = map[string]string{"env": "test"}
	a.Spec.Source = &v1alpha1.ApplicationSource{RepoURL: "https://git.example.com/fleet/gitops.git", Path: "apps/" + name, TargetRevision: "HEAD"}
	a.Spec.Destination = v1alpha1.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: name}
	for _, m := range mods {
		m(a)
	}
	return a
}

func autoSync(a *v1alpha1.Application) {
	a.Spec.SyncPolicy = &v1alpha1.SyncPolicy{Automated: &v1alpha1.SyncPolicyAutomated{}}
}

// env is a simulator (in virtual time: call inside synctest.Test) with a client over the in-process transport.
type env struct {
	sim *argocdsim.Server
	c   *argocd.Client
}

func newEnv(t *testing.T, cfg argocdsim.Config, apps ...*v1alpha1.Application) *env {
	t.Helper()
	sim := argocdsim.New(cfg)
	t.Cleanup(sim.Close)
	sim.SetRef("HEAD", newRev)
	for _, a := range apps {
		if err := sim.AddApp(a, argocdsim.AppOptions{LiveRevisions: []string{oldRev}}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := argocd.New(argocd.Options{BaseURL: "http://argocd.sim", Token: cfg.Token, HTTPClient: sim.HTTPClient(), MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return &env{sim: sim, c: c}
}

// settle lets virtual time pass and every goroutine block.
func settle(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

func (e *env) app(t *testing.T, name string) v1alpha1.Application {
	t.Helper()
	a, ok := e.sim.App(name)
	if !ok {
		t.Fatalf("no app %s", name)
	}
	return a
}

// trace summarises what the bot cares about in one object.
func trace(a *v1alpha1.Application) string {
	op := "-"
	if a.Operation != nil {
		op = "set"
	}
	phase, applied := "-", "-"
	if os := a.Status.OperationState; os != nil {
		phase = string(os.Phase)
		if os.SyncResult != nil {
			applied = os.SyncResult.Revision[:1]
		}
	}
	return fmt.Sprintf("op=%s phase=%s applied=%s sync=%s@%s health=%s hist=%d",
		op, phase, applied, a.Status.Sync.Status, a.Status.Sync.Revision[:1], a.Status.Health.Status, len(a.Status.History))
}

// record collects the stream's events for one app until ctx ends.
func record(ctx context.Context, c *argocd.Client, name string) func() []v1alpha1.Application {
	var mu sync.Mutex
	var got []v1alpha1.Application
	go func() {
		_ = c.Watch(ctx, argocd.WatchQuery{Name: name}, argocd.WatchHandler{OnEvent: func(ev v1alpha1.ApplicationWatchEvent) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, ev.Application)
		}})
	}()
	return func() []v1alpha1.Application {
		mu.Lock()
		defer mu.Unlock()
		return append([]v1alpha1.Application(nil), got...)
	}
}

func TestSyncLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, argocdsim.Config{SyncDuration: 2 * time.Second, ReconcileDelay: 100 * time.Millisecond}, appSpec("web"))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		events := record(ctx, e.c, "web")
		settle(time.Millisecond)

		before := time.Now()
		ans, err := e.c.Sync(ctx, "web", argocd.SyncRequest{Revision: newRev})
		if err != nil {
			t.Fatal(err)
		}
		// util/argo/argo.go SetAppOperation: operation set, operationState cleared, in one write.
		if ans.Operation == nil || ans.Operation.Sync.Revision != newRev || ans.Status.OperationState != nil {
			t.Fatalf("sync answer: operation %+v, operationState %+v", ans.Operation, ans.Status.OperationState)
		}
		settle(3 * time.Second)

		var got []string
		for _, a := range events() {
			got = append(got, trace(&a))
		}
		want := []string{
			"op=- phase=Succeeded applied=0 sync=OutOfSync@1 health=Healthy hist=1", // initial ADDED
			"op=set phase=- applied=- sync=OutOfSync@1 health=Healthy hist=1",       // sync requested
			"op=set phase=Running applied=1 sync=OutOfSync@1 health=Healthy hist=1", // controller picked it up
			"op=set phase=Running applied=1 sync=OutOfSync@1 health=Healthy hist=2", // history written first
			"op=- phase=Succeeded applied=1 sync=OutOfSync@1 health=Healthy hist=2", // completed, operation cleared
			"op=- phase=Succeeded applied=1 sync=Synced@1 health=Healthy hist=2",    // post-operation reconcile
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		final := e.app(t, "web")
		os := final.Status.OperationState
		if os.StartedAt.Time.Before(before) || os.FinishedAt.Sub(os.StartedAt.Time) != 2*time.Second {
			t.Errorf("startedAt %v finishedAt %v (request at %v)", os.StartedAt, os.FinishedAt, before)
		}
		if final.Status.ReconciledAt.Before(os.FinishedAt) {
			t.Errorf("reconciledAt %v before finishedAt %v", final.Status.ReconciledAt, os.FinishedAt)
		}
		h := final.Status.History
		if h[1].ID != 1 || h[1].Revision != newRev || h[1].DeployStartedAt == nil || !h[1].DeployStartedAt.Equal(&os.StartedAt) {
			t.Errorf("history %+v", h)
		}
	})
}

func TestPinnedRevisionLeavesOutOfSync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, argocdsim.Config{}, appSpec("web"))
		pinned := "2222222222222222222222222222222222222222"
		if _, err := e.c.Sync(context.Background(), "web", argocd.SyncRequest{Revision: pinned}); err != nil {
			t.Fatal(err)
		}
		settle(2 * time.Second)
		a := e.app(t, "web")
		if a.Status.OperationState.SyncResult.Revision != pinned || a.Status.OperationState.Phase != synccommon.OperationSucceeded {
			t.Fatalf("operation state %+v", a.Status.OperationState)
		}
		// As a real Argo CD does (test/e2e): a sync to a revision other than what targetRevision resolves to leaves OutOfSync.
		if a.Status.Sync.Status != v1alpha1.SyncStatusCodeOutOfSync || a.Status.Sync.Revision != newRev {
			t.Fatalf("sync status %+v", a.Status.Sync)
		}
	})
}

// rawCall sends one request through the handler and decodes grpc-gateway's error body.
func rawCall(t *testing.T, sim *argocdsim.Server, method, path, body, token string) (status int, code int, msg string) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if method != "GET" && !strings.HasPrefix(body, "!") {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Body = io.NopCloser(strings.NewReader(strings.TrimPrefix(body, "!")))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	sim.Handler().ServeHTTP(rec, req)
	var e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Error   string `json:"error"`
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &e)
	return rec.Code, e.Code, e.Message
}

func TestRefusals(t *testing.T) {
	tests := []struct {
		name    string
		cfg     argocdsim.Config
		prepare func(t *testing.T, e *env)
		method  string
		path    string
		body    string
		token   string
		status  int
		code    int
		msg     string
		is      error
	}{
		{name: "sync of an unknown app", method: "POST", path: "/api/v1/applications/nope/sync", body: `{}`,
			status: 403, code: 7, msg: "permission denied", is: argocd.ErrPermissionDenied},
		{name: "get of an unknown app, project named", method: "GET", path: "/api/v1/applications/nope?project=default",
			status: 404, code: 5, msg: `applications.argoproj.io "nope" not found`, is: argocd.ErrNotFound},
		{name: "terminate without a JSON content type", method: "DELETE", path: "/api/v1/applications/web/operation", body: "!",
			status: 415},
		{name: "sync to another revision while automated sync is on", method: "POST", path: "/api/v1/applications/auto/sync",
			body: `{"revision":"` + oldRev + `"}`, status: 400, code: 9, msg: "Cannot sync to " + oldRev + ": auto-sync currently set to HEAD", is: argocd.ErrFailedPrecondition},
		{name: "sync while an operation runs", cfg: argocdsim.Config{SyncDuration: time.Minute},
			prepare: func(t *testing.T, e *env) {
				if _, err := e.c.Sync(context.Background(), "web", argocd.SyncRequest{}); err != nil {
					t.Fatal(err)
				}
			},
			method: "POST", path: "/api/v1/applications/web/sync", body: `{}`,
			status: 400, code: 9, msg: "error setting app operation: another operation is already in progress", is: argocd.ErrOperationInProgress},
		{name: "rollback while automated sync is on", method: "POST", path: "/api/v1/applications/auto/rollback", body: `{"id":0}`,
			status: 400, code: 9, msg: "rollback cannot be initiated when auto-sync is enabled", is: argocd.ErrFailedPrecondition},
		{name: "rollback to an unknown history id", method: "POST", path: "/api/v1/applications/web/rollback", body: `{"id":7}`,
			status: 400, code: 3, msg: "application web does not have deployment with id 7", is: argocd.ErrInvalidArgument},
		{name: "rollback while an operation runs", cfg: argocdsim.Config{SyncDuration: time.Minute},
			prepare: func(t *testing.T, e *env) {
				if _, err := e.c.Sync(context.Background(), "web", argocd.SyncRequest{}); err != nil {
					t.Fatal(err)
				}
			},
			method: "POST", path: "/api/v1/applications/web/rollback", body: `{"id":0}`,
			status: 400, code: 9, msg: "error setting app operation: another operation is already in progress", is: argocd.ErrOperationInProgress},
		{name: "terminate without an operation", method: "DELETE", path: "/api/v1/applications/web/operation",
			status: 400, code: 3, msg: "Unable to terminate operation. No operation is in progress", is: argocd.ErrInvalidArgument},
		{name: "sync inside a deny window", prepare: func(t *testing.T, e *env) { e.sim.SetSyncWindowBlocked("web", true) },
			method: "POST", path: "/api/v1/applications/web/sync", body: `{}`,
			status: 403, code: 7, msg: "cannot sync: blocked by sync window", is: argocd.ErrPermissionDenied},
		{name: "sync to a revision that does not resolve", method: "POST", path: "/api/v1/applications/web/sync", body: `{"revision":"no-such-branch"}`,
			status: 400, code: 9, msg: "unable to resolve 'no-such-branch' to a commit SHA", is: argocd.ErrFailedPrecondition},
		{name: "wrong token", cfg: argocdsim.Config{Token: "right"}, token: "wrong", method: "GET", path: "/api/v1/applications",
			status: 401, code: 16, msg: "no session information", is: argocd.ErrUnauthenticated},
		{name: "unsupported patch type", method: "PATCH", path: "/api/v1/applications/web", body: `{"patch":"{}","patchType":"strategic"}`,
			status: 400, code: 3, msg: "Patch type 'strategic' is not supported", is: argocd.ErrInvalidArgument},
		{name: "app in another project", method: "GET", path: "/api/v1/applications/web?project=other",
			status: 404, code: 5, msg: `applications.argoproj.io "web" not found`, is: argocd.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, tt.cfg, appSpec("web"), appSpec("auto", autoSync))
				if tt.prepare != nil {
					tt.prepare(t, e)
					settle(time.Second)
				}
				before := e.sim.Counts("web").SyncsAccepted
				status, code, msg := rawCall(t, e.sim, tt.method, tt.path, tt.body, tt.token)
				if status != tt.status || code != tt.code || msg != tt.msg {
					t.Fatalf("answer %d code %d %q, want %d code %d %q", status, code, msg, tt.status, tt.code, tt.msg)
				}
				if after := e.sim.Counts("web").SyncsAccepted; after != before {
					t.Fatalf("a refused request started an operation")
				}
				if tt.is == nil {
					return // what the client cannot send
				}
				// The same answer through the client maps to the typed error.
				c, _ := argocd.New(argocd.Options{BaseURL: "http://argocd.sim", Token: tt.token, HTTPClient: e.sim.HTTPClient(), MaxRetries: -1})
				var err error
				switch {
				case strings.HasSuffix(tt.path, "/sync"):
					var r struct {
						Revision string `json:"revision"`
					}
					_ = json.Unmarshal([]byte(tt.body), &r)
					_, err = c.Sync(context.Background(), appFromTestPath(tt.path), argocd.SyncRequest{Revision: r.Revision})
				case strings.HasSuffix(tt.path, "/rollback"):
					var r struct {
						ID int64 `json:"id"`
					}
					_ = json.Unmarshal([]byte(tt.body), &r)
					_, err = c.Rollback(context.Background(), appFromTestPath(tt.path), argocd.RollbackRequest{ID: r.ID})
				case strings.HasSuffix(tt.path, "/operation"):
					err = c.TerminateOperation(context.Background(), appFromTestPath(tt.path))
				case tt.method == "PATCH":
					_, err = c.Patch(context.Background(), "web", "{}", "strategic")
				case strings.Contains(tt.path, "project="):
					u, _ := url.Parse(tt.path)
					_, err = c.FindApplication(context.Background(), appFromTestPath(u.Path), u.Query().Get("project"))
				default:
					_, err = c.ListApplications(context.Background(), argocd.ListQuery{})
				}
				if !errors.Is(err, tt.is) {
					t.Fatalf("client error %v is not %v", err, tt.is)
				}
			})
		})
	}
}

func appFromTestPath(p string) string {
	return strings.Split(strings.TrimPrefix(p, "/api/v1/applications/"), "/")[0]
}

func TestAutomatedAppAcceptsSyncToItsTargetRevision(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, argocdsim.Config{SyncDuration: time.Minute}, appSpec("auto", autoSync))
		settle(time.Second) // auto-sync starts at the first reconcile (OutOfSync)
		a := e.app(t, "auto")
		if a.Operation == nil || !a.Operation.InitiatedBy.Automated {
			t.Fatalf("automated sync did not start: %+v", a.Operation)
		}
		// server/application/application.go resolveSourceRevisions refuses only another revision.
		e2 := newEnv(t, argocdsim.Config{}, appSpec("auto2", autoSync, func(a *v1alpha1.Application) { a.Spec.SyncPolicy.Automated.Enabled = new(bool) }))
		if _, err := e2.c.Sync(context.Background(), "auto2", argocd.SyncRequest{Revision: oldRev}); err != nil {
			t.Fatalf("automated sync disabled by enabled=false, yet refused: %v", err)
		}
	})
}

func TestAutomatedSyncRunsOncePerRevision(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, argocdsim.Config{SyncDuration: time.Second}, appSpec("auto", autoSync))
		if err := e.sim.SetBehavior("auto", argocdsim.Behavior{Fail: true}); err != nil {
			t.Fatal(err)
		}
		settle(3 * time.Second)
		for range 3 {
			e.sim.RefreshAll()
			settle(3 * time.Second)
		}
		if n := e.sim.Totals().Operations; n != 1 {
			t.Fatalf("%d automated operations for one revision, want 1", n)
		}
		e.sim.SetRef("HEAD", "3333333333333333333333333333333333333333")
		e.sim.RefreshAll()
		settle(3 * time.Second)
		if n := e.sim.Totals().Operations; n != 2 {
			t.Fatalf("%d operations after a new commit, want 2", n)
		}
	})
}

func TestTerminate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, argocdsim.Config{SyncDuration: time.Hour, TerminateDelay: time.Second}, appSpec("web"))
		ctx := context.Background()
		if _, err := e.c.Sync(ctx, "web", argocd.SyncRequest{Revision: newRev}); err != nil {
			t.Fatal(err)
		}
		settle(time.Second)
		if p := e.app(t, "web").Status.OperationState.Phase; p != synccommon.OperationRunning {
			t.Fatalf("phase %s", p)
		}
		if err := e.c.TerminateOperation(ctx, "web"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if p := e.app(t, "web").Status.OperationState.Phase; p != synccommon.OperationTerminating {
			t.Fatalf("phase %s, want Terminating", p)
		}
		settle(2 * time.Second)
		a := e.app(t, "web")
		os := a.Status.OperationState
		if os.Phase != synccommon.OperationFailed || os.Message != "Operation terminated" || a.Operation != nil || os.FinishedAt == nil {
			t.Fatalf("after terminate: %+v operation %v", os, a.Operation)
		}
		if len(a.Status.History) != 1 || a.Status.Sync.Status != v1alpha1.SyncStatusCodeOutOfSync {
			t.Fatalf("a terminated sync changed history %d / sync %s", len(a.Status.History), a.Status.Sync.Status)
		}
	})
}

func TestFailedAndDegraded(t *testing.T) {
	tests := []struct {
		name       string
		cfg        argocdsim.Config
		behavior   argocdsim.Behavior
		at         []time.Duration
		wantPhase  synccommon.OperationPhase
		wantHealth []health.HealthStatusCode
		wantSync   v1alpha1.SyncStatusCode
	}{
		{"failed operation", argocdsim.Config{}, argocdsim.Behavior{Fail: true, FailMessage: "boom"},
			[]time.Duration{2 * time.Second}, synccommon.OperationFailed, []health.HealthStatusCode{health.HealthStatusHealthy}, v1alpha1.SyncStatusCodeOutOfSync},
		{"degraded after sync", argocdsim.Config{}, argocdsim.Behavior{Degrade: true},
			[]time.Duration{2 * time.Second}, synccommon.OperationSucceeded, []health.HealthStatusCode{health.HealthStatusDegraded}, v1alpha1.SyncStatusCodeSynced},
		{"progressing then healthy", argocdsim.Config{ProgressingFor: 5 * time.Second}, argocdsim.Behavior{},
			[]time.Duration{2 * time.Second, 5 * time.Second}, synccommon.OperationSucceeded,
			[]health.HealthStatusCode{health.HealthStatusProgressing, health.HealthStatusHealthy}, v1alpha1.SyncStatusCodeSynced},
		{"failure rate 1", argocdsim.Config{FailureRate: 1}, argocdsim.Behavior{},
			[]time.Duration{2 * time.Second}, synccommon.OperationFailed, []health.HealthStatusCode{health.HealthStatusHealthy}, v1alpha1.SyncStatusCodeOutOfSync},
		{"degradation rate 1", argocdsim.Config{DegradationRate: 1}, argocdsim.Behavior{},
			[]time.Duration{2 * time.Second}, synccommon.OperationSucceeded, []health.HealthStatusCode{health.HealthStatusDegraded}, v1alpha1.SyncStatusCodeSynced},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, tt.cfg, appSpec("web"))
				_ = e.sim.SetBehavior("web", tt.behavior)
				if _, err := e.c.Sync(context.Background(), "web", argocd.SyncRequest{Revision: newRev}); err != nil {
					t.Fatal(err)
				}
				for i, d := range tt.at {
					settle(d)
					a := e.app(t, "web")
					if a.Status.Health.Status != tt.wantHealth[i] {
						t.Fatalf("after %v: health %s, want %s", d, a.Status.Health.Status, tt.wantHealth[i])
					}
				}
				a := e.app(t, "web")
				if a.Status.OperationState.Phase != tt.wantPhase || a.Status.Sync.Status != tt.wantSync {
					t.Fatalf("phase %s sync %s", a.Status.OperationState.Phase, a.Status.Sync.Status)
				}
				if tt.behavior.FailMessage != "" && a.Status.OperationState.Message != tt.behavior.FailMessage {
					t.Fatalf("message %q", a.Status.OperationState.Message)
				}
			})
		})
	}
}

func TestRollback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, argocdsim.Config{}, appSpec("web"))
		ctx := context.Background()
		if _, err := e.c.Sync(ctx, "web", argocd.SyncRequest{}); err != nil {
			t.Fatal(err)
		}
		settle(2 * time.Second)
		if a := e.app(t, "web"); a.Status.Sync.Status != v1alpha1.SyncStatusCodeSynced || len(a.Status.History) != 2 {
			t.Fatalf("after sync: %s, %d history entries", a.Status.Sync.Status, len(a.Status.History))
		}
		ans, err := e.c.Rollback(ctx, "web", argocd.RollbackRequest{ID: 0})
		if err != nil {
			t.Fatal(err)
		}
		if ans.Operation == nil || ans.Operation.Sync.Revision != oldRev {
			t.Fatalf("rollback operation %+v", ans.Operation)
		}
		settle(2 * time.Second)
		a := e.app(t, "web")
		h := a.Status.History
		if a.Status.OperationState.SyncResult.Revision != oldRev || len(h) != 3 || h[2].ID != 2 || h[2].Revision != oldRev {
			t.Fatalf("after rollback: applied %s history %+v", a.Status.OperationState.SyncResult.Revision, h)
		}
		if a.Status.Sync.Status != v1alpha1.SyncStatusCodeOutOfSync {
			t.Fatalf("rolled back app shows %s, want OutOfSync (HEAD is newer)", a.Status.Sync.Status)
		}
	})
}

func TestRefreshAnswersAfterAReconcile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, argocdsim.Config{ReconcileDelay: 3 * time.Second}, appSpec("web"))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		events := record(ctx, e.c, "web")
		settle(10 * time.Second)
		before := time.Now().Truncate(time.Second)
		a, err := e.c.GetApplication(ctx, "web", v1alpha1.RefreshTypeNormal)
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(before); d < 3*time.Second {
			t.Fatalf("refresh answered after %s, before the reconcile", d)
		}
		if a.Status.ReconciledAt.Time.Before(before.Add(3 * time.Second)) {
			t.Fatalf("reconciledAt %v is older than the request %v", a.Status.ReconciledAt, before)
		}
		if _, ok := a.Annotations[v1alpha1.AnnotationKeyRefresh]; ok {
			t.Fatal("refresh annotation left in place")
		}
		synctest.Wait()
		evs := events()
		if _, ok := evs[len(evs)-2].Annotations[v1alpha1.AnnotationKeyRefresh]; !ok {
			t.Fatal("the stream did not show the refresh annotation")
		}
		// Resync picks up a new commit.
		e.sim.SetRef("HEAD", "4444444444444444444444444444444444444444")
		a, _ = e.c.GetApplication(ctx, "web", v1alpha1.RefreshTypeHard)
		if a.Status.Sync.Revision != "4444444444444444444444444444444444444444" {
			t.Fatalf("refresh did not re-resolve HEAD: %s", a.Status.Sync.Revision)
		}
	})
}

// TestRefreshJoinsAQueuedReconcile: a refresh asked for while a reconcile is queued (the one an operation's end
// queues) is answered by that reconcile, as Argo CD's refresh queue merges a key already waiting; one asked for
// later gets a reconcile of its own, ReconcileDelay after the request.
func TestRefreshJoinsAQueuedReconcile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, argocdsim.Config{SyncDuration: 2 * time.Second, ReconcileDelay: 3 * time.Second}, appSpec("web"))
		ctx := context.Background()
		settle(10 * time.Second)
		if _, err := e.c.Sync(ctx, "web", argocd.SyncRequest{Revision: newRev}); err != nil {
			t.Fatal(err)
		}
		settle(2*time.Second + time.Second) // finished 1s ago: its reconcile is due in 2s
		before := e.sim.Totals().Reconciles
		start := time.Now()
		a, err := e.c.GetApplication(ctx, "web", v1alpha1.RefreshTypeNormal)
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 2*time.Second {
			t.Errorf("refresh answered after %s, want 2s (by the queued post-operation reconcile)", d)
		}
		if a.Status.Sync.Status != v1alpha1.SyncStatusCodeSynced {
			t.Errorf("answer's sync status %s", a.Status.Sync.Status)
		}
		settle(10 * time.Second)
		if got := e.sim.Totals().Reconciles - before; got != 1 {
			t.Errorf("%d reconciles for the operation's end and the refresh, want 1", got)
		}

		before, start = e.sim.Totals().Reconciles, time.Now()
		if _, err := e.c.GetApplication(ctx, "web", v1alpha1.RefreshTypeNormal); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Errorf("refresh with nothing queued answered after %s, want ReconcileDelay (3s)", d)
		}
		settle(10 * time.Second)
		if got := e.sim.Totals().Reconciles - before; got != 1 {
			t.Errorf("%d reconciles for one refresh, want 1", got)
		}
	})
}

// rawStream opens the stream with the given query and Accept header and returns its lines as they come.
func rawStream(t *testing.T, sim *argocdsim.Server, ctx context.Context, query, accept string) (<-chan string, http.Header) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://argocd.sim/api/v1/stream/applications?"+query, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := sim.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1000)
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return lines, resp.Header
}

func drain(ch <-chan string) []string {
	synctest.Wait()
	var out []string
	for {
		select {
		case l, ok := <-ch:
			if !ok {
				return out
			}
			out = append(out, l)
		default:
			return out
		}
	}
}

func TestStreamFormatsAndFilters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, argocdsim.Config{}, appSpec("a"), appSpec("b", func(a *v1alpha1.Application) { a.Labels["env"] = "prd" }))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()

		nd, h := rawStream(t, e.sim, ctx, "selector=env%3Dtest", "")
		if h.Get("Content-Type") != "application/json" {
			t.Fatalf("NDJSON content type %q", h.Get("Content-Type"))
		}
		lines := drain(nd)
		if len(lines) != 1 || !strings.HasPrefix(lines[0], `{"result":{"type":"ADDED","application":{"metadata":{"name":"a",`) {
			t.Fatalf("NDJSON snapshot %q", lines)
		}

		sse, h := rawStream(t, e.sim, ctx, "", "text/event-stream")
		if h.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("SSE content type %q", h.Get("Content-Type"))
		}
		lines = drain(sse)
		if len(lines) != 4 || !strings.HasPrefix(lines[0], `data: {"result":{"type":"ADDED"`) || !strings.HasSuffix(lines[0], "} ") || lines[1] != "" {
			t.Fatalf("SSE snapshot %q", lines)
		}
		settle(15 * time.Second)
		if lines = drain(sse); len(lines) != 1 || lines[0] != ":" {
			t.Fatalf("SSE keepalive %q", lines)
		}

		rv := e.app(t, "b").ResourceVersion
		resumed, _ := rawStream(t, e.sim, ctx, "resourceVersion="+rv, "")
		named, _ := rawStream(t, e.sim, ctx, "resourceVersion="+e.app(t, "a").ResourceVersion+"&name=a", "")
		if l := drain(resumed); len(l) != 0 {
			t.Fatalf("a resumed stream replayed %q", l)
		}
		if l := drain(named); len(l) != 1 {
			t.Fatalf("a stream for one app must start with it even when resuming: %q", l)
		}

		if _, err := e.c.Sync(ctx, "a", argocd.SyncRequest{}); err != nil {
			t.Fatal(err)
		}
		settle(3 * time.Second)
		if l := drain(resumed); len(l) != 5 {
			t.Fatalf("resumed stream got %d events after a sync, want 5: %q", len(l), l)
		}
		if l := drain(nd); len(l) != 5 {
			t.Fatalf("selector stream got %d events, want 5", len(l))
		}
	})
}

func TestStaleStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, argocdsim.Config{StaleStatusFor: 5 * time.Second, SyncDuration: time.Second}, appSpec("web"))
		ctx := context.Background()
		settle(10 * time.Second)
		req := time.Now()
		if _, err := e.c.Sync(ctx, "web", argocd.SyncRequest{Revision: newRev}); err != nil {
			t.Fatal(err)
		}
		settle(2 * time.Second)
		a, err := e.c.GetApplication(ctx, "web", "")
		if err != nil {
			t.Fatal(err)
		}
		os := a.Status.OperationState
		if a.Status.Sync.Status != v1alpha1.SyncStatusCodeSynced || a.Status.Health.Status != health.HealthStatusHealthy ||
			a.Operation != nil || os.SyncResult.Revision != oldRev || a.Status.ReconciledAt.Time.Before(req) {
			t.Fatalf("stale view: %s, reconciledAt %v", trace(a), a.Status.ReconciledAt)
		}
		settle(4 * time.Second)
		a, _ = e.c.GetApplication(ctx, "web", "")
		if a.Status.OperationState.SyncResult.Revision != newRev || a.Status.OperationState.Phase != synccommon.OperationSucceeded {
			t.Fatalf("after the stale window: %s", trace(a))
		}
	})
}

func TestManagedResourcesAndManifests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, argocdsim.Config{}, appSpec("web"))
		if err := e.sim.AddApp(appSpec("fresh"), argocdsim.AppOptions{}); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		res, err := e.c.ManagedResources(ctx, "fresh")
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 2 || res[0].LiveState != "null" || !res[0].Modified {
			t.Fatalf("never-synced app resources %+v", res)
		}
		var target map[string]any
		if err := json.Unmarshal([]byte(res[1].TargetState), &target); err != nil || target["kind"] != "Deployment" {
			t.Fatalf("targetState is not a JSON document: %q", res[1].TargetState)
		}
		if a := e.app(t, "fresh"); a.Status.Health.Status != health.HealthStatusMissing {
			t.Fatalf("never-synced app health %s", a.Status.Health.Status)
		}
		res, _ = e.c.ManagedResources(ctx, "web")
		if res[1].LiveState == "null" || !res[1].Modified {
			t.Fatalf("out-of-sync app resources %+v", res[1])
		}
		m, err := e.c.Manifests(ctx, "web", oldRev)
		if err != nil || m.Revision != oldRev || len(m.Manifests) != 2 || !strings.Contains(m.Manifests[1], "web:0000000") {
			t.Fatalf("manifests %+v %v", m, err)
		}
		if _, err := e.c.Manifests(ctx, "web", "no-such-ref"); err == nil {
			t.Fatal("manifests of an unknown revision")
		}
	})
}

func TestPatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, argocdsim.Config{SyncDuration: time.Minute}, appSpec("auto", autoSync))
		ctx := context.Background()
		settle(time.Second)
		a, err := e.c.Patch(ctx, "auto", `{"spec":{"syncPolicy":{"automated":null}},"metadata":{"labels":{"wave":"1"}}}`, argocd.PatchMerge)
		if err != nil {
			t.Fatal(err)
		}
		if a.Spec.SyncPolicy.IsAutomatedSyncEnabled() || a.Labels["wave"] != "1" {
			t.Fatalf("merge patch not applied: %+v %v", a.Spec.SyncPolicy, a.Labels)
		}
		a, err = e.c.Patch(ctx, "auto", `[{"op":"remove","path":"/metadata/labels/wave"}]`, argocd.PatchJSON)
		if err != nil || a.Labels["wave"] != "" {
			t.Fatalf("json patch: %v %v", err, a.Labels)
		}
		if _, err := e.c.Patch(ctx, "auto", `[{"op":"bogus"}]`, argocd.PatchJSON); err == nil {
			t.Fatal("a bad JSON patch was accepted")
		}
		// Rollback is allowed once automated sync is off (after the automated operation ends).
		if err := e.c.TerminateOperation(ctx, "auto"); err != nil {
			t.Fatal(err)
		}
		settle(time.Second)
		if _, err := e.c.Rollback(ctx, "auto", argocd.RollbackRequest{ID: 0}); err != nil {
			t.Fatalf("rollback after turning automated sync off: %v", err)
		}
	})
}

func TestFaultInjection(t *testing.T) {
	t.Run("5xx before processing", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, argocdsim.Config{ErrorRate: 1}, appSpec("web"))
			if _, err := e.c.Sync(context.Background(), "web", argocd.SyncRequest{}); !errors.Is(err, argocd.ErrUnavailable) {
				t.Fatalf("err %v", err)
			}
			if c := e.sim.Counts("web"); c.Requests != 1 || c.SyncsAccepted != 0 || e.sim.Totals().InjectedErrors != 1 {
				t.Fatalf("counts %+v %+v", c, e.sim.Totals())
			}
		})
	})
	t.Run("lost response", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, argocdsim.Config{LostResponseRate: 1}, appSpec("web"))
			_, err := e.c.Sync(context.Background(), "web", argocd.SyncRequest{})
			var ae *argocd.APIError
			if !errors.As(err, &ae) || ae.HTTPStatus != 502 {
				t.Fatalf("err %v", err)
			}
			if c := e.sim.Counts("web"); c.SyncsAccepted != 1 {
				t.Fatalf("the lost request was not processed: %+v", c)
			}
		})
	})
	t.Run("latency", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, argocdsim.Config{APILatency: 300 * time.Millisecond, LatencySpikeRate: 1, LatencySpike: 2 * time.Second}, appSpec("web"))
			start := time.Now()
			if _, err := e.c.GetApplication(context.Background(), "web", ""); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d != 2300*time.Millisecond {
				t.Fatalf("answer after %s", d)
			}
		})
	})
	t.Run("dropped streams", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, argocdsim.Config{StreamDropMean: time.Second}, appSpec("web"))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			connects := 0
			_ = e.c.Watch(ctx, argocd.WatchQuery{}, argocd.WatchHandler{OnConnect: func(bool) { connects++ }})
			if drops := e.sim.Totals().StreamDrops; drops < 5 || connects < drops {
				t.Fatalf("%d drops, %d connections", drops, connects)
			}
		})
	})
}

func TestManyApps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim := argocdsim.New(argocdsim.Config{})
		defer sim.Close()
		f, err := argocdsim.ParseFleet([]byte("refs: {HEAD: '" + newRev + "'}\ngenerate:\n- {count: 5000, liveRevision: '" + oldRev + "', labels: {fleet: big}}\n"))
		if err != nil {
			t.Fatal(err)
		}
		if err := sim.Seed(f); err != nil {
			t.Fatal(err)
		}
		c, _ := argocd.New(argocd.Options{BaseURL: "http://argocd.sim", HTTPClient: sim.HTTPClient()})
		list, err := c.ListApplications(context.Background(), argocd.ListQuery{Selector: "fleet=big"})
		if err != nil || len(list.Items) != 5000 || list.Items[4999].Name != "app-5000" {
			t.Fatalf("list: %v, %d items", err, len(list.Items))
		}
	})
}

func TestFleetFile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, err := argocdsim.ParseFleet([]byte(`
refs: {HEAD: "` + newRev + `", release: "` + oldRev + `"}
clusters:
  - {name: prd-eu-1, server: https://prd-eu-1.example.com, labels: {env: prd, region: eu-1}, serverVersion: "1.30"}
  - {name: prd-us-1, server: https://prd-us-1.example.com, labels: {env: prd, region: us-1}}
apps:
  - {name: web, labels: {team: a}, targetRevision: release, liveRevision: "` + oldRev + `", destination: {name: prd-eu-1, namespace: web}}
  - {name: auto, automated: true, liveRevision: "` + newRev + `"}
generate:
  - {count: 4, namePrefix: gen-, liveRevision: "` + oldRev + `"}
simulation: {syncDuration: 3s, failureRate: 0.5, streamDropMean: 1m}
`))
		if err != nil {
			t.Fatal(err)
		}
		cfg := f.Apply(argocdsim.Config{SyncDuration: time.Second, ErrorRate: 0.1})
		if cfg.SyncDuration != 3*time.Second || cfg.FailureRate != 0.5 || cfg.ErrorRate != 0.1 || cfg.StreamDropMean != time.Minute {
			t.Fatalf("config %+v", cfg)
		}
		sim := argocdsim.New(argocdsim.Config{})
		defer sim.Close()
		if err := sim.Seed(f); err != nil {
			t.Fatal(err)
		}
		if n := len(sim.AppNames()); n != 6 {
			t.Fatalf("%d apps", n)
		}
		web, _ := sim.App("web")
		if web.Status.Sync.Status != v1alpha1.SyncStatusCodeSynced || web.Status.Sync.Revision != oldRev {
			t.Fatalf("web tracks release=%s: %+v", oldRev[:7], web.Status.Sync)
		}
		gen, _ := sim.App("gen-0002")
		if gen.Spec.Destination.Name != "prd-us-1" {
			t.Fatalf("generated app destination %+v", gen.Spec.Destination)
		}
		c, _ := argocd.New(argocd.Options{BaseURL: "http://argocd.sim", HTTPClient: sim.HTTPClient()})
		clusters, err := c.ListClusters(context.Background())
		if err != nil || len(clusters) != 2 || clusters[0].Labels["region"] != "eu-1" || clusters[0].Info.ServerVersion != "1.30" {
			t.Fatalf("clusters %+v %v", clusters, err)
		}
		st, err := c.Settings(context.Background())
		if err != nil || st.AppLabelKey != "app.kubernetes.io/instance" || st.TrackingMethod != "annotation" || st.ControllerNamespace != "argocd" {
			t.Fatalf("settings %+v %v", st, err)
		}
		// resourceOverrides as a real Argo CD serves them (ignoreDifferences a YAML string), through the client's decoder.
		if p := st.ResourceOverrides["*/*"].IgnoreDifferences.JSONPointers; len(p) != 1 || p[0] != "/status" {
			t.Fatalf("settings resourceOverrides %+v", st.ResourceOverrides)
		}
	})
	if _, err := argocdsim.ParseFleet([]byte("apps:\n- {name: x, bogus: 1}\n")); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("unknown key accepted: %v", err)
	}
}

func TestDemoFleet(t *testing.T) {
	data, err := os.ReadFile("testdata/demo-fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := argocdsim.ParseFleet(data)
	if err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		sim := argocdsim.New(f.Apply(argocdsim.Config{}))
		defer sim.Close()
		if err := sim.Seed(f); err != nil {
			t.Fatal(err)
		}
		if n := len(sim.AppNames()); n != 45 {
			t.Fatalf("%d apps", n)
		}
		for name, want := range map[string]v1alpha1.SyncStatusCode{
			"shop-prd-us-1": v1alpha1.SyncStatusCodeSynced, "shop-prd-eu-1": v1alpha1.SyncStatusCodeOutOfSync,
			"payments-prd-eu-1": v1alpha1.SyncStatusCodeSynced, "edge-0040": v1alpha1.SyncStatusCodeOutOfSync,
		} {
			if a, _ := sim.App(name); a.Status.Sync.Status != want {
				t.Errorf("%s: %s, want %s", name, a.Status.Sync.Status, want)
			}
		}
	})
}

// TestInjectedFakeClock drives the simulator with a fake clock instead of virtual time.
func TestInjectedFakeClock(t *testing.T) {
	fc := clockwork.NewFakeClockAt(time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC))
	sim := argocdsim.New(argocdsim.Config{Clock: fc, SyncDuration: 10 * time.Minute, ReconcileDelay: time.Second})
	defer sim.Close()
	sim.SetRef("HEAD", newRev)
	if err := sim.AddApp(appSpec("web"), argocdsim.AppOptions{LiveRevisions: []string{oldRev}}); err != nil {
		t.Fatal(err)
	}
	c, _ := argocd.New(argocd.Options{BaseURL: "http://argocd.sim", HTTPClient: sim.HTTPClient()})
	if _, err := c.Sync(context.Background(), "web", argocd.SyncRequest{}); err != nil {
		t.Fatal(err)
	}
	step := func(d time.Duration, want string) {
		t.Helper()
		fc.Advance(d)
		deadline := time.Now().Add(5 * time.Second) // fake-clock timers fire on goroutines: wait for them
		for {
			a, _ := sim.App("web")
			if got := trace(&a); got == want {
				return
			} else if time.Now().After(deadline) {
				t.Fatalf("after %v: %s, want %s", d, got, want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	step(0, "op=set phase=Running applied=1 sync=OutOfSync@1 health=Healthy hist=1")
	step(10*time.Minute, "op=- phase=Succeeded applied=1 sync=OutOfSync@1 health=Healthy hist=2")
	step(time.Second, "op=- phase=Succeeded applied=1 sync=Synced@1 health=Healthy hist=2")
}
