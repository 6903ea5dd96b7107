package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/edge/gitfetch/gitfetchtest"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

// TestDiffSourceInAnotherGitRepository: `fleetwave diff --repositories` renders an app whose source is in another
// git repository (HTTPS with basic auth, the Secret's insecure honoured) at the targetRevision each side names.
func TestDiffSourceInAnotherGitRepository(t *testing.T) {
	const password = "cli-git-password-3"
	root := t.TempDir()
	p := gitfetchtest.NewRepo(t, root, "platform.git")
	p.Commit("one", map[string]string{"manifests/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: platform}\ndata: {version: one}\n"})
	p.Tag("v1.0.0", "")
	p.Commit("two", map[string]string{"manifests/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: platform}\ndata: {version: two}\n"})
	p.Tag("v1.1.0", "")
	srv := gitfetchtest.Start(t, root, "reader", password)
	url := srv.URL + "/platform.git"

	app := func(rev string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: platform, namespace: argocd}\nspec:\n  project: default\n" +
			"  destination: {server: https://kubernetes.default.svc, namespace: platform}\n  source: {repoURL: '" + url + "', path: manifests, targetRevision: " + rev + "}\n"
	}
	repo := t.TempDir()
	writeFile := func(name, content string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeFile("apps/platform.yaml", app("v1.0.0"))
	gittest.Run(t, repo, "init", "-q", "-b", "main")
	gittest.Run(t, repo, "add", "-A")
	gittest.Run(t, repo, "commit", "-q", "-m", "base")
	gittest.Run(t, repo, "checkout", "-q", "-b", "change")
	writeFile("apps/platform.yaml", app("v1.1.0"))
	gittest.Run(t, repo, "commit", "-q", "-am", "bump")

	secrets := filepath.Join(t.TempDir(), "repositories.yaml")
	if err := os.WriteFile(secrets, []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: platform\n  labels: {argocd.argoproj.io/secret-type: repository}\n"+
		"stringData: {url: '"+url+"', type: git, username: reader, password: "+password+", insecure: 'true'}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runWithCache(t, t.TempDir(), "diff", "--repo", repo, "--base", "main", "--head", "change", "--repo-url", previewRepoURL, "--repositories", secrets, "-o", "json")
	if strings.Contains(out+stderr, password) {
		t.Errorf("an output reveals the repository password:\n%s\n%s", out, stderr)
	}
	var doc struct {
		Apps []struct {
			Name, Status, Error string
			Resources           []struct{ Diff string }
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Apps) != 1 {
		t.Fatalf("diff: code %d\n%s\n%s", code, out, stderr)
	}
	a := doc.Apps[0]
	if a.Status != "changed" || len(a.Resources) != 1 || !strings.Contains(a.Resources[0].Diff, "+  version: two") {
		t.Errorf("platform: %+v", a)
	}

	// Wrong credentials (the server answers 401): one line on the app, in no output the password, right or wrong.
	const wrong = "wrong-cli-git-password"
	bad := filepath.Join(t.TempDir(), "repositories.yaml")
	data, err := os.ReadFile(secrets)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(strings.ReplaceAll(string(data), password, wrong)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"json", "text", "markdown"} {
		_, out, stderr = runWithCache(t, t.TempDir(), "diff", "--repo", repo, "--base", "main", "--head", "change", "--repo-url", previewRepoURL, "--repositories", bad, "-o", format)
		if strings.Contains(out+stderr, password) || strings.Contains(out+stderr, wrong) {
			t.Errorf("-o %s: an output reveals a repository password:\n%s\n%s", format, out, stderr)
		}
		if !strings.Contains(out, "the server refused the credentials of the allowed repositories file (HTTP 401/403)") {
			t.Errorf("-o %s: the app does not say the credentials were refused:\n%s\n%s", format, out, stderr)
		}
	}
}
