package app_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/health"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/jonboulle/clockwork"

	"github.com/fleetwave/fleetwave/internal/app"
	"github.com/fleetwave/fleetwave/internal/autosync"
	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/edge/store"
)

// holdEnv is a simulated Argo CD where payments-prd-eu-1 runs with automated sync and self-heal, and a store.
type holdEnv struct {
	sim *argocdsim.Server
	st  *store.Store
	h   *watchedHolder
}

// watchedHolder is the real Holder, recording the plan check's status at each hold: it must not be completed
// yet (green only once the hold is in place).
type watchedHolder struct {
	*autosync.Holder
	h        *harness
	mu       sync.Mutex
	atHold   []string
	released int
}

func (w *watchedHolder) Hold(ctx context.Context, o autosync.Owner, apps []store.AppKey) (autosync.Result, error) {
	w.mu.Lock()
	for _, cr := range w.h.fake.CheckRuns(repoFullName) {
		if cr.HeadSHA == o.Head && cr.Name == app.CheckPlan {
			w.atHold = append(w.atHold, cr.Status)
		}
	}
	w.mu.Unlock()
	return w.Holder.Hold(ctx, o, apps)
}

func (w *watchedHolder) Release(ctx context.Context, repo string, pr int, head string) (autosync.Result, error) {
	w.mu.Lock()
	w.released++
	w.mu.Unlock()
	return w.Holder.Release(ctx, repo, pr, head)
}

func newHoldEnv(t *testing.T) *holdEnv {
	t.Helper()
	sim := argocdsim.New(argocdsim.Config{Clock: clockwork.NewFakeClock()})
	t.Cleanup(sim.Close)
	a := &v1alpha1.Application{}
	a.Name = "payments-prd-eu-1"
	a.Spec.Source = &v1alpha1.ApplicationSource{RepoURL: repoHTMLURL + ".git", Path: "manifests/payments", TargetRevision: "main"}
	a.Spec.Destination = v1alpha1.ApplicationDestination{Name: "prd-eu-1", Namespace: "payments"}
	a.Spec.SyncPolicy = &v1alpha1.SyncPolicy{Automated: &v1alpha1.SyncPolicyAutomated{SelfHeal: new(true)}}
	sim.SetRef("main", "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a")
	if err := sim.AddApp(a, argocdsim.AppOptions{LiveRevisions: []string{"0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a"}, Health: health.HealthStatusHealthy}); err != nil {
		t.Fatal(err)
	}
	c, err := argocd.New(argocd.Options{BaseURL: "http://argocd.sim", HTTPClient: sim.HTTPClient()})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "fw.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &holdEnv{sim: sim, st: st, h: &watchedHolder{Holder: &autosync.Holder{Argo: c, Store: st}}}
}

// paymentsOn reports whether payments-prd-eu-1's automated sync is on (and unmarked when on).
func (e *holdEnv) paymentsOn(t *testing.T) bool {
	t.Helper()
	a, _ := e.sim.App("payments-prd-eu-1")
	if autosync.On(&a) {
		if autosync.Switched(&a) || !a.Spec.SyncPolicy.Automated.GetSelfHeal() {
			t.Errorf("restored app not as it was: %+v %v", a.Spec.SyncPolicy.Automated, a.Annotations)
		}
		return true
	}
	if !autosync.Switched(&a) || a.Labels[autosync.Label] != "true" {
		t.Errorf("app off without fleetwave's annotation and label: %v %v", a.Annotations, a.Labels)
	}
	return false
}

func automatedPayments(t *testing.T) func(string) {
	return edit(t, "apps/payments.yaml", func(s string) string { return s + "  syncPolicy:\n    automated:\n      selfHeal: true\n" })
}

