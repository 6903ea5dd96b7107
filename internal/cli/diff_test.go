package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
)

const previewRepoURL = "https://github.com/example/small.git"

// previewRepo makes a small GitOps repository: main holds two directory apps (web, api); change edits web's
// manifest and adds a Secret value change.
func previewRepo(t *testing.T, extra map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	run := func(args ...string) { t.Helper(); gitRun(t, dir, args...) }
	write := func(files map[string]string) {
		for rel, content := range files {
			filetest.Write(t, dir, rel, content)
		}
	}
	app := func(name, extra string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: " + name + ", namespace: argocd}\nspec:\n  project: default\n" +
			"  source: {repoURL: " + previewRepoURL + ", path: manifests/" + name + "}\n  destination: {name: prd-eu-1, namespace: " + name + "}\n" + extra
	}
	write(map[string]string{
		"clusters.yaml":          "clusters:\n  - {name: prd-eu-1, server: https://prd-eu-1.example.com, labels: {env: prd, region: eu-1}}\n",
		"apps/web.yaml":          app("web", ""),
		"apps/api.yaml":          app("api", ""),
		"manifests/web/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {color: blue}\n",
		"manifests/web/sec.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: web}\nstringData: {token: cli-secret-one}\n",
		"manifests/api/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: api}\ndata: {a: b}\n",
		".fleetwave.yaml":        "apiVersion: fleetwave/v1\nwaves:\n  - name: production\n    selector: {matchLabels: {env: prd}}\n",
	})
	run("init", "-q", "-b", "main")
	run("add", "-A")
	run("commit", "-q", "-m", "base")
	run("checkout", "-q", "-b", "change")
	write(map[string]string{
		"manifests/web/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {color: green}\n",
		"manifests/web/sec.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: web}\nstringData: {token: cli-secret-two}\n",
	})
	if extra != nil {
		write(extra)
	}
	run("add", "-A")
	run("commit", "-q", "-m", "change")
	return dir
}

// runPreviewCmd runs `fleetwave <args>` with the diff and plan commands and returns the exit code Main would.
func runPreviewCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	deps := &Deps{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}
	root := &cobra.Command{Use: "fleetwave", SilenceUsage: true, SilenceErrors: true}
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.AddCommand(newDiffCmd(deps), newPlanCmd(deps))
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	if err == nil {
		return 0, out.String(), errOut.String()
	}
	errOut.WriteString("fleetwave: " + err.Error() + "\n")
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code, out.String(), errOut.String()
	}
	return 2, out.String(), errOut.String()
}

