package render_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/edge/gitfetch"
	"github.com/fleetwave/fleetwave/internal/edge/gitfetch/gitfetchtest"
	"github.com/fleetwave/fleetwave/internal/edge/repocreds"
	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
	"github.com/fleetwave/fleetwave/internal/testkit/golden"
)

const gitPassword = "render-git-password-42"

// platformRepo publishes "platform.git": a chart and plain manifests at v1.0.0, changed at v1.1.0, and
// "values.git": value files for the chart.
func platformRepo(t *testing.T) (srv *gitfetchtest.Server, v1, v2 string) {
	t.Helper()
	root := t.TempDir()
	p := gitfetchtest.NewRepo(t, root, "platform.git")
	v1 = p.Commit("v1", map[string]string{
		"manifests/cm.yaml":                 "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: platform\ndata:\n  version: one\n",
		"charts/web/Chart.yaml":             "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"charts/web/values.yaml":            "replicas: 1\nrevision: none\n",
		"charts/web/templates/deploy.yaml":  "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n  annotations:\n    revision: {{ .Values.revision | quote }}\nspec:\n  replicas: {{ .Values.replicas }}\n",
		"kustomize/base/kustomization.yaml": "resources: [deploy.yaml]\ncommonLabels: {tier: web}\n",
		"kustomize/base/deploy.yaml":        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        image: web:1.0\n",
	})
	p.Tag("v1.0.0", "first")
	p.Tag("cm/v2.0.0", "") // a component's tag (tagPrefix "cm/")
	v2 = p.Commit("v2", map[string]string{
		"manifests/cm.yaml":          "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: platform\ndata:\n  version: two\n",
		"kustomize/base/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        image: web:1.1\n",
	})
	p.Tag("v1.1.0", "")
	vals := gitfetchtest.NewRepo(t, root, "values.git")
	vals.Commit("values", map[string]string{"prod/web.yaml": "replicas: 5\n"})
	srv = gitfetchtest.Start(t, root, "reader", gitPassword)
	return srv, v1, v2
}

func gitSecrets(urls ...string) string {
	var b strings.Builder
	for i, u := range urls {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: repo-%d\n  labels: {argocd.argoproj.io/secret-type: repository}\nstringData:\n  url: %s\n  username: reader\n  password: %s\n", i, u, gitPassword)
	}
	return b.String()
}

