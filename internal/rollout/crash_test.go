package rollout_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/health"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/rollout"
)

// TestCrashRecovery kills the bot with SIGKILL at random moments of a rollout and restarts it, over and over:
// every trial must end with each app synced exactly once to the merge revision — or, in the trials whose
// policy rolls back on failure, synced forward once and back once (the simulated Argo CD counts the sync
// requests per app and lives in this process, so the counts survive the kills).
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts bot processes (about 20s); skipped with -short")
	}
	trials := 20
	if n, err := strconv.Atoi(os.Getenv("FLEETWAVE_CRASH_TRIALS")); err == nil && n > 0 {
		trials = n
	}
	seed := uint64(time.Now().UnixNano())
	if n, err := strconv.ParseUint(os.Getenv("FLEETWAVE_CRASH_SEED"), 10, 64); err == nil {
		seed = n
	}
	t.Logf("seed %d (FLEETWAVE_CRASH_SEED=%d reproduces the kill times)", seed, seed)
	began := time.Now()
	type outcome struct {
		kills, reconciled int
		took              time.Duration
		err               error
	}
	results := make([]outcome, trials)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i := range trials {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			start := time.Now()
			kills, reconciled, err := crashTrial(t.TempDir(), seed+uint64(i), i%2 == 1)
			results[i] = outcome{kills, reconciled, time.Since(start), err}
		}()
	}
	wg.Wait()
	totalKills, totalReconciled := 0, 0
	for i, r := range results {
		totalKills += r.kills
		totalReconciled += r.reconciled
		if r.err != nil {
			t.Errorf("trial %d (seed %d, rollback %v, %d kills): %v", i, seed+uint64(i), i%2 == 1, r.kills, r.err)
		}
	}
	t.Logf("%d trials, %d SIGKILLs, %d app steps found in flight and reconciled after a kill, %s", trials, totalKills,
		totalReconciled, time.Since(began).Round(time.Millisecond))
}

