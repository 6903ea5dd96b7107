package repofs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
)

func newRepo(t *testing.T) (string, string) {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "repo")
	filetest.Write(t, root, "apps/a/values.yaml", "a: 1\n")
	filetest.Write(t, root, "apps/b/big.yaml", string(make([]byte, 2048)))
	filetest.Write(t, base, "outside/secret.txt", "top secret\n")
	if err := os.Symlink(filepath.Join(base, "outside"), filepath.Join(root, "apps", "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../a/values.yaml", filepath.Join(root, "apps", "b", "link.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(root, "apps", "b", "passwd")); err != nil {
		t.Fatal(err)
	}
	return base, root
}

func TestReadFileConfinement(t *testing.T) {
	_, root := newRepo(t)
	f, err := New(root, 1024)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		rule       Rule // "" = success
		notExist   bool
		want       string
	}{
		{name: "plain file", path: "apps/a/values.yaml", want: "a: 1\n"},
		{name: "dot segments inside", path: "apps/b/../a/./values.yaml", want: "a: 1\n"},
		{name: "symlink inside the repo", path: "apps/b/link.yaml", want: "a: 1\n"},
		{name: "absolute path", path: "/etc/passwd", rule: RuleAbsolutePath},
		{name: "climbs out", path: "../outside/secret.txt", rule: RulePathEscape},
		{name: "climbs out after a dir", path: "apps/../../outside/secret.txt", rule: RulePathEscape},
		{name: "symlinked dir escapes", path: "apps/escape/secret.txt", rule: RuleSymlinkEscape},
		{name: "symlink to absolute file", path: "apps/b/passwd", rule: RuleSymlinkEscape},
		{name: "too large", path: "apps/b/big.yaml", rule: RuleFileTooLarge},
		{name: "missing", path: "apps/a/nope.yaml", notExist: true},
		{name: "missing below an escaping link", path: "apps/escape/nope", rule: RuleSymlinkEscape},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := f.ReadFile(tc.path)
			switch {
			case tc.rule != "":
				var r *Refusal
				if !errors.As(err, &r) || r.Rule != tc.rule {
					t.Fatalf("ReadFile(%q) = %q, %v; want refusal %s", tc.path, b, err, tc.rule)
				}
			case tc.notExist:
				if !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("ReadFile(%q) err = %v; want not-exist", tc.path, err)
				}
				if filepath.IsAbs(err.(*fs.PathError).Path) {
					t.Fatalf("error reveals the absolute path: %v", err)
				}
			default:
				if err != nil || string(b) != tc.want {
					t.Fatalf("ReadFile(%q) = %q, %v; want %q", tc.path, b, err, tc.want)
				}
			}
		})
	}
}

func TestRecorder(t *testing.T) {
	_, root := newRepo(t)
	f, err := New(root, 0)
	if err != nil {
		t.Fatal(err)
	}
	rec := &Recorder{}
	rf := f.WithRecorder(rec)
	if _, err := rf.ReadFile("apps/b/../a/values.yaml"); err != nil {
		t.Fatal(err)
	}
	if _, err := rf.ReadDir("apps"); err != nil {
		t.Fatal(err)
	}
	_, _ = rf.ReadFile("../outside/secret.txt") // refused: not recorded
	_, _ = f.ReadFile("apps/b/link.yaml")       // the original FS records nothing
	if got := rec.Files(); len(got) != 1 || got[0] != "apps/a/values.yaml" {
		t.Fatalf("files = %v", got)
	}
	if got := rec.Dirs(); len(got) != 1 || got[0] != "apps" {
		t.Fatalf("dirs = %v", got)
	}
}

func TestCleanAndJoin(t *testing.T) {
	for in, want := range map[string]string{"": ".", ".": ".", "a/b/../c": "a/c", "./a//b/": "a/b"} {
		if got, err := Clean(in); err != nil || got != want {
			t.Errorf("Clean(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := Join("a", "..", ".."); err == nil {
		t.Error("Join escaping the root succeeded")
	}
}

func TestNewRejectsFile(t *testing.T) {
	_, root := newRepo(t)
	if _, err := New(filepath.Join(root, "apps/a/values.yaml"), 0); err == nil {
		t.Fatal("New on a file succeeded")
	}
}

// TestResolveWithDirCache: the directory cache changes no answer of Resolve, whether the paths are asked once
// or again, through links inside and outside the checkout, and after the checkout gains directories, files and
// links (as a lazy checkout does while it is rendered).
func TestResolveWithDirCache(t *testing.T) {
	_, root := newRepo(t)
	if err := os.Symlink("a", filepath.Join(root, "apps", "alias")); err != nil {
		t.Fatal(err)
	}
	cached, err := New(root, 0)
	if err != nil {
		t.Fatal(err)
	}
	plain := *cached
	plain.dirs = nil
	paths := []string{".", "apps", "apps/a", "apps/a/values.yaml", "apps/alias/values.yaml", "apps/alias", "apps/b/link.yaml",
		"apps/escape", "apps/escape/secret.txt", "apps/b/passwd", "apps/a/nope.yaml", "apps/new/x.yaml", "apps/new",
		"apps/a/up/values.yaml", "apps/a/out/secret.txt", "apps/b/big.yaml/x"}
	check := func(round string) {
		t.Helper()
		for _, p := range paths {
			got, gotErr := cached.Resolve(p)
			want, wantErr := plain.Resolve(p)
			if got != want || (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
				t.Errorf("%s: Resolve(%q) = %q, %v; without the cache %q, %v", round, p, got, gotErr, want, wantErr)
			}
		}
	}
	check("first")
	check("again")
	filetest.Write(t, root, "apps/new/x.yaml", "x: 1\n")
	if err := os.Symlink("..", filepath.Join(root, "apps", "a", "up")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../escape", filepath.Join(root, "apps", "a", "out")); err != nil {
		t.Fatal(err)
	}
	check("after the checkout grew")
	if len(cached.dirs.m) < 3 {
		t.Errorf("the cache holds %d directories: it is not used", len(cached.dirs.m))
	}
}
