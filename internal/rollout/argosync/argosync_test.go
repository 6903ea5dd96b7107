package argosync_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/health"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/rollout/argosync"
)

const (
	oldRev = "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a"
	newRev = "1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b"
	repo   = "https://git.example.com/fleet/gitops.git"
)

// fleetApp describes one app of a test fleet.
type fleetApp struct {
	name     string
	mod      func(*v1alpha1.Application)
	live     []string // default {oldRev}
	health   health.HealthStatusCode
	behavior argocdsim.Behavior
}

// env is a simulator in virtual time (inside synctest.Test) and a client over the in-process transport.
type env struct {
	sim *argocdsim.Server
	c   *argocd.Client
}

func newEnv(t *testing.T, cfg argocdsim.Config, apps ...fleetApp) *env {
	t.Helper()
	sim := argocdsim.New(cfg)
	t.Cleanup(sim.Close)
	sim.SetRef("HEAD", newRev)
	for _, fa := range apps {
		a := &v1alpha1.Application{}
		a.Name = fa.name
		a.Labels = map[string]string{"fleet": "test"}
		a.Spec.Source = &v1alpha1.ApplicationSource{RepoURL: repo, Path: "apps/" + fa.name, TargetRevision: "HEAD"}
		a.Spec.Destination = v1alpha1.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: fa.name}
		if fa.mod != nil {
			fa.mod(a)
		}
		live := fa.live
		if live == nil {
			live = []string{oldRev}
		}
		if err := sim.AddApp(a, argocdsim.AppOptions{LiveRevisions: live, Health: fa.health, Behavior: fa.behavior}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := argocd.New(argocd.Options{BaseURL: "http://argocd.sim", HTTPClient: sim.HTTPClient(),
		RetryInitialInterval: 100 * time.Millisecond, RetryMaxInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return &env{sim: sim, c: c}
}

func (e *env) list(t *testing.T) []v1alpha1.Application {
	t.Helper()
	l, err := e.c.ListApplications(context.Background(), argocd.ListQuery{Selector: "fleet=test"})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func (e *env) run(t *testing.T, opts argosync.Options) []argosync.Result {
	t.Helper()
	opts.Selector = "fleet=test"
	return argosync.Run(context.Background(), e.c, e.list(t), newRev, opts)
}

func TestOutcomes(t *testing.T) {
	pinnedOld := func(a *v1alpha1.Application) { a.Spec.Source.TargetRevision = oldRev }
	tests := []struct {
		name      string
		cfg       argocdsim.Config
		app       fleetApp
		opts      argosync.Options
		before    func(t *testing.T, e *env) // runs before the rollout
		during    func(e *env)               // runs while the rollout waits
		outcome   argosync.Outcome
		message   string
		syncs     int // sync requests the server received
		maxCalls  int
		minTime   time.Duration
		syncState v1alpha1.SyncStatusCode
	}{
		{name: "out of sync app is synced", app: fleetApp{name: "web"},
			outcome: argosync.OutcomeSynced, message: "applied 1b1b1b1b1b, Healthy", syncs: 1, maxCalls: 2, syncState: v1alpha1.SyncStatusCodeSynced},
		{name: "app at the revision is skipped", app: fleetApp{name: "web", live: []string{newRev}},
			outcome: argosync.OutcomeSkipped, message: "already Synced and Healthy", syncs: 0, maxCalls: 0},
		{name: "synced but not healthy app is synced again", app: fleetApp{name: "web", live: []string{newRev}, health: health.HealthStatusProgressing},
			outcome: argosync.OutcomeSynced, syncs: 1, maxCalls: 2},
		{name: "operation in flight to the revision is waited for", cfg: argocdsim.Config{SyncDuration: 30 * time.Second},
			app: fleetApp{name: "web"},
			before: func(t *testing.T, e *env) {
				if _, err := e.c.Sync(context.Background(), "web", argocd.SyncRequest{Revision: newRev}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(5 * time.Second)
			},
			outcome: argosync.OutcomeWaited, syncs: 1, maxCalls: 1, minTime: 25 * time.Second},
		{name: "operation in flight to another revision, then ours", cfg: argocdsim.Config{SyncDuration: 30 * time.Second},
			app: fleetApp{name: "web"},
			before: func(t *testing.T, e *env) {
				if _, err := e.c.Sync(context.Background(), "web", argocd.SyncRequest{Revision: "2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c"}); err != nil {
					t.Fatal(err)
				}
			},
			// one read when the stream stayed silent for StallTimeout during the other operation
			outcome: argosync.OutcomeSynced, syncs: 2, maxCalls: 3, minTime: 60 * time.Second},
		{name: "failed operation", app: fleetApp{name: "web", behavior: argocdsim.Behavior{Fail: true, FailMessage: "admission webhook denied"}},
			outcome: argosync.OutcomeFailed, message: "sync Failed: admission webhook denied", syncs: 1, maxCalls: 1},
		{name: "degraded after sync", app: fleetApp{name: "web", behavior: argocdsim.Behavior{Degrade: true}},
			outcome: argosync.OutcomeFailed, message: "Degraded after the sync", syncs: 1, maxCalls: 2},
		{name: "progressing, then healthy", cfg: argocdsim.Config{ProgressingFor: 45 * time.Second}, app: fleetApp{name: "web"},
			outcome: argosync.OutcomeSynced, syncs: 1, maxCalls: 3, minTime: 46 * time.Second},
		{name: "automated sync on", app: fleetApp{name: "web", mod: func(a *v1alpha1.Application) {
			a.Spec.Source.TargetRevision = oldRev
			a.Spec.SyncPolicy = &v1alpha1.SyncPolicy{Automated: &v1alpha1.SyncPolicyAutomated{}}
		}}, opts: argosync.Options{ResolveTimeout: 10 * time.Second},
			outcome: argosync.OutcomeFailed, message: "automated sync is enabled", syncs: 0, maxCalls: 1},
		{name: "targetRevision pinned elsewhere: explicit sync", app: fleetApp{name: "web", mod: pinnedOld},
			opts:    argosync.Options{ResolveTimeout: 20 * time.Second},
			outcome: argosync.OutcomeSynced, message: "syncing to 1b1b1b1b1b explicitly", syncs: 1, maxCalls: 3, minTime: 20 * time.Second,
			syncState: v1alpha1.SyncStatusCodeOutOfSync},
		{name: "targetRevision pinned elsewhere, resolution required", app: fleetApp{name: "web", mod: pinnedOld},
			opts:    argosync.Options{ResolveTimeout: 20 * time.Second, RequireResolved: true},
			outcome: argosync.OutcomeFailed, message: `targetRevision "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a" resolves to 0a0a0a0a0a, not 1b1b1b1b1b`, syncs: 0, maxCalls: 1},
		// With the branch the revision is the tip of (a merge's rollout), an app tracking anything else is not
		// synced to the revision: that would pin it to a commit its targetRevision does not name.
		{name: "targetRevision a tag: not rolled out", app: fleetApp{name: "web", mod: func(a *v1alpha1.Application) { a.Spec.Source.TargetRevision = "v1.2.0" }},
			opts:    argosync.Options{ResolveTimeout: 20 * time.Second, Branch: "main"},
			outcome: argosync.OutcomeSkipped, message: "not rolled out: tracks v1.2.0, not main", syncs: 0, maxCalls: 0},
		{name: "targetRevision a fixed commit: not rolled out", app: fleetApp{name: "web", mod: pinnedOld},
			opts:    argosync.Options{ResolveTimeout: 20 * time.Second, Branch: "main"},
			outcome: argosync.OutcomeSkipped, message: "not rolled out: tracks 0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a, not main", syncs: 0, maxCalls: 0},
		{name: "targetRevision another branch: not rolled out", app: fleetApp{name: "web", mod: func(a *v1alpha1.Application) { a.Spec.Source.TargetRevision = "refs/heads/release" }},
			opts:    argosync.Options{Branch: "main"},
			outcome: argosync.OutcomeSkipped, message: "not rolled out: tracks refs/heads/release, not main", syncs: 0, maxCalls: 0},
		{name: "targetRevision HEAD tracks the branch", app: fleetApp{name: "web"}, opts: argosync.Options{Branch: "main"},
			outcome: argosync.OutcomeSynced, message: "applied 1b1b1b1b1b, Healthy", syncs: 1, maxCalls: 2, syncState: v1alpha1.SyncStatusCodeSynced},
		{name: "multi-source app whose source from the repository is on another branch", app: fleetApp{name: "web", live: []string{"c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0", oldRev}, mod: func(a *v1alpha1.Application) {
			a.Spec.Source = nil
			a.Spec.Sources = v1alpha1.ApplicationSources{
				{RepoURL: "https://charts.example.com", Chart: "web", TargetRevision: "1.4.0"},
				{RepoURL: repo, TargetRevision: "staging", Ref: "values"},
			}
		}}, opts: argosync.Options{RepoURL: repo, Branch: "main"},
			outcome: argosync.OutcomeSkipped, message: "not rolled out: tracks staging, not main", syncs: 0, maxCalls: 0},
		{name: "revision resolves after a webhook", app: fleetApp{name: "web"},
			before: func(t *testing.T, e *env) { e.sim.SetRef("HEAD", oldRev); e.sim.RefreshAll() },
			during: func(e *env) {
				time.Sleep(40 * time.Second)
				e.sim.SetRef("HEAD", newRev)
				e.sim.RefreshAll()
			},
			outcome: argosync.OutcomeSynced, syncs: 1, maxCalls: 4, minTime: 41 * time.Second, syncState: v1alpha1.SyncStatusCodeSynced},
		{name: "dry run changes nothing", app: fleetApp{name: "web"}, opts: argosync.Options{DryRun: true},
			outcome: argosync.OutcomeDryRun, message: "would sync to 1b1b1b1b1b", syncs: 0, maxCalls: 0},
		{name: "dry run of an app at the revision", app: fleetApp{name: "web", live: []string{newRev}}, opts: argosync.Options{DryRun: true},
			outcome: argosync.OutcomeSkipped, syncs: 0, maxCalls: 0},
		{name: "multi-source app", app: fleetApp{name: "web", live: []string{"c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0", oldRev}, mod: func(a *v1alpha1.Application) {
			a.Spec.Source = nil
			a.Spec.Sources = v1alpha1.ApplicationSources{
				{RepoURL: "https://charts.example.com", Chart: "web", TargetRevision: "c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0"},
				{RepoURL: repo, TargetRevision: "HEAD", Ref: "values"},
			}
		}}, opts: argosync.Options{RepoURL: "https://git.example.com/fleet/gitops"},
			outcome: argosync.OutcomeSynced, syncs: 1, maxCalls: 2, syncState: v1alpha1.SyncStatusCodeSynced},
		{name: "multi-source app without the repository", app: fleetApp{name: "web", live: []string{oldRev, oldRev}, mod: func(a *v1alpha1.Application) {
			a.Spec.Source = nil
			a.Spec.Sources = v1alpha1.ApplicationSources{{RepoURL: repo, TargetRevision: "HEAD"}, {RepoURL: repo, TargetRevision: "HEAD"}}
		}}, outcome: argosync.OutcomeFailed, message: "multi-source app", syncs: 0, maxCalls: 0},
		{name: "timeout", cfg: argocdsim.Config{SyncDuration: time.Hour}, app: fleetApp{name: "web"}, opts: argosync.Options{Timeout: 10 * time.Minute},
			outcome: argosync.OutcomeFailed, message: "timed out waiting for the sync operation to finish", syncs: 1, maxCalls: 8},
		{name: "sync window closed", app: fleetApp{name: "web"},
			before:  func(t *testing.T, e *env) { e.sim.SetSyncWindowBlocked("web", true) },
			outcome: argosync.OutcomeFailed, message: "cannot sync: blocked by sync window", syncs: 1, maxCalls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, tt.cfg, tt.app)
				if tt.before != nil {
					tt.before(t, e)
				}
				if tt.during != nil {
					go tt.during(e)
				}
				start := time.Now()
				res := e.run(t, tt.opts)
				if len(res) != 1 {
					t.Fatalf("%d results", len(res))
				}
				r := res[0]
				if r.Outcome != tt.outcome || !strings.Contains(r.Message, tt.message) {
					t.Fatalf("outcome %s %q, want %s containing %q", r.Outcome, r.Message, tt.outcome, tt.message)
				}
				if c := e.sim.Counts("web").Syncs; c != tt.syncs {
					t.Errorf("%d sync requests, want %d", c, tt.syncs)
				}
				if r.APICalls > tt.maxCalls {
					t.Errorf("%d API calls, want at most %d", r.APICalls, tt.maxCalls)
				}
				if d := time.Since(start); d < tt.minTime {
					t.Errorf("done after %s, expected at least %s", d, tt.minTime)
				}
				if tt.syncState != "" && r.SyncStatus != tt.syncState {
					t.Errorf("sync status %s, want %s", r.SyncStatus, tt.syncState)
				}
				if r.Outcome == argosync.OutcomeSynced {
					if r.Health != health.HealthStatusHealthy || r.TriggeredAt.IsZero() || r.OperationStartedAt.Before(r.TriggeredAt.Truncate(time.Second)) {
						t.Errorf("synced result %+v", r)
					}
				}
			})
		})
	}
}

// TestStaleStatusIsNotDone reproduces Progressive Syncs' race (argo-cd #29410, #22852): right after the sync
// request the app reports Synced and Healthy at the target revision, with a fresh reconciledAt, from before the
// request. A naive check would call it done; the orchestrator must wait for its own operation.
func TestStaleStatusIsNotDone(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*v1alpha1.Application)
		opts argosync.Options
	}{
		{"stale status at the target revision", nil, argosync.Options{}},
		{"stale status at the old revision (pinned app)", func(a *v1alpha1.Application) { a.Spec.Source.TargetRevision = oldRev }, argosync.Options{ResolveTimeout: time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const stale = 20 * time.Second
				e := newEnv(t, argocdsim.Config{StaleStatusFor: stale, SyncDuration: 2 * time.Second}, fleetApp{name: "web", mod: tc.mod})
				var mu sync.Mutex
				var naiveDoneAt time.Time
				var observers sync.WaitGroup
				opts := tc.opts
				opts.OnTrigger = func(ctx context.Context, app, rev string) error {
					observers.Add(1)
					go func() { // watch what a naive check would conclude during the stale window
						defer observers.Done()
						time.Sleep(3 * time.Second)
						a, err := e.c.GetApplication(context.Background(), app, "")
						if err == nil && a.Status.Sync.Status == v1alpha1.SyncStatusCodeSynced && a.Status.Health.Status == health.HealthStatusHealthy {
							mu.Lock()
							naiveDoneAt = time.Now()
							mu.Unlock()
						}
					}()
					return nil
				}
				res := e.run(t, opts)
				r := res[0]
				observers.Wait()
				mu.Lock()
				defer mu.Unlock()
				if naiveDoneAt.IsZero() {
					t.Fatal("the simulator did not reproduce the race: no stale Synced+Healthy status")
				}
				if r.Outcome != argosync.OutcomeSynced {
					t.Fatalf("outcome %s: %s", r.Outcome, r.Message)
				}
				if r.End.Sub(r.TriggeredAt) < stale {
					t.Fatalf("declared done %s after the request, inside the %s stale window", r.End.Sub(r.TriggeredAt), stale)
				}
				if r.OperationStartedAt.Before(r.TriggeredAt.Truncate(time.Second)) {
					t.Fatalf("judged an operation that started before the request: %+v", r)
				}
			})
		})
	}
}

