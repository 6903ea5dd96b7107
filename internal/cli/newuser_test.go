package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

// The reproductions of issue #33 ("what a new user found on their own repositories"), as fixtures: a GitOps
// repository built from scratch, one Application, one cluster Secret, a one-wave policy, committed on main.

const newUserOrigin = "https://github.com/acme/gitops.git"

// newUserApp is an Application file of the fixture: source and destination as flow-style YAML ("" leaves the
// destination out).
func newUserApp(name, source, destination string) string {
	s := fmt.Sprintf("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: %s, namespace: argocd}\nspec:\n  project: default\n  source: %s\n", name, source)
	if destination != "" {
		s += "  destination: " + destination + "\n"
	}
	return s
}

// newUserSource is a source on the fixture's own repository at revision.
func newUserSource(revision string) string {
	return "{repoURL: " + newUserOrigin + ", path: app, targetRevision: " + revision + "}"
}

// newUserRepo makes the fixture repository on main (with base changes applied to it before the commit) and
// returns its directory.
func newUserRepo(t *testing.T, base map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"app/cm.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: \"1\"}\n",
		"clusters/dev-1.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: dev-1, namespace: argocd, labels: {argocd.argoproj.io/secret-type: cluster, env: dev}}\nstringData: {name: dev-1, server: \"https://dev-1.example.com\"}\n",
		"apps/a.yaml":         newUserApp("a", newUserSource("main"), "{name: dev-1, namespace: x}"),
		".fleetwave.yaml":     "apiVersion: fleetwave/v1\nwaves:\n- name: dev\n  selector: {matchLabels: {env: dev}}\n",
	}
	for k, v := range base {
		if v == "" {
			delete(files, k)
			continue
		}
		files[k] = v
	}
	for rel, content := range files {
		filetest.Write(t, dir, rel, content)
	}
	gitRun(t, dir, "init", "-q", "-b", "main")
	gitRun(t, dir, "remote", "add", "origin", newUserOrigin)
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "base")
	return dir
}

// newUserChange commits files (content "" removes the file) on a new branch "change" of dir.
func newUserChange(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	gitRun(t, dir, "checkout", "-q", "-b", "change")
	for rel, content := range files {
		if content == "" {
			gitRun(t, dir, "rm", "-q", rel)
			continue
		}
		filetest.Write(t, dir, rel, content)
	}
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "change")
}

const newUserCMChanged = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: \"2\"}\n"

// contains reports the first of wants missing from s ("" when all are there).
func missingIn(s string, wants ...string) string {
	for _, w := range wants {
		if !strings.Contains(s, w) {
			return w
		}
	}
	return ""
}

