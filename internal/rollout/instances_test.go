package rollout_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/autosync"
	"github.com/fleetwave/fleetwave/internal/checkrun/checkruntest"
	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/rollout"
)

// multiEnv is a fleet over several simulated Argo CD instances, one store and one executor, in the synctest
// bubble's virtual time. Instance "" is the one New gets; the others go through WithInstances.
type multiEnv struct {
	*env
	sims   map[string]*argocdsim.Server
	fleets map[string][]fleetApp
	api    map[string]rollout.ArgoCD
	gauges map[string]*inFlight
}

// inFlight records, at every accepted sync request, how many operations run on its instance's simulator at
// that moment (the request's own included): the sync operations in flight on the instance.
type inFlight struct {
	rollout.ArgoCD
	sim *argocdsim.Server
	mu  sync.Mutex
	max int
}

func (f *inFlight) running() int {
	n := 0
	for _, name := range f.sim.AppNames() {
		a, _ := f.sim.App(name)
		if a.Operation != nil || (a.Status.OperationState != nil && !a.Status.OperationState.Phase.Completed()) {
			n++
		}
	}
	return n
}

func (f *inFlight) Sync(ctx context.Context, name string, req argocd.SyncRequest) (*v1alpha1.Application, error) {
	app, err := f.ArgoCD.Sync(ctx, name, req)
	if err == nil {
		n := f.running()
		f.mu.Lock()
		f.max = max(f.max, n)
		f.mu.Unlock()
	}
	return app, err
}

func (f *inFlight) maxInFlight() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.max
}

// startMulti builds one simulator per instance of fleets (configured unless listed in unconfigured) and runs an
// executor over them. Call it inside synctest.Test.
func startMulti(t *testing.T, cfg argocdsim.Config, fleets map[string][]fleetApp, unconfigured []string, opts ...rollout.Option) *multiEnv {
	t.Helper()
	return startMultiWrap(t, cfg, fleets, unconfigured, nil, opts...)
}

// startMultiWrap is startMulti with wrap (when not nil) around each instance's Argo CD.
func startMultiWrap(t *testing.T, cfg argocdsim.Config, fleets map[string][]fleetApp, unconfigured []string,
	wrap func(inst string, a rollout.ArgoCD) rollout.ArgoCD, opts ...rollout.Option) *multiEnv {
	t.Helper()
	return startMultiWith(t, func(string) argocdsim.Config { return cfg }, fleets, unconfigured, wrap, opts...)
}

