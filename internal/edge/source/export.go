package source

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/fleetwave/fleetwave/internal/kit/text"
)

// Limits cap what exporting one revision may write. Zero values take the defaults.
type Limits struct {
	MaxFiles int   // default 200,000
	MaxBytes int64 // default 4 GiB
}

// Default export limits.
const (
	DefaultMaxFiles       = 200_000
	DefaultMaxBytes int64 = 4 << 30
)

func (l Limits) withDefaults() Limits {
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	return l
}

// ErrTooLarge is returned when a revision exceeds the export limits.
var ErrTooLarge = errors.New("revision too large to export")

// writers is the number of goroutines writing files: file creation is bound by syscall latency, not CPU.
const writers = 8

// inlineBlobBytes: larger blobs are streamed to disk by the reader instead of being handed to a writer.
const inlineBlobBytes = 1 << 20

// ExportOptions tune Checkout and Derive.
type ExportOptions struct {
	// TempDir is where the checkout directory is created ("" for the system default).
	TempDir string
	Limits  Limits
	// Index lists strings (at most 64) looked for in every file as it is written; FilesContaining answers from
	// it without reading the checkout again.
	Index []string
	// Lazy writes no file when the checkout is made: ReadFile reads from git's objects, and Materialise writes
	// the parts a reader of the directory needs (see lazy.go).
	Lazy bool
	// Keep names files (by base name) whose content a lazy checkout keeps in memory from its index pass, when
	// small, as it keeps the indexed files': files read one by one all over the tree (kustomization files, for the
	// reach of every app), which ReadFile would otherwise ask git for one round trip at a time.
	Keep []string
}

// Checkout is one revision of the repository materialised in a temporary directory.
type Checkout struct {
	// Dir is the directory holding the revision's files.
	Dir string
	// Rev is the commit or tree id exported.
	Rev     string
	entries map[string]entry
	files   []string
	index   []string
	keep    []string
	marksMu sync.Mutex
	marks   map[string]uint64 // path -> bit i set when the file contains index[i]
	skipped []string

	// A lazy checkout's state (lazy.go).
	lazy       bool
	repo       *Repo
	from       *Checkout
	lim        Limits
	blobs      map[string]blob   // by blobKey: what the index pass learnt
	oidMarks   map[string]uint64 // by blobKey: the Index marks of a blob
	matMu      sync.Mutex
	done       map[string]bool // files written below Dir
	made       map[string]bool // directories made below Dir
	all        bool            // every file written
	readerOnce sync.Once
	blobRd     *blobReader
}

// Skipped lists the paths of the revision that were not written because no git checkout would write them
// (a ".." or ".git" component, an empty one, a repeated entry), in tree order.
func (c *Checkout) Skipped() []string { return c.skipped }

// Files lists the checkout's files (slash paths relative to Dir, sorted), as `git ls-files` would.
func (c *Checkout) Files() []string { return c.files }

// FilesContaining lists the files (sorted) that contain any of needles, or all of them with all. Needles must
// be among ExportOptions.Index; others match nothing.
func (c *Checkout) FilesContaining(all bool, needles ...string) []string {
	var want uint64
	for _, n := range needles {
		for i, x := range c.index {
			if x == n {
				want |= 1 << i
			}
		}
	}
	if want == 0 {
		return nil
	}
	var out []string
	for _, f := range c.files {
		m := c.marks[f]
		if all && m&want == want || !all && m&want != 0 {
			out = append(out, f)
		}
	}
	return out
}

func (c *Checkout) mark(p string, data []byte) {
	if len(c.index) == 0 {
		return
	}
	var m uint64
	for i, x := range c.index {
		if bytes.Contains(data, []byte(x)) {
			m |= 1 << i
		}
	}
	if m != 0 {
		c.marksMu.Lock()
		c.marks[p] = m
		c.marksMu.Unlock()
	}
}

// Close removes the checkout's directory, unlinking its files in parallel.
func (c *Checkout) Close() error {
	if c == nil || c.Dir == "" {
		return nil
	}
	c.blobRd.close()
	var items []entry
	c.matMu.Lock()
	for _, f := range c.files {
		if !c.lazy || c.all || c.done[f] {
			items = append(items, entry{path: f})
		}
	}
	c.matMu.Unlock()
	if len(items) > 0 {
		_ = parallel(context.Background(), items, func(e entry) error {
			_ = os.Remove(filepath.Join(c.Dir, filepath.FromSlash(e.path)))
			return nil
		})
	}
	return os.RemoveAll(c.Dir)
}

// entry is one blob of a tree listing.
type entry struct {
	mode string
	oid  string
	path string
}