// TestRefreshDisambiguatesTheSameSecond: when reconciledAt and finishedAt fall in the same second, the status
// may predate the operation's end; the orchestrator asks for one refresh rather than trusting it. (An app
// whose last reconcile is a later second than its operation's end needs none: see "app at the revision is
// skipped", 0 calls.)
func TestRefreshDisambiguatesTheSameSecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, argocdsim.Config{ReconcileDelay: 10 * time.Millisecond}, fleetApp{name: "web"})
		r := e.run(t, argosync.Options{})[0]
		if r.Outcome != argosync.OutcomeSynced || e.sim.Counts("web").Refreshes != 1 {
			t.Fatalf("outcome %s, %d refreshes", r.Outcome, e.sim.Counts("web").Refreshes)
		}
	})
}

func TestOnTriggerRunsBeforeTheSync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, argocdsim.Config{}, fleetApp{name: "a"}, fleetApp{name: "b"}, fleetApp{name: "c", live: []string{newRev}})
		var mu sync.Mutex
		var seen []string
		res := e.run(t, argosync.Options{OnTrigger: func(ctx context.Context, app, rev string) error {
			mu.Lock()
			defer mu.Unlock()
			if n := e.sim.Counts(app).Syncs; n != 0 || rev != newRev {
				t.Errorf("hook for %s ran after %d sync requests (rev %s)", app, n, rev)
			}
			seen = append(seen, app)
			if app == "b" {
				return errors.New("store unavailable")
			}
			return nil
		}})
		if fmt.Sprint(outcomes(res)) != "[synced failed skipped]" || !strings.Contains(res[1].Message, "before syncing: store unavailable") {
			t.Fatalf("results %v %q", outcomes(res), res[1].Message)
		}
		if e.sim.Counts("b").Syncs != 0 || len(seen) != 2 {
			t.Fatalf("b got %d syncs; hooks %v", e.sim.Counts("b").Syncs, seen)
		}
	})
}