// startMultiWith is startMultiWrap with each instance's simulator configured by cfgOf.
func startMultiWith(t *testing.T, cfgOf func(inst string) argocdsim.Config, fleets map[string][]fleetApp, unconfigured []string,
	wrap func(inst string, a rollout.ArgoCD) rollout.ArgoCD, opts ...rollout.Option) *multiEnv {
	t.Helper()
	m := &multiEnv{env: &env{t: t, rep: &checkruntest.Reporter{}}, sims: map[string]*argocdsim.Server{},
		fleets: fleets, api: map[string]rollout.ArgoCD{}, gauges: map[string]*inFlight{}}
	others := map[string]rollout.ArgoCD{}
	for inst, apps := range fleets {
		m.apps = append(m.apps, apps...)
		if containsString(unconfigured, inst) {
			continue
		}
		sim := newSim(t, cfgOf(inst), apps)
		g := &inFlight{ArgoCD: newClient(t, sim), sim: sim}
		var api rollout.ArgoCD = g
		if wrap != nil {
			api = wrap(inst, g)
		}
		m.sims[inst], m.gauges[inst], m.api[inst] = sim, g, api
		if inst != "" {
			others[inst] = api
		}
	}
	st, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "fleetwave.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m.st = st
	var def rollout.ArgoCD
	if a, ok := m.api[""]; ok {
		def = a
	}
	base := []rollout.Option{rollout.WithOwner("bot-1"), rollout.WithConcurrency(50), rollout.WithGateInterval(time.Minute),
		rollout.WithInstances(others)}
	m.ex = rollout.New(m.st, def, m.rep, append(base, opts...)...)
	m.run(m.ex)
	return m
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// instanceFleet is n apps named prefix-1…n on clusters of their own, env prd.
func instanceFleet(prefix string, n int) []fleetApp {
	var out []fleetApp
	for i := 1; i <= n; i++ {
		out = append(out, fleetApp{name: fmt.Sprintf("%s-%d", prefix, i), cluster: fmt.Sprintf("%s-c%d", prefix, i), env: "prd", region: "eu"})
	}
	return out
}

// submitAll plans every instance's apps, each with its instance, and submits the merge of newRev.
func (m *multiEnv) submitAll(policyYAML string) store.Rollout {
	m.t.Helper()
	p := m.policy(policyYAML)
	var in []plan.App
	insts := make([]string, 0, len(m.fleets))
	for inst := range m.fleets {
		insts = append(insts, inst)
	}
	sort.Strings(insts)
	for _, inst := range insts {
		for _, fa := range m.fleets[inst] {
			in = append(in, plan.App{Name: fa.name, Namespace: "argocd", Project: "default", Cluster: fa.cluster, Instance: inst,
				ClusterLabels: map[string]string{"env": fa.env, "region": fa.region}, Labels: map[string]string{}, AutomatedSync: fa.automated})
		}
	}
	pl := plan.Build(p, in)
	if !pl.OK() {
		m.t.Fatalf("plan violations: %+v", pl.Violations)
	}
	r, err := m.ex.Submit(context.Background(), rollout.Request{Repo: repo, PRNumber: 7, MergeSHA: newRev, BaseSHA: oldRev,
		Plan: pl, RepoURL: repoURL, AutomatedSync: p.AutomatedSync, OutOfPlanSync: p.OutOfPlanSync})
	if err != nil {
		m.t.Fatal(err)
	}
	return r
}

// expectOnce checks that every app of every configured instance was synced exactly once, on its own instance,
// and runs newRev.
func (m *multiEnv) expectOnce() {
	m.t.Helper()
	for inst, sim := range m.sims {
		for _, fa := range m.fleets[inst] {
			if n := sim.Counts(fa.name).SyncsAccepted; n != 1 {
				m.t.Errorf("instance %q app %s: %d syncs, want 1", inst, fa.name, n)
			}
			a, _ := sim.App(fa.name)
			if len(a.Status.History) == 0 || a.Status.History.LastRevisionHistory().Revision != newRev {
				m.t.Errorf("instance %q app %s does not run %s", inst, fa.name, newRev)
			}
		}
	}
}

const onePolicy = `apiVersion: fleetwave/v1
waves:
  - name: production
    selector: {matchLabels: {env: prd}}
`

// TestRolloutAcrossInstances: each app is synced through its own instance's Argo CD, once, and each instance
// keeps its budget full and never exceeds it.
func TestRolloutAcrossInstances(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := startMulti(t, argocdsim.Config{SyncDuration: 30 * time.Second},
			map[string][]fleetApp{"": instanceFleet("web", 12), "eu": instanceFleet("eu-web", 12)}, nil,
			rollout.WithInstanceBudgets(map[string]int{"": 3, "eu": 5}))
		r := m.submitAll(onePolicy)
		r = m.wait(r.ID, store.RolloutSucceeded, store.RolloutFailed, store.RolloutPaused)
		if r.State != store.RolloutSucceeded {
			t.Fatalf("rollout %s: %s", r.State, r.Message)
		}
		m.expectOnce()
		for inst, want := range map[string]int{"": 3, "eu": 5} {
			if got := m.gauges[inst].maxInFlight(); got != want {
				t.Errorf("instance %q: at most %d sync operations in flight; want its budget, %d", inst, got, want)
			}
		}
		for _, s := range m.steps(r.ID) {
			want := ""
			if strings.HasPrefix(s.App.Name, "eu-") {
				want = "eu"
			}
			if s.App.Instance != want || s.State != store.StepSynced {
				t.Errorf("step %s: instance %q state %s; want %q synced", s.App, s.App.Instance, s.State, want)
			}
		}
	})
}

