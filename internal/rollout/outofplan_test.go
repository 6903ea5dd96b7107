package rollout_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/autosync"
	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/rollout"
)

// The fleet of issue #32's trials: a test wave of 2 apps with a soak, a production wave of 4 apps with an
// approval before it; every app tracks HEAD of the repository.
func autosyncFleet(automated bool) []fleetApp {
	return []fleetApp{
		{name: "web-test-1", cluster: "test-1", env: "test", region: "eu", automated: automated},
		{name: "web-test-2", cluster: "test-2", env: "test", region: "us", automated: automated},
		{name: "web-prd-1", cluster: "prd-1", env: "prd", region: "eu", automated: automated},
		{name: "web-prd-2", cluster: "prd-2", env: "prd", region: "us", automated: automated},
		{name: "web-prd-3", cluster: "prd-3", env: "prd", region: "eu", automated: automated},
		{name: "web-prd-4", cluster: "prd-4", env: "prd", region: "us", automated: automated},
	}
}

const autosyncPolicy = `apiVersion: fleetwave/v1
automatedSync: disable-during-rollout
waves:
  - name: test
    selector: {matchLabels: {env: test}}
    soak: 30s
  - name: prd
    selector: {matchLabels: {env: prd}}
    approval: {}
`

// simAsMeasured is the simulator with issue #32's timings on the real Argo CD v3.6.1: automated syncs start
// 0.2-0.4 s after the webhook (one reconciliation), and fleetwave's requests take tens of milliseconds each.
var simAsMeasured = argocdsim.Config{ReconcileDelay: 200 * time.Millisecond, APILatency: 50 * time.Millisecond,
	SyncDuration: 2 * time.Second, Username: "fleetwave", Users: map[string]string{"alice-token": "alice"}}

