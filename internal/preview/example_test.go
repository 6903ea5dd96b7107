package preview

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/fleetwave/fleetwave/internal/edge/chartfetch/chartserver"
	"github.com/fleetwave/fleetwave/internal/edge/source"
	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/report"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
	"github.com/fleetwave/fleetwave/internal/testkit/golden"
)

// exampleRepo turns examples/fleet into a git repository with two branches, as hack/demo.sh does: main (the
// fleet, origin https://github.com/example/fleet.git) and change (examples/fleet-change copied over it).
func exampleRepo(t testing.TB) string {
	t.Helper()
	examples, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "fleet")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(examples, "fleet"))); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, dir, "init", "-q", "-b", "main")
	gittest.Run(t, dir, "remote", "add", "origin", "https://github.com/example/fleet.git")
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "Example fleet")
	gittest.Run(t, dir, "checkout", "-q", "-b", "change")
	if err := fsWalkCopy(os.DirFS(filepath.Join(examples, "fleet-change")), dir); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "Roll out web 1.5.0, API readiness probe, rotate payments DB password, add team-c")
	return dir
}

// The renderer caches charts; one for all tests, as the CLI has one per run. It fetches the example's vendor
// charts (examples/vendor-charts) from the chart repository and registry that hack/chartserve serves for the demo,
// started once for the test binary, through the repositories file it writes.
var (
	rendererOnce sync.Once
	renderer     *render.Renderer
)

func theRenderer() *render.Renderer {
	rendererOnce.Do(func() {
		srv, err := chartserver.Start("../../examples/vendor-charts")
		if err != nil {
			panic("serving the example's vendor charts: " + err.Error())
		}
		charts, err := srv.Fetcher("")
		if err != nil {
			panic(err)
		}
		renderer = render.New(render.Options{Charts: charts})
	})
	return renderer
}

// outputs renders a report in every format, the split comment included.
func outputs(t *testing.T, rep *report.Report) map[string]string {
	t.Helper()
	var text, js bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{"txt": text.String(), "json": js.String(), "md": rep.Markdown()}
	out["parts"] = strings.Join(rep.MarkdownParts(8000), "\n<!-- next part -->\n")
	return out
}

func TestExampleFleetGolden(t *testing.T) {
	dir := exampleRepo(t)
	for _, withPlan := range []bool{false, true} {
		name := "diff"
		if withPlan {
			name = "plan"
		}
		rep, err := reportOf(Run(context.Background(), theRenderer(), Input{RepoDir: dir, Base: "main", Head: "change", Plan: withPlan}))
		if err != nil {
			t.Fatal(err)
		}
		if rep.HasErrors() {
			t.Fatalf("%s: the example fleet has errors: %+v %v", name, rep.Summary, rep.Problems)
		}
		// The vendor charts: ingress-nginx bumped 4.10.0 → 4.11.0 (3 resources) and the root app listing it (its
		// Application), cert-manager unchanged; ingress-nginx on the management cluster adds the platform wave.
		want := report.Summary{Apps: 28, Changed: 21, Added: 1, Unchanged: 6, ResourcesAdded: 2, ResourcesModified: 44}
		if withPlan {
			want.Waves = 4
			if !rep.Plan.OK() {
				t.Errorf("the example plan breaks its policy")
			}
		}
		if rep.Summary != want {
			t.Errorf("%s summary = %+v\nwant %+v", name, rep.Summary, want)
		}
		for ext, text := range outputs(t, rep) {
			golden.Assert(t, "example-"+name+"."+ext, text)
		}
	}
}

