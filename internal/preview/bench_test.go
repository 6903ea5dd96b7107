package preview

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/report"
)

// syntheticFleet writes a GitOps repository of 500 Applications and commits it on main, then a change on
// branch change that touches 50 of them:
//   - 200 Kustomize overlays over 10 shared bases (20 per base): the change edits base 0 → 20 apps;
//   - 200 Helm apps sharing one vendored chart, one values file each: the change edits 20 values files;
//   - 100 plain directories: the change edits 10.
func syntheticFleet(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "fleet")
	write := func(rel, content string) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	const repo = "https://github.com/example/big-fleet.git"
	app := func(name, path, extra string) string {
		return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
  namespace: argocd
  labels: {team: t%d}
spec:
  project: default
  source:
    repoURL: %s
    targetRevision: main
    path: %s
%s  destination:
    name: c-%02d
    namespace: %s
`, name, len(name)%7, repo, path, extra, len(name)%30, name)
	}
	var clusters strings.Builder
	clusters.WriteString("clusters:\n")
	for c := 0; c < 30; c++ {
		fmt.Fprintf(&clusters, "  - {name: c-%02d, server: https://c-%02d.example.com, labels: {env: %s, region: r%d}}\n",
			c, c, []string{"test", "stg", "prd"}[c%3], c%5)
	}
	write("clusters.yaml", clusters.String())

	for b := 0; b < 10; b++ {
		write(fmt.Sprintf("kustomize/bases/b%d/kustomization.yaml", b), "resources: [deployment.yaml, service.yaml]\nlabels:\n  - pairs: {tier: backend}\n")
		write(fmt.Sprintf("kustomize/bases/b%d/deployment.yaml", b), deployment(fmt.Sprintf("svc%d", b), "1.0.0"))
		write(fmt.Sprintf("kustomize/bases/b%d/service.yaml", b), fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {name: svc%d}\nspec: {ports: [{port: 80}], selector: {app: svc%d}}\n", b, b))
	}
	for i := 0; i < 200; i++ {
		name := fmt.Sprintf("k-%03d", i)
		write(fmt.Sprintf("kustomize/overlays/%s/kustomization.yaml", name),
			fmt.Sprintf("resources: [../../bases/b%d]\nnamePrefix: %s-\nnamespace: %s\nreplicas: [{name: svc%d, count: %d}]\n", i%10, name, name, i%10, 1+i%3))
		write("apps/"+name+".yaml", app(name, "kustomize/overlays/"+name, ""))
	}
	write("charts/svc/Chart.yaml", "apiVersion: v2\nname: svc\nversion: 1.0.0\n")
	write("charts/svc/values.yaml", "image: {tag: \"1.0.0\"}\nreplicas: 1\nenv: {}\n")
	write("charts/svc/templates/deployment.yaml", `apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec:
      containers:
        - name: app
          image: "ghcr.io/example/svc:{{ .Values.image.tag }}"
          env:
          {{- range $k, $v := .Values.env }}
            - {name: {{ $k }}, value: {{ $v | quote }}}
          {{- end }}
`)
	write("charts/svc/templates/service.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: {{ .Release.Name }}}\nspec: {ports: [{port: 80}], selector: {app: {{ .Release.Name }}}}\n")
	for i := 0; i < 200; i++ {
		name := fmt.Sprintf("h-%03d", i)
		write(fmt.Sprintf("values/%s.yaml", name), fmt.Sprintf("replicas: %d\nenv: {APP: %s}\n", 1+i%4, name))
		write("apps/"+name+".yaml", app(name, "charts/svc", fmt.Sprintf("    helm:\n      releaseName: %s\n      valueFiles: [../../values/%s.yaml]\n", name, name)))
	}
	for i := 0; i < 100; i++ {
		name := fmt.Sprintf("d-%03d", i)
		write(fmt.Sprintf("manifests/%s/deployment.yaml", name), deployment(name, "2.0.0"))
		write(fmt.Sprintf("manifests/%s/configmap.yaml", name), fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {k: v}\n", name))
		write("apps/"+name+".yaml", app(name, "manifests/"+name, ""))
	}
	gitIn(tb, dir, "init", "-q", "-b", "main")
	gitIn(tb, dir, "remote", "add", "origin", repo)
	gitIn(tb, dir, "add", "-A")
	gitIn(tb, dir, "commit", "-q", "-m", "500 apps")
	gitIn(tb, dir, "checkout", "-q", "-b", "change")
	write("kustomize/bases/b0/deployment.yaml", deployment("svc0", "1.1.0"))
	for i := 0; i < 20; i++ {
		name := fmt.Sprintf("h-%03d", i*10)
		write(fmt.Sprintf("values/%s.yaml", name), fmt.Sprintf("replicas: %d\nenv: {APP: %s, NEW: \"yes\"}\n", 1+i%4, name))
	}
	for i := 0; i < 10; i++ {
		name := fmt.Sprintf("d-%03d", i*10)
		write(fmt.Sprintf("manifests/%s/deployment.yaml", name), deployment(name, "2.1.0"))
	}
	gitIn(tb, dir, "add", "-A")
	gitIn(tb, dir, "commit", "-q", "-m", "touch 50 apps")
	gitIn(tb, dir, "repack", "-a", "-d", "-q") // as in a clone: objects packed
	return dir
}

func deployment(name, tag string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s}
spec:
  replicas: 1
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      containers:
        - {name: app, image: "ghcr.io/example/%[1]s:%[2]s", resources: {requests: {cpu: 100m, memory: 64Mi}}}
`, name, tag)
}

func TestSyntheticFleetAffectsExactlyFifty(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 500-app repository")
	}
	rep, err := Run(context.Background(), theRenderer(), Input{RepoDir: syntheticFleet(t), Base: "main", Head: "change"})
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
		rep, err := Run(ctx, r, Input{RepoDir: dir, Base: "main", Head: "change"})
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