func outcomes(res []argosync.Result) []argosync.Outcome {
	var out []argosync.Outcome
	for _, r := range res {
		out = append(out, r.Outcome)
	}
	return out
}

// lostAnswer makes the first sync reach Argo CD but lose its answer, as the client reports after a retry.
type lostAnswer struct {
	argosync.API
	mu   sync.Mutex
	lost bool
}

func (l *lostAnswer) Sync(ctx context.Context, name string, req argocd.SyncRequest) (*v1alpha1.Application, error) {
	l.mu.Lock()
	first := !l.lost
	l.lost = true
	l.mu.Unlock()
	if _, err := l.API.Sync(ctx, name, req); err != nil || !first {
		return nil, err
	}
	return nil, &argocd.APIError{HTTPStatus: 400, Code: 9, Message: "error setting app operation: another operation is already in progress"}
}

func TestLostSyncAnswerIsNotSyncedTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, argocdsim.Config{SyncDuration: 5 * time.Second}, fleetApp{name: "web"})
		res := argosync.Run(context.Background(), &lostAnswer{API: e.c}, e.list(t), newRev, argosync.Options{})
		if r := res[0]; r.Outcome != argosync.OutcomeSynced {
			t.Fatalf("outcome %s: %s", r.Outcome, r.Message)
		}
		if n := e.sim.Counts("web").SyncsAccepted; n != 1 {
			t.Fatalf("%d operations started, want 1", n)
		}
	})
}

