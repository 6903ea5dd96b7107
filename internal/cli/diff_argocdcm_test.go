package cli

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
)

// diff --argocd-cm: argocd-cm's resource.customizations.ignoreDifferences apply to the live comparison, so a
// hand-edited field Argo CD ignores system-wide is no drift.
func TestDiffArgoCDCMFile(t *testing.T) {
	repo := previewRepo(t, nil)
	live := []string{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web","namespace":"web",` +
		`"annotations":{"argocd.argoproj.io/tracking-id":"web:/ConfigMap:web/web"}},"data":{"color":"red"}}`}
	sim := argocdsim.New(argocdsim.Config{Manifests: func(*v1alpha1.Application, string) ([]string, error) { return live, nil }})
	t.Cleanup(sim.Close)
	app := &v1alpha1.Application{}
	app.Name, app.Namespace = "web", "argocd"
	app.Spec.Source = &v1alpha1.ApplicationSource{RepoURL: previewRepoURL, Path: "manifests/web", TargetRevision: "HEAD"}
	app.Spec.Destination = v1alpha1.ApplicationDestination{Name: "prd-eu-1", Namespace: "web"}
	sim.SetRef("HEAD", "1111111111111111111111111111111111111111")
	if err := sim.AddApp(app, argocdsim.AppOptions{LiveRevisions: []string{"1111111111111111111111111111111111111111"}}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	cm := filepath.Join(t.TempDir(), "argocd-cm.yaml")
	if err := os.WriteFile(cm, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm, namespace: argocd}\ndata:\n"+
		"  resource.customizations.ignoreDifferences.ConfigMap: |\n    jsonPointers: [/data/color]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	drift := func(args ...string) []string {
		t.Helper()
		code, out, stderr := runPreviewCmd(t, append([]string{"diff", "-o", "json", "--repo", repo, "--base", "main", "--head", "change",
			"--repo-url", previewRepoURL, "--argocd", srv.URL}, args...)...)
		var doc struct {
			Apps []struct {
				Name string
				Live *struct{ Drift []string }
			}
		}
		if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
			t.Fatalf("code %d\n%s\n%s", code, out, stderr)
		}
		for _, a := range doc.Apps {
			if a.Name == "web" && a.Live != nil {
				return a.Live.Drift
			}
		}
		t.Fatalf("no live comparison of web:\n%s", out)
		return nil
	}
	// The Secret is not live at all: drift either way.
	if d := drift(); strings.Join(d, ",") != "ConfigMap web/web,Secret web/web" {
		t.Fatalf("without --argocd-cm: drift %q", d)
	}
	if d := drift("--argocd-cm", cm); strings.Join(d, ",") != "Secret web/web" {
		t.Fatalf("with --argocd-cm: drift %q", d)
	}

	code, _, stderr := runPreviewCmd(t, "diff", "--repo", repo, "--base", "main", "--argocd-cm", cm)
	if code != 2 || !strings.Contains(stderr, "--argocd-cm needs --argocd") {
		t.Fatalf("--argocd-cm alone: code %d, %s", code, stderr)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("data:\n  resource.customizations.nonsense.ConfigMap: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runPreviewCmd(t, "diff", "--repo", repo, "--base", "main", "--argocd", srv.URL, "--argocd-cm", bad)
	if code != 2 || !strings.Contains(stderr, "--argocd-cm") {
		t.Fatalf("bad --argocd-cm: code %d, %s", code, stderr)
	}
}