// Item 1: apps pinned to another branch or tag of the same repository render at their own revision, as Argo CD
// renders them: a change into main does not change them, and the plan gives them no wave slot.
func TestNewUserPinnedRevisions(t *testing.T) {
	repo := newUserRepo(t, nil)
	gitRun(t, repo, "branch", "release-1")
	gitRun(t, repo, "tag", "v1.0.0")
	filetest.Write(t, repo, "apps/pinned.yaml", newUserApp("pinned", newUserSource("release-1"), "{name: dev-1, namespace: p}"))
	filetest.Write(t, repo, "apps/tagged.yaml", newUserApp("tagged", newUserSource("v1.0.0"), "{name: dev-1, namespace: t}"))
	gitRun(t, repo, "add", "-A")
	gitRun(t, repo, "commit", "-q", "-m", "pinned apps")
	newUserChange(t, repo, map[string]string{"app/cm.yaml": newUserCMChanged})

	code, out, stderr := runPreviewCmd(t, "plan", "--repo", repo, "--base", "main", "--head", "change")
	if code != 0 {
		t.Fatalf("plan: code %d\n%s\n%s", code, out, stderr)
	}
	if w := missingIn(out, "3 apps: 1 changed, 2 unchanged", "result: ok"); w != "" {
		t.Fatalf("plan: want %q in\n%s", w, out)
	}
	for _, app := range []string{"pinned -> dev-1", "tagged -> dev-1"} {
		if strings.Contains(out, app) {
			t.Fatalf("plan: the pinned app has a wave slot (%q):\n%s", app, out)
		}
	}

	// After the merge, as `fleetwave rollout --base <sha> --head <merge>` sees it: main's tip is the head, and
	// the apps tracking main follow the change (the e2e trials of issue #32 found "affects no app" here).
	baseSHA := gittest.Run(t, repo, "rev-parse", "main")
	gitRun(t, repo, "checkout", "-q", "main")
	gitRun(t, repo, "merge", "-q", "--ff-only", "change")
	headSHA := gittest.Run(t, repo, "rev-parse", "main")
	code, out, stderr = runPreviewCmd(t, "plan", "--repo", repo, "--base", baseSHA, "--head", headSHA)
	if w := missingIn(out, "3 apps: 1 changed, 2 unchanged", "result: ok"); w != "" || code != 0 {
		t.Fatalf("plan after the merge: code %d, want %q in\n%s\n%s", code, w, out, stderr)
	}
	gitRun(t, repo, "reset", "-q", "--hard", baseSHA)

	// A change of the pinned revision itself is the Application's change: shown, still with no wave slot.
	gitRun(t, repo, "checkout", "-q", "main")
	gitRun(t, repo, "branch", "-q", "-D", "change")
	filetest.Write(t, repo, "app/cm.yaml", newUserCMChanged)
	gitRun(t, repo, "commit", "-qam", "v1.1.0")
	gitRun(t, repo, "tag", "v1.1.0")
	gitRun(t, repo, "reset", "-q", "--hard", "HEAD~1")
	newUserChange(t, repo, map[string]string{"apps/tagged.yaml": newUserApp("tagged", newUserSource("v1.1.0"), "{name: dev-1, namespace: t}")})
	code, out, stderr = runPreviewCmd(t, "plan", "--repo", repo, "--base", "main", "--head", "change")
	if w := missingIn(out, "3 apps: 1 changed, 2 unchanged", "argocd/tagged", `+  k: "2"`, "pinned to v1.1.0"); w != "" || code != 0 {
		t.Fatalf("plan of a tag bump: code %d, want %q in\n%s\n%s", code, w, out, stderr)
	}
	if strings.Contains(out, "tagged -> dev-1\n") && !strings.Contains(out, "pinned to") {
		t.Fatalf("plan: the pinned app has a wave slot:\n%s", out)
	}
}

// Item 2: an app the change affects that could not be rendered is not "no change": diff --exit-code exits 1, as
// plan does for the incomplete plan.
func TestNewUserExitCodeUnrendered(t *testing.T) {
	chart := func(v string) string {
		return newUserApp("vendor", "{repoURL: https://charts.example.com, chart: nginx, targetRevision: "+v+"}", "{name: dev-1, namespace: v}")
	}
	repo := newUserRepo(t, map[string]string{"apps/vendor.yaml": chart("1.0.0")})
	newUserChange(t, repo, map[string]string{"apps/vendor.yaml": chart("1.1.0")})
	code, out, stderr := runPreviewCmd(t, "diff", "--exit-code", "--repo", repo, "--base", "main", "--head", "change")
	if code != 1 || !strings.Contains(stderr, "1 app the change affects could not be rendered") {
		t.Fatalf("diff --exit-code: code %d, want 1 and why\n%s\n%s", code, out, stderr)
	}
	if !strings.HasPrefix(strings.SplitN(out, "\n", 2)[0], "fleetwave diff ") || !strings.Contains(strings.SplitN(out, "\n", 2)[0], ": 1 app not rendered — ") {
		t.Fatalf("the first line does not say what was not rendered:\n%s", out)
	}
	code, _, stderr = runPreviewCmd(t, "plan", "--exit-code", "--repo", repo, "--base", "main", "--head", "change")
	if code != 1 {
		t.Fatalf("plan --exit-code: code %d\n%s", code, stderr)
	}
}

