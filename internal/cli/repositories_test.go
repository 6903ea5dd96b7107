package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch/helmrepotest"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
)

const chartRepoPassword = "cli-chart-repo-password"

func vendorIngress(version string) helmrepotest.Chart {
	return helmrepotest.Chart{Name: "ingress-nginx", Version: version,
		Values: "replicaCount: 1\nimage: registry.k8s.io/ingress-nginx/controller:v" + version + "\n",
		Templates: map[string]string{"deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-controller\n" +
			"  labels: {helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}}\nspec:\n  replicas: {{ .Values.replicaCount }}\n" +
			"  template:\n    spec:\n      containers:\n      - {name: controller, image: {{ .Values.image }}}\n"}}
}

// chartBumpRepo is a GitOps repository whose change bumps a vendor chart (multi-source, values in this repository)
// from 4.10.0 to 4.11.0 and leaves a directory app alone.
func chartBumpRepo(t *testing.T, chartRepoURL string) string {
	t.Helper()
	dir := t.TempDir()
	ingress := func(version string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: ingress, namespace: argocd}\nspec:\n  project: default\n" +
			"  destination: {name: prd-eu-1, namespace: ingress}\n  sources:\n" +
			"  - {repoURL: " + chartRepoURL + ", chart: ingress-nginx, targetRevision: " + version + ", helm: {valueFiles: [$values/values/ingress.yaml]}}\n" +
			"  - {repoURL: " + previewRepoURL + ", targetRevision: HEAD, ref: values}\n"
	}
	files := map[string]string{
		"clusters.yaml":     "clusters:\n  - {name: prd-eu-1, server: https://prd-eu-1.example.com, labels: {env: prd}}\n",
		"apps/ingress.yaml": ingress("4.10.0"),
		"apps/edge.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: edge, namespace: argocd}\nspec:\n  project: default\n" +
			"  destination: {name: prd-eu-1, namespace: edge}\n  source: {repoURL: " + chartRepoURL + ", chart: ingress-nginx, targetRevision: 4.10.0}\n",
		"values/ingress.yaml":   "replicaCount: 2\n",
		"apps/web.yaml":         "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web, namespace: argocd}\nspec:\n  project: default\n  source: {repoURL: " + previewRepoURL + ", path: manifests/web}\n  destination: {name: prd-eu-1, namespace: web}\n",
		"manifests/web/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {color: blue}\n",
	}
	for rel, c := range files {
		filetest.Write(t, dir, rel, c)
	}
	gitRun(t, dir, "init", "-q", "-b", "main")
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "base")
	gitRun(t, dir, "checkout", "-q", "-b", "change")
	filetest.Write(t, dir, "apps/ingress.yaml", ingress("4.11.0"))
	gitRun(t, dir, "commit", "-q", "-am", "bump ingress-nginx")
	return dir
}

func runWithCache(t *testing.T, cacheDir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	deps := &Deps{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string {
		if k == "FLEETWAVE_CACHE_DIR" {
			return cacheDir
		}
		return ""
	}}
	root := &cobra.Command{Use: "fleetwave", SilenceUsage: true, SilenceErrors: true}
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.AddCommand(newDiffCmd(deps), newPlanCmd(deps), newRenderCmd(deps))
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	if err == nil {
		return 0, out.String(), errOut.String()
	}
	errOut.WriteString("fleetwave: " + err.Error() + "\n")
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code, out.String(), errOut.String()
	}
	return 2, out.String(), errOut.String()
}