// TestPlanCheckHoldsAutomatedSyncBeforeItPasses: a pull request whose plan rolls out payments (automated sync)
// under automatedSync: disable-during-rollout: automated sync is switched off before fleetwave/plan completes,
// which then says so; a new head that no longer plans it releases it; closing the PR unmerged restores it.
func TestPlanCheckHoldsAutomatedSyncBeforeItPasses(t *testing.T) {
	f := newFixture(t,
		func(dir string) {
			edit(t, ".fleetwave.yaml", func(s string) string { return "automatedSync: disable-during-rollout\n" + s })(dir)
			automatedPayments(t)(dir)
			edit(t, "manifests/payments/deployment.yaml", func(s string) string { return strings.Replace(s, "replicas: 2", "replicas: 3", 1) })(dir)
		},
		// The second head takes automated sync out of payments' Application: nothing to hold any more.
		edit(t, "apps/payments.yaml", func(s string) string {
			return strings.Replace(s, "  syncPolicy:\n    automated:\n      selfHeal: true\n", "", 1)
		}),
	)
	e := newHoldEnv(t)
	h := newHarness(t, nil, app.WithAutomatedSyncHolds(e.h))
	e.h.h = h
	first := f.heads[0]
	h.openPR(f, first)
	if code := h.send("pull_request", "", prPayload(t, "pull_request/opened.json", f, first)); code != http.StatusAccepted {
		t.Fatalf("opened answered %d", code)
	}
	h.wait()
	planRun := h.runsOn(first)[app.CheckPlan][0]
	if planRun.Conclusion != "success" || !strings.Contains(planRun.Summary, "Automated sync held off for 1 app until the rollout ends or the PR closes") {
		t.Fatalf("fleetwave/plan: %s %q\n%s", planRun.Conclusion, planRun.Title, planRun.Summary)
	}
	if e.paymentsOn(t) {
		t.Fatal("payments' automated sync is on after the plan check passed")
	}
	if len(e.h.atHold) != 1 || e.h.atHold[0] == "completed" {
		t.Errorf("plan check status at the hold: %v; want it still in progress", e.h.atHold)
	}
	hs, err := e.st.ListHolds(context.Background(), store.HoldFilter{})
	if err != nil || len(hs) != 1 || hs[0].PR != 2 || hs[0].Head != first || hs[0].App.Name != "payments-prd-eu-1" {
		t.Fatalf("holds recorded: %+v, %v", hs, err)
	}

	// The new head plans no app with automated sync: the hold is released.
	second := f.heads[1]
	h.openPR(f, second)
	if code := h.send("pull_request", "", prPayload(t, "pull_request/synchronize.json", f, second)); code != http.StatusAccepted {
		t.Fatalf("synchronize answered %d", code)
	}
	h.wait()
	if !e.paymentsOn(t) {
		t.Fatal("payments' automated sync still off after the head stopped planning it")
	}
	if hs, _ := e.st.ListHolds(context.Background(), store.HoldFilter{}); len(hs) != 0 {
		t.Fatalf("holds left: %+v", hs)
	}
}

func TestClosedUnmergedRestoresAutomatedSync(t *testing.T) {
	f := newFixture(t, func(dir string) {
		edit(t, ".fleetwave.yaml", func(s string) string { return "automatedSync: disable-during-rollout\n" + s })(dir)
		automatedPayments(t)(dir)
		edit(t, "manifests/payments/deployment.yaml", func(s string) string { return strings.Replace(s, "replicas: 2", "replicas: 3", 1) })(dir)
	})
	e := newHoldEnv(t)
	h := newHarness(t, nil, app.WithAutomatedSyncHolds(e.h))
	e.h.h = h
	h.open(f)
	if e.paymentsOn(t) {
		t.Fatal("not held")
	}
	closed := payload(t, "pull_request/closed-merged.json", map[string]any{
		"repository.clone_url":  f.cloneURL(),
		"pull_request.head.sha": f.head(),
		"pull_request.base.sha": f.base,
		"pull_request.merged":   false,
	})
	if code := h.send("pull_request", "", closed); code != http.StatusAccepted {
		t.Fatalf("closed answered %d", code)
	}
	h.wait()
	if !e.paymentsOn(t) {
		t.Fatal("payments' automated sync still off after the PR closed unmerged")
	}
	if len(h.merges.merges) != 0 {
		t.Errorf("a merge was handed over for a PR closed unmerged")
	}
}

func TestForkIsNeverHeld(t *testing.T) {
	f := newFixture(t, func(dir string) {
		edit(t, ".fleetwave.yaml", func(s string) string { return "automatedSync: disable-during-rollout\n" + s })(dir)
		automatedPayments(t)(dir)
		edit(t, "manifests/payments/deployment.yaml", func(s string) string { return strings.Replace(s, "replicas: 2", "replicas: 3", 1) })(dir)
	})
	e := newHoldEnv(t)
	h := newHarness(t, nil, app.WithAutomatedSyncHolds(e.h))
	e.h.h = h
	h.openPR(f, f.head())
	body := payload(t, "pull_request/opened.json", map[string]any{
		"repository.clone_url":             f.cloneURL(),
		"pull_request.head.sha":            f.head(),
		"pull_request.base.sha":            f.base,
		"pull_request.head.repo.full_name": "mallory/Hello-World-fork",
	})
	if code := h.send("pull_request", "", body); code != http.StatusAccepted {
		t.Fatalf("delivery answered %d", code)
	}
	h.wait()
	planRun := h.runsOn(f.head())[app.CheckPlan][0]
	first, _, _ := strings.Cut(planRun.Summary, "\n")
	if planRun.Conclusion != "failure" || !strings.Contains(first, "only for branches of this repository") || !strings.Contains(first, "fork") {
		t.Fatalf("fleetwave/plan of a fork: %s %q\n%s", planRun.Conclusion, planRun.Title, planRun.Summary)
	}
	if !e.paymentsOn(t) || len(e.h.atHold) != 0 {
		t.Fatal("a fork's pull request switched automated sync off")
	}
}
