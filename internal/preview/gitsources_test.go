package preview

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/edge/gitfetch"
	"github.com/fleetwave/fleetwave/internal/edge/gitfetch/gitfetchtest"
	"github.com/fleetwave/fleetwave/internal/edge/repocreds"
	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/report"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

const (
	gitFleetURL   = "https://github.com/example/git-fleet.git"
	gitSourcePass = "preview-git-password-7"
)

// gitSourcesFleet serves two repositories over HTTPS with basic auth (platform.git: manifests and a chart, tagged
// v1.0.0 and v1.1.0; values.git: a value file), allows them (not forbidden.git), and commits on main of a fleet
// repository an app of each kind: a single source in platform.git, a chart of platform.git with $values in
// values.git, and a source in a repository that is not allowed.
func gitSourcesFleet(t *testing.T) (string, *gitfetchtest.Server, *render.Renderer) {
	t.Helper()
	root := t.TempDir()
	p := gitfetchtest.NewRepo(t, root, "platform.git")
	p.Commit("v1", map[string]string{
		"manifests/cm.yaml":                 "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: platform\ndata:\n  version: one\n",
		"charts/web/Chart.yaml":             "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"charts/web/values.yaml":            "replicas: 1\n",
		"charts/web/templates/deploy.yaml":  "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  replicas: {{ .Values.replicas }}\n",
		"kustomize/base/kustomization.yaml": "resources: [svc.yaml]\n",
		"kustomize/base/svc.yaml":           "apiVersion: v1\nkind: Service\nmetadata:\n  name: edge\nspec:\n  ports: [{port: 80}]\n",
	})
	p.Tag("v1.0.0", "first")
	p.Commit("v2", map[string]string{
		"manifests/cm.yaml":       "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: platform\ndata:\n  version: two\n",
		"kustomize/base/svc.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: edge\nspec:\n  ports: [{port: 8080}]\n",
	})
	p.Tag("v1.1.0", "")
	gitfetchtest.NewRepo(t, root, "values.git").Commit("values", map[string]string{"prod/web.yaml": "replicas: 5\n"})
	gitfetchtest.NewRepo(t, root, "forbidden.git").Commit("x", map[string]string{"manifests/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: forbidden\n"})
	srv := gitfetchtest.Start(t, root, "reader", gitSourcePass)

	secrets := ""
	for _, name := range []string{"platform", "values"} {
		secrets += "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: " + name + "\n  labels: {argocd.argoproj.io/secret-type: repository}\n" +
			"stringData:\n  url: " + srv.URL + "/" + name + ".git\n  type: git\n  username: reader\n  password: " + gitSourcePass + "\n"
	}
	set, err := repocreds.Parse("repositories.yaml", []byte(secrets))
	if err != nil {
		t.Fatal(err)
	}
	f, err := gitfetch.New(gitfetch.Options{Repos: set, CacheDir: t.TempDir(), CAFile: srv.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"apps/local.yaml":         gitApp("local", gitFleetURL, "local", "HEAD", ""),
		"apps/edge.yaml":          gitApp("edge", gitFleetURL, "edge", "HEAD", ""),
		"edge/kustomization.yaml": edgeKustomization(srv.URL, "v1.0.0"),
		"local/cm.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local\n",
		"apps/platform.yaml":      gitApp("platform", srv.URL+"/platform.git", "manifests", "v1.0.0", ""),
		"apps/web.yaml":           gitApp("web", srv.URL+"/platform.git", "charts/web", "v1.0.0", srv.URL+"/values.git"),
		"apps/forbidden.yaml":     gitApp("forbidden", srv.URL+"/forbidden.git", "manifests", "main", ""),
	})
	gittest.Run(t, dir, "init", "-q", "-b", "main")
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "base")
	return dir, srv, render.New(render.Options{Git: f})
}

// edgeKustomization is an overlay on a remote base in platform.git.
func edgeKustomization(srvURL, ref string) string {
	return "namePrefix: prod-\nresources:\n- " + srvURL + "/platform.git//kustomize/base?ref=" + ref + "\n"
}

func gitApp(name, repoURL, path, rev, valuesURL string) string {
	head := "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: " + name + ", namespace: argocd}\nspec:\n  project: default\n" +
		"  destination: {server: https://kubernetes.default.svc, namespace: " + name + "}\n"
	if valuesURL == "" {
		return head + "  source: {repoURL: " + repoURL + ", path: " + path + ", targetRevision: " + rev + "}\n"
	}
	return head + "  sources:\n  - {repoURL: " + repoURL + ", path: " + path + ", targetRevision: " + rev + ", helm: {valueFiles: [$values/prod/web.yaml]}}\n" +
		"  - {repoURL: " + valuesURL + ", targetRevision: main, ref: values}\n"
}

