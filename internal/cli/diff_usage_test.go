package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/edge/github"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
)

// forkRepo makes a one-app repository whose Application names https://github.com/acme/gitops.git while the
// checkout's origin is origin (a fork, a mirror); HEAD changes the app's chart. extra files go in both commits.
func forkRepo(t *testing.T, origin string, extra map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"apps/web.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web, namespace: argocd}\nspec:\n  project: default\n" +
			"  destination: {server: https://kubernetes.default.svc, namespace: web}\n  source: {repoURL: https://github.com/acme/gitops.git, path: chart}\n",
		"chart/Chart.yaml":        "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {a: \"1\"}\n",
	}
	for k, v := range extra {
		files[k] = v
	}
	for rel, content := range files {
		filetest.Write(t, dir, rel, content)
	}
	gitRun(t, dir, "init", "-q", "-b", "main")
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "base")
	filetest.Write(t, dir, "chart/templates/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {a: \"2\"}\n")
	gitRun(t, dir, "commit", "-q", "-am", "change")
	if origin != "" {
		gitRun(t, dir, "remote", "add", "origin", origin)
	}
	return dir
}

// An app whose sources were not rendered is never "unchanged", and a checkout whose names no app uses is said
// so in one line naming --repo-url: never a false all-clear (exit 0) on a fork or a mirror.
func TestDiffForkOrMirrorIsNoAllClear(t *testing.T) {
	external := map[string]string{"apps/ext.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: ext, namespace: argocd}\nspec:\n  project: default\n" +
		"  destination: {server: https://kubernetes.default.svc, namespace: ext}\n  source: {repoURL: https://github.com/other/charts.git, path: ext}\n"}
	tests := []struct {
		name     string
		origin   string
		extra    map[string]string
		args     []string
		code     int
		stdout   []string
		stderr   string // the last stderr line contains it ("" = no stderr)
		statuses map[string]string
	}{
		{name: "fork origin", origin: "https://github.com/alice/gitops-fork.git", args: []string{"--exit-code"}, code: 2,
			stdout:   []string{"0 changed, 0 unchanged, 0 failed to render, 1 not rendered", "note: no app takes a source from this repository"},
			stderr:   "no app takes a source from this repository, so nothing was rendered (the apps name https://github.com/acme/gitops.git, not its origin remote): if this checkout is a fork or mirror, give the URL the Applications use: --repo-url https://github.com/acme/gitops.git",
			statuses: map[string]string{"web": "skipped"}},
		{name: "fork origin without --exit-code", origin: "https://github.com/alice/gitops-fork.git", code: 2,
			stderr: "--repo-url https://github.com/acme/gitops.git", statuses: map[string]string{"web": "skipped"}},
		{name: "SSH remote of another host", origin: "git@gitlab.example.com:acme/gitops.git", code: 2,
			stderr: "--repo-url", statuses: map[string]string{"web": "skipped"}},
		{name: "no origin", code: 2, stderr: "--repo-url", statuses: map[string]string{"web": "skipped"}},
		{name: "fork with --repo-url", origin: "https://github.com/alice/gitops-fork.git", args: []string{"--exit-code", "--repo-url", "acme/gitops"}, code: 1,
			stdout: []string{"1 changed, 0 unchanged"}, stderr: "1 app: 1 changed", statuses: map[string]string{"web": "changed"}},
		{name: "SSH origin of the same repository", origin: "git@github.com:acme/gitops.git", args: []string{"--exit-code"}, code: 1,
			stderr: "1 changed", statuses: map[string]string{"web": "changed"}},
		{name: "an external app the change does not reach is skipped, not unchanged", origin: "https://github.com/acme/gitops.git", extra: external,
			args: []string{"--exit-code"}, code: 1, stdout: []string{"1 changed, 0 unchanged, 0 failed to render, 1 not rendered",
				"argocd/ext → in-cluster: skipped", "not rendered: not rendered locally: source https://github.com/other/charts.git is not this repository"},
			stderr: "1 changed", statuses: map[string]string{"web": "changed", "ext": "skipped"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			repo := forkRepo(t, tc.origin, tc.extra)
			args := append([]string{"diff", "--repo", repo, "--base", "HEAD~1"}, tc.args...)
			code, out, stderr := runPreviewCmd(t, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, out, stderr)
			}
			for _, want := range tc.stdout {
				if !strings.Contains(out, want) {
					t.Errorf("stdout lacks %q:\n%s", want, out)
				}
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if tc.stderr != "" && (len(lines) != 1 || !strings.Contains(lines[0], tc.stderr)) {
				t.Errorf("stderr = %q, want one line containing %q", stderr, tc.stderr)
			}
			code, out, _ = runPreviewCmd(t, append(args, "-o", "json")...)
			var doc struct {
				Apps []struct{ Name, Status, Error string }
			}
			if code != tc.code || json.Unmarshal([]byte(out), &doc) != nil {
				t.Fatalf("json: exit %d\n%s", code, out)
			}
			got := map[string]string{}
			for _, a := range doc.Apps {
				got[a.Name] = a.Status
				if a.Status == "skipped" && a.Error == "" {
					t.Errorf("app %s skipped without saying why", a.Name)
				}
			}
			for n, st := range tc.statuses {
				if got[n] != st {
					t.Errorf("app %s: status %q, want %q", n, got[n], st)
				}
			}
		})
	}
}

