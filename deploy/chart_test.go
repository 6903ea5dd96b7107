// Package deploy holds the deployment material (the Helm chart in helm/fleetwave); its tests render the chart
// with fleetwave's own renderer, as Argo CD would, and lint it with the Helm SDK.
package deploy

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fleetwave/fleetwave/internal/config"
	"github.com/fleetwave/fleetwave/internal/render"
)

const chartDir = "helm/fleetwave"

func TestChartLints(t *testing.T) {
	for _, values := range []map[string]any{
		{"github": map[string]any{"appID": "12345"}},
		{"github": map[string]any{"appID": "12345"}, "replicas": 3, "store": map[string]any{"postgres": map[string]any{"existingSecret": "pg"}},
			"serviceMonitor": map[string]any{"enabled": true}, "podDisruptionBudget": map[string]any{"enabled": true}},
	} {
		l := lint.AllWithKubeVersion(chartDir, values, "fleetwave", &chartutil.KubeVersion{Version: "v1.34.0", Major: "1", Minor: "34"})
		for _, m := range l.Messages {
			if m.Severity >= support.WarningSev {
				t.Errorf("helm lint %v: %s", values, m)
			}
		}
	}
}

// renderChart renders the chart as Argo CD would render an Application installing it with helm parameters.
func renderChart(t *testing.T, params map[string]string) ([]*unstructured.Unstructured, error) {
	t.Helper()
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	app := &v1alpha1.Application{}
	app.Name, app.Namespace = "fleetwave", "argocd"
	src := &v1alpha1.ApplicationSource{RepoURL: "https://github.com/fleetwave/fleetwave.git", Path: chartDir, TargetRevision: "HEAD",
		Helm: &v1alpha1.ApplicationSourceHelm{ReleaseName: "fleetwave"}}
	for k, v := range params {
		src.Helm.Parameters = append(src.Helm.Parameters, v1alpha1.HelmParameter{Name: k, Value: v})
	}
	app.Spec.Source = src
	app.Spec.Destination = v1alpha1.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: "fleetwave"}
	res, err := render.New(render.Options{}).Render(context.Background(), render.Request{App: app,
		Repos: func(string) (string, bool) { return root, true }})
	if err != nil {
		return nil, err
	}
	return res.Objects, nil
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind string, into any) bool {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind {
			if into != nil {
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
					t.Fatal(err)
				}
			}
			return true
		}
	}
	return false
}

func env(c corev1.Container) map[string]corev1.EnvVar {
	out := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		out[e.Name] = e
	}
	return out
}

// serveEnv are the environment variables serve reads (internal/config, internal/cli serve and renderer): a
// variable the chart sets that is not here would be ignored.
var serveEnv = map[string]bool{"FLEETWAVE_ADDR": true, "FLEETWAVE_REPLICA_NAME": true, "FLEETWAVE_GITHUB_APP_ID": true,
	"FLEETWAVE_GITHUB_API_URL": true, "FLEETWAVE_GITHUB_PRIVATE_KEY_FILE": true, "FLEETWAVE_WEBHOOK_SECRET": true,
	"FLEETWAVE_ARGOCD_URL": true, "FLEETWAVE_ARGOCD_INSECURE": true, "FLEETWAVE_ARGOCD_TOKEN": true, "FLEETWAVE_STORE": true,
	"FLEETWAVE_CACHE_DIR": true, "FLEETWAVE_REPOSITORIES_FILE": true, "FLEETWAVE_RENDER_WORKERS": true,
	"FLEETWAVE_RENDER_MEMORY": true, "FLEETWAVE_RENDER_TIMEOUT": true, "FLEETWAVE_RENDER_BUDGET": true, "TMPDIR": true,
	"FLEETWAVE_FLEET_VIEW_TOKEN": true}

