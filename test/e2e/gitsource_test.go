package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/gitfetch"
	"github.com/fleetwave/fleetwave/internal/edge/gitfetch/gitfetchtest"
	"github.com/fleetwave/fleetwave/internal/edge/repocreds"
	"github.com/fleetwave/fleetwave/internal/render"
)

// TestFidelityAgainstRealArgoCDSecondGitRepository serves a second git repository over HTTPS with basic auth from
// this process, inside the environment's network namespace, and registers it in Argo CD with the same credentials
// (insecure: its certificate is the test's). Apps whose sources live only there — at a tag, at a semver
// constraint, at the default branch, multi-source with $values from another revision, and a Kustomize overlay on a
// remote base of the same repository — are rendered by Argo CD's repo-server, which fetches them itself, and by
// fleetwave through internal/edge/gitfetch: identical, object for object, in order.
func TestFidelityAgainstRealArgoCDSecondGitRepository(t *testing.T) {
	e := loadEnv(t)
	ctx := context.Background()
	c, err := argocd.New(argocd.Options{BaseURL: e.ArgoCDURL, Token: e.Token, UserAgent: "fleetwave-e2e"})
	if err != nil {
		t.Fatal(err)
	}
	const user, password = "reader", "e2e-second-repo-password"
	root := t.TempDir()
	p := gitfetchtest.NewRepo(t, root, "platform.git")
	srv := gitfetchtest.Start(t, root, user, password)
	repoURL := srv.URL + "/platform.git"
	deploy := func(image string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector: {matchLabels: {app: web}}\n" +
			"  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n      - name: web\n        image: " + image + "\n"
	}
	p.Commit("one", map[string]string{
		"manifests/cm.yaml":                 "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: platform\ndata:\n  version: one\n",
		"charts/web/Chart.yaml":             "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"charts/web/values.yaml":            "replicas: 1\n",
		"charts/web/templates/deploy.yaml":  "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n  labels: {rev: {{ .Values.rev | default \"none\" | quote }}}\nspec:\n  replicas: {{ .Values.replicas }}\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n      - {name: web, image: web:1.0}\n",
		"values/prod.yaml":                  "replicas: 3\n",
		"kustomize/base/kustomization.yaml": "resources: [deploy.yaml]\nlabels:\n- pairs: {tier: web}\n",
		"kustomize/base/deploy.yaml":        deploy("web:1.0"),
	})
	p.Tag("v1.0.0", "first release")
	p.Commit("two", map[string]string{
		"manifests/cm.yaml":                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: platform\ndata:\n  version: two\n",
		"values/prod.yaml":                 "replicas: 5\n",
		"kustomize/base/deploy.yaml":       deploy("web:1.1"),
		"overlays/prod/kustomization.yaml": "namePrefix: prod-\nresources:\n- " + repoURL + "//kustomize/base?ref=v1.0.0\n- cm.yaml\n",
		"overlays/prod/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n",
	})
	p.Tag("v1.1.0", "")
	vals := gitfetchtest.NewRepo(t, root, "values.git")
	vals.Commit("values", map[string]string{"prod/web.yaml": "replicas: 4\n"})
	valuesURL := srv.URL + "/values.git"

	// Argo CD gets the repositories with the same credentials; fleetwave the same Secrets in its repositories file.
	secrets := ""
	for _, u := range []string{repoURL, valuesURL} {
		body, _ := json.Marshal(map[string]any{"repo": u, "type": "git", "username": user, "password": password, "insecure": true})
		if err := call(ctx, e, http.MethodPost, "/api/v1/repositories?upsert=true", body, nil); err != nil {
			t.Fatalf("registering %s in Argo CD: %v", u, err)
		}
		defer func() {
			_ = call(context.WithoutCancel(ctx), e, http.MethodDelete, "/api/v1/repositories/"+url.PathEscape(u), nil, nil)
		}()
		secrets += "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: repo\n  labels: {argocd.argoproj.io/secret-type: repository}\n" +
			"stringData: {url: '" + u + "', type: git, username: " + user + ", password: " + password + "}\n"
	}
	set, err := repocreds.Parse("repositories.yaml", []byte(secrets))
	if err != nil {
		t.Fatal(err)
	}
	f, err := gitfetch.New(gitfetch.Options{Repos: set, CacheDir: t.TempDir(), CAFile: srv.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	r := render.New(render.Options{Git: f})
	settings := render.Settings{ControlPlaneNamespace: "argocd"}
	if err := fillSettings(ctx, e, c, &settings); err != nil {
		t.Fatal(err)
	}

	src := func(path, rev string) string {
		return "{repoURL: '" + repoURL + "', path: " + path + ", targetRevision: '" + rev + "'}"
	}
	for _, tc := range []struct{ name, spec string }{
		{"git-tag", "  source: " + src("manifests", "v1.0.0") + "\n"},
		{"git-constraint", "  source: " + src("manifests", ">=1.0.0 <2.0.0") + "\n"},
		{"git-head", "  source: " + src("manifests", "HEAD") + "\n"},
		{"git-multi-values", "  sources:\n  - repoURL: '" + repoURL + "'\n    path: charts/web\n    targetRevision: v1.0.0\n" +
			"    helm:\n      valueFiles: [$values/prod/web.yaml]\n      parameters: [{name: rev, value: $ARGOCD_APP_REVISION_SHORT}]\n" +
			"  - {repoURL: '" + valuesURL + "', targetRevision: main, ref: values}\n"},
		{"git-multi-same-repo", "  sources:\n  - repoURL: '" + repoURL + "'\n    path: charts/web\n    targetRevision: v1.0.0\n" +
			"    helm: {valueFiles: [$values/values/prod.yaml]}\n" +
			"  - {repoURL: '" + repoURL + "', targetRevision: v1.0.0, ref: values}\n"},
		{"git-remote-base", "  source: " + src("overlays/prod", "v1.1.0") + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app, err := render.ParseApplication([]byte("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: fw-" + tc.name + ", namespace: argocd}\n" +
				"spec:\n  project: default\n  destination: {server: https://kubernetes.default.svc, namespace: second-repo}\n" + tc.spec))
			if err != nil {
				t.Fatal(err)
			}
			ours, err := r.Render(ctx, render.Request{App: app, Settings: settings})
			if err != nil {
				t.Fatalf("rendering in process: %v", err)
			}
			theirs, err := argoRenderAsWritten(ctx, e, c, app)
			if err != nil {
				t.Fatalf("rendering through Argo CD: %v", err)
			}
			compareWithArgoCD(t, theirs, ours)
		})
	}

	// A $values ref on the chart's own repository at another revision: both refuse it, with Argo CD's message, word for
	// word (the release decides what it says: 3.6 names the ref's commit where 3.2 named "main", target.RefRevisionsResolved).
	t.Run("git-multi-other-revision", func(t *testing.T) {
		app, err := render.ParseApplication([]byte("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: fw-git-multi-other-revision, namespace: argocd}\n" +
			"spec:\n  project: default\n  destination: {server: https://kubernetes.default.svc, namespace: second-repo}\n  sources:\n" +
			"  - repoURL: '" + repoURL + "'\n    path: charts/web\n    targetRevision: v1.0.0\n    helm: {valueFiles: [$values/values/prod.yaml]}\n" +
			"  - {repoURL: '" + repoURL + "', targetRevision: main, ref: values}\n"))
		if err != nil {
			t.Fatal(err)
		}
		const prefix = "cannot reference a different revision of the same repository ($values references "
		_, ours := r.Render(ctx, render.Request{App: app, Settings: settings})
		_, theirs := argoRenderAsWritten(ctx, e, c, app)
		if ours == nil || theirs == nil {
			t.Fatalf("want both to refuse:\nfleetwave: %v\nArgo CD: %v", ours, theirs)
		}
		_, msg, ok := strings.Cut(theirs.Error(), prefix)
		if !ok || !strings.Contains(ours.Error(), prefix+msg) {
			t.Errorf("want both to refuse with Argo CD's %q...:\nfleetwave: %v\nArgo CD: %v", prefix, ours, theirs)
		}
	})
}

// argoRenderAsWritten creates app in Argo CD with its sources as written (another repository Argo CD fetches
// itself) and returns the repo-server's manifests.
func argoRenderAsWritten(ctx context.Context, e env, c *argocd.Client, app *v1alpha1.Application) ([]string, error) {
	a := app.DeepCopy()
	a.Labels = map[string]string{"suite": "fidelity"}
	body, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	if err := call(ctx, e, http.MethodPost, "/api/v1/applications?upsert=true&validate=false", body, nil); err != nil {
		return nil, err
	}
	defer func() {
		_ = call(context.WithoutCancel(ctx), e, http.MethodDelete, "/api/v1/applications/"+app.Name+"?cascade=false&appNamespace=argocd", nil, nil)
	}()
	res, err := c.Manifests(ctx, "argocd/"+app.Name, "")
	if err != nil {
		return nil, err
	}
	return res.Manifests, nil
}
