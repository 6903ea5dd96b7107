package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
	"github.com/fleetwave/fleetwave/internal/testkit/fleetgen"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

const fleetURL = "https://github.com/example/fleet.git"

// renderAllFleet commits a fleetgen fleet of two clusters (20 apps) and an app whose path does not exist.
func renderAllFleet(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fleet")
	if err := fleetgen.Write(dir, fleetURL, 2); err != nil {
		t.Fatal(err)
	}
	broken := `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: broken, namespace: argocd}
spec:
  project: default
  source: {repoURL: ` + fleetURL + `, targetRevision: main, path: does/not/exist}
  destination: {server: https://kubernetes.default.svc, namespace: broken}
`
	filetest.Write(t, dir, "apps/broken.yaml", broken)
	gittest.Run(t, dir, "init", "-q", "-b", "main")
	gittest.Run(t, dir, "remote", "add", "origin", fleetURL)
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "fleet")
	return dir
}

// render --all streams one JSON line per app, then a summary line; the failing app is one line among the
// rendered others, on stdout and stderr, and the exit status is 2.
func TestRenderAllJSONLines(t *testing.T) {
	dir := renderAllFleet(t)
	code, out, errOut := run(t, "render", "--all", "--repo", dir, "--revision", "main", "--concurrency", "2")
	if code != 2 {
		t.Fatalf("exit %d, want 2 (one app failed)\n%s", code, errOut)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	lines := map[string]appLine{}
	var sum *renderSummary
	for sc.Scan() {
		if sum != nil {
			t.Fatalf("a line after the summary: %s", sc.Text())
		}
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &probe); err != nil {
			t.Fatalf("not a JSON line: %v: %s", err, sc.Text())
		}
		if raw, ok := probe["summary"]; ok {
			sum = &renderSummary{}
			if err := json.Unmarshal(raw, sum); err != nil {
				t.Fatal(err)
			}
			continue
		}
		var l appLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		lines[l.App] = l
	}
	want := 2*fleetgen.AppsPerCluster + 1
	if len(lines) != want || sum == nil || sum.Apps != want || sum.Rendered != want-1 || sum.Failed != 1 || len(sum.Commit) != 40 {
		t.Fatalf("%d app lines, summary %+v; want %d apps, 1 failed", len(lines), sum, want)
	}
	for key, l := range lines {
		if key == "argocd/broken" {
			if l.Status != "error" || !strings.Contains(l.Error, "does/not/exist") || l.Manifests != nil || l.File != "apps/broken.yaml" {
				t.Errorf("broken: %+v", l)
			}
			continue
		}
		if l.Status != "rendered" || l.Error != "" || l.Objects == 0 || len(l.Manifests) != l.Objects || l.Cluster == "" || l.File == "" {
			t.Errorf("%s: %+v", key, l)
		}
		var first map[string]any
		if err := json.Unmarshal(l.Manifests[0], &first); err != nil || first["kind"] == nil {
			t.Errorf("%s: first manifest %s", key, l.Manifests[0])
		}
	}
	for _, s := range []string{"fleetwave: render: app argocd/broken: error: ", "render: 21 apps at ", "20 rendered, 1 failed"} {
		if !strings.Contains(errOut, s) {
			t.Errorf("stderr lacks %q:\n%s", s, errOut)
		}
	}
}

// With --out-dir and --output yaml, each rendered app's manifests are a file named after it, as render --app
// prints them, and stdout stays empty.
func TestRenderAllOutDir(t *testing.T) {
	dir := renderAllFleet(t)
	outDir := filepath.Join(t.TempDir(), "out")
	code, out, errOut := run(t, "render", "--all", "--repo", dir, "--output", "yaml", "--out-dir", outDir, "--progress-every", "0")
	if code != 2 || out != "" {
		t.Fatalf("exit %d, stdout %q, want 2 and nothing\n%s", code, out, errOut)
	}
	files, err := filepath.Glob(filepath.Join(outDir, "argocd", "*.yaml"))
	if err != nil || len(files) != 2*fleetgen.AppsPerCluster {
		t.Fatalf("%d files (%v), want one per rendered app", len(files), err)
	}
	data, err := os.ReadFile(filepath.Join(outDir, "argocd", "c-0001-gateway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"kind: Deployment", "kind: Service", "tracking-id: c-0001-gateway:apps/Deployment:gateway/gateway"} {
		if !strings.Contains(string(data), s) {
			t.Errorf("c-0001-gateway.yaml lacks %q:\n%s", s, data)
		}
	}
	if strings.Contains(errOut, "apps, 0 failed,") {
		t.Errorf("a progress line with --progress-every 0:\n%s", errOut)
	}
}

func TestRenderAllUsage(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"--all", "--app", "app.yaml"}, "--all renders every app of --repo: drop --app"},
		{[]string{"--all", "--output", "text"}, `--output "text": must be json or yaml`},
		{[]string{"--app", "app.yaml", "--out-dir", "x"}, "--out-dir needs --all"},
		{[]string{"--all", "--repo", "/nonexistent/repo"}, "render: "},
	} {
		code, _, errOut := run(t, append([]string{"render"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.stderr) {
			t.Errorf("render %v: exit %d, stderr %q; want 2 and %q", tc.args, code, errOut, tc.stderr)
		}
	}
}

// A fork whose origin is not the URL the Applications use renders nothing: not an all-clear but exit 2 with the
// URL to pass, as diff says it; with --repo-url the same checkout renders.
func TestRenderAllForeignFleet(t *testing.T) {
	dir := renderAllFleet(t)
	gittest.Run(t, dir, "remote", "set-url", "origin", "https://github.com/someone/fork.git")
	code, out, errOut := run(t, "render", "--all", "--repo", dir, "--progress-every", "0")
	if code != 2 {
		t.Fatalf("exit %d, want 2 (nothing rendered)\n%s", code, errOut)
	}
	if want := "no app takes a source from this repository, so nothing was rendered (the apps name " + fleetURL +
		", not its origin remote): if this checkout is a fork or mirror, give the URL the Applications use: --repo-url " + fleetURL; !strings.Contains(errOut, want) {
		t.Errorf("stderr lacks %q:\n%s", want, errOut)
	}
	if !strings.Contains(out, `"noSourceInRepo":true`) || !strings.Contains(out, `"appRepoURLs":["`+fleetURL+`"]`) {
		t.Errorf("the summary line does not say it:\n%s", out[max(0, len(out)-400):])
	}
	code, _, errOut = run(t, "render", "--all", "--repo", dir, "--repo-url", fleetURL, "--progress-every", "0")
	if code != 2 || strings.Contains(errOut, "no app takes a source") || !strings.Contains(errOut, "20 rendered, 1 failed") {
		t.Errorf("with --repo-url: exit %d (want 2: the broken app), stderr:\n%s", code, errOut)
	}
}