// flakySync fails the first n sync requests with a 503, after passing them to Argo CD when reached is set
// (the answer was lost) or without (the request never arrived).
type flakySync struct {
	argosync.API
	mu      sync.Mutex
	n       int
	reached bool
}

func (f *flakySync) Sync(ctx context.Context, name string, req argocd.SyncRequest) (*v1alpha1.Application, error) {
	f.mu.Lock()
	fail := f.n > 0
	f.n--
	f.mu.Unlock()
	if !fail {
		return f.API.Sync(ctx, name, req)
	}
	if f.reached {
		_, _ = f.API.Sync(ctx, name, req)
	}
	return nil, &argocd.APIError{HTTPStatus: 503, Code: 14, Message: "upstream connect error"}
}

func TestTransientSyncErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		api      func(argosync.API) argosync.API
		outcome  argosync.Outcome
		accepted int
	}{
		{"request never arrived, twice", func(a argosync.API) argosync.API { return &flakySync{API: a, n: 2} }, argosync.OutcomeSynced, 1},
		{"request arrived, answer lost", func(a argosync.API) argosync.API { return &flakySync{API: a, n: 1, reached: true} }, argosync.OutcomeSynced, 1},
		{"outage outlasts the budget", func(a argosync.API) argosync.API { return &flakySync{API: a, n: 100} }, argosync.OutcomeFailed, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, argocdsim.Config{SyncDuration: 5 * time.Second}, fleetApp{name: "web"})
				r := argosync.Run(context.Background(), tc.api(e.c), e.list(t), newRev, argosync.Options{})[0]
				if r.Outcome != tc.outcome {
					t.Fatalf("outcome %s: %s", r.Outcome, r.Message)
				}
				if n := e.sim.Counts("web").SyncsAccepted; n != tc.accepted {
					t.Fatalf("%d operations started, want %d", n, tc.accepted)
				}
				if tc.outcome == argosync.OutcomeFailed && !strings.Contains(r.Message, "upstream connect error") {
					t.Fatalf("the failure does not say why: %q", r.Message)
				}
			})
		})
	}
}

