package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
)

// TestRenderLogsKustomizeWarnings: a kustomization with a deprecated field makes Kustomize print a warning
// (fmt.Fprintf(os.Stderr) in kusttarget.go Load). `render` shows it as one structured log line on stderr,
// naming the app, never as Kustomize's raw line, and the manifests on stdout are unchanged.
func TestRenderLogsKustomizeWarnings(t *testing.T) {
	root := filetest.Tree(t, map[string]string{
		"app.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: legacy, namespace: argocd}\n" +
			"spec:\n  destination: {namespace: d}\n  source: {repoURL: https://example.com/r.git, path: overlay}\n",
		"overlay/kustomization.yaml": "resources: [cm.yaml]\ncommonLabels: {team: a}\n",
		"overlay/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
	})
	code, out, errOut := run(t, "render", "--app", filepath.Join(root, "app.yaml"), "--repo-root", root)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "team: a") || !strings.Contains(out, "kind: ConfigMap") {
		t.Fatalf("stdout:\n%s\nwant the labelled ConfigMap", out)
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "time=") || !strings.Contains(lines[0], "level=WARN") ||
		!strings.Contains(lines[0], "app=legacy") || !strings.Contains(lines[0], "'commonLabels' is deprecated") {
		t.Fatalf("stderr:\n%s\nwant one WARN log line naming app=legacy and the warning", errOut)
	}
}