func TestDiffChartVersionBump(t *testing.T) {
	srv := helmrepotest.New(t, "fleet", chartRepoPassword, vendorIngress("4.10.0"), vendorIngress("4.11.0"))
	repo := chartBumpRepo(t, srv.URL)
	secrets := filepath.Join(t.TempDir(), "repositories.yaml")
	if err := os.WriteFile(secrets, []byte(srv.Secret("ingress-nginx")), 0o600); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	var outputs []string // everything printed, grepped for the password at the end
	t.Cleanup(func() {
		for _, o := range outputs {
			if strings.Contains(o, chartRepoPassword) || strings.Contains(o, "wrong-chart-password") {
				t.Errorf("an output reveals a repository password:\n%s", o)
			}
		}
	})
	runWithCache := func(t *testing.T, cache string, args ...string) (int, string, string) {
		code, out, stderr := runWithCache(t, cache, args...)
		outputs = append(outputs, out, stderr)
		return code, out, stderr
	}
	args := []string{"diff", "--repo", repo, "--base", "main", "--head", "change", "--repo-url", previewRepoURL, "--repositories", secrets, "-o", "json"}
	code, out, stderr := runWithCache(t, cache, args...)
	var doc struct {
		Apps []struct {
			Name, Status, Error string
			Resources           []struct{ Kind, Change, Diff string }
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Apps) != 3 {
		t.Fatalf("diff: code %d\n%s\n%s", code, out, stderr)
	}
	// An app on an allowed chart repository that the change does not reach is unchanged, not "not known here".
	if edge := doc.Apps[0]; edge.Name != "edge" || edge.Status != "unchanged" {
		t.Errorf("edge: %+v", edge)
	}
	doc.Apps = doc.Apps[1:]
	ing := doc.Apps[0]
	if ing.Name != "ingress" || ing.Status != "changed" || len(ing.Resources) != 1 {
		t.Fatalf("ingress: %+v", ing)
	}
	d := ing.Resources[0].Diff
	for _, want := range []string{"-      - image: registry.k8s.io/ingress-nginx/controller:v4.10.0", "+      - image: registry.k8s.io/ingress-nginx/controller:v4.11.0",
		"helm.sh/chart: ingress-nginx-4.11.0"} {
		if !strings.Contains(d, want) {
			t.Errorf("diff lacks %q:\n%s", want, d)
		}
	}
	if strings.Contains(d, "replicas: 1") {
		t.Errorf("the $values file of this repository was not applied:\n%s", d)
	}
	if doc.Apps[1].Name != "web" || doc.Apps[1].Status != "unchanged" {
		t.Errorf("web: %+v", doc.Apps[1])
	}
	// index.yaml once for the whole preview (base and head), one archive per version.
	if srv.Count("/index.yaml") != 1 || srv.Archives() != 2 {
		t.Errorf("requests: index %d, archives %d; want 1 and 2", srv.Count("/index.yaml"), srv.Archives())
	}

	// A second preview of the same versions downloads no archive.
	before := srv.Archives()
	if code, out, stderr := runWithCache(t, cache, args...); code != 0 {
		t.Fatalf("second diff: code %d\n%s\n%s", code, out, stderr)
	}
	if srv.Archives() != before {
		t.Errorf("second preview downloaded %d archives", srv.Archives()-before)
	}

	// Without the repository allowed: the app is an error naming the repository, never unchanged or skipped.
	other := filepath.Join(t.TempDir(), "other.yaml")
	if err := os.WriteFile(other, []byte(strings.ReplaceAll(srv.Secret("x"), srv.URL, "https://charts.example.com")), 0o600); err != nil {
		t.Fatal(err)
	}
	args[len(args)-3] = other
	code, out, stderr = runWithCache(t, cache, args...)
	if code != 2 || json.Unmarshal([]byte(out), &doc) != nil {
		t.Fatalf("not allowed: code %d\n%s\n%s", code, out, stderr)
	}
	// Unreached, on a repository that is not allowed: skipped (nothing is known of it), never unchanged.
	if edge := doc.Apps[0]; edge.Status != "skipped" {
		t.Errorf("edge, not allowed: %+v", edge)
	}
	if ing := doc.Apps[1]; ing.Status != "error" || !strings.Contains(ing.Error, "not rendered: repository "+srv.URL+" is not in the allowed repositories") {
		t.Errorf("not allowed: %+v", ing)
	}

	// Wrong credentials: the app is an error saying so; the other app is still diffed; markdown and text too.
	wrong := filepath.Join(t.TempDir(), "wrong.yaml")
	if err := os.WriteFile(wrong, []byte(strings.Replace(srv.Secret("x"), chartRepoPassword, "wrong-chart-password", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	args[len(args)-3] = wrong
	code, out, stderr = runWithCache(t, t.TempDir(), args...)
	if code != 2 || json.Unmarshal([]byte(out), &doc) != nil {
		t.Fatalf("wrong credentials: code %d\n%s\n%s", code, out, stderr)
	}
	if ing := doc.Apps[1]; ing.Status != "error" || !strings.Contains(ing.Error, "401 Unauthorized") || doc.Apps[2].Status != "unchanged" {
		t.Errorf("wrong credentials: %+v", doc.Apps)
	}
	for _, format := range []string{"text", "markdown"} {
		args[len(args)-1] = format
		runWithCache(t, t.TempDir(), args...)
	}
}

func TestRenderCommandRemoteChart(t *testing.T) {
	srv := helmrepotest.New(t, "fleet", chartRepoPassword, vendorIngress("4.11.0"))
	root := filetest.Tree(t, map[string]string{
		"app.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: ingress, namespace: argocd}\nspec:\n" +
			"  destination: {server: https://kubernetes.default.svc, namespace: ingress}\n" +
			"  source: {repoURL: " + srv.URL + ", chart: ingress-nginx, targetRevision: '>=4.0.0 <5.0.0'}\n",
		"repos.yaml": srv.Secret("ingress-nginx"),
		"bad.yaml":   strings.Replace(srv.Secret("ingress-nginx"), chartRepoPassword, "not-the-password", 1),
	})
	cache := t.TempDir()
	code, out, stderr := runWithCache(t, cache, "render", "--app", filepath.Join(root, "app.yaml"), "--repo-root", root, "--repositories", filepath.Join(root, "repos.yaml"))
	if code != 0 || !strings.Contains(out, "image: registry.k8s.io/ingress-nginx/controller:v4.11.0") {
		t.Fatalf("render: code %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr = runWithCache(t, t.TempDir(), "render", "--app", filepath.Join(root, "app.yaml"), "--repo-root", root, "--repositories", filepath.Join(root, "bad.yaml"))
	if code != 2 || !strings.Contains(stderr, "401 Unauthorized") || strings.Contains(stderr+out, "not-the-password") || strings.Contains(stderr+out, chartRepoPassword) {
		t.Fatalf("wrong password: code %d\n%s\n%s", code, out, stderr)
	}
	code, _, stderr = runWithCache(t, cache, "render", "--app", filepath.Join(root, "app.yaml"), "--repo-root", root, "--repositories", filepath.Join(root, "missing.yaml"))
	if code != 2 || !strings.Contains(stderr, "--repositories: repositories file:") {
		t.Fatalf("missing file: code %d\n%s", code, stderr)
	}
}

func TestRolloutRepositoriesFile(t *testing.T) {
	dir, head := wavesRepo(t)
	cs, apps := wavesFleet()
	sim, url := newRolloutSim(t, argocdsim.Config{}, cs, apps)
	sim.SetRef("HEAD", head)
	var out outBuffer
	code, stderr := runArgo(t, context.Background(), map[string]string{"FLEETWAVE_ARGOCD_TOKEN": "t0ken"}, &out,
		"rollout", "--argocd", url, "--repo", dir, "--base", "main", "--head", "change", "--repo-url", "https://git.example.com/gitops.git",
		"--store", filepath.Join(t.TempDir(), "r.db"), "--dry-run", "--repositories", filepath.Join(t.TempDir(), "missing.yaml"))
	if code != 2 || !strings.Contains(stderr, "rollout: --repositories: repositories file:") {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out.String())
	}
}
