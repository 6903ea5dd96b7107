package preview

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/preview/previewtest"
	"github.com/fleetwave/fleetwave/internal/report"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
	"github.com/fleetwave/fleetwave/internal/testkit/golden"
)

// fleetOfClusters writes a repository of n Applications of one vendored chart, one per cluster (c-000…), each
// with its own values file naming its cluster, under a three-wave release policy; commits it on main, applies
// change on branch change and commits that.
func fleetOfClusters(t *testing.T, n int, change func(write func(rel, content string))) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fleet")
	write := previewtest.Writer(t, dir)
	const repo = "https://github.com/example/wide-fleet.git"
	envs := []string{"test", "stg", "prd"}
	for c := 0; c < n; c++ {
		env := envs[min(2, c*10/n/3)] // 30% test, 30% stg, 40% prd
		write(fmt.Sprintf("clusters/c-%03d.yaml", c), previewtest.ClusterSecret(fmt.Sprintf("c-%03d", c), env, fmt.Sprintf("r%d", c%4)))
		write(fmt.Sprintf("values/c-%03d.yaml", c), fmt.Sprintf("cluster: c-%03d\nregion: r%d\n", c, c%4))
		write(fmt.Sprintf("apps/svc-c-%03d.yaml", c), fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: svc-c-%03d, namespace: argocd}
spec:
  project: default
  source:
    repoURL: %s
    targetRevision: main
    path: charts/svc
    helm: {releaseName: svc, valueFiles: [../../values/c-%03d.yaml]}
  destination: {name: c-%03d, namespace: svc}
`, c, repo, c, c))
	}
	write(".fleetwave.yaml", `apiVersion: fleetwave/v1
waves:
  - name: canary
    selector: {matchLabels: {env: test}}
    maxParallel: 100%
  - name: staging
    selector: {matchLabels: {env: stg}}
    maxParallel: 100%
  - name: production
    selector: {matchLabels: {env: prd}}
    maxParallel: 50%
    production: true
    soak: 30m
    approval: {required: true, teams: [example/sre]}
`)
	write("charts/svc/Chart.yaml", "apiVersion: v2\nname: svc\nversion: 1.0.0\n")
	write("charts/svc/values.yaml", "image: {tag: \"1.0.0\"}\nreplicas: 2\nextra: []\n")
	write("charts/svc/templates/deployment.yaml", `apiVersion: apps/v1
kind: Deployment
metadata: {name: svc}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: svc}}
  template:
    metadata: {labels: {app: svc}}
    spec:
      containers:
        - name: svc
          image: "ghcr.io/example/svc:{{ .Values.image.tag }}"
          ports: [{containerPort: 8080}]
`)
	write("charts/svc/templates/configmap.yaml", `apiVersion: v1
