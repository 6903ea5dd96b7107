package source

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

// newRepo makes a repository with two commits on main: base (a.yaml, dir/b.yaml, old.yaml) and head
// (a.yaml modified, old.yaml renamed to new.yaml, c.yaml added, dir/b.yaml deleted).
func newRepo(t *testing.T) (dir, base, head string) {
	t.Helper()
	dir = t.TempDir()
	gittest.Run(t, dir, "init", "-q", "-b", "main")
	filetest.Write(t, dir, "a.yaml", "a: 1\n")
	filetest.Write(t, dir, "dir/b.yaml", "b: 1\n")
	filetest.Write(t, dir, "old.yaml", strings.Repeat("line of text that makes rename detection sure\n", 20))
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "base")
	base = gittest.Run(t, dir, "rev-parse", "HEAD")
	filetest.Write(t, dir, "a.yaml", "a: 2\n")
	gittest.Run(t, dir, "mv", "old.yaml", "new.yaml")
	filetest.Write(t, dir, "c.yaml", "c: 1\n")
	gittest.Run(t, dir, "rm", "-q", "dir/b.yaml")
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "head")
	head = gittest.Run(t, dir, "rev-parse", "HEAD")
	return dir, base, head
}

// Open takes the repository a directory is in, as git does (a subdirectory opens its working copy's top
// level), and refuses a directory in no repository.
func TestOpen(t *testing.T) {
	ctx := context.Background()
	dir, _, _ := newRepo(t)
	top, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "dir2", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	bare := t.TempDir()
	gittest.Run(t, bare, "clone", "-q", "--bare", dir, "b.git")
	bareDir, err := filepath.EvalSymlinks(filepath.Join(bare, "b.git"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, dir string
		wantDir   string // "" = refused with ErrNotRepository
		wantBare  bool
	}{
		{name: "top level", dir: dir, wantDir: top},
		{name: "subdirectory", dir: filepath.Join(dir, "dir2"), wantDir: top},
		{name: "nested subdirectory", dir: filepath.Join(dir, "dir2", "deeper"), wantDir: top},
		{name: "bare repository", dir: filepath.Join(bare, "b.git"), wantDir: bareDir, wantBare: true},
		{name: "plain directory", dir: t.TempDir()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Open(ctx, tc.dir)
			if tc.wantDir == "" {
				if !errors.Is(err, ErrNotRepository) {
					t.Fatalf("Open error = %v, want ErrNotRepository", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			got, err := filepath.EvalSymlinks(r.Dir())
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.wantDir || r.bare != tc.wantBare {
				t.Errorf("Open(%s) = %s (bare %v), want %s (bare %v)", tc.dir, got, r.bare, tc.wantDir, tc.wantBare)
			}
			if _, err := r.Resolve(ctx, "main"); err != nil {
				t.Errorf("Resolve: %v", err)
			}
		})
	}
	if _, err := Open(ctx, filepath.Join(dir, "missing")); err == nil {
		t.Error("Open(missing dir) succeeded")
	}
}

func TestResolve(t *testing.T) {
	ctx := context.Background()
	dir, base, head := newRepo(t)
	gittest.Run(t, dir, "tag", "v1", base)
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	for rev, want := range map[string]string{"main": head, "HEAD~1": base, "v1": base, base[:8]: base} {
		got, err := r.Resolve(ctx, rev)
		if err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", rev, got, err, want)
		}
	}
	for _, rev := range []string{"nope", "", "--all", "-h", "main\nHEAD", strings.Repeat("f", 40)} {
		if _, err := r.Resolve(ctx, rev); !errors.Is(err, ErrUnknownRevision) {
			t.Errorf("Resolve(%q) error = %v, want ErrUnknownRevision", rev, err)
		}
	}
}

func TestRevisions(t *testing.T) {
	ctx := context.Background()
	dir, base, head := newRepo(t)
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	b, h, tree, err := r.Revisions(ctx, "main~1", "main")
	wantTree, _ := r.TreeOf(ctx, head)
	if err != nil || b != base || h != head || tree != wantTree {
		t.Fatalf("Revisions = %s %s %s %v", b, h, tree, err)
	}
	for _, tc := range []struct{ base, head, side string }{{"nope", "main", "base"}, {"main", "nope", "head"}, {"-x", "main", ""}} {
		_, _, _, err := r.Revisions(ctx, tc.base, tc.head)
		if !errors.Is(err, ErrUnknownRevision) || !strings.HasPrefix(err.Error(), tc.side) {
			t.Errorf("Revisions(%q, %q) error = %v", tc.base, tc.head, err)
		}
	}
}

func TestChangedFilesDetectsRenames(t *testing.T) {
	ctx := context.Background()
	dir, base, head := newRepo(t)
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.ChangedFiles(ctx, base, head)
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{
		{Status: "M", Path: "a.yaml"},
		{Status: "A", Path: "c.yaml"},
		{Status: "D", Path: "dir/b.yaml"},
		{Status: "R", Path: "new.yaml", OldPath: "old.yaml"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ChangedFiles = %+v\nwant %+v", got, want)
	}
	if p := Paths(got); !reflect.DeepEqual(p, []string{"a.yaml", "c.yaml", "dir/b.yaml", "new.yaml", "old.yaml"}) {
		t.Fatalf("Paths = %v", p)
	}
}

func TestParseNameStatusRejectsTruncatedOutput(t *testing.T) {
	if _, err := parseNameStatus([]byte("R100\x00old\x00")); err == nil {
		t.Fatal("truncated rename accepted")
	}
	if _, err := parseNameStatus([]byte("M\x00")); err == nil {
		t.Fatal("truncated modify accepted")
	}
}

func TestCheckoutExportsFilesModesAndLinksWithoutFilters(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	gittest.Run(t, dir, "init", "-q", "-b", "main")
	filetest.Write(t, dir, "charts/app/Chart.yaml", "name: app\n")
	filetest.Write(t, dir, "run.sh", "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(dir, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("charts/app/Chart.yaml", filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "escape.yaml")); err != nil {
		t.Fatal(err)
	}
	filetest.Write(t, dir, ".gitattributes", "*.yaml filter=evil\n")
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "c")
	// A filter configured in the repository would run on checkout; an export must not run it.
	marker := filepath.Join(t.TempDir(), "filter-ran")
	gittest.Run(t, dir, "config", "filter.evil.smudge", "touch "+marker+"; cat")
	gittest.Run(t, dir, "config", "core.hooksPath", "hooks")
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	co, err := r.Checkout(ctx, "main", ExportOptions{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer co.Close()
	b, err := os.ReadFile(filepath.Join(co.Dir, "charts/app/Chart.yaml"))
	if err != nil || string(b) != "name: app\n" {
		t.Fatalf("Chart.yaml = %q, %v", b, err)
	}
	if st, err := os.Stat(filepath.Join(co.Dir, "run.sh")); err != nil || st.Mode().Perm()&0o100 == 0 {
		t.Fatalf("run.sh mode = %v, %v; want executable", st.Mode(), err)
	}
	if target, err := os.Readlink(filepath.Join(co.Dir, "link.yaml")); err != nil || target != "charts/app/Chart.yaml" {
		t.Fatalf("link.yaml -> %q, %v", target, err)
	}
	if target, err := os.Readlink(filepath.Join(co.Dir, "escape.yaml")); err != nil || target != "/etc/passwd" {
		t.Fatalf("escape.yaml -> %q, %v (kept as a link for repofs to refuse)", target, err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the repository's smudge filter ran during export")
	}
	if _, err := os.Stat(filepath.Join(co.Dir, ".git")); err == nil {
		t.Fatal("checkout contains .git")
	}
	if err := co.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(co.Dir); !os.IsNotExist(err) {
		t.Fatalf("checkout dir still exists after Close: %v", err)
	}
}

func TestCheckoutLimits(t *testing.T) {
	ctx := context.Background()
	dir, _, head := newRepo(t)
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Checkout(ctx, head, ExportOptions{TempDir: t.TempDir(), Limits: Limits{MaxFiles: 1}}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("MaxFiles: err = %v, want ErrTooLarge", err)
	}
	if _, err := r.Checkout(ctx, head, ExportOptions{TempDir: t.TempDir(), Limits: Limits{MaxBytes: 10}}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("MaxBytes: err = %v, want ErrTooLarge", err)
	}
	if _, err := r.Checkout(ctx, "does-not-exist", ExportOptions{TempDir: t.TempDir()}); err == nil {
		t.Fatal("checkout of an unknown tree-ish succeeded")
	}
}

func TestValidPath(t *testing.T) {
	for p, want := range map[string]bool{
		"a/b.yaml": true, ".github/x": true, "..a": true,
		"": false, "/abs": false, "a/../b": false, "../x": false, ".git/config": false, "a/.GIT/x": false, "a//b": false,
		// A backslash is part of a file name on Linux; git refuses ".git" before one (core.protectNTFS).
		`a\b`: true, `a/b\`: true, `\x`: true, `.gitx\y`: true, `.git\config`: false, `a/.GIT\x/y`: false,
	} {
		if got := validPath(p); got != want {
			t.Errorf("validPath(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestMergedHeadOnStaleBranch(t *testing.T) {
	ctx := context.Background()
	dir, base, head := newRepo(t)
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	// Up to date: head's own tree.
	tree, merged, conflicted, err := r.MergedHead(ctx, base, head)
	if err != nil || merged || conflicted {
		t.Fatalf("MergedHead(up to date) = %v %v %v", merged, conflicted, err)
	}
	if want, _ := r.TreeOf(ctx, head); tree != want {
		t.Fatalf("tree = %s, want head tree %s", tree, want)
	}
	// A branch forked at base, while main moved on with an unrelated change.
	gittest.Run(t, dir, "checkout", "-q", "-b", "pr", base)
	filetest.Write(t, dir, "pr.yaml", "pr: 1\n")
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "pr")
	pr := gittest.Run(t, dir, "rev-parse", "HEAD")
	tree, merged, conflicted, err = r.MergedHead(ctx, head, pr)
	if err != nil || !merged || conflicted {
		t.Fatalf("MergedHead(stale) = %v %v %v", merged, conflicted, err)
	}
	changes, err := r.ChangedFiles(ctx, head, tree)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(changes, []Change{{Status: "A", Path: "pr.yaml"}}) {
		t.Fatalf("changes of the merged head = %+v, want only pr.yaml", changes)
	}
	// A conflicting branch falls back to its own tree.
	gittest.Run(t, dir, "checkout", "-q", "-b", "conflict", base)
	filetest.Write(t, dir, "a.yaml", "a: 3\n")
	gittest.Run(t, dir, "commit", "-q", "-am", "conflict")
	c := gittest.Run(t, dir, "rev-parse", "HEAD")
	_, merged, conflicted, err = r.MergedHead(ctx, head, c)
	if err != nil || merged || !conflicted {
		t.Fatalf("MergedHead(conflict) = %v %v %v", merged, conflicted, err)
	}
}

func TestOriginURL(t *testing.T) {
	ctx := context.Background()
	dir, _, _ := newRepo(t)
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if u, err := r.OriginURL(ctx); err != nil || u != "" {
		t.Fatalf("OriginURL without remote = %q, %v", u, err)
	}
	gittest.Run(t, dir, "remote", "add", "origin", "git@github.com:example/fleet.git")
	if u, err := r.OriginURL(ctx); err != nil || u != "git@github.com:example/fleet.git" {
		t.Fatalf("OriginURL = %q, %v", u, err)
	}
}

func TestNormalizeURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://github.com/Example/Fleet.git":      "github.com/example/fleet",
		"https://user:tok@github.com/example/fleet": "github.com/example/fleet",
		"git@github.com:example/fleet.git":          "github.com/example/fleet",
		"ssh://git@github.com/example/fleet":        "github.com/example/fleet",
		"ssh://git@github.com:2222/example/fleet":   "github.com:2222/example/fleet",
		"github.com/example/fleet/":                 "github.com/example/fleet",
		"file:///tmp/fleet.git":                     "/tmp/fleet",
		"  ":                                        "",
	} {
		if got := NormalizeURL(in); got != want {
			t.Errorf("NormalizeURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRepoMatcher(t *testing.T) {
	m := NewRepoMatcher("https://github.com/example/fleet.git", "", "acme/gitops")
	for u, want := range map[string]bool{
		"git@github.com:example/fleet.git":      true,
		"https://GITHUB.com/example/fleet":      true,
		"https://github.com/example/fleet-2":    false,
		"https://github.com/acme/gitops.git":    true,
		"https://ghe.corp/acme/gitops":          true,
		"https://github.com/other/acme/gitops2": false,
		"https://charts.example.com":            false,
		"":                                      false,
	} {
		if got := m.Match(u); got != want {
			t.Errorf("Match(%q) = %v, want %v", u, got, want)
		}
	}
	if !NewRepoMatcher().Empty() || m.Empty() {
		t.Error("Empty() wrong")
	}
}

func TestDeriveLinksSharedFilesAndWritesChangedOnes(t *testing.T) {
	ctx := context.Background()
	dir, base, head := newRepo(t)
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	bc, err := r.Checkout(ctx, base, ExportOptions{TempDir: tmp, Index: []string{"a:", "c:"}})
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()
	hc, err := r.Derive(ctx, bc, head, ExportOptions{TempDir: tmp, Index: []string{"a:", "c:"}})
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	if !reflect.DeepEqual(hc.Files(), []string{"a.yaml", "c.yaml", "new.yaml"}) {
		t.Fatalf("head files = %v", hc.Files())
	}
	// new.yaml is old.yaml renamed: same blob, so linked; a.yaml changed: written anew.
	same := func(a, b string) bool {
		sa, err1 := os.Stat(filepath.Join(bc.Dir, a))
		sb, err2 := os.Stat(filepath.Join(hc.Dir, b))
		return err1 == nil && err2 == nil && os.SameFile(sa, sb)
	}
	if same("a.yaml", "a.yaml") {
		t.Fatal("a.yaml changed but head shares base's file")
	}
	for rel, want := range map[string]string{"a.yaml": "a: 2\n", "c.yaml": "c: 1\n"} {
		if b, err := os.ReadFile(filepath.Join(hc.Dir, rel)); err != nil || string(b) != want {
			t.Fatalf("%s = %q, %v", rel, b, err)
		}
	}
	if _, err := os.Stat(filepath.Join(hc.Dir, "dir/b.yaml")); !os.IsNotExist(err) {
		t.Fatalf("deleted file present in head: %v", err)
	}
	// A file both sides share is one inode.
	gittest.Run(t, dir, "checkout", "-q", "-b", "more", head)
	filetest.Write(t, dir, "d.yaml", "d: 1\n")
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "more")
	more := gittest.Run(t, dir, "rev-parse", "HEAD")
	mc, err := r.Derive(ctx, hc, more, ExportOptions{TempDir: tmp, Index: []string{"c:"}})
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	sa, _ := os.Stat(filepath.Join(hc.Dir, "c.yaml"))
	sb, _ := os.Stat(filepath.Join(mc.Dir, "c.yaml"))
	if !os.SameFile(sa, sb) {
		t.Fatal("an unchanged file was copied, not linked")
	}
	// The index follows the content, for written, linked and re-indexed files alike.
	if got := hc.FilesContaining(false, "a:", "c:"); !reflect.DeepEqual(got, []string{"a.yaml", "c.yaml"}) {
		t.Fatalf("head files containing a: or c: = %q", got)
	}
	if got := hc.FilesContaining(true, "a:", "c:"); len(got) != 0 {
		t.Fatalf("head files containing a: and c: = %q", got)
	}
	if got := mc.FilesContaining(false, "c:"); !reflect.DeepEqual(got, []string{"c.yaml"}) {
		t.Fatalf("files containing c: = %q (index differs from the source checkout's)", got)
	}
	if got := mc.FilesContaining(false, "not indexed"); got != nil {
		t.Fatalf("unindexed needle matched %q", got)
	}
	if err := mc.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(hc.Dir, "c.yaml")); err != nil || string(b) != "c: 1\n" {
		t.Fatalf("closing a derived checkout damaged its source: %q %v", b, err)
	}
}

func TestExportRefusesEntriesBelowALink(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	gittest.Run(t, dir, "init", "-q", "-b", "main")
	blob := gitHashObject(t, dir, "x")
	target := gitHashObject(t, dir, "/etc")
	sub := gitMktree(t, dir, "100644 blob "+blob+"\tpasswd\n")
	tree := gitMktree(t, dir, "120000 blob "+target+"\ta\n040000 tree "+sub+"\ta\n")
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Checkout(ctx, tree, ExportOptions{TempDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("err = %v, want a refusal", err)
	}
}

func gitHashObject(t *testing.T, dir, content string) string {
	t.Helper()
	cmd := exec.Command("git", "hash-object", "-w", "--stdin")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(content)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func gitMktree(t *testing.T, dir, listing string) string {
	t.Helper()
	cmd := exec.Command("git", "mktree", "--missing")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(listing)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Skipf("git mktree refused the crafted tree: %v %s", err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestGrep(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	gittest.Run(t, dir, "init", "-q", "-b", "main")
	filetest.Write(t, dir, "apps/a.yaml", "apiVersion: argoproj.io/v1alpha1\nkind: Application\n")
	filetest.Write(t, dir, "apps/b.yaml", "metadata: {annotations: {argocd.argoproj.io/sync-wave: '1'}}\n")
	filetest.Write(t, dir, "c.yaml", "kind: Deployment\n")
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "c")
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	tree, _ := r.TreeOf(ctx, "main")
	for _, tc := range []struct {
		all      bool
		patterns []string
		want     []string
	}{
		{false, []string{"argoproj.io"}, []string{"apps/a.yaml", "apps/b.yaml"}},
		{true, []string{"argoproj.io", "Application"}, []string{"apps/a.yaml"}},
		{false, []string{"nothing-like-this"}, nil},
	} {
		got, err := r.Grep(ctx, tree, tc.all, tc.patterns...)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Grep(%v, %q) = %q, %v; want %q", tc.all, tc.patterns, got, err, tc.want)
		}
	}
}

// TestCheckoutSkipsPathsGitWouldNotWrite: an entry no git checkout would write is left out (and listed by
// Skipped) instead of failing the checkout, and a backslash is an ordinary character of a name.
func TestCheckoutSkipsPathsGitWouldNotWrite(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	gittest.Run(t, dir, "init", "-q", "-b", "main")
	blob := gitHashObject(t, dir, "x")
	sub := gitMktree(t, dir, "100644 blob "+blob+"\tok.yaml\n100644 blob "+blob+"\t..\n")
	tree := gitMktree(t, dir, "100644 blob "+blob+"\t.git\\config\n100644 blob "+blob+"\ta\\b.yaml\n040000 tree "+sub+"\td\n")
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	co, err := r.Checkout(ctx, tree, ExportOptions{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer co.Close()
	if got, want := strings.Join(co.Files(), " "), `a\b.yaml d/ok.yaml`; got != want {
		t.Errorf("files = %q, want %q", got, want)
	}
	if got, want := strings.Join(co.Skipped(), " "), `.git\config d/..`; got != want {
		t.Errorf("skipped = %q, want %q", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(co.Dir, `a\b.yaml`)); err != nil || string(b) != "x" {
		t.Errorf(`a\b.yaml: %q, %v`, b, err)
	}
}

func TestIsFullSHA(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{strings.Repeat("a1", 20), true},
		{strings.Repeat("0f", 32), true},
		{strings.Repeat("a1", 19), false},                  // abbreviated
		{strings.ToUpper(strings.Repeat("a1", 20)), false}, // git and Argo CD write lower case
		{strings.Repeat("g1", 20), false},
		{"", false},
	} {
		if got := IsFullSHA(tc.in); got != tc.want {
			t.Errorf("IsFullSHA(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