func TestChartRendersAHardenedStatefulSet(t *testing.T) {
	tests := []struct {
		name   string
		params map[string]string
		check  func(t *testing.T, objs []*unstructured.Unstructured, sts *appsv1.StatefulSet)
	}{
		{"sqlite, one replica", map[string]string{"github.appID": "12345", "argocd.url": "https://argocd.example.com"},
			func(t *testing.T, objs []*unstructured.Unstructured, sts *appsv1.StatefulSet) {
				e := env(sts.Spec.Template.Spec.Containers[0])
				if len(sts.Spec.VolumeClaimTemplates) != 1 || e["FLEETWAVE_STORE"].Value != "sqlite:///var/lib/fleetwave/fleetwave.db" {
					t.Errorf("sqlite: PVCs %d, store %+v", len(sts.Spec.VolumeClaimTemplates), e["FLEETWAVE_STORE"])
				}
				if r := e["FLEETWAVE_ARGOCD_TOKEN"].ValueFrom; r == nil || r.SecretKeyRef == nil || r.SecretKeyRef.Name != "fleetwave-argocd" {
					t.Errorf("the Argo CD token is not read from its Secret: %+v", e["FLEETWAVE_ARGOCD_TOKEN"])
				}
				if find(t, objs, "ServiceMonitor", nil) || find(t, objs, "PodDisruptionBudget", nil) {
					t.Error("ServiceMonitor or PodDisruptionBudget rendered while disabled")
				}
				// No URL a pull request writes may reach the cloud's instance metadata (issue #38 item 12).
				var np networkingv1.NetworkPolicy
				if !find(t, objs, "NetworkPolicy", &np) {
					t.Fatal("no NetworkPolicy")
				}
				var except []string
				for _, e := range np.Spec.Egress {
					for _, to := range e.To {
						if to.IPBlock != nil {
							except = append(except, to.IPBlock.Except...)
						}
					}
				}
				if len(np.Spec.PolicyTypes) != 2 || !slices.Contains(except, "169.254.0.0/16") || !slices.Contains(except, "fd00:ec2::254/128") {
					t.Errorf("NetworkPolicy: types %v, egress except %v", np.Spec.PolicyTypes, except)
				}
			}},
		{"network policy off", map[string]string{"github.appID": "12345", "networkPolicy.enabled": "false"},
			func(t *testing.T, objs []*unstructured.Unstructured, sts *appsv1.StatefulSet) {
				if find(t, objs, "NetworkPolicy", nil) {
					t.Error("NetworkPolicy rendered while disabled")
				}
			}},
		{"postgres, three replicas, monitoring", map[string]string{"github.appID": "12345", "replicas": "3", "store.postgres.existingSecret": "pg",
			"serviceMonitor.enabled": "true", "podDisruptionBudget.enabled": "true", "repositories.existingSecret": "repos",
			"fleetView.existingSecret": "view"},
			func(t *testing.T, objs []*unstructured.Unstructured, sts *appsv1.StatefulSet) {
				e := env(sts.Spec.Template.Spec.Containers[0])
				if len(sts.Spec.VolumeClaimTemplates) != 0 || e["FLEETWAVE_STORE"].ValueFrom == nil || e["FLEETWAVE_STORE"].ValueFrom.SecretKeyRef.Name != "pg" {
					t.Errorf("postgres: PVCs %d, store %+v", len(sts.Spec.VolumeClaimTemplates), e["FLEETWAVE_STORE"])
				}
				if r := e["FLEETWAVE_FLEET_VIEW_TOKEN"].ValueFrom; r == nil || r.SecretKeyRef == nil || r.SecretKeyRef.Name != "view" {
					t.Errorf("the fleet view token is not read from its Secret: %+v", e["FLEETWAVE_FLEET_VIEW_TOKEN"])
				}
				if *sts.Spec.Replicas != 3 || e["FLEETWAVE_REPOSITORIES_FILE"].Value != "/etc/fleetwave/repositories/repositories.yaml" {
					t.Errorf("replicas %d, repositories %+v", *sts.Spec.Replicas, e["FLEETWAVE_REPOSITORIES_FILE"])
				}
				if !find(t, objs, "ServiceMonitor", nil) || !find(t, objs, "PodDisruptionBudget", nil) {
					t.Error("ServiceMonitor or PodDisruptionBudget missing")
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := renderChart(t, tc.params)
			if err != nil {
				t.Fatal(err)
			}
			var sts appsv1.StatefulSet
			if !find(t, objs, "StatefulSet", &sts) {
				t.Fatalf("no StatefulSet in %d objects", len(objs))
			}
			pod := sts.Spec.Template.Spec
			c := pod.Containers[0]
			ps, cs := pod.SecurityContext, c.SecurityContext
			if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.RunAsUser == nil || *ps.RunAsUser == 0 ||
				cs == nil || cs.ReadOnlyRootFilesystem == nil || !*cs.ReadOnlyRootFilesystem || cs.AllowPrivilegeEscalation == nil ||
				*cs.AllowPrivilegeEscalation || cs.Capabilities == nil || len(cs.Capabilities.Drop) != 1 || cs.Capabilities.Drop[0] != "ALL" {
				t.Errorf("not hardened: pod %+v, container %+v", ps, cs)
			}
			if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
				t.Errorf("probes: %+v %+v", c.LivenessProbe, c.ReadinessProbe)
			}
			e := env(c)
			if r := e["FLEETWAVE_REPLICA_NAME"].ValueFrom; r == nil || r.FieldRef == nil || r.FieldRef.FieldPath != "metadata.name" {
				t.Errorf("FLEETWAVE_REPLICA_NAME is not the pod's name: %+v", e["FLEETWAVE_REPLICA_NAME"])
			}
			for name, v := range e {
				if !serveEnv[name] {
					t.Errorf("the chart sets %s, which serve does not read", name)
				}
				if v.Value != "" && strings.Contains(strings.ToLower(name), "secret") || strings.HasSuffix(name, "_TOKEN") && v.Value != "" {
					t.Errorf("%s is set from values, not from a Secret", name)
				}
			}
			// The render settings are in the forms serve parses.
			if _, err := config.ParseBytes(e["FLEETWAVE_RENDER_MEMORY"].Value); err != nil {
				t.Errorf("FLEETWAVE_RENDER_MEMORY: %v", err)
			}
			for _, k := range []string{"FLEETWAVE_RENDER_TIMEOUT", "FLEETWAVE_RENDER_BUDGET"} {
				if _, err := time.ParseDuration(e[k].Value); err != nil {
					t.Errorf("%s: %v", k, err)
				}
			}
			tc.check(t, objs, &sts)
		})
	}
}