// TestLostAnswerDuringStaleStatus: the sync request reaches Argo CD but its answer is lost, and the app goes on
// showing its pre-request status (Synced and Healthy: Progressive Syncs' race). "No operation of ours yet" is
// not "nothing to do": the orchestrator must wait for the operation the request may have started, and neither
// call the app done before it ran nor sync it a second time.
func TestLostAnswerDuringStaleStatus(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reached bool
		want    argosync.Outcome
	}{
		{"request arrived, answer lost", true, argosync.OutcomeSynced},
		{"request never arrived", false, argosync.OutcomeSynced},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const stale = 10 * time.Second // inside the default LostAnswerGrace (15s)
				e := newEnv(t, argocdsim.Config{StaleStatusFor: stale, SyncDuration: 2 * time.Second}, fleetApp{name: "web"})
				api := &flakySync{API: e.c, n: 1, reached: tc.reached}
				r := argosync.Run(context.Background(), api, e.list(t), newRev, argosync.Options{})[0]
				if r.Outcome != tc.want {
					t.Fatalf("outcome %s, want %s: %s", r.Outcome, tc.want, r.Message)
				}
				if n := e.sim.Counts("web").SyncsAccepted; n != 1 {
					t.Fatalf("%d operations started, want 1", n)
				}
				a, _ := e.sim.App("web")
				if got := a.Status.History.LastRevisionHistory().Revision; got != newRev {
					t.Fatalf("app runs %s, want %s", got, newRev)
				}
			})
		})
	}
}

