// Package previewtest writes the synthetic 500-Application GitOps repository that the preview and App benchmarks
// measure, so both measure the same fleet. It only writes files; callers commit them as their scenario needs.
package previewtest

import (
	"fmt"
	"github.com/fleetwave/fleetwave/internal/testkit/fleetgen"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Layout of the fleet: 200 Kustomize overlays over 10 shared bases (20 per base), 200 Helm apps sharing one
// vendored chart with one values file each, and 100 plain directories, spread over 30 clusters c-00..c-29
// (env test/stg/prd, region r0..r4).
const Apps = 500

// ClusterSource says how the fleet declares its clusters.
type ClusterSource int

const (
	// ClustersFile writes clusters.yaml (the `--clusters` list form).
	ClustersFile ClusterSource = iota
	// ClusterSecrets writes Argo CD cluster Secrets under clusters/, which discovery finds in the repository.
	ClusterSecrets
)

// WriteFleet writes the fleet into dir; every Application's source repoURL is repoURL.
func WriteFleet(tb testing.TB, dir, repoURL string, clusters ClusterSource) {
	tb.Helper()
	write := Writer(tb, dir)
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
`, name, len(name)%7, repoURL, path, extra, len(name)%30, name)
	}
	envs := []string{"test", "stg", "prd"}
	switch clusters {
	case ClustersFile:
		var b strings.Builder
		b.WriteString("clusters:\n")
		for c := 0; c < 30; c++ {
			fmt.Fprintf(&b, "  - {name: c-%02d, server: https://c-%02d.example.com, labels: {env: %s, region: r%d}}\n", c, c, envs[c%3], c%5)
		}
		write("clusters.yaml", b.String())
	case ClusterSecrets:
		for c := 0; c < 30; c++ {
			name := fmt.Sprintf("c-%02d", c)
			write("clusters/"+name+".yaml", ClusterSecret(name, envs[c%3], fmt.Sprintf("r%d", c%5)))
		}
	}
	for b := 0; b < 10; b++ {
		write(fmt.Sprintf("kustomize/bases/b%d/kustomization.yaml", b), "resources: [deployment.yaml, service.yaml]\nlabels:\n  - pairs: {tier: backend}\n")
		write(fmt.Sprintf("kustomize/bases/b%d/deployment.yaml", b), fleetgen.Deployment(fmt.Sprintf("svc%d", b), "1.0.0"))
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
		write(fmt.Sprintf("manifests/%s/deployment.yaml", name), fleetgen.Deployment(name, "2.0.0"))
		write(fmt.Sprintf("manifests/%s/configmap.yaml", name), fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {k: v}\n", name))
		write("apps/"+name+".yaml", app(name, "manifests/"+name, ""))
	}
}

// ClusterSecret is an Argo CD cluster Secret for cluster name (server https://<name>.example.com) with env and
// region labels.
func ClusterSecret(name, env, region string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: cluster-%s
  namespace: argocd
  labels: {argocd.argoproj.io/secret-type: cluster, env: %s, region: %s}
stringData: {name: %s, server: "https://%s.example.com"}
`, name, env, region, name, name)
}

// Change is a modification of the fleet that touches exactly 50 apps.
type Change struct {
	BaseTag  string // image tag of kustomize base b0 → its 20 overlays
	NewValue string // value of a new env entry in every tenth Helm values file → 20 Helm apps
	DirTag   string // image tag of every tenth plain directory → 10 apps
}

// WriteChange applies c to the fleet in dir.
func WriteChange(tb testing.TB, dir string, c Change) {
	tb.Helper()
	write := Writer(tb, dir)
	write("kustomize/bases/b0/deployment.yaml", fleetgen.Deployment("svc0", c.BaseTag))
	for i := 0; i < 20; i++ {
		name := fmt.Sprintf("h-%03d", i*10)
		write(fmt.Sprintf("values/%s.yaml", name), fmt.Sprintf("replicas: %d\nenv: {APP: %s, NEW: %q}\n", 1+i%4, name, c.NewValue))
	}
	for i := 0; i < 10; i++ {
		name := fmt.Sprintf("d-%03d", i*10)
		write(fmt.Sprintf("manifests/%s/deployment.yaml", name), fleetgen.Deployment(name, c.DirTag))
	}
}

// Writer returns a function writing files (slash-separated paths under dir, directories created), failing tb on
// error.
func Writer(tb testing.TB, dir string) func(rel, content string) {
	return func(rel, content string) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}