// diff and plan run from a subdirectory of the working copy, as git does.
func TestPreviewFromASubdirectory(t *testing.T) {
	repo := forkRepo(t, "https://github.com/acme/gitops.git", nil)
	sub := filepath.Join(repo, "chart", "templates")
	for _, cmd := range []string{"diff", "plan"} {
		code, out, stderr := runPreviewCmd(t, cmd, "--repo", sub, "--base", "HEAD~1")
		if code != 0 || !strings.Contains(out, "1 changed") {
			t.Errorf("%s --repo %s: exit %d\n%s\n%s", cmd, sub, code, out, stderr)
		}
	}
	// The default --repo is the working directory.
	t.Chdir(sub)
	code, out, stderr := runPreviewCmd(t, "diff", "--base", "HEAD~1")
	if code != 0 || !strings.Contains(out, "1 changed") {
		t.Errorf("diff in %s: exit %d\n%s\n%s", sub, code, out, stderr)
	}
}

// --markdown-out writes the comment as the App posts it: each part within GitHub's limit, part 1 at the path
// and the others numbered next to it, and one stderr line saying so.
func TestMarkdownOutWritesThePartsTheAppPosts(t *testing.T) {
	// Ten added apps of about 30 KB of manifests each: too much for one comment, each section fits in a part.
	extra := map[string]string{}
	for a := 0; a < 10; a++ {
		var big strings.Builder
		big.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata:\n")
		for i := 0; i < 500; i++ {
			// Each app's values are its own: apps whose changes differ only by their own identity share a section.
			fmt.Fprintf(&big, "  key%04d: value-%04d-%d-%s\n", i, i, a, strings.Repeat("x", 40))
		}
		name := fmt.Sprintf("big%d", a)
		extra["manifests/"+name+"/cm.yaml"] = big.String()
		extra["apps/"+name+".yaml"] = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: " + name + ", namespace: argocd}\nspec:\n  project: default\n" +
			"  source: {repoURL: " + previewRepoURL + ", path: manifests/" + name + "}\n  destination: {name: prd-eu-1, namespace: " + name + "}\n"
	}
	repo := previewRepo(t, extra)
	dir := t.TempDir()
	md := filepath.Join(dir, "comment.md")
	// A stale part of an earlier, longer comment goes away.
	if err := os.WriteFile(filepath.Join(dir, "comment.part9.md"), []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	for n := 2; n <= 8; n++ {
		_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("comment.part%d.md", n)), []byte("stale"), 0o644)
	}
	code, _, stderr := runPreviewCmd(t, "diff", "--repo", repo, "--base", "main", "--head", "change", "--repo-url", previewRepoURL, "--markdown-out", md)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var files []string
	for n := 1; ; n++ {
		name := md
		if n > 1 {
			name = filepath.Join(dir, fmt.Sprintf("comment.part%d.md", n))
		}
		data, err := os.ReadFile(name)
		if err != nil {
			break
		}
		files = append(files, name)
		if len(data) > github.MaxCommentPart {
			t.Errorf("%s is %d bytes, over the %d a part may have", name, len(data), github.MaxCommentPart)
		}
		if n > 1 && !strings.HasPrefix(string(data), fmt.Sprintf("<!-- fleetwave:preview part=%d -->", n)) {
			t.Errorf("%s does not start with its part marker", name)
		}
	}
	if len(files) < 2 {
		t.Fatalf("%d part(s) written, want several", len(files))
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	want := fmt.Sprintf("%d parts, as the App posts them: %s", len(files), strings.Join(files, ", "))
	if len(lines) != 1 || !strings.Contains(lines[0], want) {
		t.Errorf("stderr = %q, want one line containing %q", stderr, want)
	}
}

