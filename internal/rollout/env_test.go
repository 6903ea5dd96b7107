package rollout_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/health"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/checkrun/checkruntest"
	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/rollout"
)

const (
	oldRev  = "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a"
	newRev  = "1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b"
	newRev2 = "2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c"
	repoURL = "https://git.example.com/fleet/gitops.git"
	repo    = "fleet/gitops"
)

// fleetApp is one app of a test fleet: an Argo CD Application on a cluster with env/region labels.
type fleetApp struct {
	name, cluster, env, region string
	live                       string // live revision (default oldRev)
	behavior                   argocdsim.Behavior
	automated                  bool
}

// defaultFleet: canary (1 app, env test), staging (2 apps on 2 clusters), production (4 apps on 4 clusters in 2
// regions).
func defaultFleet() []fleetApp {
	return []fleetApp{
		{name: "web-test-1", cluster: "test-1", env: "test", region: "eu"},
		{name: "web-stg-1", cluster: "stg-1", env: "stg", region: "eu"},
		{name: "web-stg-2", cluster: "stg-2", env: "stg", region: "us"},
		{name: "web-prd-1", cluster: "prd-1", env: "prd", region: "eu"},
		{name: "web-prd-2", cluster: "prd-2", env: "prd", region: "us"},
		{name: "web-prd-3", cluster: "prd-3", env: "prd", region: "eu"},
		{name: "web-prd-4", cluster: "prd-4", env: "prd", region: "us"},
	}
}

// basePolicy is the three-wave policy of the default fleet; extra is appended to the production wave.
func basePolicy(canary, staging, production string) string {
	return `apiVersion: fleetwave/v1
waves:
  - name: canary
    selector: {matchLabels: {env: test}}
` + indent(canary) + `
  - name: staging
    selector: {matchLabels: {env: stg}}
` + indent(staging) + `
  - name: production
    selector: {matchLabels: {env: prd}}
    maxParallel: 2
    maxPerLabel: {region: 1}
` + indent(production)
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = "    " + l
	}
	return strings.Join(lines, "\n")
}

type envConfig struct {
	sim    argocdsim.Config
	apps   []fleetApp
	opts   []rollout.Option
	wrap   func(rollout.ArgoCD) rollout.ArgoCD
	dbPath string
	noRun  bool // do not run the executor yet (e.run(e.ex) later)
}

// env is a simulated Argo CD, a SQLite store and an executor, all in the synctest bubble's virtual time.
type env struct {
	t       *testing.T
	sim     *argocdsim.Server
	argo    *argocd.Client
	api     rollout.ArgoCD
	st      *store.Store
	rep     *checkruntest.Reporter
	ex      *rollout.Executor
	apps    []fleetApp
	cancel  context.CancelFunc
	runDone chan struct{} // closed when e.ex.Run returned
	dbPath  string
}

func newSim(t *testing.T, cfg argocdsim.Config, apps []fleetApp) *argocdsim.Server {
	t.Helper()
	sim := argocdsim.New(cfg)
	t.Cleanup(sim.Close)
	sim.SetRef("HEAD", oldRev)
	for _, fa := range apps {
		a := &v1alpha1.Application{}
		a.Name = fa.name
		a.Labels = map[string]string{"env": fa.env}
		a.Spec.Source = &v1alpha1.ApplicationSource{RepoURL: repoURL, Path: "apps/web", TargetRevision: "HEAD"}
		a.Spec.Destination = v1alpha1.ApplicationDestination{Name: fa.cluster, Namespace: "web"}
		if fa.automated {
			a.Spec.SyncPolicy = &v1alpha1.SyncPolicy{Automated: &v1alpha1.SyncPolicyAutomated{Prune: new(true), SelfHeal: new(true)}}
		}
		live := fa.live
		if live == "" {
			live = oldRev
		}
		if err := sim.AddApp(a, argocdsim.AppOptions{LiveRevisions: []string{live}, Health: health.HealthStatusHealthy, Behavior: fa.behavior}); err != nil {
			t.Fatal(err)
		}
	}
	// The merge: HEAD moves to newRev; apps notice at their next reconcile.
	sim.SetRef("HEAD", newRev)
	return sim
}

func newClient(t *testing.T, sim *argocdsim.Server) *argocd.Client {
	t.Helper()
	c, err := argocd.New(argocd.Options{BaseURL: "http://argocd.sim", HTTPClient: sim.HTTPClient(),
		RetryInitialInterval: 100 * time.Millisecond, RetryMaxInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// start builds the environment and runs the executor. Call it inside synctest.Test.
func start(t *testing.T, cfg envConfig) *env {
	t.Helper()
	if cfg.apps == nil {
		cfg.apps = defaultFleet()
	}
	e := &env{t: t, apps: cfg.apps, rep: &checkruntest.Reporter{}}
	e.sim = newSim(t, cfg.sim, cfg.apps)
	e.argo = newClient(t, e.sim)
	e.api = e.argo
	if cfg.wrap != nil {
		e.api = cfg.wrap(e.argo)
	}
	e.dbPath = cfg.dbPath
	if e.dbPath == "" {
		e.dbPath = filepath.Join(t.TempDir(), "fleetwave.db")
	}
	st, err := store.Open(context.Background(), "sqlite://"+e.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e.st = st
	e.ex = e.newExecutor(cfg.opts...)
	if !cfg.noRun {
		e.run(e.ex)
	}
	return e
}

func (e *env) newExecutor(opts ...rollout.Option) *rollout.Executor {
	base := []rollout.Option{rollout.WithOwner("bot-1"), rollout.WithConcurrency(10), rollout.WithGateInterval(time.Minute)}
	return rollout.New(e.st, e.api, e.rep, append(base, opts...)...)
}

// run starts ex.Run; Cleanup drains it.
func (e *env) run(ex *rollout.Executor) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ex.Run(ctx)
	}()
	e.t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), time.Hour)
		defer scancel()
		_ = ex.Stop(sctx)
		cancel()
		<-done
	})
	if ex == e.ex {
		e.cancel, e.runDone = cancel, done
	}
}

