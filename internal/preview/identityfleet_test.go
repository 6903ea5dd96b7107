package preview

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/report"
	"github.com/fleetwave/fleetwave/internal/testkit/fleetgen"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
	"github.com/fleetwave/fleetwave/internal/testkit/golden"
)

// TestFleetWideChartChangeGroupsModuloIdentity (#34): on a generated 500-app fleet whose charts name every
// object after the release (= the app's name, as Argo CD renders it) and label it with the instance, a one-line
// change to every chart's and Kustomize base's Deployment (revisionHistoryLimit 5 → 10), with one app getting a
// change of its own too, is one comment under GitHub's limit: a handful of sections, every changed app named,
// the one app with an extra change standing apart. Before grouping modulo identity it was 250 Helm sections in
// 4 parts.
func TestFleetWideChartChangeGroupsModuloIdentity(t *testing.T) {
	if testing.Short() {
		t.Skip("renders 1,000 apps")
	}
	const clusters = 50
	dir := filepath.Join(t.TempDir(), "fleet")
	if err := fleetgen.WriteWith(dir, scaleRepoURL, clusters, fleetgen.Options{ReleaseNames: true}); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, dir, "init", "-q", "-b", "main")
	gittest.Run(t, dir, "remote", "add", "origin", scaleRepoURL)
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "fleet")
	gittest.Run(t, dir, "checkout", "-q", "-b", "change")
	if err := fleetgen.ChangeRevisionHistory(dir, 10); err != nil {
		t.Fatal(err)
	}
	const apart = "c-0007-web"
	values := filepath.Join(dir, filepath.FromSlash(fleetgen.ClusterValues(7, "web")))
	b, err := os.ReadFile(values)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(values, append(b, "replicas: 3\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "revisionHistoryLimit: 10 everywhere; 3 replicas of c-0007-web")

	rep, err := reportOf(Run(context.Background(), theRenderer(), Input{RepoDir: dir, Base: "main", Head: "change", Plan: true}))
	if err != nil {
		t.Fatal(err)
	}
	if n := clusters * fleetgen.AppsPerCluster; rep.Summary.Changed != n || rep.HasErrors() {
		t.Fatalf("summary %+v, errors %v; want all %d apps changed", rep.Summary, firstErrors(rep), n)
	}
	parts := rep.MarkdownParts(report.MaxCommentChars)
	if len(parts) != 1 || len(parts[0]) > report.MaxCommentChars {
		t.Fatalf("%d parts (%d bytes in all); want one comment of at most %d", len(parts), len(strings.Join(parts, "")), report.MaxCommentChars)
	}
	md := parts[0]
	for _, a := range rep.Apps {
		if !strings.Contains(md, "`"+a.Name+"`") && !strings.Contains(md, "`"+a.Key()+"`") { // listed, or a section of its own
			t.Errorf("the comment does not name %s", a.Name)
		}
	}
	var out struct{ Groups []report.Group }
	j, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(j, &out); err != nil {
		t.Fatal(err)
	}
	sections := map[int]bool{}
	for _, g := range out.Groups {
		sections[g.Section] = true
		for _, a := range g.Apps {
			if a == "argocd/"+apart && len(g.Apps) != 1 {
				t.Errorf("%s, with a change of its own, is grouped with %d apps", apart, len(g.Apps)-1)
			}
		}
	}
	t.Logf("%d bytes, %d groups in %d sections", len(md), len(out.Groups), len(sections))
	if len(sections) > 6 {
		t.Errorf("%d sections; want a handful", len(sections))
	}
	if !strings.Contains(md, "‹app›") || !strings.Contains(md, "+  revisionHistoryLimit: 10") {
		t.Errorf("the comment shows no placeholder or not the change")
	}
	golden.Assert(t, "fleet-500-release-names.md", md)
}

// BenchmarkScaleReport measures writing the report of BenchmarkScale's 500/50 and 5,000/50 previews — the
// comment's parts and the JSON, where the apps are grouped (modulo their identity, #34) —, the preview itself
// made once before the timer.
func BenchmarkScaleReport(b *testing.B) {
	for _, tc := range []struct{ clusters, changed int }{{50, 50}, {500, 50}} {
		b.Run(fmt.Sprintf("%d-%d", tc.clusters*fleetgen.AppsPerCluster, tc.changed), func(b *testing.B) {
			rep, err := reportOf(Run(context.Background(), theRenderer(), Input{RepoDir: scaledFleet(b, tc.clusters, tc.changed), Base: "main", Head: "change"}))
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if parts := rep.MarkdownParts(report.MaxCommentChars); len(parts) == 0 {
					b.Fatal("no comment")
				}
				if err := rep.WriteJSON(io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
