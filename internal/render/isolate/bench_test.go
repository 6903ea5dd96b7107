package isolate_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/preview"
	"github.com/fleetwave/fleetwave/internal/preview/previewtest"
	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/render/isolate"
	"github.com/fleetwave/fleetwave/internal/report"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

// syntheticFleet is internal/preview's benchmark repository: 500 Applications (Kustomize overlays, Helm apps of
// one vendored chart, plain directories) on main, and a change touching 50 of them on branch change.
func syntheticFleet(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "fleet")
	const repo = "https://github.com/example/big-fleet.git"
	previewtest.WriteFleet(tb, dir, repo, previewtest.ClustersFile)
	gittest.Run(tb, dir, "init", "-q", "-b", "main")
	gittest.Run(tb, dir, "remote", "add", "origin", repo)
	gittest.Run(tb, dir, "add", "-A")
	gittest.Run(tb, dir, "commit", "-q", "-m", "500 apps")
	gittest.Run(tb, dir, "checkout", "-q", "-b", "change")
	previewtest.WriteChange(tb, dir, previewtest.Change{BaseTag: "1.1.0", NewValue: "yes", DirTag: "2.1.0"})
	gittest.Run(tb, dir, "add", "-A")
	gittest.Run(tb, dir, "commit", "-q", "-m", "touch 50 apps")
	gittest.Run(tb, dir, "repack", "-a", "-d", "-q")
	return dir
}

// BenchmarkDiff500Apps is internal/preview's BenchmarkDiff500Apps (the whole diff of the synthetic fleet, warm)
// rendered in-process and in worker processes (GOMAXPROCS workers, as serve runs them): what isolation costs.
// Compare the two with alternating runs, e.g. -bench 'Diff500Apps/(inprocess|workers)$' -count 5.
func BenchmarkDiff500Apps(b *testing.B) {
	dir := syntheticFleet(b)
	run := func(b *testing.B, r preview.Renderer) {
		ctx := context.Background()
		in := preview.Input{RepoDir: dir, Base: "main", Head: "change"}
		if _, err := preview.Run(ctx, r, in); err != nil { // warm-up: chart caches, workers started
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			rep, err := previewReport(preview.Run(ctx, r, in))
			if err != nil {
				b.Fatal(err)
			}
			if rep.Summary.Changed != 50 || rep.HasErrors() {
				b.Fatalf("summary = %+v", rep.Summary)
			}
		}
	}
	b.Run("inprocess", func(b *testing.B) { run(b, render.New(render.Options{})) })
	b.Run("workers", func(b *testing.B) {
		pool, err := isolate.New(isolate.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer pool.Close()
		run(b, pool)
		b.ReportMetric(float64(pool.Started()), "workers")
	})
}

// TestIsolationCost times the 500-app diff in-process and in workers alternately, run after run in one process
// (the order swapped each round), so both see the same load on a shared machine, and reports the medians and the
// median of the per-round ratios. FLEETWAVE_ISOLATION_ROUNDS sets the number of rounds (unset: skipped).
func TestIsolationCost(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("FLEETWAVE_ISOLATION_ROUNDS"))
	if rounds <= 0 {
		t.Skip("FLEETWAVE_ISOLATION_ROUNDS not set")
	}
	dir := syntheticFleet(t)
	pool, err := isolate.New(isolate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	renderers := []preview.Renderer{render.New(render.Options{}), pool}
	ctx := context.Background()
	in := preview.Input{RepoDir: dir, Base: "main", Head: "change"}
	once := func(r preview.Renderer) time.Duration {
		start := time.Now()
		rep, err := previewReport(preview.Run(ctx, r, in))
		if err != nil {
			t.Fatal(err)
		}
		if rep.Summary.Changed != 50 || rep.HasErrors() {
			t.Fatalf("summary = %+v", rep.Summary)
		}
		return time.Since(start)
	}
	for _, r := range renderers { // warm-up
		once(r)
	}
	var inproc, workers, ratios []float64
	for i := 0; i < rounds; i++ {
		var d [2]time.Duration
		for k := 0; k < 2; k++ {
			j := (i + k) % 2
			d[j] = once(renderers[j])
		}
		inproc, workers = append(inproc, d[0].Seconds()), append(workers, d[1].Seconds())
		ratios = append(ratios, d[1].Seconds()/d[0].Seconds())
	}
	median := func(xs []float64) float64 {
		s := append([]float64(nil), xs...)
		sort.Float64s(s)
		if len(s)%2 == 1 {
			return s[len(s)/2]
		}
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	t.Logf("%d rounds: in-process median %.3f s, workers median %.3f s (%+.1f %%), median per-round ratio %.3f",
		rounds, median(inproc), median(workers), 100*(median(workers)/median(inproc)-1), median(ratios))
	t.Logf("in-process: %.2f", inproc)
	t.Logf("workers:    %.2f", workers)
}

// previewReport is the report of a preview's result (nil when there is none).
func previewReport(res *preview.Result, err error) (*report.Report, error) {
	if res == nil {
		return nil, err
	}
	return res.Report, err
}
