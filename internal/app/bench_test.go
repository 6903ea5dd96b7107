package app_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/app"
	"github.com/fleetwave/fleetwave/internal/discover"
	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/livediff"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/preview/previewtest"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

// bigFleet writes a GitOps repository of 500 Applications on master (internal/preview/previewtest's fleet,
// naming this pull request's repository), then two alternative changes on top of it, each
// touching 50 apps:
//   - 200 Kustomize overlays over 10 shared bases (20 per base): base 0 is edited → 20 apps;
//   - 200 Helm apps sharing one vendored chart, one values file each: 20 values files are edited;
//   - 100 plain directories: 10 are edited.
func bigFleet(tb testing.TB) *fixture {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "Hello-World")
	// Declared as cluster Secrets so that the bot, which has no clusters file here, finds their labels.
	previewtest.WriteFleet(tb, dir, repoHTMLURL+".git", previewtest.ClusterSecrets)
	gittest.Run(tb, dir, "init", "-q", "-b", "master")
	gittest.Run(tb, dir, "add", "-A")
	gittest.Run(tb, dir, "commit", "-q", "-m", "500 apps")
	f := &fixture{dir: dir, base: gittest.Run(tb, dir, "rev-parse", "HEAD")}
	for v, tag := range []string{"1.1.0", "1.2.0"} {
		gittest.Run(tb, dir, "checkout", "-q", "-B", fmt.Sprintf("change-%d", v), "master")
		previewtest.WriteChange(tb, dir, previewtest.Change{BaseTag: tag, NewValue: tag, DirTag: tag})
		gittest.Run(tb, dir, "add", "-A")
		gittest.Run(tb, dir, "commit", "-q", "-m", "touch 50 apps: "+tag)
		f.heads = append(f.heads, gittest.Run(tb, dir, "rev-parse", "HEAD"))
	}
	gittest.Run(tb, dir, "checkout", "-q", "master")
	gittest.Run(tb, dir, "update-ref", fmt.Sprintf("refs/pull/%d/head", prNumber), f.heads[0])
	gittest.Run(tb, dir, "update-ref", "refs/heads/other", f.heads[1]) // the second head stays reachable
	gittest.Run(tb, dir, "repack", "-a", "-d", "-q")
	return f
}

// BenchmarkWebhookToComment measures a synchronize delivery of the 500-app repository (50 apps touched) from
// the POST to the comment and both check runs posted on the fake GitHub, warm (clone cache filled, charts
// cached), alternating two heads so that the comment really changes each time. It reports p50 and p90.
func BenchmarkWebhookToComment(b *testing.B) {
	f := bigFleet(b)
	benchWebhook(b, f, newHarness(b, nil, app.WithPreviews(everyTime{})))
}

// everyTime is a Previews that lets every delivery preview and remembers no check run: the benchmark measures
// a preview per delivery, alternating two heads, which the App otherwise previews once each.
type everyTime struct{}

func (everyTime) ClaimPreview(context.Context, store.PreviewKey, bool, time.Duration) (bool, error) {
	return true, nil
}
func (everyTime) FinishPreview(context.Context, store.PreviewKey) error               { return nil }
func (everyTime) ReleasePreview(context.Context, store.PreviewKey) error              { return nil }
func (everyTime) CheckRunID(context.Context, string, string, string) (int64, error)   { return 0, nil }
func (everyTime) SaveCheckRunID(context.Context, string, string, string, int64) error { return nil }
func (everyTime) SaveComment(context.Context, store.PreviewKey, []string) error       { return nil }
func (everyTime) ShowComment(context.Context, store.PreviewKey) error                 { return nil }
func (everyTime) Comment(context.Context, store.PreviewKey) ([]string, error)         { return nil, nil }
func (everyTime) ShownComment(context.Context, string, int) (store.PreviewKey, error) {
	return store.PreviewKey{}, nil
}

// BenchmarkWebhookToCommentArgoCD is BenchmarkWebhookToComment with Argo CD configured — the simulator, in
// process: clusters and their labels come from it, and the 50 affected apps are compared with their live state.
func BenchmarkWebhookToCommentArgoCD(b *testing.B) {
	f := bigFleet(b)
	_, opts := simArgoCD(b, f)
	h := newHarness(b, nil, append([]app.Option{app.WithPreviews(everyTime{})}, opts...)...)
	benchWebhook(b, f, h)
	if !strings.Contains(h.runsOn(f.heads[0])[app.CheckDiff][0].Text, "compared with the live state in Argo CD") {
		b.Error("the preview does not mention the live state")
	}
}

