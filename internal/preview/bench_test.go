package preview

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/preview/previewtest"
	"github.com/fleetwave/fleetwave/internal/report"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

// syntheticFleet writes a GitOps repository of 500 Applications and commits it on main, then a change on
// branch change that touches 50 of them:
//   - 200 Kustomize overlays over 10 shared bases (20 per base): the change edits base 0 → 20 apps;
//   - 200 Helm apps sharing one vendored chart, one values file each: the change edits 20 values files;
//   - 100 plain directories: the change edits 10.
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
	gittest.Run(tb, dir, "repack", "-a", "-d", "-q") // as in a clone: objects packed
	return dir
}

func TestSyntheticFleetAffectsExactlyFifty(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 500-app repository")
	}
	rep, err := reportOf(Run(context.Background(), theRenderer(), Input{RepoDir: syntheticFleet(t), Base: "main", Head: "change"}))
	if err != nil {
		t.Fatal(err)
	}
	if rep.HasErrors() {
		t.Fatalf("errors: %+v %v", rep.Summary, firstErrors(rep))
	}
	if rep.Summary.Apps != 500 || rep.Summary.Changed != 50 || rep.Summary.Unchanged != 450 {
		t.Fatalf("summary = %+v", rep.Summary)
	}
	affected := 0
	for _, a := range rep.Apps {
		if len(a.AffectedBy) > 0 {
			affected++
		}
	}
	if affected != 50 {
		t.Fatalf("%d apps rendered at head, want exactly the 50 the change touches", affected)
	}
}

func firstErrors(rep *report.Report) []string {
	var out []string
	for _, a := range rep.Apps {
		if a.Error != "" && len(out) < 3 {
			out = append(out, a.Name+": "+a.Error)
		}
	}
	return append(out, rep.Problems...)
}

// BenchmarkDiff500Apps measures `diff` on the synthetic 500-app fleet (50 apps touched), warm: the renderer
// (and its chart cache) is shared across iterations, as in a long-running bot. It reports the peak Go heap.
func BenchmarkDiff500Apps(b *testing.B) {
	dir := syntheticFleet(b)
	r := theRenderer()
	ctx := context.Background()
	if _, err := Run(ctx, r, Input{RepoDir: dir, Base: "main", Head: "change"}); err != nil { // warm-up
		b.Fatal(err)
	}
	var peak atomic.Uint64
	stop := make(chan struct{})
	go samplePeakHeap(&peak, stop)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep, err := reportOf(Run(ctx, r, Input{RepoDir: dir, Base: "main", Head: "change"}))
		if err != nil {
			b.Fatal(err)
		}
		if rep.Summary.Changed != 50 {
			b.Fatalf("summary = %+v", rep.Summary)
		}
	}
	b.StopTimer()
	close(stop)
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(runtime.GOMAXPROCS(0)), "procs")
}

func BenchmarkExampleFleet(b *testing.B) {
	dir := exampleRepo(b)
	r := theRenderer()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Run(context.Background(), r, Input{RepoDir: dir, Base: "main", Head: "change", Plan: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// samplePeakHeap records the largest live heap (objects + unswept) seen every 5 ms until stop closes.
func samplePeakHeap(peak *atomic.Uint64, stop <-chan struct{}) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		metrics.Read(s)
		v := s[0].Value.Uint64() + s[1].Value.Uint64()
		if v > peak.Load() {
			peak.Store(v)
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// TestWriteSyntheticFleet writes the benchmark's 500-app repository to $FLEETWAVE_SYNTHETIC_FLEET (skipped when
// unset), to time the CLI on it: fleetwave diff --repo "$FLEETWAVE_SYNTHETIC_FLEET/fleet" --base main --head change.
func TestWriteSyntheticFleet(t *testing.T) {
	out := os.Getenv("FLEETWAVE_SYNTHETIC_FLEET")
	if out == "" {
		t.Skip("FLEETWAVE_SYNTHETIC_FLEET not set")
	}
	dir := syntheticFleet(t)
	if err := os.CopyFS(filepath.Join(out, "fleet"), os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
}
