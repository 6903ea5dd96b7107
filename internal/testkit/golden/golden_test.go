package golden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFirstDiff(t *testing.T) {
	for _, tc := range []struct{ want, got, diff string }{
		{"a\nb\nc", "a\nB\nc", "line 2:\n- b\n+ B"},
		{"a\nb", "a\nb\nc", "line 3:\n- \n+ c"},
		{"a\nb\n", "a\nb", "line 3:\n- \n+ "},
		{"a", "a", "(same lines, different bytes)"},
	} {
		if got := FirstDiff(tc.want, tc.got); got != tc.diff {
			t.Errorf("FirstDiff(%q, %q) = %q, want %q", tc.want, tc.got, got, tc.diff)
		}
	}
}

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper()                        {}
func (r *recorder) Errorf(format string, a ...any) { r.errors = append(r.errors, format) }
func (r *recorder) Fatalf(format string, a ...any) { r.errors = append(r.errors, format); panic(r) }

func TestAssert(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.MkdirAll(filepath.Join("testdata", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("testdata", "sub", "out.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(name, got string) []string {
		r := &recorder{TB: t}
		func() {
			defer func() {
				if p := recover(); p != nil && p != r {
					panic(p)
				}
			}()
			Assert(r, name, got)
		}()
		return r.errors
	}
	if errs := run("sub/out.txt", "one\ntwo\n"); len(errs) != 0 {
		t.Errorf("same output failed: %v", errs)
	}
	if errs := run("sub/out.txt", "one\nthree\n"); len(errs) != 1 || !strings.Contains(errs[0], "differs") {
		t.Errorf("different output: %v", errs)
	}
	if errs := run("missing.txt", "x"); len(errs) != 1 {
		t.Errorf("missing golden file: %v", errs)
	}
	*update = true
	defer func() { *update = false }()
	if errs := run("new/dir/out.txt", "fresh\n"); len(errs) != 0 {
		t.Errorf("-update failed: %v", errs)
	}
	if b, err := os.ReadFile(filepath.Join("testdata", "new", "dir", "out.txt")); err != nil || string(b) != "fresh\n" {
		t.Errorf("-update wrote %q, %v", b, err)
	}
}