// TestEachInstanceKnowsTheBotAsItsOwnUser: each instance may know fleetwave's token as another account (an
// account per instance, a project role's JWT). A sync whose answer was lost is judged by who started the
// operation found for it: the executor's own username on that instance. Before, the first username learned on
// any instance was the executor's everywhere, and eu-web-1's operation was "synced outside the plan by user
// fleetwave-eu": the rollout paused.
func TestEachInstanceKnowsTheBotAsItsOwnUser(t *testing.T) {
	canary := instanceFleet("web", 2)
	for i := range canary {
		canary[i].env = "test"
	}
	const twoWaves = `apiVersion: fleetwave/v1
waves:
  - {name: canary, selector: {matchLabels: {env: test}}}
  - {name: production, selector: {matchLabels: {env: prd}}}
`
	synctest.Test(t, func(t *testing.T) {
		users := map[string]string{"": "fleetwave", "eu": "fleetwave-eu"}
		m := startMultiWith(t, func(inst string) argocdsim.Config {
			return argocdsim.Config{SyncDuration: 20 * time.Second, Username: users[inst]}
		}, map[string][]fleetApp{"": canary, "eu": instanceFleet("eu-web", 3)}, nil, nil)
		m.sims["eu"].LoseSyncAnswers("eu-web-1", 1, 2*time.Minute)
		r := m.submitAll(twoWaves) // the executor learns its username on "" first, in the canary
		r = m.wait(r.ID, store.RolloutSucceeded, store.RolloutFailed, store.RolloutPaused)
		if r.State != store.RolloutSucceeded {
			t.Fatalf("rollout %s: %s", r.State, r.Message)
		}
		m.expectOnce()
	})
}

// TestBudgetFreedWhenTheOperationEnds: an app's place in its instance's budget is freed when its sync operation
// ends, not when it becomes Healthy: Argo CD's operation processor is free then, and the next app's sync starts
// while the first is still Progressing. 6 apps on a budget of 2, syncs of 30 s, Progressing 5 min after each:
// about 3 × 30 s + 5 min; holding the place until Healthy took 3 × 5.5 min.
func TestBudgetFreedWhenTheOperationEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := startMulti(t, argocdsim.Config{SyncDuration: 30 * time.Second, ProgressingFor: 5 * time.Minute},
			map[string][]fleetApp{"eu": instanceFleet("eu-web", 6)}, nil, rollout.WithInstanceBudgets(map[string]int{"eu": 2}))
		start := time.Now()
		r := m.submitAll(onePolicy)
		if r = m.wait(r.ID, store.RolloutSucceeded, store.RolloutFailed, store.RolloutPaused); r.State != store.RolloutSucceeded {
			t.Fatalf("rollout %s: %s", r.State, r.Message)
		}
		m.expectOnce()
		if took := time.Since(start); took > 9*time.Minute {
			t.Errorf("the rollout took %v: the budget waited for health (want about 6.5 min, at most 9)", took)
		}
		if got := m.gauges["eu"].maxInFlight(); got != 2 {
			t.Errorf("at most %d sync operations in flight; want the budget, 2", got)
		}
	})
}

// TestDefaultInstanceBudget: an instance without a budget of its own gets Argo CD's operation processors, 10.
func TestDefaultInstanceBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := startMulti(t, argocdsim.Config{SyncDuration: 30 * time.Second},
			map[string][]fleetApp{"": instanceFleet("web", 4), "us": instanceFleet("us-web", 25)}, nil)
		r := m.submitAll(onePolicy)
		if r = m.wait(r.ID, store.RolloutSucceeded, store.RolloutFailed, store.RolloutPaused); r.State != store.RolloutSucceeded {
			t.Fatalf("rollout %s: %s", r.State, r.Message)
		}
		m.expectOnce()
		if got := m.gauges["us"].maxInFlight(); got != rollout.DefaultInstanceBudget {
			t.Errorf("instance us: at most %d in flight; want %d", got, rollout.DefaultInstanceBudget)
		}
	})
}

// TestUnconfiguredInstanceFailsItsApps: an app whose instance the executor does not know fails its step with a
// line naming the instance (never skipped); the other apps are synced.
func TestUnconfiguredInstanceFailsItsApps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := startMulti(t, argocdsim.Config{SyncDuration: 10 * time.Second},
			map[string][]fleetApp{"": instanceFleet("web", 3), "ap": instanceFleet("ap-web", 2)}, []string{"ap"})
		r := m.submitAll(onePolicy + "    failureThreshold: 2\n") // the other instance's apps all start
		r = m.wait(r.ID, store.RolloutSucceeded, store.RolloutFailed, store.RolloutPaused)
		if r.State != store.RolloutSucceeded { // the threshold tolerates the two failed apps
			t.Fatalf("rollout %s (%s); want succeeded", r.State, r.Message)
		}
		m.expectOnce()
		for _, s := range m.steps(r.ID) {
			switch s.App.Instance {
			case "ap":
				if s.State != store.StepFailed || !strings.Contains(s.Message, `Argo CD instance "ap" is not configured`) {
					t.Errorf("step %s: %s %q; want failed naming instance ap", s.App, s.State, s.Message)
				}
			default:
				if s.State != store.StepSynced {
					t.Errorf("step %s: %s", s.App, s.State)
				}
			}
		}
	})
}