// Items 3 and 17: a malformed Application found by scanning makes the plan incomplete (never "the plan follows
// the release policy"), and two broken files are two lines.
func TestNewUserMalformedApplications(t *testing.T) {
	repo := newUserRepo(t, nil)
	newUserChange(t, repo, map[string]string{
		"app/cm.yaml":    newUserCMChanged,
		"apps/bad.yaml":  "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: bad, namespace: argocd}\nspec:\n  project: default\n  source: [1, 2]\n",
		"apps/ugly.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: ugly, namespace: argocd}\nspec:\n  destination: 7\n",
	})
	code, out, stderr := runPreviewCmd(t, "plan", "--repo", repo, "--base", "main", "--head", "change")
	if code != 2 {
		t.Fatalf("plan: code %d\n%s\n%s", code, out, stderr)
	}
	first := strings.SplitN(out, "\n", 2)[0]
	if !strings.Contains(first, "PLAN INCOMPLETE") || !strings.Contains(out, "result: incomplete") || strings.Contains(out, "result: ok") {
		t.Fatalf("plan text: the malformed Application does not make the plan incomplete:\n%s", out)
	}
	_, md, _ := runPreviewCmd(t, "plan", "-o", "markdown", "--repo", repo, "--base", "main", "--head", "change")
	if strings.Contains(md, "✅") || !strings.Contains(md, "**The plan is incomplete**") {
		t.Fatalf("plan markdown: an all-clear with a malformed Application:\n%s", md)
	}
	var lines []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "apps/bad.yaml") || strings.Contains(l, "apps/ugly.yaml") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 2 || strings.Contains(lines[0], "apps/ugly.yaml") && strings.Contains(lines[0], "apps/bad.yaml") {
		t.Fatalf("want one stderr line per broken file, got %d:\n%s", len(lines), stderr)
	}
	for _, l := range lines {
		if len(l) > 300 {
			t.Fatalf("a %d-character line:\n%s", len(l), l)
		}
	}
}

// Item 4: an app with no destination, or a destination cluster no cluster Secret declares, fails the plan check
// in one line naming the app.
func TestNewUserInvalidDestination(t *testing.T) {
	repo := newUserRepo(t, nil)
	newUserChange(t, repo, map[string]string{
		"apps/b.yaml": newUserApp("b", newUserSource("main"), ""),
		"apps/c.yaml": newUserApp("c", newUserSource("main"), "{name: nosuch, namespace: x}"),
	})
	code, out, stderr := runPreviewCmd(t, "plan", "--repo", repo, "--base", "main", "--head", "change")
	if code != 1 {
		t.Fatalf("plan: code %d\n%s\n%s", code, out, stderr)
	}
	if w := missingIn(out, "PLAN REFUSED", "invalid-destination: app argocd/b has no destination",
		"invalid-destination: app argocd/c: destination cluster nosuch is not a cluster any cluster Secret declares"); w != "" {
		t.Fatalf("plan: want %q in\n%s", w, out)
	}
	if strings.Contains(out, ", nosuch") || strings.Contains(out, "c -> nosuch") {
		t.Fatalf("plan: the app of an unknown cluster has a batch:\n%s", out)
	}
}

// Item 5: a repository with no Application or ApplicationSet at either revision is no all-clear: exit 2.
func TestNewUserNoApps(t *testing.T) {
	repo := newUserRepo(t, map[string]string{"apps/a.yaml": "", "clusters/dev-1.yaml": ""})
	newUserChange(t, repo, map[string]string{"app/cm.yaml": newUserCMChanged})
	for _, cmd := range []string{"diff", "plan"} {
		code, out, stderr := runPreviewCmd(t, cmd, "--exit-code", "--repo", repo, "--base", "main", "--head", "change")
		if code != 2 || !strings.Contains(stderr, "no Argo CD Application or ApplicationSet at either revision") || !strings.Contains(out, "NO APPS") {
			t.Fatalf("%s: code %d\n%s\n%s", cmd, code, out, stderr)
		}
	}
}