func TestDiffCommand(t *testing.T) {
	repo := previewRepo(t, nil)
	common := []string{"--repo", repo, "--base", "main", "--head", "change", "--repo-url", previewRepoURL}

	code, out, stderr := runPreviewCmd(t, append([]string{"diff"}, common...)...)
	if code != 0 || !strings.Contains(out, "2 apps: 1 changed, 1 unchanged, 0 failed to render") || !strings.Contains(out, "+  color: green") {
		t.Fatalf("diff: code %d\n%s\n%s", code, out, stderr)
	}
	if strings.Contains(out, "cli-secret") {
		t.Fatalf("a Secret value was printed:\n%s", out)
	}

	code, _, _ = runPreviewCmd(t, append([]string{"diff", "--exit-code"}, common...)...)
	if code != 1 {
		t.Fatalf("--exit-code with changes: code %d", code)
	}

	code, out, _ = runPreviewCmd(t, append([]string{"diff", "-o", "json"}, common...)...)
	var doc struct {
		Base, Head string
		Apps       []struct {
			Name, Cluster, Status string
			Resources             []struct{ Kind, Change, Diff string }
			ReadFiles             []string
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Apps) != 2 || doc.Apps[1].Name != "web" || doc.Apps[1].Status != "changed" {
		t.Fatalf("json: code %d\n%s", code, out)
	}

	md := filepath.Join(t.TempDir(), "comment.md")
	code, out, _ = runPreviewCmd(t, append([]string{"diff", "-o", "markdown", "--markdown-out", md}, common...)...)
	written, err := os.ReadFile(md)
	if code != 0 || err != nil || !strings.HasPrefix(out, "<!-- fleetwave:preview -->") || string(written) != out {
		t.Fatalf("markdown: code %d err %v\n%s", code, err, out)
	}
}

func TestPlanCommand(t *testing.T) {
	repo := previewRepo(t, nil)
	clusters := filepath.Join(repo, "clusters.yaml")
	code, out, stderr := runPreviewCmd(t, "plan", "--repo", repo, "--base", "main", "--head", "change", "--repo-url", previewRepoURL, "--clusters", clusters)
	if code != 0 || !strings.Contains(out, "1 wave") {
		t.Fatalf("plan: code %d\n%s\n%s", code, out, stderr)
	}
	code, out, _ = runPreviewCmd(t, "plan", "--repo", repo, "--base", "main", "--head", "change", "--repo-url", previewRepoURL, "--clusters", clusters, "-o", "json")
	var doc struct {
		Waves      []struct{ Name string }
		Violations []any
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Waves) != 1 || doc.Waves[0].Name != "production" {
		t.Fatalf("plan json: code %d\n%s", code, out)
	}

	// An app with automated sync breaks the default (forbid) rule: exit 1.
	auto := previewRepo(t, map[string]string{"apps/web.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web, namespace: argocd}\nspec:\n  project: default\n  source: {repoURL: " + previewRepoURL + ", path: manifests/web}\n  destination: {name: prd-eu-1, namespace: web}\n  syncPolicy: {automated: {prune: true}}\n"})
	code, out, stderr = runPreviewCmd(t, "plan", "--repo", auto, "--base", "main", "--head", "change", "--repo-url", previewRepoURL, "--clusters", clusters)
	if code != 1 || !strings.Contains(stderr, "breaks the release policy") || !strings.Contains(out, "automated-sync") {
		t.Fatalf("plan with automated sync: code %d\n%s\n%s", code, out, stderr)
	}

	// A broken policy is an input error: exit 2, one line naming the file.
	broken := previewRepo(t, map[string]string{".fleetwave.yaml": "apiVersion: fleetwave/v1\nwaves: []\n"})
	code, _, stderr = runPreviewCmd(t, "plan", "--repo", broken, "--base", "main", "--head", "change", "--repo-url", previewRepoURL)
	if code != 2 || !strings.Contains(stderr, ".fleetwave.yaml") {
		t.Fatalf("broken policy: code %d\n%s", code, stderr)
	}
}

func TestDiffBadInput(t *testing.T) {
	repo := previewRepo(t, map[string]string{
		"apps/broken.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: [\n",
		"apps/nopath.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: nopath, namespace: argocd}\nspec:\n  project: default\n  source: {repoURL: " + previewRepoURL + ", path: manifests/missing}\n  destination: {name: prd-eu-1, namespace: x}\n",
	})
	clusters := filepath.Join(t.TempDir(), "clusters.yaml")
	if err := os.WriteFile(clusters, []byte("clusters:\n  - {name: a}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr []string // substrings, one per expected line
		stdout string
	}{
		{"not a git repository", []string{"diff", "--repo", t.TempDir(), "--base", "main"}, 2, []string{"not a git repository"}, ""},
		{"unknown revision", []string{"diff", "--repo", repo, "--base", "nope"}, 2, []string{`base: resolving revision "nope"`}, ""},
		{"missing --base", []string{"diff", "--repo", repo}, 2, []string{"--base is required"}, ""},
		{"bad --output", []string{"diff", "--repo", repo, "--base", "main", "-o", "yaml"}, 2, []string{"--output"}, ""},
		{"bad clusters file", []string{"diff", "--repo", repo, "--base", "main", "--clusters", clusters}, 2, []string{"clusters.yaml: clusters[0] (a): no server"}, ""},
		{"broken YAML and a missing path: other apps still reported",
			[]string{"diff", "--repo", repo, "--base", "main", "--head", "change", "--repo-url", previewRepoURL}, 2,
			[]string{"apps/broken.yaml: document 1: parsing YAML", `app argocd/nopath: app "nopath"`, "1 of 3 apps failed to render, 1 repository problem"},
			"argocd/web → prd-eu-1: changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := runPreviewCmd(t, tc.args...)
			if code != tc.code {
				t.Fatalf("code %d, want %d\n%s", code, tc.code, stderr)
			}
			for _, want := range tc.stderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
				if !strings.HasPrefix(line, "fleetwave: ") {
					t.Errorf("stderr line is not one self-contained message: %q", line)
				}
			}
			if !strings.Contains(out, tc.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdout, out)
			}
		})
	}
}