// TestSoakWatchesEveryInstance: the wave's soak watches each instance's apps through that instance's stream; an
// app degrading on the second instance fails the wave when it happens.
func TestSoakWatchesEveryInstance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		deg := &degrading{app: "eu-web-2", at: t0.Add(5 * time.Minute)}
		m := startMultiWrap(t, argocdsim.Config{SyncDuration: 20 * time.Second},
			map[string][]fleetApp{"": instanceFleet("web", 2), "eu": instanceFleet("eu-web", 2)}, nil,
			func(inst string, a rollout.ArgoCD) rollout.ArgoCD {
				if inst != "eu" {
					return a
				}
				deg.ArgoCD = a
				return deg
			})
		r := m.submitAll(onePolicy + "    soak: 30m\n")
		r = m.wait(r.ID, store.RolloutSucceeded, store.RolloutPaused, store.RolloutFailed)
		if r.State != store.RolloutPaused || !strings.Contains(r.Message, "eu-web-2 became Degraded") {
			t.Fatalf("rollout %s: %q", r.State, r.Message)
		}
		if took := time.Since(t0); took > 6*time.Minute {
			t.Errorf("the degradation at 5m was noticed after %s", took)
		}
	})
}

// TestUnreachableInstanceHoldsOnlyItsApps stops one instance mid-wave (not answering, or refusing the token),
// then brings it back: its apps wait — none failed, none skipped — while the other instance's apps go on; the
// wave says which instance and why; every app on every instance is synced exactly once.
func TestUnreachableInstanceHoldsOnlyItsApps(t *testing.T) {
	for _, tc := range []struct {
		name   string
		outage argocdsim.Outage
		why    string
	}{
		{"not answering", argocdsim.Unreachable, "connection refused"},
		{"refusing the token", argocdsim.Unauthorized, "token is expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				t0 := time.Now()
				m := startMulti(t, argocdsim.Config{SyncDuration: 30 * time.Second},
					map[string][]fleetApp{"": instanceFleet("web", 6), "eu": instanceFleet("eu-web", 6)}, nil,
					rollout.WithInstanceBudgets(map[string]int{"": 2, "eu": 2}))
				r := m.submitAll(onePolicy)
				time.Sleep(45 * time.Second) // eu's first two apps are in flight, the next two about to start
				m.sims["eu"].SetOutage(tc.outage)
				down := time.Now()
				time.Sleep(10 * time.Minute)
				// Held: the default instance's apps all done, eu's waiting, nothing failed.
				var held []string
				for _, s := range m.steps(r.ID) {
					if s.State == store.StepFailed || s.State == store.StepSkipped {
						t.Errorf("step %s %s while its instance is down: %s", s.App, s.State, s.Message)
					}
					if s.App.Instance == "" && s.State != store.StepSynced {
						t.Errorf("step %s on the reachable instance: %s", s.App, s.State)
					}
					if s.App.Instance == "eu" && s.State != store.StepSynced {
						held = append(held, s.App.Name)
					}
				}
				if len(held) == 0 {
					t.Fatal("no app of eu waits while it is down")
				}
				ws, err := m.st.ListWaves(context.Background(), r.ID)
				if err != nil {
					t.Fatal(err)
				}
				if gs := string(ws[0].GateState); !strings.Contains(gs, `"instance":"eu"`) || !strings.Contains(gs, tc.why) {
					t.Errorf("the wave's gate state does not say eu is unreachable and why: %s", gs)
				}
				m.sims["eu"].SetOutage(argocdsim.Up)
				r = m.wait(r.ID, store.RolloutSucceeded, store.RolloutFailed, store.RolloutPaused)
				if r.State != store.RolloutSucceeded {
					t.Fatalf("rollout %s: %s", r.State, r.Message)
				}
				m.expectOnce()
				var evs []string
				for _, ev := range m.events(r.ID) {
					if strings.HasPrefix(ev.Action, "instance-") {
						evs = append(evs, ev.Action+" "+ev.Target)
					}
				}
				if strings.Join(evs, ", ") != "instance-unreachable eu, instance-reachable eu" {
					t.Errorf("instance events %v", evs)
				}
				ws, _ = m.st.ListWaves(context.Background(), r.ID)
				if strings.Contains(string(ws[0].GateState), "unreachable") {
					t.Errorf("the wave still says an instance is unreachable: %s", ws[0].GateState)
				}
				t.Logf("eu down %s after the start for 10m; rollout took %s; held apps at the outage's end: %v",
					down.Sub(t0), time.Since(t0).Round(time.Second), held)
			})
		})
	}
}