// push delivers GitHub's push event of the merge (HEAD of main moves to newRev) to the simulator's
// /api/webhook, as GitHub does the moment the merge lands.
func push(t *testing.T, sim *argocdsim.Server) {
	t.Helper()
	body := `{"ref":"refs/heads/main","before":"` + oldRev + `","after":"` + newRev + `",` +
		`"repository":{"html_url":"https://git.example.com/fleet/gitops","default_branch":"main"}}`
	req, err := http.NewRequest(http.MethodPost, "http://argocd.sim/api/webhook", strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	resp, err := sim.HTTPClient().Do(req)
	if err != nil {
		t.Error(err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("webhook answered %s", resp.Status)
	}
}

// syncedBy counts, per initiator ("automated", a username), the apps whose operations applied rev, from the
// simulator's record of them (operation state and history), not from fleetwave's.
func syncedBy(e *env, apps []string, rev string) map[string]int {
	out := map[string]int{}
	for _, name := range apps {
		a, _ := e.sim.App(name)
		by := ""
		if op := a.Operation; op != nil && op.Sync != nil && op.Sync.Revision == rev {
			by = initiatorName(op.InitiatedBy)
		} else if os := a.Status.OperationState; os != nil && os.SyncResult != nil && os.SyncResult.Revision == rev {
			by = initiatorName(os.Operation.InitiatedBy)
		} else {
			for _, h := range a.Status.History {
				if h.Revision == rev {
					by = initiatorName(h.InitiatedBy)
				}
			}
		}
		if by != "" {
			out[by]++
		}
	}
	return out
}

func initiatorName(i v1alpha1.OperationInitiator) string {
	if i.Automated {
		return "automated"
	}
	return i.Username
}

// hold switches automated sync off before the merge lands, as a hold does (annotation and label as the
// executor's own switch, so the rollout restores it).
func hold(t *testing.T, e *env) {
	t.Helper()
	// The hold the App's plan check and `fleetwave rollout prepare` place (autosync.Holder), for the pull request
	// e.submit merges (7): the rollout takes it over when it starts.
	keys := make([]store.AppKey, 0, len(e.apps))
	for _, fa := range e.apps {
		keys = append(keys, store.AppKey{Namespace: "argocd", Name: fa.name})
	}
	h := &autosync.Holder{Argo: e.argo, Store: e.st}
	res, err := h.Hold(context.Background(), autosync.Owner{Repo: repo, PR: 7, Head: "pr7head"}, keys)
	if err != nil || len(res.Switched) != len(keys) {
		t.Fatalf("Hold = %+v, %v; want all %d apps switched off", res, err, len(keys))
	}
}

// TestOutOfPlanSync: an app synced to the merge by someone else before its wave — Argo CD's automated sync
// refreshed by the push webhook, or a person — is recorded out-of-plan with who did it (never skipped, never
// "not started"), shown on its wave's check-run, and pauses the rollout unless the policy says continue; it is
// never synced again by the rollout.
func TestOutOfPlanSync(t *testing.T) {
	for _, tc := range []struct {
		name      string
		automated bool
		policy    string
		// act happens once the production wave waits for its approval (the push, for automated apps, happens at
		// the rollout's start).
		act        func(t *testing.T, e *env)
		wantPaused bool
		wantBy     string   // the out-of-plan message names this initiator
		outOfPlan  []string // apps recorded out-of-plan
		fleetSyncs int      // syncs fleetwave requested
	}{
		{
			// fleetwave switches the test apps off in time (it reads and patches them first), not the rest.
			name: "automated sync after the push webhook, before any wave", automated: true, policy: autosyncPolicy,
			wantPaused: true, wantBy: "automated sync", fleetSyncs: 2,
			outOfPlan: []string{"web-prd-1", "web-prd-2", "web-prd-3", "web-prd-4"},
		},
		{
			name: "a person syncs a production app while its wave awaits approval", policy: autosyncPolicy,
			act: func(t *testing.T, e *env) {
				alice, err := argocd.New(argocd.Options{BaseURL: "http://argocd.sim", Token: "alice-token", HTTPClient: e.sim.HTTPClient()})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := alice.Sync(context.Background(), "web-prd-2", argocd.SyncRequest{Revision: newRev}); err != nil {
					t.Fatal(err)
				}
			},
			wantPaused: true, wantBy: "user alice", outOfPlan: []string{"web-prd-2"}, fleetSyncs: 5,
		},
		{
			name: "outOfPlanSync: continue reports and carries on", policy: "outOfPlanSync: continue\n" + autosyncPolicy,
			act: func(t *testing.T, e *env) {
				alice, err := argocd.New(argocd.Options{BaseURL: "http://argocd.sim", Token: "alice-token", HTTPClient: e.sim.HTTPClient()})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := alice.Sync(context.Background(), "web-prd-3", argocd.SyncRequest{Revision: newRev}); err != nil {
					t.Fatal(err)
				}
			},
			wantBy: "user alice", outOfPlan: []string{"web-prd-3"}, fleetSyncs: 5,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := start(t, envConfig{sim: simAsMeasured, apps: autosyncFleet(tc.automated)})
				if tc.automated {
					go push(t, e.sim) // the merge's push, delivered as the rollout starts
				} else {
					e.sim.RefreshAll()
				}
				r := e.submit(tc.policy, newRev)
				if tc.act != nil {
					e.wait(r.ID, store.RolloutAwaitingApproval)
					tc.act(t, e)
					time.Sleep(5 * time.Second)
				}
				r = e.wait(r.ID, store.RolloutPaused, store.RolloutAwaitingApproval)
				if paused := r.State == store.RolloutPaused; paused != tc.wantPaused {
					t.Fatalf("rollout %s (%s), paused %v want %v", r.State, r.Message, paused, tc.wantPaused)
				}
				if tc.wantPaused && !strings.Contains(r.Message, "outside the plan") {
					t.Errorf("the pause does not say why: %s", r.Message)
				}
				// Every app running the merge is out-of-plan or synced by fleetwave; none skipped or not started.
				var got []string
				for _, s := range e.steps(r.ID) {
					runsMerge := e.liveRev(s.App.Name) == newRev || syncedBy(e, []string{s.App.Name}, newRev)["automated"] > 0
					switch {
					case s.State == store.StepOutOfPlan:
						got = append(got, s.App.Name)
						if !strings.HasPrefix(s.Message, rollout.OutOfPlanPrefix+tc.wantBy) {
							t.Errorf("%s: message %q, want it to start %q", s.App.Name, s.Message, rollout.OutOfPlanPrefix+tc.wantBy)
						}
					case runsMerge && s.State != store.StepSynced && !s.State.InFlight():
						t.Errorf("%s runs the merge but is %s: %s", s.App.Name, s.State, s.Message)
					}
				}
				if strings.Join(got, ",") != strings.Join(tc.outOfPlan, ",") {
					t.Errorf("out-of-plan apps %v, want %v", got, tc.outOfPlan)
				}
				// Reported on the wave's check-run.
				if cr, ok := e.rep.Latest("fleetwave/wave: prd"); !ok || cr.Output == nil || !strings.Contains(cr.Output.Title, "synced outside the plan") {
					t.Errorf("the prd wave's check-run does not report it: %+v", cr.Output)
				}
				// Resumed (or never paused) and approved, the rollout ends without syncing those apps again.
				if r.State == store.RolloutPaused {
					if _, err := e.ex.Resume(context.Background(), r.ID, "alice"); err != nil {
						t.Fatal(err)
					}
					if tc.automated {
						// Argo CD synced everything; the rollout has nothing left to do but its gates.
						e.wait(r.ID, store.RolloutAwaitingApproval, store.RolloutSucceeded)
					} else {
						e.wait(r.ID, store.RolloutAwaitingApproval)
					}
				}
				if cur := e.wait(r.ID, store.RolloutAwaitingApproval, store.RolloutSucceeded); cur.State == store.RolloutAwaitingApproval {
					if _, err := e.ex.Approve(context.Background(), r.ID, "prd", "alice"); err != nil {
						t.Fatal(err)
					}
				}
				e.wait(r.ID, store.RolloutSucceeded)
				n := 0
				for _, c := range e.syncs() {
					n += c
				}
				if by := syncedBy(e, names(e.apps, ""), newRev); by["fleetwave"] != tc.fleetSyncs || n != tc.fleetSyncs+len(tc.outOfPlan)-by["automated"] {
					t.Errorf("syncs to the merge by initiator %v (sync requests %d); want %d by fleetwave", by, n, tc.fleetSyncs)
				}
			})
		})
	}
}

