package source

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

// lazyRepo commits a tree with a chart whose file links to a shared one, an indexed file larger than the
// in-memory cache whose needle straddles a scan chunk, and a link out of the repository.
func lazyRepo(t *testing.T) (dir string, r *Repo) {
	t.Helper()
	dir = t.TempDir()
	gittest.Run(t, dir, "init", "-q", "-b", "main")
	filetest.Write(t, dir, "apps/web.yaml", "apiVersion: argoproj.io/v1alpha1\nkind: Application\n")
	filetest.Write(t, dir, "charts/web/Chart.yaml", "name: web\n")
	filetest.Write(t, dir, "charts/web/templates/cm.yaml", "kind: ConfigMap\n")
	filetest.Write(t, dir, "lib/common.yaml", "common: 1\n")
	filetest.Write(t, dir, "lib/other.yaml", "other: 1\n")
	filetest.Write(t, dir, "values/web.yaml", "replicas: 1\n")
	filetest.Write(t, dir, "values/api.yaml", "replicas: 2\n")
	big := strings.Repeat("x", 64<<10-5) + "argoproj.io" + strings.Repeat("y", 300<<10)
	filetest.Write(t, dir, "big.yaml", big)
	for name, target := range map[string]string{"charts/web/values.yaml": "../../lib/common.yaml", "escape.yaml": "/etc/passwd"} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "base")
	r, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, r
}

