package rollout_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/health"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/rollout"
)

// TestCrashRecoveryAcrossInstances is TestCrashRecovery over two Argo CD instances (the simulator's Instances,
// one listener, a URL each) with budgets of their own: the bot is killed with SIGKILL at random moments and
// restarted; every trial must end with every app on every instance synced exactly once, on its own instance.
func TestCrashRecoveryAcrossInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts bot processes (about 10s); skipped with -short")
	}
	trials := 8
	if n, err := strconv.Atoi(os.Getenv("FLEETWAVE_CRASH_TRIALS")); err == nil && n > 0 {
		trials = n
	}
	seed := uint64(time.Now().UnixNano())
	if n, err := strconv.ParseUint(os.Getenv("FLEETWAVE_CRASH_SEED"), 10, 64); err == nil {
		seed = n
	}
	t.Logf("seed %d (FLEETWAVE_CRASH_SEED=%d reproduces the kill times)", seed, seed)
	type outcome struct {
		kills  int
		synced map[string]int // per instance: apps synced exactly once
		err    error
	}
	results := make([]outcome, trials)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i := range trials {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			kills, synced, err := crashTrialInstances(t.TempDir(), seed+uint64(i))
			results[i] = outcome{kills, synced, err}
		}()
	}
	wg.Wait()
	kills := 0
	synced := map[string]int{}
	for i, r := range results {
		kills += r.kills
		for inst, n := range r.synced {
			synced[inst] += n
		}
		if r.err != nil {
			t.Errorf("trial %d (seed %d, %d kills): %v", i, seed+uint64(i), r.kills, r.err)
		}
	}
	t.Logf("%d trials, %d SIGKILLs; apps synced exactly once: instance \"\" %d, instance eu %d (of %d each)",
		trials, kills, synced[""], synced["eu"], 4*trials)
}