func (e *env) policy(yaml string) *plan.Policy {
	e.t.Helper()
	p, err := plan.ParsePolicy(".fleetwave.yaml", []byte(yaml))
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) plan(p *plan.Policy, apps []fleetApp) *plan.Plan {
	e.t.Helper()
	var in []plan.App
	for _, fa := range apps {
		in = append(in, plan.App{Name: fa.name, Namespace: "argocd", Project: "default", Cluster: fa.cluster,
			ClusterLabels: map[string]string{"env": fa.env, "region": fa.region}, Labels: map[string]string{},
			AutomatedSync: fa.automated})
	}
	pl := plan.Build(p, in)
	if !pl.OK() {
		e.t.Fatalf("plan violations: %+v", pl.Violations)
	}
	return pl
}

// submit plans the whole fleet under the policy and submits the merge of rev.
func (e *env) submit(policyYAML, rev string, mod ...func(*rollout.Request)) store.Rollout {
	e.t.Helper()
	p := e.policy(policyYAML)
	req := rollout.Request{Repo: repo, PRNumber: 7, MergeSHA: rev, BaseSHA: oldRev, Plan: e.plan(p, e.apps),
		AutomatedSync: p.AutomatedSync, OutOfPlanSync: p.OutOfPlanSync, RepoURL: repoURL}
	for _, m := range mod {
		m(&req)
	}
	r, err := e.ex.Submit(context.Background(), req)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// wait polls (in virtual time) until the rollout is in one of states, and returns it.
func (e *env) wait(id int64, states ...store.RolloutState) store.Rollout {
	e.t.Helper()
	deadline := time.Now().Add(6 * time.Hour)
	for {
		r, err := e.st.GetRollout(context.Background(), id)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, s := range states {
			if r.State == s {
				synctest.Wait() // let the driver finish what it does after the move (publishing)
				return r
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("rollout %d is %s (%s), never reached %v", id, r.State, r.Message, states)
		}
		time.Sleep(time.Second)
	}
}

// waitWave polls until wave wi of the rollout is in state.
func (e *env) waitWave(id int64, wi int, state store.WaveState) store.Wave {
	e.t.Helper()
	deadline := time.Now().Add(6 * time.Hour)
	for {
		ws, err := e.st.ListWaves(context.Background(), id)
		if err != nil {
			e.t.Fatal(err)
		}
		if ws[wi].State == state {
			synctest.Wait()
			return ws[wi]
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("wave %s of rollout %d is %s, never reached %s", ws[wi].Name, id, ws[wi].State, state)
		}
		time.Sleep(time.Second)
	}
}

func (e *env) steps(id int64) []store.AppStep {
	e.t.Helper()
	s, err := e.st.ListSteps(context.Background(), id, store.StepFilter{})
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

func (e *env) stepOf(id int64, app string) store.AppStep {
	e.t.Helper()
	for _, s := range e.steps(id) {
		if s.App.Name == app {
			return s
		}
	}
	e.t.Fatalf("no step for app %s", app)
	return store.AppStep{}
}

// liveRev is the revision the app runs in the simulator (its last successful sync).
func (e *env) liveRev(app string) string {
	a, ok := e.sim.App(app)
	if !ok || len(a.Status.History) == 0 {
		return ""
	}
	return a.Status.History.LastRevisionHistory().Revision
}

// syncs returns the accepted sync operations per app.
func (e *env) syncs() map[string]int {
	out := map[string]int{}
	for _, fa := range e.apps {
		out[fa.name] = e.sim.Counts(fa.name).SyncsAccepted
	}
	return out
}

func (e *env) expectSyncs(want map[string]int) {
	e.t.Helper()
	got := e.syncs()
	var bad []string
	for _, fa := range e.apps {
		if got[fa.name] != want[fa.name] {
			bad = append(bad, fmt.Sprintf("%s: %d syncs, want %d", fa.name, got[fa.name], want[fa.name]))
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		e.t.Errorf("sync counts:\n%s", strings.Join(bad, "\n"))
	}
}

func (e *env) expectLive(rev string, apps ...string) {
	e.t.Helper()
	for _, a := range apps {
		if got := e.liveRev(a); got != rev {
			e.t.Errorf("app %s runs %s, want %s", a, got, rev)
		}
	}
}

func (e *env) events(id int64) []store.Event {
	e.t.Helper()
	ev, err := e.st.ListEvents(context.Background(), id, 0, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return ev
}

func names(apps []fleetApp, env string) []string {
	var out []string
	for _, a := range apps {
		if env == "" || a.env == env {
			out = append(out, a.name)
		}
	}
	return out
}

func counts(apps []string, n int) map[string]int {
	m := map[string]int{}
	for _, a := range apps {
		m[a] = n
	}
	return m
}

func merge(ms ...map[string]int) map[string]int {
	out := map[string]int{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func parsePolicy(yaml string) (*plan.Policy, error) {
	return plan.ParsePolicy(".fleetwave.yaml", []byte(yaml))
}