// Item 6: an invalid .fleetwave.yaml is named as invalid in the comment's footer, which keeps the slash commands.
func TestNewUserInvalidPolicyFooter(t *testing.T) {
	repo := newUserRepo(t, nil)
	newUserChange(t, repo, map[string]string{"app/cm.yaml": newUserCMChanged, ".fleetwave.yaml": "apiVersion: fleetwave/v1\nwaves:\n- name: dev\n  selector: {matchLabels: {env: dev}}\n  soak: forever\n"})
	code, md, stderr := runPreviewCmd(t, "plan", "-o", "markdown", "--repo", repo, "--base", "main", "--head", "change")
	if code != 2 {
		t.Fatalf("plan: code %d\n%s\n%s", code, md, stderr)
	}
	if strings.Contains(md, "fleetwave's default") || !strings.Contains(md, "`.fleetwave.yaml`, **invalid**") || !strings.Contains(md, "`/approve`") {
		t.Fatalf("the footer of an invalid policy:\n%s", md)
	}
}

// Item 7: a removed Application whose resources stay (nothing in the repository deletes it) is not counted as
// removing them, and nothing of them needs attention.
func TestNewUserRemovedAppKeepsResources(t *testing.T) {
	repo := newUserRepo(t, map[string]string{"app/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec:\n      containers: [{name: c, image: nginx:1}]\n"})
	newUserChange(t, repo, map[string]string{"apps/a.yaml": ""})
	code, out, stderr := runPreviewCmd(t, "diff", "--repo", repo, "--base", "main", "--head", "change")
	if code != 0 {
		t.Fatalf("diff: code %d\n%s\n%s", code, out, stderr)
	}
	if w := missingIn(out, "resources +0 ~0 -0", "removed (its resources stay in the cluster)", "removing its file deletes nothing"); w != "" {
		t.Fatalf("diff: want %q in\n%s", w, out)
	}
	if strings.Contains(out, "container removed") {
		t.Fatalf("diff: an image change of resources that stay:\n%s", out)
	}
}