// TestAutomatedSyncTrials are issue #32's trials in the simulator: the merge's push webhook arrives at the same
// instant as the rollout starts. With the hold (automated sync switched off before the merge lands) no
// production app is synced before the approval and the test wave is synced by fleetwave, in N of N trials;
// without it Argo CD's automated sync outruns the waves and the rollout reports it and pauses.
func TestAutomatedSyncTrials(t *testing.T) {
	const trials = 10
	for _, withHold := range []bool{true, false} {
		name := map[bool]string{true: "with the hold", false: "without the hold"}[withHold]
		t.Run(name, func(t *testing.T) {
			var ok, prodEarly, testByFleet, paused int
			for i := range trials {
				synctest.Test(t, func(t *testing.T) {
					cfg := simAsMeasured
					cfg.Seed = uint64(i + 1)
					e := start(t, envConfig{sim: cfg, apps: autosyncFleet(true)})
					if withHold {
						hold(t, e)
					}
					go push(t, e.sim)
					r := e.submit(autosyncPolicy, newRev)
					r = e.wait(r.ID, store.RolloutAwaitingApproval, store.RolloutPaused)
					prd := syncedBy(e, names(e.apps, "prd"), newRev)
					test := syncedBy(e, names(e.apps, "test"), newRev)
					early := prd["automated"] + prd["fleetwave"] + prd["alice"]
					prodEarly += early
					testByFleet += test["fleetwave"]
					if r.State == store.RolloutPaused {
						paused++
					}
					if withHold && early == 0 && test["fleetwave"] == 2 && r.State == store.RolloutAwaitingApproval {
						ok++
					}
					if !withHold && r.State == store.RolloutPaused && strings.Contains(r.Message, "outside the plan") {
						ok++
					}
				})
			}
			t.Logf("%s: %d of %d trials as expected; production apps synced before the approval: %d; test apps synced by fleetwave: %d; rollouts paused: %d",
				name, ok, trials, prodEarly, testByFleet, paused)
			if ok != trials {
				t.Errorf("%s: %d of %d trials as expected", name, ok, trials)
			}
		})
	}
}