// TestExampleAffectedApps checks which apps the example change affects, and why.
func TestExampleAffectedApps(t *testing.T) {
	rep, err := reportOf(Run(context.Background(), theRenderer(), Input{RepoDir: exampleRepo(t), Base: "main", Head: "change"}))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]report.App{}
	for _, a := range rep.Apps {
		byName[a.Name] = a
	}
	for name, want := range map[string]struct {
		status   report.Status
		reason   string
		readFile string
	}{
		"web-prd-eu-1":      {report.StatusChanged, "read-file: values/web/shared.yaml", "values/web/prd.yaml"},
		"api-test-eu-1":     {report.StatusChanged, "read-file: kustomize/api/base/deployment.yaml", "kustomize/api/base/kustomization.yaml"},
		"api-prd-us-1":      {report.StatusChanged, "read-file: kustomize/api/overlays/prd/deployment-patch.yaml", ""},
		"payments-prd-eu-1": {report.StatusChanged, "read-file: manifests/payments/secret.yaml", ""},
		"tenant-team-c":     {report.StatusAdded, "added", "tenants/team-c/resources/quota.yaml"},
		"tenant-team-a":     {report.StatusUnchanged, "", ""},
		"status-page":       {report.StatusUnchanged, "", ""},
		"monitoring":        {report.StatusUnchanged, "", ""},
		"platform":          {report.StatusChanged, "read-file: platform/ingress-nginx.yaml", "platform/monitoring.yaml"},
		"root":              {report.StatusUnchanged, "", ""},
		"ingress-nginx":     {report.StatusChanged, "application-changed", ""},
		"cert-manager":      {report.StatusUnchanged, "", ""},
	} {
		a, ok := byName[name]
		if !ok {
			t.Errorf("%s not discovered", name)
			continue
		}
		if a.Status != want.status {
			t.Errorf("%s: status %s, want %s (%v)", name, a.Status, want.status, a.AffectedBy)
		}
		if want.reason != "" && !contains(a.AffectedBy, want.reason) {
			t.Errorf("%s: affected by %q, want %q among them", name, a.AffectedBy, want.reason)
		}
		if want.reason == "" && len(a.AffectedBy) > 0 {
			t.Errorf("%s: affected by %q, want nothing", name, a.AffectedBy)
		}
		if want.readFile != "" && !contains(a.ReadFiles, want.readFile) {
			t.Errorf("%s: read files %q lack %s", name, a.ReadFiles, want.readFile)
		}
	}
	// Apps the change cannot reach are not rendered at all; the app-of-apps root always is.
	for _, name := range []string{"tenant-team-a", "status-page", "monitoring"} {
		if len(byName[name].ReadFiles) != 0 {
			t.Errorf("%s was rendered although the change cannot reach it: %q", name, byName[name].ReadFiles)
		}
	}
	if a := byName["web-prd-eu-1"]; a.AppSet != "argocd/web" || a.Parent != "argocd/root" {
		t.Errorf("web-prd-eu-1: appset %q parent %q", a.AppSet, a.Parent)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// secretValues are every value of the fixture's Secrets (the app Secret on both sides and the cluster Secrets'
// config), in plain text and base64.
func secretValues(t *testing.T) []string {
	t.Helper()
	plain := []string{"s3cr3t-demo-value", "s3cr3t-demo-value-rotated", "pay-db-user-demo", "fake-psp-key-demo-123", "placeholder-not-a-real-token"}
	var fixtures []byte
	for _, f := range []string{"../../examples/fleet/manifests/payments/secret.yaml", "../../examples/fleet-change/manifests/payments/secret.yaml", "../../examples/fleet/clusters/prd-eu-1.yaml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fixtures = append(fixtures, b...)
	}
	var all []string
	for _, v := range plain {
		enc := base64.StdEncoding.EncodeToString([]byte(v))
		if !bytes.Contains(fixtures, []byte(v)) && !bytes.Contains(fixtures, []byte(enc)) {
			t.Fatalf("the fixtures no longer hold %q: update the list", v)
		}
		all = append(all, v, enc)
	}
	return all
}

func TestExampleOutputsNeverHoldSecretValues(t *testing.T) {
	// And the password of the registry serving the vendor charts (its repositories file's).
	secrets := append(secretValues(t), chartserver.RegistryPassword)
	dir := exampleRepo(t)
	for _, withPlan := range []bool{false, true} {
		rep, err := reportOf(Run(context.Background(), theRenderer(), Input{RepoDir: dir, Base: "main", Head: "change", Plan: withPlan}))
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, a := range rep.Apps {
			for _, r := range a.Resources {
				if r.Kind == "Secret" && len(r.SecretKeys) > 0 {
					found = true
				}
			}
		}
		if !found {
			t.Fatal("the example change no longer changes a Secret: the scan would prove nothing")
		}
		for format, text := range outputs(t, rep) {
			for _, s := range secrets {
				if strings.Contains(text, s) {
					t.Errorf("%s output (plan=%v) contains the secret value %q", format, withPlan, s)
				}
			}
		}
	}
}

func TestBadInputIsReportedAppByApp(t *testing.T) {
	dir := exampleRepo(t)
	gittest.Run(t, dir, "checkout", "-q", "-b", "broken", "change")
	files := map[string]string{
		// Broken YAML in an Application file.
		"apps/broken.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: [broken\n",
		// An app whose chart is missing.
		"apps/missing-chart.yaml": `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: missing-chart, namespace: argocd}
spec:
  project: default
  source: {repoURL: https://github.com/example/fleet.git, path: charts/does-not-exist, helm: {valueFiles: [values.yaml]}}
  destination: {name: prd-eu-1, namespace: x}
`,
		// A chart whose dependency is not vendored.
		"charts/needs-dep/Chart.yaml": "apiVersion: v2\nname: needs-dep\nversion: 0.1.0\ndependencies:\n  - {name: redis, version: 18.0.0, repository: https://charts.example.com}\n",
		"apps/needs-dep.yaml": `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: needs-dep, namespace: argocd}
spec:
  project: default
  source: {repoURL: https://github.com/example/fleet.git, path: charts/needs-dep}
  destination: {name: prd-eu-1, namespace: x}
`,
	}
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "broken")
	rep, err := reportOf(Run(context.Background(), theRenderer(), Input{RepoDir: dir, Base: "main", Head: "broken"}))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.HasErrors() {
		t.Fatal("no errors reported")
	}
	statuses := map[string]report.App{}
	for _, a := range rep.Apps {
		statuses[a.Name] = a
	}
	for _, name := range []string{"missing-chart", "needs-dep"} {
		a := statuses[name]
		if a.Status != report.StatusError || a.Error == "" || strings.Contains(a.Error, "\n") {
			t.Errorf("%s: status %s error %q, want one error line", name, a.Status, a.Error)
		}
	}
	if a := statuses["web-prd-eu-1"]; a.Status != report.StatusChanged {
		t.Errorf("the other apps are not reported: web-prd-eu-1 is %s", a.Status)
	}
	if len(rep.Problems) != 1 || !strings.HasPrefix(rep.Problems[0], "apps/broken.yaml: ") {
		t.Errorf("problems = %q, want one line for apps/broken.yaml", rep.Problems)
	}
	t.Logf("errors: %s | %s | %s", statuses["missing-chart"].Error, statuses["needs-dep"].Error, rep.Problems)

	// Input errors: no report at all.
	_, err = Run(context.Background(), theRenderer(), Input{RepoDir: dir, Base: "main", Head: "no-such-branch"})
	var ie *InputError
	if !errors.As(err, &ie) || !errors.Is(err, source.ErrUnknownRevision) {
		t.Errorf("unknown revision: err = %v", err)
	}
	_, err = Run(context.Background(), theRenderer(), Input{RepoDir: t.TempDir(), Base: "main", Head: "HEAD"})
	if !errors.As(err, &ie) || !errors.Is(err, source.ErrNotRepository) {
		t.Errorf("not a repository: err = %v", err)
	}
}

func TestBrokenPolicyIsAnInputError(t *testing.T) {
	dir := exampleRepo(t)
	if err := os.WriteFile(filepath.Join(dir, ".fleetwave.yaml"), []byte("apiVersion: fleetwave/v1\nwaves:\n  - name: a\n    selector: {matchLabels: {env: test}}\n    maxParalel: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, dir, "commit", "-q", "-am", "typo")
	_, err := Run(context.Background(), theRenderer(), Input{RepoDir: dir, Base: "main", Head: "change", Plan: true})
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), ".fleetwave.yaml") {
		t.Fatalf("err = %v", err)
	}
}