// Checkout exports treeish (a commit or tree id) into a new temporary directory. The caller closes the
// checkout.
func (r *Repo) Checkout(ctx context.Context, treeish string, opts ExportOptions) (*Checkout, error) {
	return r.Derive(ctx, nil, treeish, opts)
}

// Derive exports treeish like Checkout, hard-linking the files it shares with from (same blob, same mode)
// instead of writing them again: the head of a change costs little more than the files the change touches.
// from may be nil. Both checkouts are read-only by contract: a write through one would show in the other.
func (r *Repo) Derive(ctx context.Context, from *Checkout, treeish string, opts ExportOptions) (*Checkout, error) {
	lim := opts.Limits.withDefaults()
	if len(opts.Index) > 64 {
		return nil, errors.New("exporting: at most 64 index strings")
	}
	entries, skipped, err := r.listTree(ctx, treeish, lim)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(opts.TempDir, "fleetwave-checkout-")
	if err != nil {
		return nil, fmt.Errorf("creating checkout directory: %w", err)
	}
	co := &Checkout{Dir: dir, Rev: treeish, entries: make(map[string]entry, len(entries)), index: opts.Index, keep: opts.Keep, marks: map[string]uint64{}, skipped: skipped}
	for _, e := range entries {
		co.entries[e.path] = e
		co.files = append(co.files, e.path)
	}
	sort.Strings(co.files)
	if err := belowLinks(entries); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("exporting %s: %w", text.Short(treeish, 12), err)
	}
	if opts.Lazy {
		co.lazy, co.repo, co.from, co.lim = true, r, from, lim
		co.blobs, co.oidMarks, co.done, co.made = map[string]blob{}, map[string]uint64{}, map[string]bool{}, map[string]bool{}
		if err := r.index(ctx, co, from, entries, lim); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("exporting %s: %w", text.Short(treeish, 12), err)
		}
		return co, nil
	}
	if err := r.materialise(ctx, co, from, entries, lim); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("exporting %s: %w", text.Short(treeish, 12), err)
	}
	return co, nil
}

// Export writes the files of treeish into dst (an existing, empty directory).
func (r *Repo) Export(ctx context.Context, treeish, dst string, lim Limits) error {
	lim = lim.withDefaults()
	entries, _, err := r.listTree(ctx, treeish, lim)
	if err != nil {
		return err
	}
	co := &Checkout{Dir: dst, Rev: treeish, marks: map[string]uint64{}}
	if err := belowLinks(entries); err != nil {
		return fmt.Errorf("exporting %s: %w", text.Short(treeish, 12), err)
	}
	if err := r.materialise(ctx, co, nil, entries, lim); err != nil {
		return fmt.Errorf("exporting %s: %w", text.Short(treeish, 12), err)
	}
	return nil
}

// belowLinks refuses a tree with an entry below one of its symbolic links: writing it would go through the link.
func belowLinks(entries []entry) error {
	links := map[string]bool{}
	for _, e := range entries {
		if e.mode == "120000" {
			links[e.path] = true
		}
	}
	if len(links) == 0 {
		return nil
	}
	for _, e := range entries {
		for d := path.Dir(e.path); d != "."; d = path.Dir(d) {
			if links[d] {
				return fmt.Errorf("refusing %s: below the symbolic link %s", e.path, d)
			}
		}
	}
	return nil
}