func TestPreviewSourcesInOtherGitRepositories(t *testing.T) {
	dir, srv, r := gitSourcesFleet(t)
	change := func(branch string, files map[string]string) {
		gittest.Run(t, dir, "checkout", "-q", "-b", branch, "main")
		write(t, dir, files)
		gittest.Run(t, dir, "add", "-A")
		gittest.Run(t, dir, "commit", "-q", "-m", branch)
	}
	change("bump", map[string]string{"apps/platform.yaml": gitApp("platform", srv.URL+"/platform.git", "manifests", "v1.1.0", "")})
	change("forbidden", map[string]string{"apps/forbidden.yaml": gitApp("forbidden", srv.URL+"/forbidden.git", "manifests", "v2", "")})
	change("docs", map[string]string{"README.md": "unrelated\n"})
	change("base-bump", map[string]string{"edge/kustomization.yaml": edgeKustomization(srv.URL, "v1.1.0")})

	type want struct {
		status report.Status
		text   []string // in the diff, or in the error
	}
	notAllowed := want{report.StatusSkipped, nil}
	for _, tc := range []struct {
		head string
		apps map[string]want
	}{
		{"bump", map[string]want{
			"edge":      {report.StatusUnchanged, nil},
			"local":     {report.StatusUnchanged, nil},
			"platform":  {report.StatusChanged, []string{"-  version: one", "+  version: two"}},
			"web":       {report.StatusUnchanged, nil},
			"forbidden": notAllowed,
		}},
		{"forbidden", map[string]want{
			"edge":      {report.StatusUnchanged, nil},
			"local":     {report.StatusUnchanged, nil},
			"platform":  {report.StatusUnchanged, nil},
			"web":       {report.StatusUnchanged, nil},
			"forbidden": {report.StatusSkipped, []string{"source is not in the checkout: repository " + srv.URL + "/forbidden.git is not in the allowed repositories"}},
		}},
		{"docs", map[string]want{
			"edge":      {report.StatusUnchanged, nil},
			"local":     {report.StatusUnchanged, nil},
			"platform":  {report.StatusUnchanged, nil},
			"web":       {report.StatusUnchanged, nil},
			"forbidden": notAllowed,
		}},
		{"base-bump", map[string]want{
			"edge":      {report.StatusChanged, []string{"-  - port: 80", "+  - port: 8080"}},
			"local":     {report.StatusUnchanged, nil},
			"platform":  {report.StatusUnchanged, nil},
			"web":       {report.StatusUnchanged, nil},
			"forbidden": notAllowed,
		}},
	} {
		t.Run(tc.head, func(t *testing.T) {
			rep, err := reportOf(Run(context.Background(), r, Input{RepoDir: dir, Base: "main", Head: tc.head, RepoURLs: []string{gitFleetURL}}))
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Apps) != len(tc.apps) {
				t.Fatalf("apps: %+v", rep.Apps)
			}
			for _, a := range rep.Apps {
				w := tc.apps[a.Name]
				if a.Status != w.status {
					t.Errorf("%s: status %s (%s), want %s", a.Name, a.Status, a.Error, w.status)
				}
				var text strings.Builder
				text.WriteString(a.Error)
				for _, res := range a.Resources {
					text.WriteString(res.Diff)
				}
				for _, s := range w.text {
					if !strings.Contains(text.String(), s) {
						t.Errorf("%s lacks %q:\n%s", a.Name, s, text.String())
					}
				}
			}
			var out bytes.Buffer
			if err := rep.WriteText(&out); err != nil {
				t.Fatal(err)
			}
			if err := rep.WriteJSON(&out); err != nil {
				t.Fatal(err)
			}
			out.WriteString(rep.Markdown())
			if strings.Contains(out.String(), gitSourcePass) {
				t.Error("the report shows the repository's password")
			}
		})
	}

	// A second pull request on the same revisions: the server is not asked again.
	n := len(srv.Requests())
	gittest.Run(t, dir, "checkout", "-q", "-b", "bump-again", "bump")
	rep, err := reportOf(Run(context.Background(), r, Input{RepoDir: dir, Base: "main", Head: "bump-again", RepoURLs: []string{gitFleetURL}}))
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.Requests()[n:]; len(got) != 0 {
		t.Errorf("the second pull request made %d requests: %v", len(got), got)
	}
	if a := rep.Apps[3]; a.Name != "platform" || a.Status != report.StatusChanged {
		t.Errorf("second pull request: %+v", a)
	}
}
