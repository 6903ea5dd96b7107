package preview

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/report"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

// TestOddFileNamesAffectOnlyTheirApps: a file name with a backslash (an ordinary character on Linux, where git
// and Argo CD check it out) used to make the whole preview fail ("refusing path"); now it is checked out, and an
// app reading it renders it. A tree entry no git checkout would write (".git\x", "..") is left out: every app
// is still diffed.
func TestOddFileNamesAffectOnlyTheirApps(t *testing.T) {
	dir := exampleRepo(t)
	gittest.Run(t, dir, "checkout", "-q", "-b", "odd", "change")
	files := map[string]string{
		`docs/we\ird name.txt`:                 "not read by any app\n",
		`manifests/monitoring\x.yaml`:          "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: not-in-the-app-path}\n",
		`manifests/monitoring/extra\rule.yaml`: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: odd-rules, namespace: monitoring}\n",
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
	gittest.Run(t, dir, "commit", "-q", "-m", "odd names")
	// A commit whose root tree also holds entries git itself refuses to check out, made with git mktree.
	tree := gittest.Run(t, dir, "ls-tree", "odd")
	blob := gittest.Run(t, dir, "rev-parse", "odd:docs/we\\ird name.txt")
	crafted := mktree(t, dir, tree+"\n100644 blob "+blob+"\t.git\\config\n100644 blob "+blob+"\t..\n")
	commit := gittest.Run(t, dir, "commit-tree", crafted, "-p", "odd", "-m", "crafted")
	gittest.Run(t, dir, "branch", "crafted", commit)

	for _, head := range []string{"odd", "crafted"} {
		t.Run(head, func(t *testing.T) {
			rep, err := reportOf(Run(context.Background(), theRenderer(), Input{RepoDir: dir, Base: "main", Head: head}))
			if err != nil {
				t.Fatalf("no report: %v", err)
			}
			apps := map[string]report.App{}
			for _, a := range rep.Apps {
				apps[a.Name] = a
			}
			if a := apps["web-prd-eu-1"]; a.Status != report.StatusChanged {
				t.Errorf("web-prd-eu-1 is %q, want changed: the other apps are not diffed", a.Status)
			}
			mon := apps["monitoring"]
			if mon.Status != report.StatusChanged {
				t.Fatalf("monitoring is %q (%s), want changed: the file with a backslash in its name was not rendered", mon.Status, mon.Error)
			}
			var skipped []string
			for _, pr := range rep.Problems {
				if strings.Contains(pr, "not checked out") {
					skipped = append(skipped, pr)
				}
			}
			if want := map[string]int{"odd": 0, "crafted": 2}[head]; len(skipped) != want {
				t.Errorf("%d problems name a path that was not checked out, want %d: %q", len(skipped), want, rep.Problems)
			}
			text := outputs(t, rep)["txt"]
			if !strings.Contains(text, "odd-rules") || strings.Contains(text, "not-in-the-app-path") {
				t.Errorf("the monitoring diff does not show exactly the ConfigMap read from manifests/monitoring/extra\\rule.yaml:\n%s", text)
			}
		})
	}
}

// mktree writes a tree object from `git ls-tree` lines, without the checks `git add` applies.
func mktree(t *testing.T, dir, lines string) string {
	t.Helper()
	cmd := exec.Command("git", "mktree")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	cmd.Stdin = strings.NewReader(lines)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git mktree: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}