// noStream refuses the watch stream (e.g. RBAC): waits fall back to reading the apps.
type noStream struct{ argosync.API }

func (noStream) Watch(context.Context, argocd.WatchQuery, argocd.WatchHandler) error {
	return &argocd.APIError{HTTPStatus: 403, Code: 7, Message: "permission denied"}
}

func TestWithoutStreamFallsBackToReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, argocdsim.Config{SyncDuration: 20 * time.Second}, fleetApp{name: "web"})
		r := argosync.Run(context.Background(), noStream{e.c}, e.list(t), newRev, argosync.Options{})[0]
		if r.Outcome != argosync.OutcomeSynced || r.APICalls > 10 {
			t.Fatalf("outcome %s after %d calls: %s", r.Outcome, r.APICalls, r.Message)
		}
	})
}

func TestOneStreamForManyApps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var apps []fleetApp
		for i := range 60 {
			apps = append(apps, fleetApp{name: fmt.Sprintf("app-%02d", i)})
		}
		e := newEnv(t, argocdsim.Config{}, apps...)
		res := e.run(t, argosync.Options{Concurrency: 20})
		if s := argosync.Summary(res); s[argosync.OutcomeSynced] != 60 {
			t.Fatalf("summary %v", s)
		}
		if n := e.sim.Totals().Streams; n != 1 {
			t.Fatalf("%d streams for 60 apps, want 1", n)
		}
	})
}

// streamRecorder counts the stream's events, and those that carry the parts of an app that grow with its
// resources.
type streamRecorder struct {
	argosync.API
	mu            sync.Mutex
	events, bulky int
}

func (r *streamRecorder) Watch(ctx context.Context, q argocd.WatchQuery, h argocd.WatchHandler) error {
	inner := h.OnRawEvent
	h.OnRawEvent = func(ev *argocd.Event) {
		if app, err := ev.Application(); err == nil {
			r.mu.Lock()
			r.events++
			if os := app.Status.OperationState; app.Status.Resources != nil || (os != nil && os.SyncResult != nil && os.SyncResult.Resources != nil) {
				r.bulky++
			}
			r.mu.Unlock()
		}
		inner(ev)
	}
	return r.API.Watch(ctx, q, h)
}