kind: ConfigMap
metadata: {name: svc}
data:
  CLUSTER: {{ .Values.cluster }}
  REGION: {{ .Values.region }}
{{- range $i, $e := .Values.extra }}
  EXTRA_{{ $i }}: {{ $e | quote }}
{{- end }}
`)
	gittest.Run(t, dir, "init", "-q", "-b", "main")
	gittest.Run(t, dir, "remote", "add", "origin", repo)
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "fleet")
	gittest.Run(t, dir, "checkout", "-q", "-b", "change")
	change(write)
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "change")
	return dir
}

// planComment plans base..change in dir, checks that all n apps changed and none failed, and returns the
// comment as the App posts it.
func planComment(t *testing.T, dir string, n int) []string {
	t.Helper()
	rep, err := reportOf(Run(context.Background(), theRenderer(), Input{RepoDir: dir, Base: "main", Head: "change", Plan: true}))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Summary.Changed != n || rep.HasErrors() {
		t.Fatalf("summary %+v, errors %v", rep.Summary, firstErrors(rep))
	}
	return rep.MarkdownParts(report.MaxCommentChars)
}

// TestFleetWideChangeIsOneComment: one shared value changed on 500 clusters is one comment under GitHub's limit
// that shows the diff once, says it is the same on 500 apps, and lists them in rollout order.
func TestFleetWideChangeIsOneComment(t *testing.T) {
	if testing.Short() {
		t.Skip("renders 1,000 charts")
	}
	dir := fleetOfClusters(t, 500, func(write func(string, string)) {
		write("charts/svc/values.yaml", "image: {tag: \"1.1.0\"}\nreplicas: 2\nextra: []\n")
	})
	parts := planComment(t, dir, 500)
	if len(parts) != 1 {
		t.Fatalf("%d parts (%d bytes in all), want one comment", len(parts), len(strings.Join(parts, "")))
	}
	md := parts[0]
	if len(md) > report.MaxCommentChars {
		t.Fatalf("comment is %d bytes", len(md))
	}
	for _, want := range []string{
		"#1 svc: same change on 500 apps, changed (+0 ~1 -0 each)",
		"| 1 | `svc` ×500 | canary, staging, production |",
		"`svc`: `ghcr.io/example/svc:1.0.0` → `ghcr.io/example/svc:1.1.0` — 500 apps (#1)",
		"- **canary**: `svc-c-000` → c-000",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("comment lacks %q", want)
		}
	}
	if n := strings.Count(md, "+      - image: ghcr.io/example/svc:1.1.0"); n != 1 {
		t.Errorf("the image change is shown %d times, want once", n)
	}
	golden.Assert(t, "fleet-500-one-value.md", md)
}

// TestFleetWithDistinctDiffsSplitsSummaryFirst: the same fleet, where 50 apps also get a large change of their
// own, takes numbered parts: the summary, table and plan in the first, every part under the limit with its
// Markdown balanced, each app's own change shown once, the shared one once.
func TestFleetWithDistinctDiffsSplitsSummaryFirst(t *testing.T) {
	if testing.Short() {
		t.Skip("renders 1,000 charts")
	}
	dir := fleetOfClusters(t, 500, func(write func(string, string)) {
		write("charts/svc/values.yaml", "image: {tag: \"1.1.0\"}\nreplicas: 2\nextra: []\n")
		for c := 0; c < 500; c += 10 {
			var b strings.Builder
			fmt.Fprintf(&b, "cluster: c-%03d\nregion: r%d\nextra:\n", c, c%4)
			for i := 0; i < 40; i++ {
				// "number 010", not "c-010": a cluster's name in a value is its identity, grouped away (#34).
				fmt.Fprintf(&b, "  - setting %d of cluster number %03d, long enough to make this diff weigh\n", i, c)
			}
			write(fmt.Sprintf("values/c-%03d.yaml", c), b.String())
		}
	})
	parts := planComment(t, dir, 500)
	if len(parts) < 2 {
		t.Fatalf("%d part, want the comment split", len(parts))
	}
	first := parts[0]
	for _, want := range []string{"## fleetwave preview", "| # | Apps | Wave |", "### Wave plan", fmt.Sprintf("_Part 1 of %d._", len(parts))} {
		if !strings.Contains(first, want) {
			t.Errorf("part 1 lacks %q", want)
		}
	}
	all := strings.Join(parts, "")
	for i, p := range parts {
		if len(p) > report.MaxCommentChars {
			t.Errorf("part %d is %d bytes", i+1, len(p))
		}
		if strings.Count(p, "<details>") != strings.Count(p, "</details>") || strings.Count(p, "\n```")%2 != 0 {
			t.Errorf("part %d has unbalanced Markdown", i+1)
		}
	}
	for c := 0; c < 500; c += 10 {
		if n := strings.Count(all, fmt.Sprintf("+  EXTRA_39: setting 39 of cluster number %03d,", c)); n != 1 {
			t.Errorf("c-%03d's own change is shown %d times", c, n)
		}
	}
	if n := strings.Count(all, "+      - image: ghcr.io/example/svc:1.1.0"); n != 1 {
		t.Errorf("the shared image change is shown %d times, want once", n)
	}
	golden.Assert(t, "fleet-500-distinct-part1.md", first)
}
