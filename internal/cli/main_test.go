package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
)

// run executes the whole CLI in-process, as `fleetwave args...` would, and returns its exit code and streams.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	deps := &Deps{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}
	code = Main(context.Background(), args, deps)
	return code, out.String(), errOut.String()
}

func TestRenderCommand(t *testing.T) {
	root := filetest.Tree(t, map[string]string{
		"app.yaml": `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: argocd}
spec:
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  source:
    repoURL: https://example.com/fleet.git
    path: chart
    helm: {parameters: [{name: rev, value: $ARGOCD_APP_REVISION_SHORT}]}
`,
		"chart/Chart.yaml": "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"chart/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: web}
data:
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  hasFoo: {{ .Capabilities.APIVersions.Has "foo.example.com/v1" | quote }}
  rev: {{ .Values.rev | quote }}
  helm: {{ .Capabilities.HelmVersion.Version | quote }}
`,
		"settings.yaml":     "kubeVersion: v1.29.3\ntrackingMethod: label\nappLabelKey: team/app\nrevision: 0123456789abcdef\n",
		"settings-35.yaml":  "argocdVersion: \"3.5\"\n",
		"settings-bad.yaml": "argocdVersion: \"2.14\"\n",
	})
	app := filepath.Join(root, "app.yaml")

	tests := []struct {
		name     string
		args     []string
		code     int
		contains []string
		absent   []string
		stderr   string
	}{
		{
			name: "defaults", args: []string{"--app", app, "--repo-root", root},
			contains: []string{`kube: v1.30.0`, `hasFoo: "false"`, "argocd.argoproj.io/tracking-id: web:/ConfigMap:shop/web", "helm: v4.3.1"},
		},
		{name: "Argo CD 3.4 renders with Helm 3", args: []string{"--app", app, "--repo-root", root, "--argocd-version", "3.4"},
			contains: []string{`kube: v1.30.0`, "helm: v3.19.4"}},
		{name: "argocdVersion in the settings file", args: []string{"--app", app, "--repo-root", root, "--settings", filepath.Join(root, "settings-35.yaml")},
			contains: []string{"helm: v4.2.1"}},
		{name: "the flag wins over the settings file", args: []string{"--app", app, "--repo-root", root, "--settings", filepath.Join(root, "settings-35.yaml"), "--argocd-version", "v3.6.1"},
			contains: []string{"helm: v4.3.1"}},
		{name: "before 3.4 the cluster version is major.minor", args: []string{"--app", app, "--repo-root", root, "--argocd-version", "3.3", "--kube-version", "v1.29.3"},
			contains: []string{`kube: v1.29`, "helm: v3.19.4"}},
		{name: "unsupported Argo CD version", args: []string{"--app", app, "--repo-root", root, "--argocd-version", "3.1"}, code: 2,
			stderr: "--argocd-version: argocd version 3.1 is not supported: fleetwave renders as Argo CD 3.2 to 3.6"},
		{name: "unsupported Argo CD version in the settings file", args: []string{"--app", app, "--repo-root", root, "--settings", filepath.Join(root, "settings-bad.yaml")}, code: 2,
			stderr: "argocd version 2.14 is not supported"},
		{
			name: "settings file", args: []string{"--app", app, "--repo-root", root, "--settings", filepath.Join(root, "settings.yaml")},
			contains: []string{`kube: v1.29.3`, "team/app: web", `rev: "0123456"`}, absent: []string{"tracking-id"},
		},
		{
			name: "flags win over settings", args: []string{"--app", app, "--repo-root", root, "--settings", filepath.Join(root, "settings.yaml"),
				"--kube-version", "1.31", "--tracking-method", "annotation+label", "--api-versions", "foo.example.com/v1, v1", "--revision", "fedcba9876543210"},
			// Argo CD passes the version through k8s ParseGeneric, which keeps "1.31" as two components.
			contains: []string{`kube: v1.31`, `hasFoo: "true"`, "team/app: web", "tracking-id: web:/ConfigMap:shop/web", `rev: fedcba9`},
		},
		{name: "missing --app", args: []string{"--repo-root", root}, code: 2, stderr: "--app is required"},
		{name: "bad tracking method", args: []string{"--app", app, "--repo-root", root, "--tracking-method", "magic"}, code: 2, stderr: "tracking method"},
		{name: "not an application", args: []string{"--app", filepath.Join(root, "settings.yaml"), "--repo-root", root}, code: 2, stderr: "not an argoproj.io Application"},
		{name: "repo root missing", args: []string{"--app", app, "--repo-root", filepath.Join(root, "nope")}, code: 2, stderr: "is not a directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, append([]string{"render"}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, errOut)
			}
			for _, c := range tc.contains {
				if !strings.Contains(out, c) {
					t.Errorf("stdout lacks %q:\n%s", c, out)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(out, a) {
					t.Errorf("stdout has %q:\n%s", a, out)
				}
			}
			if tc.stderr != "" {
				if !strings.Contains(errOut, tc.stderr) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
					t.Errorf("stderr = %q; want one line containing %q", errOut, tc.stderr)
				}
			}
		})
	}
}
