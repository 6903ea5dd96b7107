package report

import (
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetwave/fleetwave/internal/diff"
	"github.com/fleetwave/fleetwave/internal/diff/risk"
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

// classifiedPair is one changed resource of benchReport as the differ holds it, for the classifier.
type classifiedPair struct {
	app, res   int
	base, head *unstructured.Unstructured
}

// benchPairs are the objects behind benchReport's changed resources: each changed app's Deployment
// (revisionHistoryLimit 5 → 10) and ConfigMap (a value), as the differ hands them to the classifier.
func benchPairs(r *Report) []classifiedPair {
	var out []classifiedPair
	for ai := range r.Apps {
		a := &r.Apps[ai]
		for ri, res := range a.Resources {
			var base, head map[string]any
			meta := map[string]any{"name": res.Key.Name, "namespace": res.Key.Namespace,
				"labels": map[string]any{"app.kubernetes.io/instance": a.Name, "helm.sh/chart": "web-1.0.0"}}
			switch res.Key.Kind {
			case "Deployment":
				deploy := func(limit int64) map[string]any {
					return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": map[string]any{
						"replicas": int64(2), "revisionHistoryLimit": limit,
						"selector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/instance": a.Name}},
						"template": map[string]any{
							"metadata": map[string]any{"labels": map[string]any{"app.kubernetes.io/instance": a.Name}},
							"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "ghcr.io/acme/web:1.2.0",
								"resources": map[string]any{"requests": map[string]any{"cpu": "100m"}}}}},
						},
					}}
				}
				base, head = deploy(5), deploy(10)
			default:
				cm := func(v string) map[string]any {
					return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": map[string]any{"CLUSTER": v, "APP": "web"}}
				}
				base, head = cm(a.Cluster+"-old"), cm(a.Cluster)
			}
			out = append(out, classifiedPair{app: ai, res: ri, base: &unstructured.Unstructured{Object: base}, head: &unstructured.Unstructured{Object: head}})
		}
	}
	return out
}

// BenchmarkReportClassification is the cost of the risk classes on BenchmarkReportGrouping's fleets, in the same
// run: each op writes the comment's parts and the JSON of the report without classes ("plain"), then classifies
// every changed resource (as internal/diff does) and writes the report with its classes ("classified"). The
// metrics are each half's time per op and their ratio, measured in turn, each half first every other op, so
// that a busy machine slows both alike.
func BenchmarkReportClassification(b *testing.B) {
	for _, tc := range []struct{ apps, changed int }{{500, 50}, {5000, 50}} {
		b.Run(fmt.Sprintf("%d-%d", tc.apps, tc.changed), func(b *testing.B) {
			plain := benchReport(b, tc.apps, tc.changed)
			classified := benchReport(b, tc.apps, tc.changed)
			pairs := benchPairs(classified)
			write := func(r *Report) {
				if parts := r.MarkdownParts(MaxCommentChars); len(parts) == 0 {
					b.Fatal("no comment")
				}
				if err := r.WriteJSON(io.Discard); err != nil {
					b.Fatal(err)
				}
			}
			var without, with time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			classify := func() {
				for _, p := range pairs {
					classified.Apps[p.app].Resources[p.res].Risks = risk.Classify(p.base, p.head)
				}
				write(classified)
			}
			timed := func(f func()) time.Duration { t0 := time.Now(); f(); return time.Since(t0) }
			for i := 0; b.Loop(); i++ {
				// Alternately first: the half that runs second pays for the garbage of the first.
				if i%2 == 0 {
					without += timed(func() { write(plain) })
					with += timed(classify)
				} else {
					with += timed(classify)
					without += timed(func() { write(plain) })
				}
			}
			if len(classified.ClassCounts()) == 0 {
				b.Fatal("nothing classified")
			}
			b.ReportMetric(float64(without.Nanoseconds())/float64(b.N), "ns-plain/op")
			b.ReportMetric(float64(with.Nanoseconds())/float64(b.N), "ns-classified/op")
			b.ReportMetric(float64(with)/float64(without), "classified/plain")
		})
	}
}