// Item 9: uncommitted changes are not silently left out: diff says so and how to include them, and --worktree
// includes them.
func TestNewUserUncommittedChanges(t *testing.T) {
	repo := newUserRepo(t, nil)
	filetest.Write(t, repo, "app/cm.yaml", newUserCMChanged)
	code, out, stderr := runPreviewCmd(t, "diff", "--repo", repo, "--base", "main")
	if code != 0 || !strings.Contains(out, "note: the working tree has uncommitted changes, not previewed") || !strings.Contains(out, "--worktree") {
		t.Fatalf("diff: code %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr = runPreviewCmd(t, "diff", "--worktree", "--exit-code", "--repo", repo, "--base", "main")
	if code != 1 || !strings.Contains(out, "1 changed") || !strings.Contains(out, `+  k: "2"`) {
		t.Fatalf("diff --worktree: code %d\n%s\n%s", code, out, stderr)
	}
	if st := gittest.Run(t, repo, "status", "--porcelain"); !strings.Contains(st, "app/cm.yaml") || gittest.Run(t, repo, "stash", "list") != "" {
		t.Fatalf("--worktree touched the working tree or the stash: %q", st)
	}
	if code, _, stderr = runPreviewCmd(t, "diff", "--worktree", "--head", "main", "--repo", repo, "--base", "main"); code != 2 {
		t.Fatalf("--worktree with --head: code %d\n%s", code, stderr)
	}
}

// Item 10: a shallow CI checkout fails with what to do, not in git's words.
func TestNewUserShallowClone(t *testing.T) {
	repo := newUserRepo(t, nil)
	newUserChange(t, repo, map[string]string{"app/cm.yaml": newUserCMChanged})
	for _, tc := range []struct {
		name  string
		clone []string
	}{
		{"base not fetched", []string{"--depth", "1", "--branch", "change"}},
		{"no common history fetched", []string{"--depth", "1", "--no-single-branch", "--branch", "change"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := t.TempDir()
			gitRun(t, dst, append(append([]string{"clone", "-q"}, tc.clone...), "file://"+repo, "co")...)
			code, out, stderr := runPreviewCmd(t, "diff", "--repo", dst+"/co", "--base", "origin/main")
			if code != 2 || !strings.Contains(stderr, "shallow clone: fetch the base (fetch-depth: 0 or git fetch --unshallow)") ||
				strings.Contains(stderr, "unrelated histories") {
				t.Fatalf("diff: code %d\n%s\n%s", code, out, stderr)
			}
		})
	}
}

// Item 15: render --all says what would render the apps it skipped, and does not exit 0 with skipped apps.
func TestNewUserRenderAllSkipped(t *testing.T) {
	repo := newUserRepo(t, map[string]string{"apps/vendor.yaml": newUserApp("vendor", "{repoURL: https://charts.example.com, chart: nginx, targetRevision: 1.0.0}", "{name: dev-1, namespace: v}")})
	code, out, stderr := run(t, "render", "--all", "--repo", repo, "--revision", "main", "--progress-every", "0")
	if code != 1 || !strings.Contains(stderr, "1 skipped (1 chart or OCI artifact: --repositories would fetch it)") || strings.Contains(stderr, "only Argo CD can render them") {
		t.Fatalf("render --all: code %d\n%s\n%s", code, out, stderr)
	}
}

// Item 8: each app renders with its destination cluster's Kubernetes version and API list (declared on the
// cluster Secret here; from Argo CD's cluster info in serve), as Argo CD's controller passes each destination's
// own; a cluster that declares none takes the global settings.
func TestNewUserClusterRenderContext(t *testing.T) {
	secret := func(name, annotations string) string {
		return "apiVersion: v1\nkind: Secret\nmetadata: {name: " + name + ", namespace: argocd, labels: {argocd.argoproj.io/secret-type: cluster, env: dev}" +
			annotations + "}\nstringData: {name: " + name + ", server: \"https://" + name + ".example.com\"}\n"
	}
	chartSource := "{repoURL: " + newUserOrigin + ", path: chart, targetRevision: main}"
	repo := newUserRepo(t, map[string]string{
		"app/cm.yaml":         "",
		"clusters/dev-1.yaml": "",
		"clusters/old-1.yaml": secret("old-1", ", annotations: {fleetwave.io/kube-version: v1.27.3, fleetwave.io/api-versions: 'apps/v1, apps/v1/Deployment'}"),
		"clusters/new-1.yaml": secret("new-1", ", annotations: {fleetwave.io/kube-version: v1.31.2}"),
		"clusters/any-1.yaml": secret("any-1", ""),
		"apps/a.yaml":         newUserApp("a", chartSource, "{name: old-1, namespace: a}"),
		"apps/b.yaml":         newUserApp("b", chartSource, "{name: new-1, namespace: b}"),
		"apps/c.yaml":         newUserApp("c", chartSource, "{name: any-1, namespace: c}"),
		"chart/Chart.yaml":    "apiVersion: v2\nname: c\nversion: 0.1.0\n",
		"chart/values.yaml":   "x: 1\n",
		"chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n" +
			"data: {k: \"{{ .Values.x }} {{ .Capabilities.KubeVersion.Version }} {{ .Capabilities.APIVersions.Has \"apps/v1/Deployment\" }}\"}\n",
	})
	newUserChange(t, repo, map[string]string{"chart/values.yaml": "x: 2\n"})
	code, out, stderr := runPreviewCmd(t, "diff", "--repo", repo, "--base", "main", "--head", "change")
	if code != 0 {
		t.Fatalf("diff: code %d\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{`+  k: 2 v1.27.3 true`, `+  k: 2 v1.31.2 false`, `+  k: 2 ` + render.DefaultKubeVersion + ` false`} {
		if !strings.Contains(out, want) {
			t.Errorf("diff lacks %q:\n%s", want, out)
		}
	}

	// A version no renderer could take is one line naming the Secret.
	filetest.Write(t, repo, "clusters/new-1.yaml", secret("new-1", ", annotations: {fleetwave.io/kube-version: latest}"))
	gitRun(t, repo, "commit", "-qam", "bad version")
	code, out, stderr = runPreviewCmd(t, "diff", "--repo", repo, "--base", "main", "--head", "change")
	if code != 2 || !strings.Contains(stderr+out, `cluster secret new-1: annotation fleetwave.io/kube-version: kubeVersion "latest" is not a Kubernetes version`) {
		t.Errorf("bad version: code %d\n%s\n%s", code, out, stderr)
	}
}
