package cli

import (
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/argocd/argocdsim"
)

// diff --argocd against the simulator: web is live with a hand-edited ConfigMap and another Secret value.
func TestDiffArgoCDLive(t *testing.T) {
	repo := previewRepo(t, nil)
	live := []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web","namespace":"web"},"data":{"color":"red"}}`,
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"web","namespace":"web"},"data":{"token":"` + base64.StdEncoding.EncodeToString([]byte("cli-live-secret")) + `"}}`,
	}
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
	common := []string{"--repo", repo, "--base", "main", "--head", "change", "--repo-url", previewRepoURL, "--argocd", srv.URL}

	code, out, stderr := runPreviewCmd(t, append([]string{"diff", "-o", "json"}, common...)...)
	var doc struct {
		Apps []struct {
			Name string
			Live *struct {
				Compared int
				Drift    []string
			}
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
		t.Fatalf("code %d\n%s\n%s", code, out, stderr)
	}
	var found bool
	for _, a := range doc.Apps {
		if a.Name == "web" && a.Live != nil && a.Live.Compared == 2 && strings.Join(a.Live.Drift, ",") == "ConfigMap web/web,Secret web/web" {
			found = true
		}
	}
	if !found {
		t.Fatalf("web's live comparison missing or wrong:\n%s", out)
	}
	for _, format := range []string{"text", "markdown", "json"} {
		_, out, stderr := runPreviewCmd(t, append([]string{"diff", "-o", format}, common...)...)
		if strings.Contains(out+stderr, "cli-live-secret") || strings.Contains(out+stderr, base64.StdEncoding.EncodeToString([]byte("cli-live-secret"))) || strings.Contains(out, "cli-secret") {
			t.Fatalf("%s: a Secret value was printed:\n%s", format, out)
		}
		if format != "json" && !strings.Contains(out, "live state drifted from the base render") {
			t.Errorf("%s: no drift note:\n%s", format, out)
		}
	}
}

func TestDiffArgoCDUnreachable(t *testing.T) {
	repo := previewRepo(t, nil)
	srv := httptest.NewServer(nil)
	url := srv.URL
	srv.Close()
	code, _, stderr := runPreviewCmd(t, "plan", "--repo", repo, "--base", "main", "--head", "change", "--repo-url", previewRepoURL, "--argocd", url)
	if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "reading live state from argo cd at "+url) {
		t.Fatalf("code %d, stderr:\n%s", code, stderr)
	}
}