// materialise writes entries below co.Dir (belowLinks has accepted the tree). Directories are made first (those
// a lazy checkout made before are kept), then regular files (linked from from when it wrote the same blob, else
// read with `git cat-file --batch` and written by a pool of writers), and symbolic links last, so that no write
// ever goes through a link.
func (r *Repo) materialise(ctx context.Context, co *Checkout, from *Checkout, entries []entry, lim Limits) error {
	dirs := map[string]bool{}
	for _, e := range entries {
		for d := path.Dir(e.path); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	dirList := make([]string, 0, len(dirs))
	for d := range dirs {
		dirList = append(dirList, d)
	}
	sort.Strings(dirList) // parents sort before their children
	for _, d := range dirList {
		if co.made[d] {
			continue // made by an earlier Materialise of this lazy checkout
		}
		if err := os.Mkdir(filepath.Join(co.Dir, filepath.FromSlash(d)), 0o755); err != nil && !(co.lazy && errors.Is(err, fs.ErrExist)) {
			return fmt.Errorf("creating %s: %w", d, err)
		}
		if co.lazy {
			co.made[d] = true
		}
	}

	var fetch, linked []entry
	sameIndex := from != nil && slices.Equal(from.index, co.index)
	for _, e := range entries {
		if from != nil && e.mode != "120000" {
			if prev, ok := from.entries[e.path]; ok && prev == e && from.written(e.path) {
				linked = append(linked, e)
				if co.lazy {
					continue // indexed already
				}
				if m := from.marks[e.path]; m != 0 && sameIndex {
					co.marks[e.path] = m
				}
				continue
			}
		}
		fetch = append(fetch, e)
	}
	// Hard links, in parallel; a failed link (another file system, no permission) falls back to a fetch.
	if len(linked) > 0 {
		var mu sync.Mutex
		err := parallel(ctx, linked, func(e entry) error {
			src := filepath.Join(from.Dir, filepath.FromSlash(e.path))
			dst := filepath.Join(co.Dir, filepath.FromSlash(e.path))
			if err := os.Link(src, dst); err != nil {
				mu.Lock()
				fetch = append(fetch, e)
				mu.Unlock()
				return nil
			}
			if !sameIndex && len(co.index) > 0 && !co.lazy {
				data, err := os.ReadFile(dst)
				if err != nil {
					return fmt.Errorf("indexing %s: %w", e.path, err)
				}
				co.mark(e.path, data)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	var symlinks []pendingLink
	if len(fetch) > 0 {
		var err error
		if symlinks, err = r.fetchBlobs(ctx, co, fetch, lim); err != nil {
			return err
		}
	}
	for _, l := range symlinks {
		if err := os.Symlink(l.target, filepath.Join(co.Dir, filepath.FromSlash(l.path))); err != nil {
			return fmt.Errorf("writing link %s: %w", l.path, err)
		}
	}
	return nil
}

type pendingLink struct{ path, target string }

type blobJob struct {
	e    entry
	data []byte
}

// fetchBlobs streams the blobs of entries from `git cat-file --batch` and writes regular files; it returns the
// symbolic links to create.
func (r *Repo) fetchBlobs(ctx context.Context, co *Checkout, entries []entry, lim Limits) ([]pendingLink, error) {
	dir := co.Dir
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := r.command(ctx, "cat-file", "--batch")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting git cat-file: %w", err)
	}
	go func() {
		w := bufio.NewWriter(stdin)
		for _, e := range entries {
			if _, err := w.WriteString(e.oid + "\n"); err != nil {
				break
			}
		}
		_ = w.Flush()
		_ = stdin.Close()
	}()

	jobs := make(chan blobJob, 4*writers)
	errc := make(chan error, writers)
	var wg sync.WaitGroup
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if !co.lazy {
					co.mark(j.e.path, j.data)
				}
				if err := writeFile(filepath.Join(dir, filepath.FromSlash(j.e.path)), j.e.mode, bytes.NewReader(j.data)); err != nil {
					select {
					case errc <- fmt.Errorf("writing %s: %w", j.e.path, err):
					default:
					}
					cancel()
				}
			}
		}()
	}
	links, readErr := readBlobs(ctx, bufio.NewReaderSize(stdout, 256<<10), co, entries, lim, jobs)
	close(jobs)
	wg.Wait()
	if readErr != nil {
		_ = cmd.Process.Kill()
		_, _ = io.Copy(io.Discard, stdout)
	}
	waitErr := cmd.Wait()
	select {
	case err := <-errc:
		return nil, err
	default:
	}
	switch {
	case readErr != nil:
		return nil, readErr
	case waitErr != nil:
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("git cat-file: %v: %s", waitErr, strings.TrimSpace(stderr.String()))
	}
	return links, nil
}

// readBlobs reads `git cat-file --batch` answers, in the order of entries: small files go to the writers,
// large ones are written here, links are returned.
func readBlobs(ctx context.Context, rd *bufio.Reader, co *Checkout, entries []entry, lim Limits, jobs chan<- blobJob) ([]pendingLink, error) {
	dir := co.Dir
	var total int64
	var links []pendingLink
	for _, e := range entries {
		size, err := readHeader(rd, e.oid)
		if err != nil {
			return nil, fmt.Errorf("reading blob %s (%s): %w", e.oid, e.path, err)
		}
		total += size
		if total > lim.MaxBytes {
			return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, lim.MaxBytes)
		}
		body := io.LimitReader(rd, size)
		switch {
		case e.mode == "120000":
			target, err := io.ReadAll(body)
			if err != nil {
				return nil, fmt.Errorf("reading link %s: %w", e.path, err)
			}
			links = append(links, pendingLink{path: e.path, target: string(target)})
		case size > inlineBlobBytes:
			name := filepath.Join(dir, filepath.FromSlash(e.path))
			if err := writeFile(name, e.mode, body); err != nil {
				return nil, fmt.Errorf("writing %s: %w", e.path, err)
			}
			if len(co.index) > 0 && !co.lazy {
				data, err := os.ReadFile(name)
				if err != nil {
					return nil, fmt.Errorf("indexing %s: %w", e.path, err)
				}
				co.mark(e.path, data)
			}
		default:
			data := make([]byte, size)
			if _, err := io.ReadFull(body, data); err != nil {
				return nil, fmt.Errorf("reading blob %s (%s): %w", e.oid, e.path, err)
			}
			select {
			case jobs <- blobJob{e: e, data: data}:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if nl, err := rd.ReadByte(); err != nil || nl != '\n' {
			return nil, fmt.Errorf("reading blob %s (%s): missing terminator", e.oid, e.path)
		}
	}
	return links, nil
}

// writeFile creates a new file (never following a link, never replacing anything) with the content of r.
func writeFile(name, mode string, r io.Reader) error {
	perm := os.FileMode(0o644)
	if mode == "100755" {
		perm = 0o755
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, perm)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// parallel runs fn over items with the writer pool's width, stopping at the first error.
func parallel(ctx context.Context, items []entry, fn func(entry) error) error {
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	ch := make(chan entry)
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e := range ch {
				if err := fn(e); err != nil {
					once.Do(func() { first = err })
				}
			}
		}()
	}
	for _, e := range items {
		if ctx.Err() != nil {
			break
		}
		ch <- e
	}
	close(ch)
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// listTree lists the blobs and links of treeish, recursively. Paths no git checkout would write (and repeated
// ones) are left out and returned as skipped: one odd name must not cost every app its preview.
func (r *Repo) listTree(ctx context.Context, treeish string, lim Limits) (entries []entry, skipped []string, err error) {
	out, err := r.run(ctx, nil, "ls-tree", "-r", "-z", "--full-tree", "--end-of-options", treeish)
	if err != nil {
		return nil, nil, fmt.Errorf("listing files of %s: %w", text.Short(treeish, 12), err)
	}
	seen := map[string]bool{}
	for _, rec := range bytes.Split(out, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		meta, p, ok := bytes.Cut(rec, []byte{'\t'})
		if !ok {
			return nil, nil, fmt.Errorf("listing files of %s: malformed entry %q", text.Short(treeish, 12), rec)
		}
		parts := strings.Fields(string(meta))
		if len(parts) != 3 {
			return nil, nil, fmt.Errorf("listing files of %s: malformed entry %q", text.Short(treeish, 12), rec)
		}
		mode, typ, oid := parts[0], parts[1], parts[2]
		if typ != "blob" { // submodules ("commit") are not fetched
			continue
		}
		name := string(p)
		if !validPath(name) || seen[name] {
			// Not written: only an app that reads this path is affected (it finds no such file).
			skipped = append(skipped, name)
			continue
		}
		seen[name] = true
		entries = append(entries, entry{mode: mode, oid: oid, path: name})
		if len(entries) > lim.MaxFiles {
			return nil, nil, fmt.Errorf("listing files of %s: %w: more than %d files", text.Short(treeish, 12), ErrTooLarge, lim.MaxFiles)
		}
	}
	return entries, skipped, nil
}

// validPath accepts the relative slash paths git itself checks out on Linux, as Argo CD's repo-server does (git
// read-cache.c verify_path): no "..", "." or empty components, no ".git" component, also where a backslash ends it
// (core.protectNTFS, git's default). A backslash is otherwise an ordinary character of a file name.
func validPath(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") {
		return false
	}
	for _, seg := range strings.Split(p, "/") {
		switch strings.ToLower(seg) {
		case "", ".", "..", ".git":
			return false
		}
		if first, _, ok := strings.Cut(seg, "\\"); ok && strings.EqualFold(first, ".git") {
			return false
		}
	}
	return true
}

// Grep lists the files of treeish whose text contains the patterns (fixed strings): any of them, or all of
// them with allMatch. Binary files are skipped. It reads git's objects, not a checkout.
func (r *Repo) Grep(ctx context.Context, treeish string, allMatch bool, patterns ...string) ([]string, error) {
	args := []string{"grep", "-l", "-z", "-I", "-F", "--full-name", "--no-textconv", "--no-color"}
	if allMatch {
		args = append(args, "--all-match")
	}
	for _, p := range patterns {
		args = append(args, "-e", p)
	}
	args = append(args, treeish, "--")
	out, err := r.run(ctx, nil, args...)
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) && ee.code == 1 {
			return nil, nil
		}
		return nil, fmt.Errorf("searching %s: %w", text.Short(treeish, 12), err)
	}
	var files []string
	prefix := treeish + ":"
	for _, rec := range bytes.Split(out, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		files = append(files, strings.TrimPrefix(string(rec), prefix))
	}
	sort.Strings(files)
	return files, nil
}
