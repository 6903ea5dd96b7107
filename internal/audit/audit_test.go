package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/health"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/audit"
	"github.com/fleetwave/fleetwave/internal/checkrun/checkruntest"
	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/rollout"
	"github.com/fleetwave/fleetwave/internal/testkit/golden"
)

const (
	oldRev  = "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a"
	newRev  = "1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b"
	repoURL = "https://git.example.com/fleet/gitops.git"
	repo    = "fleet/gitops"
)

// policy: a canary with a soak, then production one app at a time after an approval.
const policy = `apiVersion: fleetwave/v1
waves:
  - name: canary
    selector: {matchLabels: {env: test}}
    soak: 5m
  - name: production
    selector: {matchLabels: {env: prd}}
    maxParallel: 1
    approval: {teams: [org/sre]}
`

// fleet: each app syncs in its own time, so that the results of a rollback's concurrent syncs come in one order.
var fleet = []struct {
	name, cluster, env string
	sync               time.Duration
}{
	{"web-test-1", "test-1", "test", time.Minute},
	{"web-prd-1", "prd-1", "prd", 2 * time.Minute},
	{"web-prd-2", "prd-2", "prd", 3 * time.Minute},
}

// rolledOut runs a rollout on the simulator, in the synctest bubble's virtual time, through an approval, a
// pause and a resume, to success, then rolls it back; it returns the store it was recorded in (closed by the
// test's cleanup) and the rollout's id.
func rolledOut(t *testing.T, dbPath string) int64 {
	t.Helper()
	ctx := context.Background()
	sim := argocdsim.New(argocdsim.Config{SyncDuration: time.Minute})
	t.Cleanup(sim.Close)
	sim.SetRef("HEAD", oldRev)
	var apps []plan.App
	for _, fa := range fleet {
		a := &v1alpha1.Application{}
		a.Name, a.Labels = fa.name, map[string]string{"env": fa.env}
		a.Spec.Source = &v1alpha1.ApplicationSource{RepoURL: repoURL, Path: "apps/web", TargetRevision: "HEAD"}
		a.Spec.Destination = v1alpha1.ApplicationDestination{Name: fa.cluster, Namespace: "web"}
		if err := sim.AddApp(a, argocdsim.AppOptions{LiveRevisions: []string{oldRev}, Health: health.HealthStatusHealthy,
			Behavior: argocdsim.Behavior{SyncDuration: fa.sync}}); err != nil {
			t.Fatal(err)
		}
		apps = append(apps, plan.App{Name: fa.name, Namespace: "argocd", Project: "default", Cluster: fa.cluster,
			ClusterLabels: map[string]string{"env": fa.env}, Labels: map[string]string{}})
	}
	sim.SetRef("HEAD", newRev)
	argo, err := argocd.New(argocd.Options{BaseURL: "http://argocd.sim", HTTPClient: sim.HTTPClient(),
		RetryInitialInterval: 100 * time.Millisecond, RetryMaxInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, "sqlite://"+dbPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ex := rollout.New(st, argo, &checkruntest.Reporter{}, rollout.WithOwner("bot-1"), rollout.WithGateInterval(time.Minute))
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(runCtx) }()
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), time.Hour)
		defer scancel()
		_ = ex.Stop(sctx)
		cancel()
		<-done
	})
	p, err := plan.ParsePolicy(".fleetwave.yaml", []byte(policy))
	if err != nil {
		t.Fatal(err)
	}
	pl := plan.Build(p, apps)
	if !pl.OK() {
		t.Fatalf("plan violations: %+v", pl.Violations)
	}
	r, err := ex.Submit(ctx, rollout.NewRequest(rollout.Change{Repo: repo, PRNumber: 7, MergeSHA: newRev, BaseSHA: oldRev,
		Plan: pl, Policy: p, RepoURL: repoURL, MergedBy: "alice"}))
	if err != nil {
		t.Fatal(err)
	}
	wait := func(states ...store.RolloutState) {
		t.Helper()
		for deadline := time.Now().Add(6 * time.Hour); ; time.Sleep(time.Second) {
			// Everything the executor does at this instant is done before the state is read, so that the
			// commands below come at the same virtual time on every run.
			synctest.Wait()
			cur, err := st.GetRollout(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range states {
				if cur.State == s {
					synctest.Wait()
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("rollout is %s (%s), never reached %v", cur.State, cur.Message, states)
			}
		}
	}
	wait(store.RolloutAwaitingApproval)
	if _, err := ex.Pause(ctx, r.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	wait(store.RolloutPaused)
	time.Sleep(10 * time.Minute)
	if _, err := ex.Resume(ctx, r.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	wait(store.RolloutAwaitingApproval)
	if _, err := ex.Approve(ctx, r.ID, "production", "carol"); err != nil {
		t.Fatal(err)
	}
	wait(store.RolloutSucceeded, store.RolloutFailed)
	time.Sleep(time.Hour)
	if _, err := ex.Rollback(ctx, r.ID, "all", "dave"); err != nil {
		t.Fatal(err)
	}
	wait(store.RolloutRolledBack)
	return r.ID
}

// TestExportOfARolloutFromTheStore: a rollout run on the simulator with an approval, a pause, a resume and a
// rollback is exported, from its store alone (opened again, as after a restart), with every event in order and
// who did it when, as JSON lines and as text (golden files).
func TestExportOfARolloutFromTheStore(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "fleetwave.db")
	synctest.Test(t, func(t *testing.T) { rolledOut(t, dbPath) })

	st, err := store.Open(context.Background(), "sqlite://"+dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var jsonl, txt bytes.Buffer
	// A small page size: the export reads the store page by page.
	opts := audit.Options{PageSize: 7}
	if _, err := audit.Export(context.Background(), st, store.HistoryFilter{}, opts, audit.JSONLines(&jsonl)); err != nil {
		t.Fatal(err)
	}
	if _, err := audit.Export(context.Background(), st, store.HistoryFilter{}, opts, audit.TextLines(&txt)); err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "rollout.jsonl", jsonl.String())
	golden.Assert(t, "rollout.txt", txt.String())

	// What the record must hold, whatever else it says.
	var recs []audit.Record
	for _, line := range strings.Split(strings.TrimSpace(jsonl.String()), "\n") {
		var r audit.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		recs = append(recs, r)
	}
	seen := map[string]audit.Record{}
	for i, r := range recs {
		if i > 0 && (r.ID <= recs[i-1].ID || r.At.Before(recs[i-1].At)) {
			t.Errorf("record %d (%s) is out of order", r.ID, r.Action)
		}
		if r.Rollout.MergedBy != "alice" || r.Rollout.PRURL != "https://github.com/fleet/gitops/pull/7" || r.Rollout.PlanDigest == "" {
			t.Errorf("record %d: rollout %+v", r.ID, r.Rollout)
		}
		key := r.Actor + " " + r.Action + " " + r.Result
		if r.App != nil {
			key += " " + r.App.String()
		}
		seen[key] = r
	}
	for _, want := range []string{
		"alice merged ok", "fleetwave created ok", "fleetwave wave-started ok", "fleetwave soak-passed ok",
		"bob pause ok", "bob resume ok", "carol approve ok", "fleetwave wave-succeeded ok", "fleetwave succeeded ok",
		"dave rollback ok", "fleetwave rollback-finished ok",
		"fleetwave app-sync synced argocd/web-test-1", "fleetwave app-sync synced argocd/web-prd-1", "fleetwave app-sync synced argocd/web-prd-2",
		"fleetwave app-rollback rolled-back argocd/web-test-1", "fleetwave app-rollback rolled-back argocd/web-prd-2",
	} {
		if _, ok := seen[want]; !ok {
			t.Errorf("no record %q", want)
		}
	}
	if r := seen["carol approve ok"]; r.Wave != "production" || r.WaveCheckRun == nil {
		t.Errorf("approval record: wave %q, check-run %+v", r.Wave, r.WaveCheckRun)
	}
	if r := seen["fleetwave app-rollback rolled-back argocd/web-prd-1"]; r.App == nil || r.App.Revision != oldRev || r.App.Cluster != "prd-1" || r.Wave != "production" {
		t.Errorf("rollback record of web-prd-1: %+v", r.App)
	}
	if r := seen["fleetwave created ok"]; len(r.Plan) == 0 {
		t.Error("the created record carries no plan")
	}
}
