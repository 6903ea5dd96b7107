package plan

import (
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// benchPolicy is a realistic production policy: canary, staging, production by region with zone limits, rest.
const benchPolicy = `apiVersion: fleetwave/v1
automatedSync: disable-during-rollout
waves:
  - name: canary
    selector: {matchLabels: {env: test}}
    maxParallel: 1
    soak: 10m
  - name: staging
    selector: {matchExpressions: [{key: env, operator: In, values: [stg]}]}
    maxParallel: 25%
  - name: production
    selector: {matchLabels: {env: prd}}
    maxParallel: 5%
    maxPerLabel: {region: 1, zone: 2}
    approval: {required: true, teams: [org/sre]}
    failureThreshold: 10%
  - name: rest
    selector: {}
    maxParallel: 10
`

func benchFleet(tb testing.TB) (*Policy, []App) {
	tb.Helper()
	r := rand.New(rand.NewPCG(2024, 1))
	pol, err := ParsePolicy("bench.yaml", []byte(benchPolicy))
	if err != nil {
		tb.Fatal(err)
	}
	return pol, randomFleet(r, fleetSpec{apps: 10_000, clusters: 1000, regions: 12})
}

// BenchmarkBuild10kApps1kClusters: the budget is 100 ms and 50 MiB per plan.
func BenchmarkBuild10kApps1kClusters(b *testing.B) {
	pol, apps := benchFleet(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Build(pol, apps)
	}
}

// BenchmarkBuildDefault10kApps1kClusters plans the same fleet without a policy file.
func BenchmarkBuildDefault10kApps1kClusters(b *testing.B) {
	_, apps := benchFleet(b)
	b.ReportAllocs()
	for b.Loop() {
		Build(nil, apps)
	}
}

// TestBuildBudget checks the memory budget exactly and the time budget loosely (machines vary; the benchmark
// gives the real figure). With the garbage collector off, everything Build allocates stays on the heap, so the
// heap growth bounds its peak heap from above.
func TestBuildBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("budget check skipped in -short mode")
	}
	pol, apps := benchFleet(t)
	Build(pol, apps) // warm up
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	plan := Build(pol, apps)
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	peak := after.HeapAlloc - before.HeapAlloc
	total := after.TotalAlloc - before.TotalAlloc
	t.Logf("10,000 apps on 1,000 clusters: %d waves, %d violations, %v, heap growth %.1f MiB, allocated %.1f MiB",
		len(plan.Waves), len(plan.Violations), elapsed, float64(peak)/(1<<20), float64(total)/(1<<20))
	if peak > 50<<20 || total > 50<<20 {
		t.Errorf("Build used %.1f MiB (allocated %.1f MiB), budget 50 MiB", float64(peak)/(1<<20), float64(total)/(1<<20))
	}
	if elapsed > time.Second {
		t.Errorf("Build took %v, budget 100 ms (1 s allowed here for slow machines)", elapsed)
	}
	if plan.AppCount() != len(apps) {
		t.Errorf("planned %d of %d apps", plan.AppCount(), len(apps))
	}
}
