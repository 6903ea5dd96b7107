package cli

import (
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
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

// diff --argocd renders config-management-plugin apps through Argo CD's manifests endpoint at each side's
// revision; a plugin app Argo CD does not hold yet stays "not rendered locally", saying why.
func TestDiffArgoCDRendersPluginApps(t *testing.T) {
	plugin := func(name string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: " + name + ", namespace: argocd}\nspec:\n  project: default\n" +
			"  source: {repoURL: " + previewRepoURL + ", path: manifests/" + name + ", plugin: {name: envsubst}}\n  destination: {name: prd-eu-1, namespace: " + name + "}\n"
	}
	repo := previewRepo(t, map[string]string{
		"apps/cmp.yaml":             plugin("cmp"),
		"manifests/cmp/input.txt":   "changed by the PR\n",
		"apps/newcmp.yaml":          plugin("newcmp"),
		"manifests/newcmp/file.txt": "x\n",
	})
	// cmp exists at base too: commit it on main and rebase the change on it.
	gitRun(t, repo, "checkout", "-q", "main")
	filetest.Write(t, repo, "apps/cmp.yaml", plugin("cmp"))
	filetest.Write(t, repo, "manifests/cmp/input.txt", "base\n")
	gitRun(t, repo, "add", "-A")
	gitRun(t, repo, "commit", "-q", "-m", "cmp app")
	gitRun(t, repo, "checkout", "-q", "change")
	gitRun(t, repo, "rebase", "-q", "-X", "theirs", "main")
	base, head := gittest.Run(t, repo, "rev-parse", "main"), gittest.Run(t, repo, "rev-parse", "change")

	var mu sync.Mutex
	var asked []string
	sim := argocdsim.New(argocdsim.Config{Manifests: func(a *v1alpha1.Application, rev string) ([]string, error) {
		mu.Lock()
		asked = append(asked, a.Name+"@"+rev)
		mu.Unlock()
		return []string{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + a.Name + `","namespace":"` + a.Spec.Destination.Namespace +
			`"},"data":{"generatedAt":"` + rev + `"}}`}, nil
	}})
	t.Cleanup(sim.Close)
	sim.SetRef("HEAD", base)
	app := &v1alpha1.Application{}
	app.Name, app.Namespace = "cmp", "argocd"
	app.Spec.Source = &v1alpha1.ApplicationSource{RepoURL: previewRepoURL, Path: "manifests/cmp", TargetRevision: "HEAD",
		Plugin: &v1alpha1.ApplicationSourcePlugin{Name: "envsubst"}}
	app.Spec.Destination = v1alpha1.ApplicationDestination{Name: "prd-eu-1", Namespace: "cmp"}
	if err := sim.AddApp(app, argocdsim.AppOptions{LiveRevisions: []string{base}}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)

	code, out, stderr := runPreviewCmd(t, "diff", "-o", "json", "--repo", repo, "--base", "main", "--head", "change", "--repo-url", previewRepoURL, "--argocd", srv.URL)
	var doc struct {
		Apps []struct {
			Name, Status, Error, Warning string
			Resources                    []struct{ Kind, Name, Diff string }
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
		t.Fatalf("code %d\n%s\n%s", code, out, stderr)
	}
	byName := map[string]int{}
	for i, a := range doc.Apps {
		byName[a.Name] = i
	}
	cmp := doc.Apps[byName["cmp"]]
	if cmp.Status != "changed" || !strings.Contains(cmp.Warning, "rendered by Argo CD's repo-server") || len(cmp.Resources) != 1 ||
		!strings.Contains(cmp.Resources[0].Diff, "-  generatedAt: "+base) || !strings.Contains(cmp.Resources[0].Diff, "+  generatedAt: "+head) {
		t.Fatalf("cmp: %+v\n%s", cmp, out)
	}
	if nc := doc.Apps[byName["newcmp"]]; nc.Status != "skipped" || !strings.Contains(nc.Error, "Argo CD has no app newcmp") {
		t.Fatalf("newcmp: %+v", nc)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(asked, "cmp@"+base) || !slices.Contains(asked, "cmp@"+head) {
		t.Fatalf("Argo CD was asked for %v; want cmp at %s and %s", asked, base[:7], head[:7])
	}

	// Without --argocd the plugin app is listed as not rendered, with the way to render it.
	_, out, _ = runPreviewCmd(t, "diff", "-o", "json", "--repo", repo, "--base", "main", "--head", "change", "--repo-url", previewRepoURL)
	if !strings.Contains(out, "config management plugins run only inside Argo CD") {
		t.Fatalf("without --argocd:\n%s", out)
	}
}

func gitRun(t *testing.T, dir string, args ...string) { t.Helper(); gittest.Run(t, dir, args...) }
