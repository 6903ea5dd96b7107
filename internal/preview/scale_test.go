package preview

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/fleetwave/fleetwave/internal/discover"
	"github.com/fleetwave/fleetwave/internal/testkit/fleetgen"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

const scaleRepoURL = "https://github.com/example/fleet.git"

// coldAllocRatio bounds the allocations of a cold 5,000/50 preview against 500/50 (TestScalingWithRepositorySize):
// ×1.53–1.56 measured (×2.43 before discovery parsed plain YAML itself and stopped copying and re-reading per app),
// with room for the renders' own allocations, the part common to both, to shrink.
const coldAllocRatio = 1.75

// scaledFleet commits a fleetgen fleet of clusters × 10 apps on main and a change of changed apps on branch
// change, packed as in a clone.
func scaledFleet(tb testing.TB, clusters, changed int) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "fleet")
	if err := fleetgen.Write(dir, scaleRepoURL, clusters); err != nil {
		tb.Fatal(err)
	}
	gittest.Run(tb, dir, "init", "-q", "-b", "main")
	gittest.Run(tb, dir, "remote", "add", "origin", scaleRepoURL)
	gittest.Run(tb, dir, "add", "-A")
	gittest.Run(tb, dir, "commit", "-q", "-m", "fleet")
	gittest.Run(tb, dir, "checkout", "-q", "-b", "change")
	if err := fleetgen.Change(dir, scaleRepoURL, clusters, changed, 1); err != nil {
		tb.Fatal(err)
	}
	gittest.Run(tb, dir, "add", "-A")
	gittest.Run(tb, dir, "commit", "-q", "-m", "change")
	gittest.Run(tb, dir, "repack", "-a", "-d", "-q")
	return dir
}

// BenchmarkScale measures a preview on fleetgen fleets: 500 apps with 50 changed, 5,000 with 50, 5,000 with
// 500, cold (every preview parses the repository's Applications) and warm (as serve: the files parsed by the
// previous previews are kept). The cost of a PR should grow with what it changes, not with the repository.
func BenchmarkScale(b *testing.B) {
	for _, tc := range []struct{ clusters, changed int }{{50, 50}, {500, 50}, {500, 500}} {
		for _, warm := range []bool{false, true} {
			name := fmt.Sprintf("%d-%d", tc.clusters*fleetgen.AppsPerCluster, tc.changed)
			if warm {
				name += "-warm"
			}
			b.Run(name, func(b *testing.B) {
				benchScale(b, tc.clusters, tc.changed, warm)
			})
		}
	}
}

func benchScale(b *testing.B, clusters, changed int, warm bool) {
	dir := scaledFleet(b, clusters, changed)
	r := theRenderer()
	in := Input{RepoDir: dir, Base: "main", Head: "change"}
	if warm {
		in.Discovered = discover.NewScanCache(20_000)
		if _, err := Run(context.Background(), r, in); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep, err := reportOf(Run(context.Background(), r, in))
		if err != nil {
			b.Fatal(err)
		}
		if rep.Summary.Changed != changed || rep.Summary.Apps != clusters*fleetgen.AppsPerCluster {
			b.Fatalf("summary %+v", rep.Summary)
		}
	}
}

// A second preview of the same repository takes the files discovery parsed from the cache, and reports the same.
func TestDiscoveryCacheAcrossPreviews(t *testing.T) {
	dir := scaledFleet(t, 3, 10)
	cache := discover.NewScanCache(1000)
	in := Input{RepoDir: dir, Base: "main", Head: "change", Discovered: cache}
	first, err := reportOf(Run(context.Background(), theRenderer(), in))
	if err != nil {
		t.Fatal(err)
	}
	parsed, hits := cache.Len(), cache.Hits()
	if parsed < 3*fleetgen.AppsPerCluster {
		t.Fatalf("after one preview: %d files kept", parsed)
	}
	second, err := reportOf(Run(context.Background(), theRenderer(), in))
	if err != nil {
		t.Fatal(err)
	}
	if cache.Hits()-hits < int64(parsed) || cache.Len() != parsed {
		t.Fatalf("second preview: %d hits, %d files kept; want every one of the %d files from the cache", cache.Hits()-hits, cache.Len(), parsed)
	}
	a, _ := json.Marshal(first)
	b, _ := json.Marshal(second)
	if string(a) != string(b) {
		t.Fatal("the preview with a warm cache differs from the cold one")
	}
}

// The cost of a PR grows with what it changes, not with the repository: a preview of 50 changed apps among 5,000
// allocates at most 1.5 times what it does among 500 once the files parsed before are cached (as under serve),
// and at most coldAllocRatio times cold (as the CLI, every Application parsed once: that part grows with the
// repository, the rest must not). Allocations are counted (stable on a busy machine); make bench reports the times.
func TestScalingWithRepositorySize(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 5,000-app repository")
	}
	allocs := func(clusters int) (warm, cold float64) {
		dir := scaledFleet(t, clusters, 50)
		r := theRenderer()
		coldIn := Input{RepoDir: dir, Base: "main", Head: "change"}
		if _, err := Run(context.Background(), r, coldIn); err != nil { // the renderer's start-up
			t.Fatal(err)
		}
		cold = testing.AllocsPerRun(2, func() {
			if _, err := Run(context.Background(), r, coldIn); err != nil {
				t.Fatal(err)
			}
		})
		in := Input{RepoDir: dir, Base: "main", Head: "change", Discovered: discover.NewScanCache(20_000)}
		if _, err := Run(context.Background(), r, in); err != nil {
			t.Fatal(err)
		}
		warm = testing.AllocsPerRun(2, func() {
			if _, err := Run(context.Background(), r, in); err != nil {
				t.Fatal(err)
			}
		})
		return warm, cold
	}
	smallWarm, smallCold := allocs(50)
	largeWarm, largeCold := allocs(500)
	t.Logf("allocations per preview, warm: 500 apps / 50 changed %.0f, 5,000 / 50 %.0f (×%.2f)", smallWarm, largeWarm, largeWarm/smallWarm)
	t.Logf("allocations per preview, cold: 500 apps / 50 changed %.0f, 5,000 / 50 %.0f (×%.2f)", smallCold, largeCold, largeCold/smallCold)
	if largeWarm > 1.5*smallWarm {
		t.Errorf("warm, 5,000/50 allocates ×%.2f of 500/50, over ×1.5", largeWarm/smallWarm)
	}
	if largeCold > coldAllocRatio*smallCold {
		t.Errorf("cold, 5,000/50 allocates ×%.2f of 500/50, over ×%.1f", largeCold/smallCold, coldAllocRatio)
	}
}
