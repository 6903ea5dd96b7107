package preview

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCommentRendersInBrowser renders the golden PR comments as GitHub shows them (GitHub-flavoured Markdown
// with GitHub's stylesheet, the Mermaid diagram drawn by Mermaid) in headless Chromium and reads the resulting
// page: the diagram is drawn, every <details> section and every table survives as HTML, and no Markdown
// leaks through as text (an unclosed fence or a table broken by an unescaped "|" would). The renderer and
// Mermaid are pinned in hack/commentshot (npm); Chromium is Debian's. Without them the test skips with one line;
// FLEETWAVE_REQUIRE_BROWSER=1 (set by .ci/run) makes their absence a failure.
func TestCommentRendersInBrowser(t *testing.T) {
	chromium, node, shot := browserTools(t)
	comments := []string{"example-plan.md", "example-diff.md", "fleet-500-one-value.md", "fleet-500-distinct-part1.md"}
	out := t.TempDir()
	args := []string{filepath.Join(shot, "render.mjs"), out}
	for _, c := range comments {
		args = append(args, filepath.Join("testdata", c))
	}
	if b, err := exec.Command(node, args...).CombinedOutput(); err != nil {
		t.Fatalf("render.mjs: %v\n%s", err, b)
	}
	for _, c := range comments {
		t.Run(c, func(t *testing.T) {
			md, err := os.ReadFile(filepath.Join("testdata", c))
			if err != nil {
				t.Fatal(err)
			}
			dom := dumpDOM(t, chromium, filepath.Join(out, strings.TrimSuffix(c, ".md")+".html"))
			state := regexp.MustCompile(`data-state="([^"]*)"`).FindStringSubmatch(dom)
			if state == nil || state[1] != "done" {
				t.Fatalf("page did not finish: %v", state)
			}
			wantDiagrams := strings.Count(string(md), "```mermaid\n")
			if m := regexp.MustCompile(`data-diagrams="(\d+)"`).FindStringSubmatch(dom); wantDiagrams > 0 && (m == nil || m[1] != strconv.Itoa(wantDiagrams)) {
				t.Errorf("diagrams drawn: %v, want %d", m, wantDiagrams)
			}
			if strings.Contains(dom, "Syntax error in text") {
				t.Error("Mermaid reports a syntax error")
			}
			for _, tag := range []string{"<details", "<summary"} {
				if got, want := strings.Count(dom, tag), strings.Count(string(md), tag); got != want {
					t.Errorf("%d %s> elements on the page, %d in the comment", got, tag, want)
				}
			}
			if got, want := strings.Count(dom, "<table"), strings.Count(string(md), "\n|---"); got != want {
				t.Errorf("%d tables on the page, %d in the comment", got, want)
			}
			text := regexp.MustCompile(`(?s)<pre.*?</pre>|<code.*?</code>|<script.*?</script>|<style.*?</style>`).ReplaceAllString(dom, "")
			for _, leak := range []string{"```", "&lt;details", "&lt;summary", "|---"} {
				if strings.Contains(text, leak) {
					t.Errorf("the page shows %q as text", leak)
				}
			}
		})
	}
}

// browserTools finds Chromium, Node.js and the pinned renderer, or skips (fails when they are required).
func browserTools(t *testing.T) (chromium, node, shot string) {
	t.Helper()
	shot, err := filepath.Abs(filepath.Join("..", "..", "hack", "commentshot"))
	if err != nil {
		t.Fatal(err)
	}
	missing := func(what string) {
		msg := "browser check skipped: " + what + " (make comment-deps installs it)"
		if os.Getenv("FLEETWAVE_REQUIRE_BROWSER") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if testing.Short() {
		t.Skip("browser check skipped in -short mode")
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		missing("no chromium on PATH")
	}
	if node, err = exec.LookPath("node"); err != nil {
		missing("no node on PATH")
	}
	if _, err := os.Stat(filepath.Join(shot, "node_modules", "mermaid", "dist", "mermaid.min.js")); err != nil {
		missing("hack/commentshot/node_modules is not installed")
	}
	return chromium, node, shot
}

// dumpDOM loads a page in headless Chromium and returns its DOM once scripts have run (virtual time lets
// Mermaid finish without a fixed sleep).
func dumpDOM(t *testing.T, chromium, page string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=30000", "--dump-dom", "file://"+page)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	return string(b)
}
