package preview

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/fleetwave/fleetwave/internal/fleetgen"
	"github.com/fleetwave/fleetwave/internal/gittest"
)

const scaleRepoURL = "https://github.com/example/fleet.git"

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
// 500. The cost of a PR should grow with what it changes, not with the repository.
func BenchmarkScale(b *testing.B) {
	for _, tc := range []struct{ clusters, changed int }{{50, 50}, {500, 50}, {500, 500}} {
		b.Run(fmt.Sprintf("%d-%d", tc.clusters*fleetgen.AppsPerCluster, tc.changed), func(b *testing.B) {
			dir := scaledFleet(b, tc.clusters, tc.changed)
			r := theRenderer()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rep, err := Run(context.Background(), r, Input{RepoDir: dir, Base: "main", Head: "change"})
				if err != nil {
					b.Fatal(err)
				}
				if rep.Summary.Changed != tc.changed || rep.Summary.Apps != tc.clusters*fleetgen.AppsPerCluster {
					b.Fatalf("summary %+v", rep.Summary)
				}
			}
		})
	}
}
