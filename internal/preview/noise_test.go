package preview

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/preview/previewtest"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

// TestNoiseControls: a chart version bump changes helm.sh/chart on every object; the policy's diff.ignore
// leaves out a field an operator owns (replicas, scaled by an autoscaler). The comment shows the change that
// matters, says what it folded or left out, and diff.showChartLabels brings the label hunks back.
func TestNoiseControls(t *testing.T) {
	const policy = "apiVersion: fleetwave/v1\nwaves:\n  - {name: everywhere, selector: {}}\ndiff:\n  ignore:\n    - {group: apps, kind: Deployment, jsonPointers: [/spec/replicas]}\n"
	for _, tc := range []struct {
		name, extra string
		want, not   []string
	}{
		{"folded by default", "",
			[]string{"+  a: hello", "🔕 2 hunks only changing the `helm.sh/chart` label folded", "🔕 Fields the release policy's `diff.ignore` names are left out (1 object)"},
			[]string{"+    helm.sh/chart: web-1.1.0", "replicas: 5"}},
		{"shown on request", "  showChartLabels: true\n",
			[]string{"+  a: hello", "+    helm.sh/chart: web-1.1.0"},
			[]string{"only changing the `helm.sh/chart` label folded", "replicas: 5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "repo")
			write := previewtest.Writer(t, dir)
			const repo = "https://github.com/example/noise.git"
			write(".fleetwave.yaml", policy+tc.extra)
			write("apps/web.yaml", "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web, namespace: argocd}\nspec:\n  project: default\n  source: {repoURL: "+repo+", path: chart, targetRevision: main}\n  destination: {server: https://kubernetes.default.svc, namespace: web}\n")
			write("chart/Chart.yaml", "apiVersion: v2\nname: web\nversion: 1.0.0\n")
			write("chart/values.yaml", "replicas: 2\ngreeting: hi\n")
			write("chart/templates/all.yaml", `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {helm.sh/chart: "{{ .Chart.Name }}-{{ .Chart.Version }}"}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "web:1"}]}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web
  labels: {helm.sh/chart: "{{ .Chart.Name }}-{{ .Chart.Version }}"}
data:
  a: {{ .Values.greeting }}
  b: "2"
  c: "3"
  d: "4"
  e: "5"
  f: "6"
  g: "7"
  h: "8"
`)
			gittest.Run(t, dir, "init", "-q", "-b", "main")
			gittest.Run(t, dir, "remote", "add", "origin", repo)
			gittest.Run(t, dir, "add", "-A")
			gittest.Run(t, dir, "commit", "-q", "-m", "web")
			gittest.Run(t, dir, "checkout", "-q", "-b", "change")
			write("chart/Chart.yaml", "apiVersion: v2\nname: web\nversion: 1.1.0\n")
			write("chart/values.yaml", "replicas: 5\ngreeting: hello\n")
			gittest.Run(t, dir, "commit", "-q", "-am", "bump")

			rep, err := reportOf(Run(context.Background(), theRenderer(), Input{RepoDir: dir, Base: "main", Head: "change", Plan: true}))
			if err != nil {
				t.Fatal(err)
			}
			md := rep.Markdown()
			for _, w := range tc.want {
				if !strings.Contains(md, w) {
					t.Errorf("comment lacks %q:\n%s", w, md)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(md, n) {
					t.Errorf("comment has %q:\n%s", n, md)
				}
			}
			if a := rep.Apps[0]; a.Ignored != 1 {
				t.Errorf("ignored = %d, want 1 (the Deployment)", a.Ignored)
			}
		})
	}
}