func onDisk(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func TestLazyCheckoutReadsObjectsAndWritesOnlyWhatIsAsked(t *testing.T) {
	ctx := context.Background()
	dir, r := lazyRepo(t)
	opts := ExportOptions{TempDir: t.TempDir(), Index: []string{"argoproj.io"}}
	eager, err := r.Checkout(ctx, "main", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer eager.Close()
	opts.Lazy = true
	co, err := r.Checkout(ctx, "main", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer co.Close()

	if got := onDisk(t, co.Dir); len(got) != 0 {
		t.Fatalf("a lazy checkout wrote %q before being asked", got)
	}
	if got, want := co.FilesContaining(false, "argoproj.io"), eager.FilesContaining(false, "argoproj.io"); !reflect.DeepEqual(got, want) || len(got) != 2 {
		t.Fatalf("indexed files = %q, want %q (the eager checkout's: apps/web.yaml and big.yaml)", got, want)
	}
	for _, tc := range []struct {
		rel     string
		regular bool
		want    string
		err     string
	}{
		{rel: "apps/web.yaml", regular: true, want: "apiVersion: argoproj.io/v1alpha1\nkind: Application\n"}, // kept in memory
		{rel: "values/web.yaml", regular: true, want: "replicas: 1\n"},                                       // read from the objects
		{rel: "charts/web/values.yaml", err: "not a regular file"},
		{rel: "escape.yaml", err: "not a regular file"},
		{rel: "missing.yaml", err: "file does not exist"},
	} {
		regular, size, ok := co.Entry(tc.rel)
		if ok && (regular != tc.regular || tc.regular && size != int64(len(tc.want))) {
			t.Errorf("Entry(%s) = %v %d, want regular %v size %d", tc.rel, regular, size, tc.regular, len(tc.want))
		}
		got, err := co.ReadFile(tc.rel)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ReadFile(%s) = %q, %v; want error %q", tc.rel, got, err, tc.err)
		case tc.err == "" && (err != nil || string(got) != tc.want):
			t.Errorf("ReadFile(%s) = %q, %v; want %q", tc.rel, got, err, tc.want)
		}
	}
	if _, err := co.ReadFile("missing.yaml"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}

	// A directory brings every file below it, and the link inside brings its target (not its sibling).
	if err := co.Materialise(ctx, []string{"charts/web"}, nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"charts/web/Chart.yaml", "charts/web/templates/cm.yaml", "charts/web/values.yaml", "lib/common.yaml"}
	if got := onDisk(t, co.Dir); !reflect.DeepEqual(got, want) {
		t.Fatalf("on disk %q, want %q", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(co.Dir, "charts/web/values.yaml")); err != nil || string(b) != "common: 1\n" {
		t.Fatalf("through the link: %q, %v", b, err)
	}
	// Globs match files; asking again writes nothing new and fails nothing.
	if err := co.Materialise(ctx, []string{"charts/web", "values/none.yaml"}, []string{"values/w*.yaml"}); err != nil {
		t.Fatal(err)
	}
	if got := onDisk(t, co.Dir); !reflect.DeepEqual(got, append(want, "values/web.yaml")) {
		t.Fatalf("on disk %q", got)
	}
	if co.Complete() {
		t.Fatal("complete before MaterialiseAll")
	}
	if err := co.MaterialiseAll(ctx); err != nil {
		t.Fatal(err)
	}
	if !co.Complete() {
		t.Fatal("not complete after MaterialiseAll")
	}
	// Everything written is what the eager export wrote, links as links.
	if got, want := onDisk(t, co.Dir), onDisk(t, eager.Dir); !reflect.DeepEqual(got, want) {
		t.Fatalf("on disk %q, eager export %q", got, want)
	}
	for _, f := range co.Files() {
		a, errA := os.Readlink(filepath.Join(co.Dir, f))
		b, errB := os.Readlink(filepath.Join(eager.Dir, f))
		if (errA == nil) != (errB == nil) || a != b {
			t.Fatalf("%s: link %q/%v, eager %q/%v", f, a, errA, b, errB)
		}
		if errA != nil {
			x, _ := os.ReadFile(filepath.Join(co.Dir, f))
			y, _ := os.ReadFile(filepath.Join(eager.Dir, f))
			if string(x) != string(y) {
				t.Fatalf("%s differs from the eager export", f)
			}
		}
	}
	_ = dir
}

func TestLazyDeriveSharesIndexAndLinksWrittenFiles(t *testing.T) {
	ctx := context.Background()
	dir, r := lazyRepo(t)
	opts := ExportOptions{TempDir: t.TempDir(), Index: []string{"argoproj.io"}, Lazy: true}
	base, err := r.Checkout(ctx, "main", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	if err := base.Materialise(ctx, []string{"lib"}, nil); err != nil {
		t.Fatal(err)
	}
	filetest.Write(t, dir, "lib/other.yaml", "other: 2\n")
	filetest.Write(t, dir, "apps/api.yaml", "apiVersion: argoproj.io/v1alpha1\n")
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "head")
	head, err := r.Derive(ctx, base, "main", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer head.Close()
	if got := head.FilesContaining(false, "argoproj.io"); !reflect.DeepEqual(got, []string{"apps/api.yaml", "apps/web.yaml", "big.yaml"}) {
		t.Fatalf("head's indexed files = %q", got)
	}
	if err := head.Materialise(ctx, []string{"lib"}, nil); err != nil {
		t.Fatal(err)
	}
	same := func(rel string) bool {
		a, err1 := os.Stat(filepath.Join(base.Dir, rel))
		b, err2 := os.Stat(filepath.Join(head.Dir, rel))
		return err1 == nil && err2 == nil && os.SameFile(a, b)
	}
	if !same("lib/common.yaml") {
		t.Fatal("a file base wrote was written again instead of linked")
	}
	if same("lib/other.yaml") {
		t.Fatal("a changed file is shared with base")
	}
	if b, err := os.ReadFile(filepath.Join(head.Dir, "lib/other.yaml")); err != nil || string(b) != "other: 2\n" {
		t.Fatalf("lib/other.yaml = %q, %v", b, err)
	}
	if err := head.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(head.Dir); !os.IsNotExist(err) {
		t.Fatalf("head's directory left after Close: %v", err)
	}
	if b, err := base.ReadFile("values/web.yaml"); err != nil || string(b) != "replicas: 1\n" {
		t.Fatalf("base after head's Close: %q, %v", b, err)
	}
}

// Files named by ExportOptions.Keep are read from memory, as the indexed ones are; others still from git, the same
// content either way, in the checkout and in one derived from it.
func TestLazyKeepsNamedFiles(t *testing.T) {
	_, r := lazyRepo(t)
	ctx := context.Background()
	opts := ExportOptions{TempDir: t.TempDir(), Index: []string{"argoproj.io"}, Lazy: true, Keep: []string{"Chart.yaml"}}
	base, err := r.Checkout(ctx, "HEAD", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	head, err := r.Derive(ctx, base, "HEAD", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer head.Close()
	for _, co := range []*Checkout{base, head} {
		for file, want := range map[string]string{"charts/web/Chart.yaml": "name: web\n", "apps/web.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\n"} {
			if got, err := co.ReadFile(file); err != nil || string(got) != want {
				t.Fatalf("ReadFile(%s) = %q, %v", file, got, err)
			}
		}
		if co.blobRd != nil {
			t.Fatal("a kept file was read from git")
		}
		if got, err := co.ReadFile("values/web.yaml"); err != nil || string(got) != "replicas: 1\n" {
			t.Fatalf("ReadFile(values/web.yaml) = %q, %v", got, err)
		}
		if co.blobRd == nil {
			t.Fatal("a file neither indexed nor kept was read from memory")
		}
	}
}

// A large tree's index pass is read by several git processes: what it learns is the same, and a limit met in any
// part ends the pass with ErrTooLarge.
func TestIndexInParts(t *testing.T) {
	_, r := lazyRepo(t)
	ctx := context.Background()
	entries, _, err := r.listTree(ctx, "HEAD", Limits{}.withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	index := func(parts int, lim Limits) (*Checkout, error) {
		co := &Checkout{index: []string{"argoproj.io", "kind"}, keep: []string{"Chart.yaml"}, marks: map[string]uint64{},
			blobs: map[string]blob{}, oidMarks: map[string]uint64{}}
		var read []entry
		for _, e := range entries {
			if _, ok := co.blobs[blobKey(e)]; !ok {
				co.blobs[blobKey(e)] = blob{}
				read = append(read, e)
			}
		}
		return co, r.readIndex(ctx, co, read, map[string]bool{}, lim.withDefaults(), parts)
	}
	one, err := index(1, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(one.blobs) < 8 || len(one.oidMarks) != len(one.blobs) {
		t.Fatalf("%d blobs indexed, %d with marks", len(one.blobs), len(one.oidMarks))
	}
	for _, parts := range []int{2, 3, 100} {
		co, err := index(parts, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(co.blobs, one.blobs) || !reflect.DeepEqual(co.oidMarks, one.oidMarks) {
			t.Fatalf("%d parts learn another index than one", parts)
		}
		if _, err := index(parts, Limits{MaxBytes: 1000}); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("%d parts over the size limit: %v", parts, err)
		}
	}
	for _, tc := range []struct{ n, procs, want int }{{100, 2, 1}, {2047, 8, 1}, {4096, 2, 2}, {10568, 2, 2}, {10568, 1, 1}, {100000, 16, 4}} {
		if got := indexParts(tc.n, tc.procs); got != tc.want {
			t.Errorf("indexParts(%d, %d) = %d, want %d", tc.n, tc.procs, got, tc.want)
		}
	}
}