// A plan that could not place an app (it failed to render) says it is incomplete and names the app, in every
// output, and never that it follows the policy.
func TestPlanWithAFailedRenderIsIncomplete(t *testing.T) {
	repo := previewRepo(t, map[string]string{
		"apps/nopath.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: nopath, namespace: argocd}\nspec:\n  project: default\n  source: {repoURL: " + previewRepoURL + ", path: manifests/missing}\n  destination: {name: prd-eu-1, namespace: x}\n",
	})
	common := []string{"plan", "--repo", repo, "--base", "main", "--head", "change", "--repo-url", previewRepoURL, "--clusters", filepath.Join(repo, "clusters.yaml")}
	for _, tc := range []struct {
		output string
		want   []string
	}{
		{"text", []string{"incomplete: 1 app of the change could not be rendered, so the plan does not place them:", "argocd/nopath -> prd-eu-1:", "result: incomplete"}},
		{"markdown", []string{"❌ **The plan is incomplete**: 1 app of the change could not be rendered, so the plan does not place them: `argocd/nopath`."}},
		{"json", []string{`"incomplete": true`, `"unplaced": [`, `"app": "nopath"`}},
	} {
		t.Run(tc.output, func(t *testing.T) {
			code, out, stderr := runPreviewCmd(t, append(common, "-o", tc.output)...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("%s output lacks %q:\n%s", tc.output, w, out)
				}
			}
			if strings.Contains(out, "follows the release policy") || strings.Contains(out, "the plan follows the policy") {
				t.Errorf("%s output says the plan follows the policy:\n%s", tc.output, out)
			}
		})
	}
}

// A broken .fleetwave.yaml does not hide the diff: plan shows it, then fails the plan part with the policy's
// error at its line (exit 2).
func TestPlanWithABrokenPolicyStillShowsTheDiff(t *testing.T) {
	repo := previewRepo(t, map[string]string{".fleetwave.yaml": "apiVersion: fleetwave/v1\nwaves:\n  - name: production\n    selector: {matchLabels: {env: prd}}\n    soak: 10 minutes\n"})
	common := []string{"plan", "--repo", repo, "--base", "main", "--head", "change", "--repo-url", previewRepoURL}
	for _, tc := range []struct {
		output string
		want   []string
	}{
		{"text", []string{"+  color: green", "plan: not made, the release policy is invalid:", "  .fleetwave.yaml:5:"}},
		{"markdown", []string{"+  color: green", "❌ **The release policy is invalid**, so no plan was made", "- .fleetwave.yaml:5:"}},
		{"json", []string{`"status": "changed"`, `"policyErrors": [`, `".fleetwave.yaml:5:`}},
	} {
		t.Run(tc.output, func(t *testing.T) {
			code, out, stderr := runPreviewCmd(t, append(common, "-o", tc.output)...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("%s output lacks %q:\n%s", tc.output, w, out)
				}
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if len(lines) != 2 || !strings.HasPrefix(lines[0], "fleetwave: plan: .fleetwave.yaml:5:") ||
				!strings.Contains(lines[1], "invalid release policy .fleetwave.yaml (1 error): no plan was made") {
				t.Errorf("stderr = %q", stderr)
			}
		})
	}
	// diff does not read the policy.
	if code, _, stderr := runPreviewCmd(t, "diff", "--repo", repo, "--base", "main", "--head", "change", "--repo-url", previewRepoURL); code != 0 {
		t.Errorf("diff: exit %d\n%s", code, stderr)
	}
}
