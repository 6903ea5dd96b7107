package isolate_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/fleetwave/fleetwave/internal/gittest"
	"github.com/fleetwave/fleetwave/internal/preview"
	"github.com/fleetwave/fleetwave/internal/preview/previewtest"
	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/render/isolate"
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
			rep, err := preview.Run(ctx, r, in)
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
