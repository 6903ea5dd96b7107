package rollout_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/health"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/rollout"
)

// TestBenchmarkInstances10000Apps rolls a merge out to 10,000 apps over 4 simulated Argo CD instances (one wave,
// one batch: the instances' budgets are the only bound), budget 10 each (Argo CD's --operation-processors
// default), 200 ms simulated syncs, in real time over TCP with the bot in its own process. It reports the wall
// time against the ideal computed from the budgets (each instance's apps in rounds of its budget, one sync time
// a round: ceil(apps/budget) × sync time, the slowest instance), the most operations in flight on each instance
// (never over its budget: it fails otherwise) and how full its budget was kept (operation time over budget ×
// span), the Argo CD requests per app, and the bot's CPU and peak RSS. About a minute and a half here; it runs
// with FLEETWAVE_SLOW_TESTS=1 (make bench). FLEETWAVE_BENCH_APPS and FLEETWAVE_BENCH_SYNC (a duration) resize it.
func TestBenchmarkInstances10000Apps(t *testing.T) {
	if os.Getenv("FLEETWAVE_SLOW_TESTS") != "1" {
		t.Skip("real-time benchmark; set FLEETWAVE_SLOW_TESTS=1")
	}
	napps, budget, syncTime := 10000, 10, 200*time.Millisecond
	if n, err := strconv.Atoi(os.Getenv("FLEETWAVE_BENCH_APPS")); err == nil && n > 0 {
		napps = n
	}
	if d, err := time.ParseDuration(os.Getenv("FLEETWAVE_BENCH_SYNC")); err == nil && d > 0 {
		syncTime = d
	}
	names := []string{"", "ap", "eu", "us"}
	sims, err := argocdsim.NewInstances(argocdsim.Config{SyncDuration: syncTime, ReconcileDelay: 10 * time.Millisecond}, names...)
	if err != nil {
		t.Fatal(err)
	}
	defer sims.Close()
	per := map[string]int{}
	var in []plan.App
	for _, inst := range names {
		sims.Get(inst).SetRef("HEAD", oldRev)
	}
	for i := range napps {
		inst := names[i%len(names)]
		per[inst]++
		cluster := fmt.Sprintf("%s-c%02d", inst, i/len(names)%25)
		a := &v1alpha1.Application{}
		a.Name = fmt.Sprintf("app-%05d", i)
		a.Spec.Source = &v1alpha1.ApplicationSource{RepoURL: repoURL, Path: "apps/" + a.Name, TargetRevision: "HEAD"}
		a.Spec.Destination = v1alpha1.ApplicationDestination{Name: cluster, Namespace: "web"}
		if err := sims.Get(inst).AddApp(a, argocdsim.AppOptions{LiveRevisions: []string{oldRev}, Health: health.HealthStatusHealthy}); err != nil {
			t.Fatal(err)
		}
		in = append(in, plan.App{Name: a.Name, Namespace: "argocd", Cluster: cluster, Instance: inst, ClusterLabels: map[string]string{"env": "prd"}})
	}
	for _, inst := range names {
		sims.Get(inst).SetRef("HEAD", newRev)
		sims.Get(inst).RefreshAll()
	}
	p, err := plan.ParsePolicy(".fleetwave.yaml", []byte(onePolicy))
	if err != nil {
		t.Fatal(err)
	}
	pl := plan.Build(p, in)
	if !pl.OK() || len(pl.Waves) != 1 || len(pl.Waves[0].Batches) != 1 {
		t.Fatalf("plan: %d waves, violations %v", len(pl.Waves), pl.Violations)
	}
	srv := httptest.NewServer(sims.Handler())
	defer srv.Close()
	ctx := context.Background()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "fleetwave.db")
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	r, err := rollout.New(st, nil, nil).Submit(ctx, rollout.Request{Repo: repo, MergeSHA: newRev, Plan: pl, RepoURL: repoURL})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	others, budgets := map[string]string{}, map[string]int{}
	for _, inst := range names {
		budgets[inst] = budget
		if inst != "" {
			others[inst] = sims.URL(srv.URL, inst)
		}
	}
	bot, err := startBot(botConfig{Store: dsn, ArgoCD: sims.URL(srv.URL, ""), Owner: "bench", Concurrency: budget * len(names),
		Control: 2 * time.Second, Claim: 5 * time.Second, Poll: time.Second, Grace: 5 * time.Second, LeaseTTL: 30 * time.Second,
		Stall: 30 * time.Second, Instances: others, Budgets: budgets})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-bot.done:
	case <-time.After(10 * time.Minute):
		bot.kill()
		t.Fatalf("bot did not finish:\n%s", bot.out.String())
	}
	rep, ok := bot.report()
	if !ok || bot.err != nil {
		t.Fatalf("bot: %v\n%s", bot.err, bot.out.String())
	}

	st, err = store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got, _ := st.GetRollout(ctx, r.ID); got.State != store.RolloutSucceeded {
		t.Fatalf("rollout %s: %s", got.State, got.Message)
	}
	steps, _ := st.ListSteps(ctx, r.ID, store.StepFilter{})
	requests := 0
	var ideal time.Duration
	for _, inst := range names {
		sim := sims.Get(inst)
		requests += sim.Totals().Requests
		ideal = max(ideal, time.Duration((per[inst]+budget-1)/budget)*syncTime)
		// The operations' spans on the simulator's clock: the most at once, and how full the budget was kept.
		type edge struct {
			at time.Time
			d  int
		}
		var edges []edge
		var busy time.Duration
		var first, last time.Time
		for _, s := range steps {
			if s.App.Instance != inst {
				continue
			}
			c := sim.Counts(s.App.Name)
			if s.State != store.StepSynced || c.SyncsAccepted != 1 {
				t.Fatalf("%s: %s, %d syncs", s.App, s.State, c.SyncsAccepted)
			}
			edges = append(edges, edge{c.LastSyncAccepted, 1}, edge{c.LastOpFinished, -1})
			busy += c.LastOpFinished.Sub(c.LastSyncAccepted)
			first, last = earliest(first, c.LastSyncAccepted), latest(last, c.LastOpFinished)
		}
		slices.SortFunc(edges, func(a, b edge) int {
			if c := a.at.Compare(b.at); c != 0 {
				return c
			}
			return a.d - b.d // an operation ending at the instant another starts does not overlap it
		})
		n, most := 0, 0
		for _, e := range edges {
			n += e.d
			most = max(most, n)
		}
		full := float64(busy) / (float64(budget) * float64(last.Sub(first)))
		name := inst
		if name == "" {
			name = `""`
		}
		t.Logf("instance %s: %d apps, at most %d operations in flight (budget %d), budget kept %.0f%% full over %s",
			name, per[inst], most, budget, 100*full, last.Sub(first).Round(time.Millisecond))
		if most > budget {
			t.Errorf("instance %s: %d operations in flight, over its budget %d", name, most, budget)
		}
	}
	ratio := float64(rep.Wall) / float64(ideal)
	t.Logf("%d apps over %d instances, budget %d each, %s syncs: wall %s, ideal from the budgets %s, ratio %.3f; "+
		"%d requests to Argo CD (%.2f per app); bot CPU %s, peak RSS %.1f MiB (%.1f MiB at start, Go heap in use at the end %.1f MiB)",
		napps, len(names), budget, syncTime, rep.Wall.Round(time.Millisecond), ideal, ratio, requests, float64(requests)/float64(napps),
		rep.CPUTime, float64(rep.MaxRSS)/(1<<20), float64(rep.StartRSS)/(1<<20), float64(rep.HeapInuse)/(1<<20))
}