// BenchmarkMergeHandOffArgoCD measures a merged pull request of the 500-app repository (50 apps touched), with
// Argo CD configured as in BenchmarkWebhookToCommentArgoCD, from the closed delivery's POST to the plan handed
// to the Merges port, warm. Each iteration is another merge commit (the App hands a merge SHA over once),
// alternating the two changes. It reports p50 and p90, the requests to Argo CD and the CPU time per merge.
func BenchmarkMergeHandOffArgoCD(b *testing.B) {
	f := bigFleet(b)
	sim, opts := simArgoCD(b, f)
	h := newHarness(b, nil, opts...)
	merges := 0
	merge := func(i int) time.Duration {
		head := f.heads[i%2]
		merges++ // the message makes each merge commit another
		sha := gittest.Run(b, f.dir, "commit-tree", head+"^{tree}", "-p", f.base, "-p", head, "-m", fmt.Sprintf("Merge pull request #%d (%d)", prNumber, merges))
		gittest.Run(b, f.dir, "update-ref", "refs/heads/master", sha)
		body := payload(b, "pull_request/closed-merged.json", map[string]any{
			"repository.clone_url": f.cloneURL(), "pull_request.head.sha": head, "pull_request.base.sha": f.base,
			"pull_request.merged": true, "pull_request.merge_commit_sha": sha,
		})
		before := len(h.merges.merges)
		t0 := time.Now()
		if code := h.send("pull_request", "", body); code != http.StatusAccepted {
			b.Fatalf("delivery answered %d", code)
		}
		h.wait()
		d := time.Since(t0)
		if len(h.merges.merges) != before+1 {
			b.Fatalf("iteration %d: the merge was not handed over", i)
		}
		if m := h.merges.merges[before]; m.Plan == nil || m.Plan.AppCount() != 50 {
			b.Fatalf("iteration %d: handed over %+v, want a plan of 50 apps", i, m.Plan)
		}
		return d
	}
	merge(1) // warm-up: clone, chart cache
	var took []time.Duration
	requests, cpu := sim.Totals().Requests, cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		took = append(took, merge(i))
	}
	b.StopTimer()
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	b.ReportMetric(took[len(took)/2].Seconds(), "p50-s")
	b.ReportMetric(took[len(took)*9/10].Seconds(), "p90-s")
	b.ReportMetric(float64(sim.Totals().Requests-requests)/float64(b.N), "argocd-req/op")
	b.ReportMetric((cpuTime()-cpu).Seconds()/float64(b.N), "cpu-s/op")
}

// cpuTime is the CPU time, user and system, of this process and of the children it waited for (git): on a
// loaded machine, a steadier measure of the work than the wall clock.
func cpuTime() time.Duration {
	var self, children syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &self) != nil || syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children) != nil {
		return 0
	}
	return time.Duration(self.Utime.Nano() + self.Stime.Nano() + children.Utime.Nano() + children.Stime.Nano())
}

// simArgoCD is Argo CD for the 500-app repository: the simulator, in process, with 30 labelled clusters and
// every app live at the fixture's base; the options wire it as the clusters and the live comparer.
func simArgoCD(b *testing.B, f *fixture) (*argocdsim.Server, []app.Option) {
	sim := argocdsim.New(argocdsim.Config{})
	b.Cleanup(sim.Close)
	sim.SetRef("main", f.base)
	for c := 0; c < 30; c++ {
		sim.AddCluster(v1alpha1.Cluster{Name: fmt.Sprintf("c-%02d", c), Server: fmt.Sprintf("https://c-%02d.example.com", c),
			Labels: map[string]string{"env": []string{"test", "stg", "prd"}[c%3], "region": fmt.Sprintf("r%d", c%5)}})
	}
	files, err := filepath.Glob(filepath.Join(f.dir, "apps", "*.yaml"))
	if err != nil || len(files) != 500 {
		b.Fatalf("%d app files, %v", len(files), err)
	}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		var a v1alpha1.Application
		if err := yaml.Unmarshal(data, &a); err != nil {
			b.Fatal(err)
		}
		if err := sim.AddApp(&a, argocdsim.AppOptions{LiveRevisions: []string{f.base}}); err != nil {
			b.Fatal(err)
		}
	}
	client, err := argocd.New(argocd.Options{BaseURL: "http://argocd.sim", HTTPClient: &http.Client{Transport: sim.RoundTripper()}})
	if err != nil {
		b.Fatal(err)
	}
	clusters := func(ctx context.Context) ([]discover.Cluster, error) {
		list, err := client.ListClusters(ctx)
		if err != nil {
			return nil, err
		}
		var out []discover.Cluster
		for _, c := range list {
			out = append(out, discover.Cluster{Name: c.Name, Server: c.Server, Labels: c.Labels})
		}
		return out, nil
	}
	return sim, []app.Option{app.WithClusters(clusters), app.WithArgoCD(livediff.New(client, livediff.Options{Server: "sim"}).Ports())}
}

func benchWebhook(b *testing.B, f *fixture, h *harness) {
	send := func(i int) time.Duration {
		head := f.heads[i%2]
		gittest.Run(b, f.dir, "update-ref", fmt.Sprintf("refs/pull/%d/head", prNumber), head)
		h.openPR(f, head)
		body := prPayload(b, "pull_request/synchronize.json", f, head)
		edits := commentEdits(h)
		t0 := time.Now()
		if code := h.send("pull_request", "", body); code != http.StatusAccepted {
			b.Fatalf("delivery answered %d", code)
		}
		h.wait()
		d := time.Since(t0)
		if commentEdits(h) == edits {
			b.Fatalf("iteration %d: the comment was not posted", i)
		}
		return d
	}
	send(1) // warm-up: clone, chart cache
	var took []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		took = append(took, send(i))
	}
	b.StopTimer()
	runs := h.runsOn(f.heads[0])
	if cr := runs[app.CheckDiff]; len(cr) == 0 || !strings.Contains(cr[len(cr)-1].Title, "50 of 500") || cr[len(cr)-1].Conclusion != "success" {
		b.Fatalf("diff check = %+v, want 50 of 500 apps changed", cr)
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	b.ReportMetric(took[len(took)/2].Seconds(), "p50-s")
	b.ReportMetric(took[len(took)*9/10].Seconds(), "p90-s")
}

// commentEdits counts the sticky comment's creations and edits.
func commentEdits(h *harness) int {
	n := 0
	for _, c := range h.fake.Comments(repoFullName, prNumber) {
		n += 1 + c.Edits
	}
	return n
}