// TestStreamLeavesOutResources: the session's stream carries apps without their per-resource lists (which a
// GET has), and the syncs are judged all the same.
func TestStreamLeavesOutResources(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, argocdsim.Config{SyncDuration: 20 * time.Second}, fleetApp{name: "web"}, fleetApp{name: "api"})
		rec := &streamRecorder{API: e.c}
		res := argosync.Run(context.Background(), rec, e.list(t), newRev, argosync.Options{Selector: "fleet=test"})
		if s := argosync.Summary(res); s[argosync.OutcomeSynced] != 2 {
			t.Fatalf("summary %v: %+v", s, res)
		}
		full, err := e.c.GetApplication(context.Background(), "web", "")
		if err != nil {
			t.Fatal(err)
		}
		if len(full.Status.Resources) == 0 || len(full.Status.OperationState.SyncResult.Resources) == 0 {
			t.Fatalf("the app has no resources to leave out")
		}
		if rec.events < 6 || rec.bulky != 0 {
			t.Fatalf("%d of %d stream events carried status.resources or syncResult.resources", rec.bulky, rec.events)
		}
	})
}

// TestFaultInjection: 20% of requests fail with 503, some answers are lost after the server acted, latency
// spikes, streams drop; the verdicts stay right, no app is synced twice, and calls per app stay bounded.
func TestFaultInjection(t *testing.T) {
	for _, retries := range []int{4, 1} {
		t.Run(fmt.Sprintf("client retries %d", retries), func(t *testing.T) { faultRun(t, retries) })
	}
}

func faultRun(t *testing.T, clientRetries int) {
	synctest.Test(t, func(t *testing.T) {
		const n = 200
		var apps []fleetApp
		want := map[string]argosync.Outcome{}
		for i := range n {
			fa := fleetApp{name: fmt.Sprintf("app-%03d", i)}
			want[fa.name] = argosync.OutcomeSynced
			switch {
			case i%20 == 3:
				fa.behavior = argocdsim.Behavior{Fail: true}
				want[fa.name] = argosync.OutcomeFailed
			case i%20 == 7:
				fa.behavior = argocdsim.Behavior{Degrade: true}
				want[fa.name] = argosync.OutcomeFailed
			case i%20 == 11:
				fa.live = []string{newRev}
				want[fa.name] = argosync.OutcomeSkipped
			}
			apps = append(apps, fa)
		}
		e := newEnv(t, argocdsim.Config{
			Seed: 42, SyncDuration: 5 * time.Second, ReconcileDelay: 50 * time.Millisecond, ProgressingFor: 2 * time.Second,
			ErrorRate: 0.2, LostResponseRate: 0.03, APILatency: 20 * time.Millisecond, LatencySpikeRate: 0.05, LatencySpike: 3 * time.Second,
			StreamDropMean: 5 * time.Second,
		}, apps...)
		items := e.list(t)
		c, err := argocd.New(argocd.Options{BaseURL: "http://argocd.sim", HTTPClient: e.sim.HTTPClient(), MaxRetries: clientRetries,
			RetryInitialInterval: 100 * time.Millisecond, RetryMaxInterval: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		res := argosync.Run(context.Background(), c, items, newRev, argosync.Options{Concurrency: 25, Selector: "fleet=test", StallTimeout: 30 * time.Second})
		maxReq, total := 0, 0
		for _, r := range res {
			if r.Outcome != want[r.App] {
				t.Errorf("%s: %s (%s), want %s", r.App, r.Outcome, r.Message, want[r.App])
			}
			c := e.sim.Counts(r.App)
			if c.SyncsAccepted > 1 {
				t.Errorf("%s: %d operations started", r.App, c.SyncsAccepted)
			}
			maxReq = max(maxReq, c.Requests)
			total += c.Requests
		}
		tot := e.sim.Totals()
		t.Logf("faults: %d injected 5xx, %d lost answers, %d dropped streams (%d streams); requests per app: mean %.2f, max %d",
			tot.InjectedErrors, tot.LostResponses, tot.StreamDrops, tot.Streams, float64(total)/n, maxReq)
		if tot.InjectedErrors == 0 || tot.LostResponses == 0 || tot.StreamDrops == 0 {
			t.Fatalf("faults were not injected: %+v", tot)
		}
		if maxReq > 20 {
			t.Errorf("an app needed %d requests, want at most 20", maxReq)
		}
	})
}

// benchApps builds the benchmark fleet: n apps out of sync by one revision.
func benchApps(n int) []fleetApp {
	apps := make([]fleetApp, n)
	for i := range apps {
		apps[i] = fleetApp{name: fmt.Sprintf("app-%04d", i)}
	}
	return apps
}

// benchConfig is a 2 s sync with realistic overheads: 5 ms API latency, 10 ms for the controller to pick an
// operation up, 10 ms for a reconcile.
var benchConfig = argocdsim.Config{SyncDuration: 2 * time.Second, APILatency: 5 * time.Millisecond,
	OperationStartDelay: 10 * time.Millisecond, ReconcileDelay: 10 * time.Millisecond}

// TestBenchmark1000Apps: 1,000 apps, 2 s syncs, concurrency 50, in virtual time (testing/synctest): every wait
// of the orchestrator, the client and the simulator is on the virtual clock, so the measured time is what the
// orchestration itself costs beyond the syncs. Ideal: ceil(1000/50) × 2 s = 40 s.
func TestBenchmark1000Apps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, benchConfig, benchApps(1000)...)
		start := time.Now()
		res := e.run(t, argosync.Options{Concurrency: 50})
		report(t, e, res, time.Since(start), 40*time.Second)
	})
}