func gitRenderer(t *testing.T, srv *gitfetchtest.Server, secrets string) *render.Renderer {
	t.Helper()
	set, err := repocreds.Parse("repositories.yaml", []byte(secrets))
	if err != nil {
		t.Fatal(err)
	}
	f, err := gitfetch.New(gitfetch.Options{Repos: set, CacheDir: t.TempDir(), CAFile: srv.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	return render.New(render.Options{Git: f})
}

func TestRenderSourceFromAnotherGitRepository(t *testing.T) {
	srv, v1, _ := platformRepo(t)
	platform := srv.URL + "/platform.git"
	r := gitRenderer(t, srv, gitSecrets(platform))
	app := func(rev string) render.Request {
		return mustApp(t, `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: platform, namespace: argocd}
spec:
  destination: {server: https://kubernetes.default.svc, namespace: platform}
  source: {repoURL: `+platform+`, path: manifests, targetRevision: "`+rev+`"}
`)
	}
	for _, tc := range []struct{ rev, want string }{
		{"v1.0.0", "version: one"}, {"v1.1.0", "version: two"}, {"main", "version: two"}, {"HEAD", "version: two"}, {v1, "version: one"},
	} {
		out, res, err := renderYAML(t, r, app(tc.rev))
		if err != nil {
			t.Fatalf("%s: %v", tc.rev, err)
		}
		if !strings.Contains(out, tc.want) {
			t.Errorf("%s: rendered\n%s\nwant %q", tc.rev, out, tc.want)
		}
		if len(res.ReadFiles) != 0 {
			t.Errorf("%s: files of another repository are recorded as this repository's: %v", tc.rev, res.ReadFiles)
		}
	}
	if !r.Fetches(&app("main").App.Spec.GetSources()[0]) {
		t.Error("Fetches is false for a source of an allowed repository")
	}
}

// A git source's tagPrefix is read as Argo CD 3.6 reads it (only the prefixed tags are candidates for its semver
// targetRevision) and ignored as earlier releases, which have no such field, ignore it: there no tag matches.
func TestRenderGitTagPrefixByRelease(t *testing.T) {
	srv, _, _ := platformRepo(t)
	platform := srv.URL + "/platform.git"
	r := gitRenderer(t, srv, gitSecrets(platform))
	req := mustApp(t, `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: platform, namespace: argocd}
spec:
  destination: {server: https://kubernetes.default.svc, namespace: platform}
  source: {repoURL: `+platform+`, path: manifests, targetRevision: "^2.0.0", tagPrefix: cm/}
`)
	req.Settings.ArgoCDVersion = "3.6"
	out, _, err := renderYAML(t, r, req)
	if err != nil || !strings.Contains(out, "version: one") {
		t.Errorf("as 3.6: %v\n%s\nwant the commit tagged cm/v2.0.0 (version: one)", err, out)
	}
	req.Settings.ArgoCDVersion = "3.5"
	if _, _, err := renderYAML(t, r, req); err == nil || !strings.Contains(err.Error(), `"^2.0.0"`) {
		t.Errorf("as 3.5: %v, want ^2.0.0 unresolved (no tag without the prefix matches)", err)
	}
}

func TestRenderMultiSourceWithValuesInAnotherGitRepository(t *testing.T) {
	srv, v1, _ := platformRepo(t)
	platform, values := srv.URL+"/platform.git", srv.URL+"/values.git"
	r := gitRenderer(t, srv, gitSecrets(platform, values))
	req := mustApp(t, `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: argocd}
spec:
  destination: {server: https://kubernetes.default.svc, namespace: web}
  sources:
  - repoURL: `+platform+`
    path: charts/web
    targetRevision: v1.0.0
    helm:
      valueFiles: [$values/prod/web.yaml]
      parameters: [{name: revision, value: $ARGOCD_APP_REVISION}]
  - {repoURL: `+values+`, targetRevision: main, ref: values}
`)
	out, _, err := renderYAML(t, r, req)
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "remote/git-multi-source-values.yaml", out)
	if !strings.Contains(out, "replicas: 5") || !strings.Contains(out, v1) {
		t.Errorf("want the other repository's values and the source's own commit as ARGOCD_APP_REVISION:\n%s", out)
	}
}

func TestGitSourceFailures(t *testing.T) {
	srv, v1, v2 := platformRepo(t)
	platform, values := srv.URL+"/platform.git", srv.URL+"/values.git"
	app := func(sources string) render.Request {
		return mustApp(t, "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web, namespace: argocd}\nspec:\n  destination: {server: https://kubernetes.default.svc, namespace: web}\n"+sources)
	}
	single := app("  source: {repoURL: " + platform + ", path: manifests, targetRevision: main}\n")
	multi := app("  sources:\n  - repoURL: " + platform + "\n    path: charts/web\n    targetRevision: main\n    helm: {valueFiles: [$values/prod/web.yaml]}\n  - {repoURL: " + values + ", targetRevision: main, ref: values}\n")
	as := func(v string, req render.Request) render.Request { req.Settings.ArgoCDVersion = v; return req }
	otherRevision := app("  sources:\n  - repoURL: " + platform + "\n    path: charts/web\n    targetRevision: v1.0.0\n    helm: {valueFiles: [$values/charts/web/values.yaml]}\n  - {repoURL: " + platform + ", targetRevision: main, ref: values}\n")
	for _, tc := range []struct {
		name     string
		renderer *render.Renderer
		req      render.Request
		external bool
		want     string
	}{
		{"no fetcher", render.New(render.Options{}), single, true, "source is not in the checkout: " + platform},
		{"not allowed", gitRenderer(t, srv, gitSecrets(values)), single, true, "source is not in the checkout: repository " + platform + " is not in the allowed repositories"},
		{"ref repository not allowed", gitRenderer(t, srv, gitSecrets(platform)), multi, true, "ref source values (for $values/prod/web.yaml): source is not in the checkout: repository " + values + " is not in the allowed repositories"},
		{"wrong password", gitRenderer(t, srv, strings.ReplaceAll(gitSecrets(platform), gitPassword, "nope")), single, false, "the server refused the credentials"},
		// Argo CD checks out one revision of a repository per render (runManifestGenAsync).
		{"ref on the same repository at another revision, as 3.5", gitRenderer(t, srv, gitSecrets(platform)), as("3.5", otherRevision),
			false, `cannot reference a different revision of the same repository ($values references "main" which resolves to "` + v2 + `" while the application references "v1.0.0" which resolves to "` + v1 + `")`},
		// 3.6's repo-server has replaced the ref's targetRevision by its commit before the check (target.RefRevisionsResolved).
		{"ref on the same repository at another revision, as 3.6", gitRenderer(t, srv, gitSecrets(platform)), as("3.6", otherRevision),
			false, `cannot reference a different revision of the same repository ($values references "` + v2 + `" which resolves to "` + v2 + `" while the application references "v1.0.0" which resolves to "` + v1 + `")`},
		{"two refs on one repository at two revisions, as 3.5", gitRenderer(t, srv, gitSecrets(platform, values)),
			as("3.5", app("  sources:\n  - repoURL: "+platform+"\n    path: charts/web\n    targetRevision: v1.0.0\n    helm: {valueFiles: [$a/prod/web.yaml, $b/prod/web.yaml]}\n  - {repoURL: "+values+", targetRevision: main, ref: a}\n  - {repoURL: "+values+", targetRevision: HEAD, ref: b}\n")),
			false, `cannot reference multiple revisions for the same repository ($b references "HEAD" while $a references "main")`},
		{"unknown revision", gitRenderer(t, srv, gitSecrets(platform)), app("  source: {repoURL: " + platform + ", path: manifests, targetRevision: v9}\n"), false, `unable to resolve "v9" to a commit SHA (nearest refs: v1.0.0, v1.1.0, cm/v2.0.0, main)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.renderer.Render(context.Background(), tc.req)
			if err == nil {
				t.Fatal("no error")
			}
			if got := errors.Is(err, render.ErrExternalSource); got != tc.external {
				t.Errorf("external = %v: %v", got, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q\ndoes not say %q", err, tc.want)
			}
			if strings.Contains(err.Error(), gitPassword) {
				t.Errorf("error shows the password: %q", err)
			}
		})
	}
}

// TestTwoRefsOnOneRepository: two "$ref" sources on one repository at two revisions fail as Argo CD 3.2-3.5 fail
// them, and as 3.6 both read the commit of the first one the value files name (target.RefRevisionsResolved: the
// real v3.6.1 repo-server writes that commit into every ref on the repository before checking them).
func TestTwoRefsOnOneRepository(t *testing.T) {
	root := t.TempDir()
	p := gitfetchtest.NewRepo(t, root, "platform.git")
	p.Commit("chart", map[string]string{
		"charts/web/Chart.yaml":            "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"charts/web/templates/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: {{ .Values.replicas }}\n",
	})
	vals := gitfetchtest.NewRepo(t, root, "values.git")
	vals.Commit("two", map[string]string{"prod/web.yaml": "replicas: 2\n"})
	vals.Tag("v1", "")
	vals.Commit("three", map[string]string{"prod/web.yaml": "replicas: 3\n"})
	srv := gitfetchtest.Start(t, root, "reader", gitPassword)
	platform, values := srv.URL+"/platform.git", srv.URL+"/values.git"
	r := gitRenderer(t, srv, gitSecrets(platform, values))
	req := func(version, valueFiles string) render.Request {
		req := mustApp(t, "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web, namespace: argocd}\nspec:\n"+
			"  destination: {server: https://kubernetes.default.svc, namespace: web}\n  sources:\n"+
			"  - {repoURL: "+platform+", path: charts/web, targetRevision: main, helm: {valueFiles: "+valueFiles+"}}\n"+
			"  - {repoURL: "+values+", targetRevision: v1, ref: a}\n  - {repoURL: "+values+", targetRevision: main, ref: b}\n")
		req.Settings.ArgoCDVersion = version
		return req
	}
	for _, tc := range []struct {
		version, valueFiles string
		want, wantErr       string
	}{
		{"3.5", "[$a/prod/web.yaml, $b/prod/web.yaml]", "", `cannot reference multiple revisions for the same repository ($b references "main" while $a references "v1")`},
		{"3.6", "[$a/prod/web.yaml, $b/prod/web.yaml]", "replicas: 2", ""}, // both at v1
		{"3.6", "[$b/prod/web.yaml, $a/prod/web.yaml]", "replicas: 3", ""}, // both at main
	} {
		t.Run(tc.version+" "+tc.valueFiles, func(t *testing.T) {
			out, _, err := renderYAML(t, r, req(tc.version, tc.valueFiles))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("want %q:\n%s", tc.want, out)
			}
		})
	}
}

// TestKustomizeRemoteBaseFromAllowedRepository: a kustomization in the checkout whose base is in another allowed
// git repository (each form kustomize reads) is built from that repository at the base's ref, the overlay applied
// on top; a base in a repository that is not allowed is one line naming the kustomization and the entry.
func TestKustomizeRemoteBaseFromAllowedRepository(t *testing.T) {
	srv, _, _ := platformRepo(t)
	platform := srv.URL + "/platform.git"
	hostPath := strings.TrimPrefix(srv.URL, "https://")
	r := gitRenderer(t, srv, gitSecrets(platform))
	app := mustApp(t, `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: argocd}
spec:
  destination: {server: https://kubernetes.default.svc, namespace: web}
  source: {repoURL: https://example.com/fleet.git, path: envs/prod, targetRevision: HEAD}
`)
	for _, tc := range []struct{ base, image string }{
		{platform + "//kustomize/base?ref=v1.0.0", "web:1.0"},
		{"git::" + platform + "//kustomize/base?ref=v1.1.0", "web:1.1"},
		{platform + "/kustomize/base?version=v1.0.0", "web:1.0"}, // after ".git": the directory
		{platform + "//kustomize/base", "web:1.1"},               // no ref: the default branch
		{"https://" + hostPath + "/platform.git//kustomize/base?ref=v1.0.0&timeout=10", "web:1.0"},
	} {
		t.Run(tc.base, func(t *testing.T) {
			root := filetest.Tree(t, map[string]string{
				"envs/prod/kustomization.yaml": "namePrefix: prod-\nresources:\n- " + tc.base + "\n- cm.yaml\n",
				"envs/prod/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n",
			})
			req := app
			req.Repos = func(u string) (string, bool) { return root, u == "https://example.com/fleet.git" }
			out, res, err := renderYAML(t, r, req)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"name: prod-web", "image: " + tc.image, "tier: web", "name: prod-settings"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			for _, f := range res.ReadFiles {
				if strings.Contains(f, "deploy.yaml") || strings.Contains(f, "fleetwave-remote") {
					t.Errorf("a file of the remote base is recorded as the checkout's: %v", res.ReadFiles)
				}
			}
		})
	}

	root := filetest.Tree(t, map[string]string{"envs/prod/kustomization.yaml": "resources:\n- " + srv.URL + "/other.git//base?ref=v1\n"})
	req := app
	req.Repos = func(string) (string, bool) { return root, true }
	_, _, err := renderYAML(t, r, req)
	if err == nil || !strings.Contains(err.Error(), `envs/prod/kustomization.yaml`) || !strings.Contains(err.Error(), "other.git is not in the allowed repositories") ||
		strings.Contains(err.Error(), gitPassword) {
		t.Errorf("not allowed base: %v", err)
	}
	// Without a git fetcher, remote bases stay refused as before.
	if _, _, err := renderYAML(t, render.New(render.Options{}), req); err == nil || !strings.Contains(err.Error(), "remote bases and files are not fetched") {
		t.Errorf("no fetcher: %v", err)
	}
}