func TestChartRefusesUnsafeValues(t *testing.T) {
	for _, tc := range []struct {
		params map[string]string
		want   string
	}{
		{map[string]string{}, "github.appID is required"},
		{map[string]string{"github.appID": "1", "replicas": "2"}, "replicas > 1 needs PostgreSQL"},
	} {
		if _, err := renderChart(t, tc.params); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error containing %q", tc.params, err, tc.want)
		}
	}
}

func TestMain(m *testing.M) {
	if _, err := os.Stat(chartDir); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

// TestDockerfileMatchesChartAndModule checks the Dockerfile against what it must agree with (no Docker engine
// runs here to build it): the Go version of go.mod, the chart's user and port, git in the image (the previews
// run the git CLI), a static binary, and no secret baked in.
func TestDockerfileMatchesChartAndModule(t *testing.T) {
	df, err := os.ReadFile(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join("..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var goVersion string
	for _, l := range strings.Split(string(mod), "\n") {
		if v, ok := strings.CutPrefix(l, "go "); ok {
			parts := strings.Split(strings.TrimSpace(v), ".")
			goVersion = parts[0] + "." + parts[1]
		}
	}
	text := string(df)
	for _, want := range []string{
		"FROM golang:" + goVersion + "-", // the toolchain go.mod asks for
		"CGO_ENABLED=0",                  // static: modernc SQLite and pgx are pure Go
		"install -y --no-install-recommends git ca-certificates",
		"USER 65532:65532", // the chart's runAsUser/runAsGroup
		"EXPOSE 8080",      // the chart's containerPort
		`CMD ["serve"]`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	for _, l := range strings.Split(text, "\n") {
		up := strings.ToUpper(l)
		if (strings.HasPrefix(up, "ENV ") || strings.HasPrefix(up, "ARG ")) && (strings.Contains(up, "TOKEN") || strings.Contains(up, "SECRET") || strings.Contains(up, "KEY")) {
			t.Errorf("Dockerfile bakes a credential setting into the image: %s", l)
		}
	}
	values, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(values), "runAsUser: 65532") {
		t.Error("the chart's runAsUser is not the image's user 65532")
	}
}