func crashTrialInstances(dir string, seed uint64) (kills int, synced map[string]int, err error) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	sims, err := argocdsim.NewInstances(argocdsim.Config{SyncDuration: 150 * time.Millisecond, ReconcileDelay: 20 * time.Millisecond, Seed: seed}, "", "eu")
	if err != nil {
		return 0, nil, err
	}
	defer sims.Close()
	fleets := map[string][]fleetApp{
		"": {{name: "a-test-1", cluster: "test-1", env: "test", region: "eu"}, {name: "a-stg-1", cluster: "stg-1", env: "stg", region: "eu"},
			{name: "a-prd-1", cluster: "prd-1", env: "prd", region: "eu"}, {name: "a-prd-2", cluster: "prd-2", env: "prd", region: "us"}},
		// The same names on the other instance: apps are told apart by their instance.
		"eu": {{name: "a-test-1", cluster: "eu-test-1", env: "test", region: "eu"}, {name: "a-stg-2", cluster: "eu-stg-2", env: "stg", region: "us"},
			{name: "a-prd-1", cluster: "eu-prd-1", env: "prd", region: "eu"}, {name: "a-prd-3", cluster: "eu-prd-3", env: "prd", region: "us"}},
	}
	var in []plan.App
	for _, inst := range sims.Names() {
		sim := sims.Get(inst)
		sim.SetRef("HEAD", oldRev)
		for _, fa := range fleets[inst] {
			a := &v1alpha1.Application{}
			a.Name = fa.name
			a.Spec.Source = &v1alpha1.ApplicationSource{RepoURL: repoURL, Path: "apps/" + fa.name, TargetRevision: "HEAD"}
			a.Spec.Destination = v1alpha1.ApplicationDestination{Name: fa.cluster, Namespace: "web"}
			if err := sim.AddApp(a, argocdsim.AppOptions{LiveRevisions: []string{oldRev}, Health: health.HealthStatusHealthy}); err != nil {
				return 0, nil, err
			}
			in = append(in, plan.App{Name: fa.name, Namespace: "argocd", Cluster: fa.cluster, Instance: inst,
				ClusterLabels: map[string]string{"env": fa.env, "region": fa.region}})
		}
		sim.SetRef("HEAD", newRev)
	}
	srv := httptest.NewServer(sims.Handler())
	defer srv.Close()

	p, err := plan.ParsePolicy(".fleetwave.yaml", []byte(basePolicy("", "", "")))
	if err != nil {
		return 0, nil, err
	}
	pl := plan.Build(p, in)
	if !pl.OK() {
		return 0, nil, fmt.Errorf("plan violations: %+v", pl.Violations)
	}
	dsn := "sqlite://" + filepath.Join(dir, "fleetwave.db")
	ctx := context.Background()
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return 0, nil, err
	}
	r, err := rollout.New(st, nil, nil).Submit(ctx, rollout.Request{Repo: repo, MergeSHA: newRev, BaseSHA: oldRev, Plan: pl, RepoURL: repoURL})
	st.Close()
	if err != nil {
		return 0, nil, err
	}

	cfg := botConfig{Store: dsn, ArgoCD: sims.URL(srv.URL, ""), Owner: "bot-1", Concurrency: 10, Control: 50 * time.Millisecond,
		Claim: 100 * time.Millisecond, Poll: 50 * time.Millisecond, Grace: 300 * time.Millisecond, LeaseTTL: 10 * time.Second,
		Stall: 2 * time.Second, Instances: map[string]string{"eu": sims.URL(srv.URL, "eu")}, Budgets: map[string]int{"": 1, "eu": 2}}
	planned := 1 + rng.IntN(4)
	var logs []string
	for run := 0; ; run++ {
		if run > 12 {
			return kills, nil, fmt.Errorf("not finished after %d runs:\n%s", run, strings.Join(logs, "\n"))
		}
		bot, err := startBot(cfg)
		if err != nil {
			return kills, nil, err
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
			return kills, nil, fmt.Errorf("bot did not finish in 60s:\n%s", bot.out.String())
		}
		logs = append(logs, fmt.Sprintf("run %d: %v\n%s", run, bot.err, bot.out.String()))
		if _, ok := bot.report(); ok && bot.err == nil {
			break
		}
	}

	st, err = store.Open(ctx, dsn)
	if err != nil {
		return kills, nil, err
	}
	defer st.Close()
	got, err := st.GetRollout(ctx, r.ID)
	if err != nil {
		return kills, nil, err
	}
	steps, err := st.ListSteps(ctx, r.ID, store.StepFilter{})
	if err != nil {
		return kills, nil, err
	}
	var problems []string
	if got.State != store.RolloutSucceeded {
		problems = append(problems, fmt.Sprintf("rollout %s (%s)", got.State, got.Message))
	}
	if len(steps) != 8 {
		problems = append(problems, fmt.Sprintf("%d steps, want 8", len(steps)))
	}
	synced = map[string]int{}
	for _, s := range steps {
		sim := sims.Get(s.App.Instance)
		if sim == nil {
			problems = append(problems, fmt.Sprintf("%s: no such instance", s.App))
			continue
		}
		c := sim.Counts(s.App.Name)
		a, _ := sim.App(s.App.Name)
		live := a.Status.History.LastRevisionHistory().Revision
		switch {
		case s.State != store.StepSynced:
			problems = append(problems, fmt.Sprintf("%s: step %s (%s)", s.App, s.State, s.Message))
		case c.SyncsAccepted != 1 || c.Syncs != 1:
			problems = append(problems, fmt.Sprintf("%s: %d sync requests (%d accepted), want 1", s.App, c.Syncs, c.SyncsAccepted))
		case live != newRev:
			problems = append(problems, fmt.Sprintf("%s runs %.7s", s.App, live))
		default:
			synced[s.App.Instance]++
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return kills, synced, fmt.Errorf("%s\n--- runs:\n%s", strings.Join(problems, "\n"), strings.Join(logs, "\n"))
	}
	return kills, synced, nil
}
