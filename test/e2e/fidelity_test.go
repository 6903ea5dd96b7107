package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	argodiff "github.com/argoproj/argo-cd/gitops-engine/v3/pkg/diff"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/discover"
	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch/chartserver"
	"github.com/fleetwave/fleetwave/internal/edge/repocreds"
	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/render/fidelity"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

// exampleRepoURL is the repoURL the example fleet's Applications use for themselves.
const exampleRepoURL = "https://github.com/example/fleet.git"

// TestFidelityAgainstRealArgoCD renders every app of the bundled example fleet twice — in process, and by the real
// Argo CD's repo-server (GET /api/v1/applications/{name}/manifests) from a file:// copy of the same commit — and
// requires the same objects in the same order. Each app is created in Argo CD under its own name (the name is part
// of the render: Helm release name, tracking id) with its sources pointed at the copy and its destination at the
// in-cluster server (one API server underneath; the render settings come from it), never synced. The vendor charts
// (a Helm repository, an OCI registry) are served by the test as make demo serves them (chartserver), registered in
// Argo CD with the repository Secrets fleetwave reads, and named by both at the servers' own addresses.
func TestFidelityAgainstRealArgoCD(t *testing.T) {
	e := loadEnv(t)
	ctx := context.Background()
	c, err := argocd.New(argocd.Options{BaseURL: e.ArgoCDURL, Token: e.Token, UserAgent: "fleetwave-e2e"})
	if err != nil {
		t.Fatal(err)
	}

	// The example fleet as a git repository the repo-server can clone (file://), one commit.
	root := filepath.Join(repoRoot(t), "examples", "fleet")
	work := t.TempDir()
	checkout := filepath.Join(work, "fleet")
	bare := filepath.Join(work, "fleet.git")
	if out, err := exec.Command("cp", "-r", root, checkout).CombinedOutput(); err != nil {
		t.Fatalf("copying the example fleet: %v\n%s", err, out)
	}
	gittest.Run(t, checkout, "init", "-q", "-b", "main")
	gittest.Run(t, checkout, "add", "-A")
	gittest.Run(t, checkout, "commit", "-q", "-m", "example fleet")
	sha := gittest.Run(t, checkout, "rev-parse", "HEAD")
	gittest.Run(t, work, "clone", "-q", "--bare", checkout, bare)
	fileURL := "file://" + bare

	// The render settings of the in-cluster destination, as Argo CD's controller passes them to the repo-server.
	settings := render.Settings{Revision: sha, ControlPlaneNamespace: "argocd"}
	if err := fillSettings(ctx, e, c, &settings); err != nil {
		t.Fatal(err)
	}
	t.Logf("rendering as Argo CD %s (Helm 4: %v): GET /api/version says %s", settings.Target(), settings.Target().Helm4(), settings.ArgoCDVersion)

	// The example's vendor charts; the registry by host name, as Argo CD needs it (see TestFidelityAgainstRealArgoCDCharts).
	charts, err := chartserver.Start(filepath.Join(repoRoot(t), "examples", "vendor-charts"))
	if err != nil {
		t.Fatal(err)
	}
	defer charts.Close()
	_, port, _ := strings.Cut(charts.RegistryAddr, ":")
	vendor := map[string]string{"https://" + chartserver.HelmHost: charts.HelmURL, chartserver.RegistryHost + "/charts": "localhost:" + port + "/charts"}
	secrets := registerRepositories(ctx, t, e, []map[string]any{
		{"repo": vendor["https://"+chartserver.HelmHost], "type": "helm", "name": "fleet-charts", "insecure": true},
		{"repo": vendor[chartserver.RegistryHost+"/charts"], "type": "helm", "name": "fleet-registry", "enableOCI": true, "insecure": true,
			"username": chartserver.RegistryUser, "password": chartserver.RegistryPassword},
	})
	set, err := repocreds.Parse("repositories.yaml", []byte(secrets))
	if err != nil {
		t.Fatal(err)
	}
	f, err := chartfetch.New(chartfetch.Options{Repos: set, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	withCharts := render.New(render.Options{Charts: f})

	isThis := func(u string) bool { return u == exampleRepoURL }
	inv := discover.Discover(discover.Options{Root: checkout, IsThisRepo: isThis, ControlPlaneNamespace: "argocd"})
	r := render.New(render.Options{})
	repos := func(u string) (string, bool) { return checkout, isThis(u) }
	inv.Expand(ctx, func(ctx context.Context, a *discover.App) ([]*unstructured.Unstructured, error) {
		res, err := r.Render(ctx, render.Request{App: a.App, Repos: repos, Settings: settings})
		if err != nil {
			return nil, err
		}
		return res.Objects, nil
	}, 4)
	if len(inv.Problems) > 0 {
		t.Fatalf("discovering the example fleet: %v", inv.Problems)
	}

	compared, vendored := 0, 0
	for _, a := range inv.Apps() {
		app := a.App.DeepCopy()
		comparable, external := true, false
		for _, src := range sourcesOf(app) {
			if u, ok := vendor[src.RepoURL]; ok {
				src.RepoURL, external = u, true
			} else if !isThis(src.RepoURL) {
				comparable = false
			}
		}
		if !comparable {
			t.Logf("%s: a source outside the example repository and its vendor charts; skipped", app.Name)
			continue
		}
		t.Run(app.Name, func(t *testing.T) {
			ours, err := withCharts.Render(ctx, render.Request{App: app, Repos: repos, Settings: settings})
			if err != nil {
				t.Fatalf("rendering in process: %v", err)
			}
			theirs, err := argoRender(ctx, e, c, app, fileURL, sha)
			if err != nil {
				t.Fatalf("rendering through Argo CD: %v", err)
			}
			compareWithArgoCD(t, theirs, ours)
		})
		compared++
		if external {
			vendored++
		}
	}
	if vendored < 2 {
		t.Errorf("only %d apps of the example fleet with vendor charts compared, want ingress-nginx and cert-manager", vendored)
	}
	if compared < 5 {
		t.Fatalf("only %d apps of the example fleet compared", compared)
	}
}

// compareWithArgoCD requires fleetwave's render to hold the objects of Argo CD's (the manifests API's JSON
// documents), identical and in the same order; Secrets of ours are masked as the API server masks them
// (server/application/application.go GetManifests). It returns fleetwave's render as YAML.
func compareWithArgoCD(t *testing.T, theirs []string, ours *render.Result) string {
	t.Helper()
	var want, got bytes.Buffer
	for _, m := range theirs {
		y, err := yaml.JSONToYAML([]byte(m))
		if err != nil {
			t.Fatal(err)
		}
		want.WriteString("---\n")
		want.Write(y)
	}
	for _, o := range ours.Objects {
		if o.GetKind() == "Secret" && o.GroupVersionKind().Group == "" {
			var err error
			if o, _, err = argodiff.HideSecretData(o, nil, nil); err != nil {
				t.Fatal(err)
			}
		}
		y, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		got.WriteString("---\n")
		got.Write(y)
	}
	diffs, sameOrder, err := fidelity.Compare(want.Bytes(), got.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) > 0 {
		t.Errorf("%d differences from Argo CD's render:\n%s\nArgo CD:\n%s\nfleetwave:\n%s", len(diffs), strings.Join(diffs, "\n"), want.String(), got.String())
	} else if !sameOrder {
		t.Errorf("same objects as Argo CD's render, in another order")
	}
	if len(theirs) == 0 {
		t.Error("Argo CD rendered nothing")
	}
	t.Logf("%d objects, identical to Argo CD's", len(theirs))
	return got.String()
}

// fillSettings reads what Argo CD renders with: its release (GET /api/version), argocd-cm's tracking settings (GET
// /api/v1/settings) and the in-cluster destination's version and API versions (GET /api/v1/clusters, filled once
// its cache is warm).
func fillSettings(ctx context.Context, e env, c *argocd.Client, s *render.Settings) error {
	var st struct {
		AppLabelKey    string `json:"appLabelKey"`
		TrackingMethod string `json:"trackingMethod"`
		InstallationID string `json:"installationID"`
	}
	if err := getJSON(ctx, e, "/api/v1/settings", &st); err != nil {
		return err
	}
	s.AppLabelKey, s.TrackingMethod, s.InstallationID = st.AppLabelKey, st.TrackingMethod, st.InstallationID
	// Render as the release under test (GET /api/version), as fleetwave serve does: its helm and its rules.
	v, err := c.Version(ctx)
	if err != nil {
		return err
	}
	s.ArgoCDVersion = v
	// A release fleetwave does not render as would be rendered as the newest without a word: refuse it instead.
	if err := s.Validate(); err != nil {
		return fmt.Errorf("GET /api/version: %w", err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		cs, err := c.ListClusters(ctx)
		if err != nil {
			return err
		}
		for _, cl := range cs {
			if cl.Server == v1alpha1.KubernetesInternalAPIServerAddr && cl.Info.ServerVersion != "" && len(cl.Info.APIVersions) > 0 {
				// controller/state.go passes the cluster's version and API versions to GenerateManifests.
				s.KubeVersion, s.APIVersions = cl.Info.ServerVersion, cl.Info.APIVersions
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the in-cluster destination's version and API versions never showed in GET /api/v1/clusters")
		}
		time.Sleep(2 * time.Second)
	}
}

// argoRender creates (or updates) app in Argo CD with its sources of the example repository on the file:// copy at
// sha (others as they are) and the in-cluster destination, and returns the repo-server's manifests.
func argoRender(ctx context.Context, e env, c *argocd.Client, app *v1alpha1.Application, fileURL, sha string) ([]string, error) {
	a := &v1alpha1.Application{}
	a.Name, a.Namespace = app.Name, "argocd"
	a.Labels = map[string]string{"suite": "fidelity"}
	a.Spec = *app.Spec.DeepCopy()
	a.Spec.Project = "default"
	a.Spec.SyncPolicy = nil
	a.Spec.Destination = v1alpha1.ApplicationDestination{Server: v1alpha1.KubernetesInternalAPIServerAddr, Namespace: app.Spec.Destination.Namespace}
	for _, s := range sourcesOf(a) {
		if s.RepoURL == exampleRepoURL {
			s.RepoURL, s.TargetRevision = fileURL, sha
		}
	}
	body, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	if err := call(ctx, e, http.MethodPost, "/api/v1/applications?upsert=true&validate=false", body, nil); err != nil {
		return nil, fmt.Errorf("creating the app: %w", err)
	}
	defer func() { // never synced: nothing in the cluster to cascade to
		_ = call(context.WithoutCancel(ctx), e, http.MethodDelete, "/api/v1/applications/"+app.Name+"?cascade=false&appNamespace=argocd", nil, nil)
	}()
	res, err := c.Manifests(ctx, "argocd/"+app.Name, "")
	if err != nil {
		return nil, err
	}
	return res.Manifests, nil
}

// sourcesOf returns pointers to app's sources, single or multiple.
func sourcesOf(app *v1alpha1.Application) []*v1alpha1.ApplicationSource {
	var out []*v1alpha1.ApplicationSource
	if app.Spec.Source != nil {
		out = append(out, app.Spec.Source)
	}
	for i := range app.Spec.Sources {
		out = append(out, &app.Spec.Sources[i])
	}
	return out
}

// registerRepositories registers repos (bodies of POST /api/v1/repositories) in Argo CD until the test ends and
// returns them as the repository Secrets fleetwave reads.
func registerRepositories(ctx context.Context, t *testing.T, e env, repos []map[string]any) string {
	t.Helper()
	secrets := ""
	for _, r := range repos {
		body, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		u := r["repo"].(string)
		if err := call(ctx, e, http.MethodPost, "/api/v1/repositories?upsert=true", body, nil); err != nil {
			t.Fatalf("registering %s in Argo CD: %v", u, err)
		}
		t.Cleanup(func() {
			_ = call(context.WithoutCancel(ctx), e, http.MethodDelete, "/api/v1/repositories/"+url.PathEscape(u), nil, nil)
		})
		secrets += "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: " + r["name"].(string) + "\n  labels: {argocd.argoproj.io/secret-type: repository}\n" +
			"stringData:\n  url: '" + u + "'\n  type: " + r["type"].(string) + "\n  name: " + r["name"].(string) + "\n"
		for _, k := range []string{"username", "password"} {
			if v, _ := r[k].(string); v != "" {
				secrets += "  " + k + ": '" + v + "'\n"
			}
		}
		for _, k := range []string{"insecure", "enableOCI"} {
			if r[k] == true {
				secrets += "  " + k + ": 'true'\n"
			}
		}
	}
	return secrets
}

func getJSON(ctx context.Context, e env, path string, out any) error {
	return call(ctx, e, http.MethodGet, path, nil, out)
}

func call(ctx context.Context, e env, method, path string, body []byte, out any) error {
	u, err := url.JoinPath(e.ArgoCDURL, "/")
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(u, "/")+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+e.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(b))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// repoRoot finds the repository's top level from the working directory: the package directory under go test,
// the repository under hack/e2e/test.sh (which runs the compiled test binary from there).
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "examples", "fleet", ".fleetwave.yaml")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			t.Fatalf("no examples/fleet above %s", dir)
		}
	}
}