// withWindows lets the executor read sync windows through an instance's own client, as the real *argocd.Client
// does: the windows check then reads every app of a batch before it starts.
type withWindows struct {
	rollout.ArgoCD
	w rollout.WindowReader
}

func (x withWindows) ProjectSyncWindows(ctx context.Context, project string) (v1alpha1.SyncWindows, error) {
	return x.w.ProjectSyncWindows(ctx, project)
}

// TestHangingInstanceDelaysOnlyItsApps: an instance that accepts connections and never answers (argocd-server
// frozen) from before the batch starts delays only its own apps. The batch's sync-window check reads every app:
// one instance's timeouts must not hold the others' apps behind them (found against two real Argo CD instances,
// the second frozen with SIGSTOP: the first's apps waited minutes).
func TestHangingInstanceDelaysOnlyItsApps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		wrap := func(inst string, a rollout.ArgoCD) rollout.ArgoCD {
			return withWindows{ArgoCD: a, w: a.(*inFlight).ArgoCD.(rollout.WindowReader)}
		}
		m := startMultiWrap(t, argocdsim.Config{SyncDuration: 30 * time.Second},
			map[string][]fleetApp{"": instanceFleet("web", 4), "eu": instanceFleet("eu-web", 4)}, nil, wrap,
			rollout.WithInstanceBudgets(map[string]int{"": 4, "eu": 4}))
		m.sims["eu"].SetOutage(argocdsim.Hanging)
		t0 := time.Now()
		r := m.submitAll(onePolicy)
		// The default instance's 4 apps sync at once and take 30 s: done well within 2 minutes, whatever eu does.
		time.Sleep(2 * time.Minute)
		var late, eu []string
		for _, s := range m.steps(r.ID) {
			switch {
			case s.App.Instance == "" && s.State != store.StepSynced:
				late = append(late, s.App.Name+" "+string(s.State))
			case s.App.Instance == "eu" && (s.State == store.StepFailed || s.State == store.StepSkipped):
				t.Errorf("eu's %s %s while eu hangs: %s", s.App.Name, s.State, s.Message)
			case s.App.Instance == "eu":
				eu = append(eu, s.App.Name+" "+string(s.State))
			}
		}
		if len(late) > 0 {
			t.Errorf("2 minutes after the start, the default instance's apps are not synced while eu hangs: %v", late)
		}
		// It says so well before the client gives up on its calls (4 retries of 60 s): the bounded window check.
		var said []string
		for _, ev := range m.events(r.ID) {
			if strings.HasPrefix(ev.Action, "instance-") {
				said = append(said, ev.Action+" "+ev.Target+": "+ev.Message)
			}
		}
		if len(said) == 0 || !strings.HasPrefix(said[0], "instance-unreachable eu: ") {
			t.Errorf("2 minutes into eu's hang, its events are %v; want instance-unreachable eu first", said)
		}
		m.sims["eu"].SetOutage(argocdsim.Up)
		r = m.wait(r.ID, store.RolloutSucceeded, store.RolloutFailed, store.RolloutPaused)
		if r.State != store.RolloutSucceeded {
			t.Fatalf("rollout %s: %s", r.State, r.Message)
		}
		m.expectOnce()
		t.Logf("eu hung from the start for 2m; eu's apps then: %v; rollout took %s", eu, time.Since(t0).Round(time.Second))
	})
}

// slowSync holds every sync request until release is closed, as an instance that accepts the request and does not
// answer it; reads answer at once.
type slowSync struct {
	rollout.ArgoCD
	release chan struct{}
}