func report(t *testing.T, e *env, res []argosync.Result, wall, ideal time.Duration) {
	t.Helper()
	if s := argosync.Summary(res); s[argosync.OutcomeSynced] != len(res) {
		t.Fatalf("summary %v", s)
	}
	tot := e.sim.Totals()
	perApp := float64(tot.Requests) / float64(len(res))
	maxApp := 0
	for _, r := range res {
		maxApp = max(maxApp, e.sim.Counts(r.App).Requests)
	}
	over := float64(wall-ideal) / float64(ideal) * 100
	t.Logf("%d apps: wall %s (ideal %s, +%.2f%%); requests %d = %.2f per app (max %d for one app; %d lists, %d streams)",
		len(res), wall.Round(time.Millisecond), ideal, over, tot.Requests, perApp, maxApp, tot.Lists, tot.Streams)
	if wall > ideal+ideal/20 {
		t.Errorf("wall time %s is more than 5%% over the ideal %s", wall, ideal)
	}
	if perApp > 6 || maxApp > 6 {
		t.Errorf("%.2f requests per app (max %d), want at most 6", perApp, maxApp)
	}
}

// TestBenchmark1000AppsRealTime is the same benchmark on the real clock over TCP (about 40 s): set
// FLEETWAVE_REALTIME_BENCH=1 to run it.
func TestBenchmark1000AppsRealTime(t *testing.T) {
	if os.Getenv("FLEETWAVE_REALTIME_BENCH") == "" {
		t.Skip("set FLEETWAVE_REALTIME_BENCH=1 to run the 40 s real-time benchmark")
	}
	sim := argocdsim.New(benchConfig)
	defer sim.Close()
	srv := httptest.NewServer(sim.Handler())
	defer srv.Close()
	sim.SetRef("HEAD", newRev)
	for _, fa := range benchApps(1000) {
		a := &v1alpha1.Application{}
		a.Name = fa.name
		a.Labels = map[string]string{"fleet": "test"}
		a.Spec.Source = &v1alpha1.ApplicationSource{RepoURL: repo, Path: "apps/" + fa.name, TargetRevision: "HEAD"}
		if err := sim.AddApp(a, argocdsim.AppOptions{LiveRevisions: []string{oldRev}}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := argocd.New(argocd.Options{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{sim: sim, c: c}
	start := time.Now()
	res := e.run(t, argosync.Options{Concurrency: 50})
	report(t, e, res, time.Since(start), 40*time.Second)
}
