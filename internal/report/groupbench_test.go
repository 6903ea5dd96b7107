package report

import (
	"encoding/json"
	"fmt"
	"io"
	"testing"

	"github.com/fleetwave/fleetwave/internal/diff"
)

// benchReport is a report of apps Helm apps of which changed have the same chart change, named after their
// release (the app) on their own cluster (fleetgen's ReleaseNames shape), the rest unchanged. It is made
// through the JSON form so that the benchmark also builds where the identity fields did not exist.
func benchReport(b *testing.B, apps, changed int) *Report {
	r := &Report{Base: "1111111", Head: "2222222"}
	for i := 0; i < apps; i++ {
		name, cluster := fmt.Sprintf("c-%04d-web", i), fmt.Sprintf("c-%04d", i)
		j := fmt.Sprintf(`{"name": %q, "namespace": "argocd", "cluster": %q, "destinationNamespace": "web", "kind": "web", "status": "unchanged", "resources": [], "hooks": []}`, name, cluster)
		var a App
		if err := json.Unmarshal([]byte(j), &a); err != nil {
			b.Fatal(err)
		}
		if i%(apps/changed) == 0 {
			d := fmt.Sprintf("--- base/apps/Deployment/web/%[1]s\n+++ head/apps/Deployment/web/%[1]s\n@@ -10,7 +10,7 @@\n   name: %[1]s\n   namespace: web\n spec:\n-  revisionHistoryLimit: 5\n+  revisionHistoryLimit: 10\n   selector:\n     matchLabels:\n       app.kubernetes.io/instance: %[1]s\n", name)
			a.Status = StatusChanged
			a.Resources = []diff.Resource{
				{Key: diff.Key{Group: "apps", Kind: "Deployment", Namespace: "web", Name: name}, Change: diff.Modified, Diff: d},
				{Key: diff.Key{Kind: "ConfigMap", Namespace: "web", Name: name}, Change: diff.Modified,
					Diff: fmt.Sprintf("--- base/core/ConfigMap/web/%[1]s\n+++ head/core/ConfigMap/web/%[1]s\n@@ -1,4 +1,4 @@\n data:\n-  CLUSTER: %[2]s-old\n+  CLUSTER: %[2]s\n   APP: web\n", name, cluster)},
			}
			a.Counts = diff.Summary{Modified: 2}
		}
		r.Apps = append(r.Apps, a)
	}
	r.Summarize()
	return r
}

// BenchmarkReportGrouping measures writing the comment's parts and the JSON (where the apps are grouped) of
// 500 apps with 50 changed and 5,000 with 50, the fleets of BenchmarkScale's 500/50 and 5,000/50.
func BenchmarkReportGrouping(b *testing.B) {
	for _, tc := range []struct{ apps, changed int }{{500, 50}, {5000, 50}} {
		b.Run(fmt.Sprintf("%d-%d", tc.apps, tc.changed), func(b *testing.B) {
			r := benchReport(b, tc.apps, tc.changed)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if parts := r.MarkdownParts(MaxCommentChars); len(parts) == 0 {
					b.Fatal("no comment")
				}
				if err := r.WriteJSON(io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