func (x slowSync) Sync(ctx context.Context, name string, req argocd.SyncRequest) (*v1alpha1.Application, error) {
	select {
	case <-x.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return x.ArgoCD.Sync(ctx, name, req)
}

// TestUnansweredSyncMarksTheInstance: a sync request an instance has not answered for 20 s marks the instance
// not answering (an event, the wave's gate state) long before the client gives up on the call; its answer marks
// it answering again, and each app is synced once.
func TestUnansweredSyncMarksTheInstance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		wrap := func(inst string, a rollout.ArgoCD) rollout.ArgoCD {
			if inst == "eu" {
				return slowSync{ArgoCD: a, release: release}
			}
			return a
		}
		m := startMultiWrap(t, argocdsim.Config{SyncDuration: 10 * time.Second},
			map[string][]fleetApp{"": instanceFleet("web", 2), "eu": instanceFleet("eu-web", 2)}, nil, wrap,
			rollout.WithInstanceBudgets(map[string]int{"": 2, "eu": 2}))
		r := m.submitAll(onePolicy)
		time.Sleep(time.Minute)
		said := func() (out []string) {
			for _, ev := range m.events(r.ID) {
				if strings.HasPrefix(ev.Action, "instance-") {
					out = append(out, ev.Action+" "+ev.Target+": "+ev.Message)
				}
			}
			return out
		}
		if got := said(); len(got) != 1 || got[0] != "instance-unreachable eu: no answer to a request for 20s" {
			t.Errorf("a minute into eu's unanswered syncs, its events are %v", got)
		}
		close(release)
		r = m.wait(r.ID, store.RolloutSucceeded, store.RolloutFailed, store.RolloutPaused)
		if r.State != store.RolloutSucceeded {
			t.Fatalf("rollout %s: %s", r.State, r.Message)
		}
		m.expectOnce()
		if got := said(); len(got) != 2 || !strings.HasPrefix(got[1], "instance-reachable eu") {
			t.Errorf("events after eu answered: %v", got)
		}
	})
}

// TestAbortRestoresAutomatedSyncOnEveryInstance: a rollout across two instances switches automated sync off on
// each app's own instance; aborted while production awaits approval, it switches it back on for every app of
// both instances, each on its own instance (the apps it synced and the ones it had not started).
func TestAbortRestoresAutomatedSyncOnEveryInstance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fleets := map[string][]fleetApp{
			"":   {{name: "web-test-1", cluster: "test-1", env: "test", region: "eu", automated: true}, {name: "web-prd-1", cluster: "prd-1", env: "prd", region: "eu", automated: true}},
			"us": {{name: "us-test-1", cluster: "us-test-1", env: "test", region: "us"}, {name: "us-prd-1", cluster: "us-prd-1", env: "prd", region: "us", automated: true}},
		}
		m := startMulti(t, argocdsim.Config{SyncDuration: 10 * time.Second}, fleets, nil)
		on := func() []string {
			var out []string
			for inst, sim := range m.sims {
				for _, fa := range fleets[inst] {
					if a, _ := sim.App(fa.name); autosync.On(&a) {
						out = append(out, inst+"/"+fa.name)
					}
				}
			}
			slices.Sort(out)
			return out
		}
		want := []string{"/web-prd-1", "/web-test-1", "us/us-prd-1"}
		if got := on(); !slices.Equal(got, want) {
			t.Fatalf("before the rollout, automated sync on for %v; want %v", got, want)
		}
		r := m.submitAll(approvalPolicy + `apiVersion: fleetwave/v1
waves:
  - name: canary
    selector: {matchLabels: {env: test}}
  - name: production
    selector: {matchLabels: {env: prd}}
    approval: {teams: [org/sre]}
`)
		if r = m.wait(r.ID, store.RolloutAwaitingApproval, store.RolloutFailed, store.RolloutPaused); r.State != store.RolloutAwaitingApproval {
			t.Fatalf("rollout %s: %s", r.State, r.Message)
		}
		if got := on(); len(got) != 0 {
			t.Fatalf("automated sync on during the rollout for %v", got)
		}
		if _, err := m.ex.Abort(context.Background(), r.ID, "alice"); err != nil {
			t.Fatal(err)
		}
		m.wait(r.ID, store.RolloutAborted)
		if got := on(); !slices.Equal(got, want) {
			t.Errorf("after the abort, automated sync on for %v; want %v", got, want)
		}
	})
}