// crashTrial runs one rollout through kills and restarts and checks the end state.
func crashTrial(dir string, seed uint64, rollback bool) (kills, reconciled int, err error) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	sim := argocdsim.New(argocdsim.Config{SyncDuration: 150 * time.Millisecond, ReconcileDelay: 20 * time.Millisecond, Seed: seed})
	defer sim.Close()
	apps := []fleetApp{
		{name: "a-test-1", cluster: "test-1", env: "test", region: "eu"},
		{name: "a-stg-1", cluster: "stg-1", env: "stg", region: "eu"},
		{name: "a-stg-2", cluster: "stg-2", env: "stg", region: "us"},
		{name: "a-prd-1", cluster: "prd-1", env: "prd", region: "eu"},
		{name: "a-prd-2", cluster: "prd-2", env: "prd", region: "us"},
		{name: "a-prd-3", cluster: "prd-3", env: "prd", region: "eu"},
	}
	failingApp := ""
	if rollback {
		failingApp = "a-prd-2"
	}
	sim.SetRef("HEAD", oldRev)
	var in []plan.App
	for _, fa := range apps {
		a := &v1alpha1.Application{}
		a.Name = fa.name
		a.Spec.Source = &v1alpha1.ApplicationSource{RepoURL: repoURL, Path: "apps/" + fa.name, TargetRevision: "HEAD"}
		a.Spec.Destination = v1alpha1.ApplicationDestination{Name: fa.cluster, Namespace: "web"}
		b := argocdsim.Behavior{}
		if fa.name == failingApp {
			b = argocdsim.Behavior{Fail: true}
		}
		if err := sim.AddApp(a, argocdsim.AppOptions{LiveRevisions: []string{oldRev}, Health: health.HealthStatusHealthy, Behavior: b}); err != nil {
			return 0, 0, err
		}
		in = append(in, plan.App{Name: fa.name, Namespace: "argocd", Cluster: fa.cluster,
			ClusterLabels: map[string]string{"env": fa.env, "region": fa.region}})
	}
	sim.SetRef("HEAD", newRev)
	srv := httptest.NewServer(sim.Handler())
	defer srv.Close()

	pol := basePolicy("", "", "")
	if rollback {
		pol = "onFailure: rollback\n" + pol
	}
	p, err := plan.ParsePolicy(".fleetwave.yaml", []byte(pol))
	if err != nil {
		return 0, 0, err
	}
	dsn := "sqlite://" + filepath.Join(dir, "fleetwave.db")
	ctx := context.Background()
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return 0, 0, err
	}
	r, err := rollout.New(st, nil, nil).Submit(ctx, rollout.Request{Repo: repo, MergeSHA: newRev, BaseSHA: oldRev,
		Plan: plan.Build(p, in), RepoURL: repoURL})
	st.Close()
	if err != nil {
		return 0, 0, err
	}

	cfg := botConfig{Store: dsn, ArgoCD: srv.URL, Owner: "bot-1", Concurrency: 10, Control: 50 * time.Millisecond,
		Claim: 100 * time.Millisecond, Poll: 50 * time.Millisecond, Grace: 300 * time.Millisecond, LeaseTTL: 10 * time.Second,
		Stall: 2 * time.Second}
	planned := 1 + rng.IntN(4)
	var logs []string
	for run := 0; ; run++ {
		if run > 12 {
			return kills, reconciled, fmt.Errorf("not finished after %d runs:\n%s", run, strings.Join(logs, "\n"))
		}
		bot, err := startBot(cfg)
		if err != nil {
			return kills, reconciled, err
		}
		if kills < planned {
			delay := time.Duration(rng.Int64N(int64(1500 * time.Millisecond)))
			select {
			case <-bot.done:
			case <-time.After(delay):
				bot.kill()
				kills++
				logs = append(logs, fmt.Sprintf("run %d killed after %s:\n%s", run, delay, bot.out.String()))
				continue
			}
		}
		select {
		case <-bot.done:
		case <-time.After(60 * time.Second):
			bot.kill()
			return kills, reconciled, fmt.Errorf("bot did not finish in 60s:\n%s", bot.out.String())
		}
		logs = append(logs, fmt.Sprintf("run %d: %v\n%s", run, bot.err, bot.out.String()))
		if _, ok := bot.report(); ok && bot.err == nil {
			break
		}
	}

	st, err = store.Open(ctx, dsn)
	if err != nil {
		return kills, reconciled, err
	}
	defer st.Close()
	got, err := st.GetRollout(ctx, r.ID)
	if err != nil {
		return kills, reconciled, err
	}
	steps, err := st.ListSteps(ctx, r.ID, store.StepFilter{})
	if err != nil {
		return kills, reconciled, err
	}
	var problems []string
	want := store.RolloutSucceeded
	if rollback {
		want = store.RolloutRolledBack
	}
	if got.State != want {
		problems = append(problems, fmt.Sprintf("rollout %s (%s), want %s", got.State, got.Message, want))
	}
	for _, s := range steps {
		c := sim.Counts(s.App.Name)
		a, _ := sim.App(s.App.Name)
		live := a.Status.History.LastRevisionHistory().Revision
		wantSyncs, wantLive := 1, newRev
		switch {
		case !rollback && s.State != store.StepSynced:
			problems = append(problems, fmt.Sprintf("%s: step %s (%s)", s.App.Name, s.State, s.Message))
		case rollback && s.State == store.StepPending:
			wantSyncs, wantLive = 0, oldRev
		case rollback && s.State != store.StepRolledBack:
			problems = append(problems, fmt.Sprintf("%s: step %s (%s)", s.App.Name, s.State, s.Message))
		case rollback && s.App.Name == failingApp:
			wantSyncs, wantLive = 1, oldRev // its sync failed; nothing to roll back
		case rollback:
			wantSyncs, wantLive = 2, oldRev
		}
		if c.SyncsAccepted != wantSyncs || c.Syncs != wantSyncs {
			problems = append(problems, fmt.Sprintf("%s: %d sync requests (%d accepted), want %d", s.App.Name, c.Syncs, c.SyncsAccepted, wantSyncs))
		}
		if live != wantLive {
			problems = append(problems, fmt.Sprintf("%s runs %s, want %s", s.App.Name, text.Short(live, 7), text.Short(wantLive, 7)))
		}
	}
	events, err := st.ListEvents(ctx, r.ID, 0, 0)
	if err != nil {
		return kills, reconciled, err
	}
	for _, ev := range events {
		if ev.Action == "reconcile" {
			reconciled++
		}
	}
	if len(problems) > 0 {
		return kills, reconciled, fmt.Errorf("%s\n--- runs:\n%s", strings.Join(problems, "\n"), strings.Join(logs, "\n"))
	}
	return kills, reconciled, nil
}
