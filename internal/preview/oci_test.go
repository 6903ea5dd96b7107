package preview

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/edge/chartfetch"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch/helmrepotest"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch/ocitest"
	"github.com/fleetwave/fleetwave/internal/edge/repocreds"
	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/report"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

// TestPreviewOCIChartsAndFailures: one pull request bumps a chart from an OCI registry, edits a plain directory,
// and bumps two more OCI apps, one on a registry path whose credentials are wrong and one on a registry that is
// not allowed. The bump shows the chart's diff, the directory its own; each failing app is one line naming its
// cause; no output holds either password.
func TestPreviewOCIChartsAndFailures(t *testing.T) {
	const password, wrong = "preview-registry-password", "wrong-registry-password"
	reg := ocitest.New(t, "fleet", password)
	for _, v := range []string{"1.15.0", "1.16.1"} {
		data, err := os.ReadFile(helmrepotest.Package(t, vendorChart(v), t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		reg.MustPushChart(t, data, "charts")
		reg.MustPushChart(t, data, "private")
	}
	secrets := reg.Secret("charts", reg.Host+"/charts", map[string]string{"enableOCI": "true"}) + "---\n" +
		strings.ReplaceAll(reg.Secret("private", reg.Host+"/private", map[string]string{"enableOCI": "true"}), password, wrong)
	set, err := repocreds.Parse("repositories.yaml", []byte(secrets))
	if err != nil {
		t.Fatal(err)
	}
	f, err := chartfetch.New(chartfetch.Options{Repos: set, CacheDir: t.TempDir(), Transport: reg.Transport()})
	if err != nil {
		t.Fatal(err)
	}
	app := func(name, repoURL, version string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: " + name + ", namespace: argocd}\nspec:\n  project: default\n" +
			"  destination: {server: https://kubernetes.default.svc, namespace: " + name + "}\n" +
			"  source: {repoURL: " + repoURL + ", chart: cert-manager, targetRevision: " + version + "}\n"
	}
	fleet := func(version string, replicas string) map[string]string {
		return map[string]string{
			"apps/vendor.yaml":    app("vendor", reg.Host+"/charts", version),
			"apps/private.yaml":   app("private", reg.Host+"/private", version),
			"apps/elsewhere.yaml": app("elsewhere", "registry.example.com/charts", version),
			"apps/local.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: local, namespace: argocd}\nspec:\n  project: default\n" +
				"  destination: {server: https://kubernetes.default.svc, namespace: local}\n  source: {repoURL: " + chartsRepoURL + ", path: local}\n",
			"local/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: local}\ndata: {replicas: \"" + replicas + "\"}\n",
		}
	}
	dir := t.TempDir()
	write(t, dir, fleet("1.15.0", "1"))
	gittest.Run(t, dir, "init", "-q", "-b", "main")
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "base")
	gittest.Run(t, dir, "checkout", "-q", "-b", "change")
	write(t, dir, fleet("1.16.1", "2"))
	gittest.Run(t, dir, "commit", "-q", "-am", "bump")

	rep, err := reportOf(Run(context.Background(), render.New(render.Options{Charts: f}), Input{RepoDir: dir, Base: "main", Head: "change", RepoURLs: []string{chartsRepoURL}}))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]report.App{}
	for _, a := range rep.Apps {
		byName[a.Name] = a
	}
	diffOf := func(a report.App) string {
		var b strings.Builder
		for _, r := range a.Resources {
			b.WriteString(r.Diff)
		}
		return b.String()
	}
	for _, tc := range []struct {
		name   string
		status report.Status
		want   string // in the diff, or in the error
	}{
		{"vendor", report.StatusChanged, "+    app.kubernetes.io/version: 1.16.1"},
		{"local", report.StatusChanged, `+  replicas: "2"`},
		{"private", report.StatusError, "401 Unauthorized (check the credentials of its repository Secret)"},
		{"elsewhere", report.StatusError, "not rendered: repository registry.example.com/charts is not in the allowed repositories"},
	} {
		a, ok := byName[tc.name]
		if !ok {
			t.Errorf("%s: not in the report", tc.name)
			continue
		}
		if a.Status != tc.status {
			t.Errorf("%s: status %s (%s), want %s", tc.name, a.Status, a.Error, tc.status)
		}
		if got := diffOf(a) + a.Error; !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q lacks %q", tc.name, got, tc.want)
		}
		if strings.Contains(a.Error, "\n") {
			t.Errorf("%s: error spans lines: %q", tc.name, a.Error)
		}
	}
	for format, text := range outputs(t, rep) {
		for _, p := range []string{password, wrong} {
			if strings.Contains(text, p) {
				t.Errorf("%s output holds a registry password", format)
			}
		}
	}
}
