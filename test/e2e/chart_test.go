package e2e_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/render"
)

// TestChartAppliesToRealKubernetes renders deploy/helm/fleetwave with fleetwave's own renderer (as Argo CD would
// install it) and has the real kube-apiserver accept every object with a server-side dry run: the chart is valid
// for the Kubernetes version the end-to-end environment runs, in both store modes. (The ServiceMonitor needs the
// Prometheus operator's CRD, which this cluster does not have: it is left off here and linted in make test.)
func TestChartAppliesToRealKubernetes(t *testing.T) {
	loadEnv(t) // skips outside make e2e
	kubectl, kubeconfig := findKubectl(t)
	root := repoRoot(t)
	for _, tc := range []struct {
		name   string
		params map[string]string
	}{
		{"sqlite", map[string]string{"github.appID": "12345", "argocd.url": "https://argocd.example.com", "fleetView.existingSecret": "view"}},
		{"postgres", map[string]string{"github.appID": "12345", "replicas": "3", "store.postgres.existingSecret": "pg",
			"podDisruptionBudget.enabled": "true", "repositories.existingSecret": "repos"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := &v1alpha1.Application{}
			app.Name, app.Namespace = "fleetwave", "argocd"
			src := &v1alpha1.ApplicationSource{RepoURL: "https://github.com/fleetwave/fleetwave.git", Path: "deploy/helm/fleetwave",
				Helm: &v1alpha1.ApplicationSourceHelm{ReleaseName: "fleetwave"}}
			for k, v := range tc.params {
				src.Helm.Parameters = append(src.Helm.Parameters, v1alpha1.HelmParameter{Name: k, Value: v})
			}
			app.Spec.Source = src
			app.Spec.Destination = v1alpha1.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: "default"}
			res, err := render.New(render.Options{}).Render(context.Background(), render.Request{App: app,
				Repos: func(string) (string, bool) { return root, true }})
			if err != nil {
				t.Fatal(err)
			}
			var docs []string
			for _, o := range res.Objects {
				o.SetNamespace("default")
				b, err := yaml.Marshal(o.Object)
				if err != nil {
					t.Fatal(err)
				}
				docs = append(docs, string(b))
			}
			cmd := exec.Command(kubectl, "--kubeconfig", kubeconfig, "apply", "--dry-run=server", "--server-side", "-f", "-")
			cmd.Stdin = strings.NewReader(strings.Join(docs, "---\n"))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("kubectl apply --dry-run=server: %v\n%s", err, out)
			}
			if n := strings.Count(string(out), "(server dry run)"); n != len(docs) {
				t.Fatalf("%d of %d objects accepted:\n%s", n, len(docs), out)
			}
			t.Logf("%s: %d objects accepted by kube-apiserver (server dry run)", tc.name, len(docs))
		})
	}
}
