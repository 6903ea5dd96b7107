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
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/fleetwave/fleetwave/internal/kit/text"
)

// A lazy checkout (ExportOptions.Lazy) writes nothing when it is made: it lists the tree, reads every blob once
// from git's object store to index it (sizes, link targets, the Index marks) and keeps the small indexed files in
// memory, shared with the checkouts derived from it. Readers that know which files they need read them with
// ReadFile (straight from the objects); a render, which reads the checkout on disk (possibly in another process),
// first asks for the part of the tree it can read with Materialise. A preview of a change to a large repository
// then writes the files of the apps it renders, not the repository, twice.

// cachedBlobBytes: indexed blobs up to this size are kept in memory (discovery reads them all).
const cachedBlobBytes = 256 << 10

// maxLinkHops bounds the chain of symbolic links Materialise follows (the kernel's own bound is 40).
const maxLinkHops = 40

// blob is what the index pass learnt about one blob.
type blob struct {
	size   int64
	target string // a link's target
	data   []byte // an indexed blob's content, when small
}

// Entry reports the file at rel: whether it is a regular file (not a symbolic link) and its size. ok is false
// when the revision has no such file.
func (c *Checkout) Entry(rel string) (regular bool, size int64, ok bool) {
	e, ok := c.entries[rel]
	if !ok {
		return false, 0, false
	}
	if c.lazy {
		return e.mode != "120000", c.blobs[blobKey(e)].size, true
	}
	st, err := os.Lstat(filepath.Join(c.Dir, filepath.FromSlash(rel)))
	if err != nil {
		return false, 0, false
	}
	return st.Mode().IsRegular(), st.Size(), true
}

// BlobID is the git object id of the file at rel ("" when there is none).
func (c *Checkout) BlobID(rel string) string { return c.entries[rel].oid }

// ReadFile returns the content of the regular file at rel, from memory, the checkout or git's objects. A symbolic
// link is not followed: it is an error, as is a missing file (fs.ErrNotExist).
func (c *Checkout) ReadFile(rel string) ([]byte, error) {
	e, ok := c.entries[rel]
	if !ok {
		return nil, fmt.Errorf("%s: %w", rel, fs.ErrNotExist)
	}
	if e.mode == "120000" {
		return nil, fmt.Errorf("%s: not a regular file", rel)
	}
	if !c.lazy {
		return os.ReadFile(filepath.Join(c.Dir, filepath.FromSlash(rel)))
	}
	if b := c.blobs[blobKey(e)]; b.data != nil {
		return bytes.Clone(b.data), nil
	}
	return c.reader().read(e.oid)
}

// Materialise writes below Dir the files of the given paths (a directory stands for every file below it; globs
// are matched against the files' paths), with the targets of the symbolic links among them, and of those links'
// targets, inside the revision. Files already written are not written again. It is safe for concurrent use; a
// checkout that is not lazy has everything already.
func (c *Checkout) Materialise(ctx context.Context, paths, globs []string) error {
	if !c.lazy {
		return nil
	}
	c.matMu.Lock()
	defer c.matMu.Unlock()
	if c.all {
		return nil
	}
	want := map[string]bool{}
	var add func(p string, hops int)
	addFile := func(p string, hops int) {
		if want[p] {
			return
		}
		want[p] = true
		if e := c.entries[p]; e.mode == "120000" && hops < maxLinkHops {
			t := c.blobs[blobKey(e)].target
			if t == "" || path.IsAbs(t) {
				return // outside the revision: the renderer refuses to follow it
			}
			if p := path.Join(path.Dir(p), t); p != ".." && !strings.HasPrefix(p, "../") {
				add(p, hops+1)
			}
		}
	}
	add = func(p string, hops int) {
		if p == "." || p == "" {
			for _, f := range c.files {
				addFile(f, hops)
			}
			return
		}
		// A link on the way (a/link/file) is followed too.
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if e, ok := c.entries[d]; ok && e.mode == "120000" {
				addFile(d, hops)
			}
		}
		if _, ok := c.entries[p]; ok {
			addFile(p, hops)
			return
		}
		i := sort.SearchStrings(c.files, p+"/")
		for ; i < len(c.files) && strings.HasPrefix(c.files[i], p+"/"); i++ {
			addFile(c.files[i], hops)
		}
	}
	for _, p := range paths {
		add(p, 0)
	}
	for _, g := range globs {
		for _, f := range c.files {
			if ok, _ := path.Match(g, f); ok {
				add(f, 0)
			}
		}
	}
	// In the files' order, from the few wanted rather than from every file of the revision: one render's part of
	// a large repository is small, and every render asks for its own.
	todo := make([]entry, 0, len(want))
	for f := range want {
		if e, ok := c.entries[f]; ok && !c.done[f] {
			todo = append(todo, e)
		}
	}
	slices.SortFunc(todo, func(a, b entry) int { return strings.Compare(a.path, b.path) })
	return c.write(ctx, todo)
}

// MaterialiseAll writes every file of the revision below Dir.
func (c *Checkout) MaterialiseAll(ctx context.Context) error {
	if !c.lazy {
		return nil
	}
	c.matMu.Lock()
	defer c.matMu.Unlock()
	if c.all {
		return nil
	}
	var todo []entry
	for _, f := range c.files {
		if !c.done[f] {
			todo = append(todo, c.entries[f])
		}
	}
	if err := c.write(ctx, todo); err != nil {
		return err
	}
	c.all = true
	return nil
}

// Complete reports whether every file is on disk.
func (c *Checkout) Complete() bool {
	if !c.lazy {
		return true
	}
	c.matMu.Lock()
	defer c.matMu.Unlock()
	return c.all
}

// write writes todo (c.matMu held), linking from the checkout this one derives from what it already wrote.
func (c *Checkout) write(ctx context.Context, todo []entry) error {
	if len(todo) == 0 {
		return nil
	}
	if err := c.repo.materialise(ctx, c, c.from, todo, c.lim); err != nil {
		return fmt.Errorf("exporting %s: %w", text.Short(c.Rev, 12), err)
	}
	for _, e := range todo {
		c.done[e.path] = true
	}
	return nil
}

// written reports whether the file at p is on disk (from another checkout's writer: it takes c.matMu).
func (c *Checkout) written(p string) bool {
	if !c.lazy {
		return true
	}
	c.matMu.Lock()
	defer c.matMu.Unlock()
	return c.all || c.done[p]
}

// index reads, from git's objects, the blobs of entries a checkout derived from from does not share with it:
// their sizes, link targets and Index marks, keeping the content of small indexed files. Blobs from knows (same
// content, same index) are not read again; each other blob is read once however many paths hold it.
func (r *Repo) index(ctx context.Context, co *Checkout, from *Checkout, entries []entry, lim Limits) error {
	share := from != nil && from.lazy && slices.Equal(co.index, from.index) && slices.Equal(co.keep, from.keep)
	var read []entry
	keep := map[string]bool{} // by blobKey: content kept whatever its marks
	for _, e := range entries {
		if e.mode != "120000" && slices.Contains(co.keep, path.Base(e.path)) {
			keep[blobKey(e)] = true
		}
	}
	for _, e := range entries {
		k := blobKey(e)
		if _, ok := co.blobs[k]; ok {
			continue
		}
		if b, ok := from.knows(k); ok && share {
			co.blobs[k], co.oidMarks[k] = b, from.oidMarks[k]
			continue
		}
		co.blobs[k] = blob{} // claimed: read below
		read = append(read, e)
	}
	if len(read) > 0 {
		if err := r.readIndex(ctx, co, read, keep, lim, indexParts(len(read), runtime.GOMAXPROCS(0))); err != nil {
			return err
		}
	}
	for _, e := range entries {
		if m := co.oidMarks[blobKey(e)]; m != 0 {
			co.marks[e.path] = m
		}
	}
	return nil
}

// blobKey is the key of an entry's blob in Checkout.blobs: a link's content is its target, not a file's.
func blobKey(e entry) string {
	if e.mode == "120000" {
		return "link:" + e.oid
	}
	return e.oid
}

func (c *Checkout) knows(k string) (blob, bool) {
	if c == nil {
		return blob{}, false
	}
	b, ok := c.blobs[k]
	return b, ok
}

// indexPartBlobs: more blobs than this to index are read by several git processes at once, each inflating its
// part of them on its own core (git cat-file, not the reading, is most of a large tree's index pass).
const indexPartBlobs = 2048

// indexParts is the number of git processes that index n blobs with procs CPUs: at most 4.
func indexParts(n, procs int) int {
	return max(1, min(procs, 4, n/indexPartBlobs))
}

// readIndex indexes the blobs of read with parts git processes, each reading a contiguous part of them.
func (r *Repo) readIndex(ctx context.Context, co *Checkout, read []entry, keep map[string]bool, lim Limits, parts int) error {
	parts = max(1, min(parts, len(read)))
	var total atomic.Int64 // bytes read by all parts, against lim.MaxBytes
	results := make([][]indexed, parts)
	// The first part to fail ends the others; its error is the one returned, not theirs of being ended.
	partCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var errOnce sync.Once
	var firstErr error
	var wg sync.WaitGroup
	for i := range parts {
		part := read[i*len(read)/parts : (i+1)*len(read)/parts]
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := r.readIndexPart(partCtx, co, part, keep, lim, &total)
			if err != nil {
				errOnce.Do(func() { firstErr = err; cancel() })
				return
			}
			results[i] = res
		}()
	}
	wg.Wait()
	if firstErr != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return firstErr
	}
	for _, res := range results {
		for _, x := range res {
			co.blobs[x.key], co.oidMarks[x.key] = x.blob, x.marks
		}
	}
	return nil
}

// indexed is what the index pass learnt of one blob.
type indexed struct {
	key   string // blobKey
	blob  blob
	marks uint64
}

func (r *Repo) readIndexPart(ctx context.Context, co *Checkout, read []entry, keep map[string]bool, lim Limits, total *atomic.Int64) ([]indexed, error) {
	cmd := r.command(ctx, "cat-file", "--batch")
	var in bytes.Buffer
	for _, e := range read {
		in.WriteString(e.oid + "\n")
	}
	cmd.Stdin = &in
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting git cat-file: %w", err)
	}
	res, readErr := co.indexBlobs(bufio.NewReaderSize(stdout, cachedBlobBytes), read, keep, lim, total)
	if readErr != nil {
		_ = cmd.Process.Kill()
		_, _ = io.Copy(io.Discard, stdout)
	}
	waitErr := cmd.Wait()
	switch {
	case readErr != nil:
		return nil, readErr
	case waitErr != nil:
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("git cat-file: %v: %s", waitErr, strings.TrimSpace(stderr.String()))
	}
	return res, nil
}

// indexBlobs reads `git cat-file --batch` answers for entries, in order, keeping the small ones with marks or in
// keep (by blobKey); total counts the bytes read, by every part of the index pass.
func (c *Checkout) indexBlobs(rd *bufio.Reader, entries []entry, keep map[string]bool, lim Limits, total *atomic.Int64) ([]indexed, error) {
	out := make([]indexed, 0, len(entries))
	longest := 0
	for _, x := range c.index {
		longest = max(longest, len(x))
	}
	for _, e := range entries {
		size, err := readHeader(rd, e.oid)
		if err != nil {
			return nil, fmt.Errorf("reading blob %s (%s): %w", e.oid, e.path, err)
		}
		if total.Add(size) > lim.MaxBytes {
			return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, lim.MaxBytes)
		}
		b := blob{size: size}
		var m uint64
		switch {
		case e.mode == "120000":
			t, err := readBody(rd, size)
			if err != nil {
				return nil, fmt.Errorf("reading link %s: %w", e.path, err)
			}
			b.target = string(t)
		case size <= cachedBlobBytes:
			// Looked at in the reader's buffer (readIndexPart's holds cachedBlobBytes) and copied only when kept:
			// most blobs of a large tree are neither indexed nor kept.
			data, err := rd.Peek(int(size))
			if err != nil {
				return nil, fmt.Errorf("reading blob %s (%s): %w", e.oid, e.path, err)
			}
			if m = c.marksOf(data); m != 0 || keep[blobKey(e)] {
				b.data = bytes.Clone(data)
			}
			if _, err := rd.Discard(int(size)); err != nil {
				return nil, fmt.Errorf("reading blob %s (%s): %w", e.oid, e.path, err)
			}
		default:
			// Large: scanned in chunks that overlap by the longest needle, never held whole.
			buf := make([]byte, 0, 64<<10+longest)
			left := size
			for left > 0 {
				n := min(left, 64<<10)
				start := len(buf)
				buf = buf[:start+int(n)]
				if _, err := io.ReadFull(rd, buf[start:]); err != nil {
					return nil, fmt.Errorf("reading blob %s (%s): %w", e.oid, e.path, err)
				}
				m |= c.marksOf(buf)
				left -= n
				overlap := min(len(buf), max(longest-1, 0))
				copy(buf, buf[len(buf)-overlap:])
				buf = buf[:overlap]
			}
		}
		if nl, err := rd.ReadByte(); err != nil || nl != '\n' {
			return nil, fmt.Errorf("reading blob %s (%s): missing terminator", e.oid, e.path)
		}
		out = append(out, indexed{key: blobKey(e), blob: b, marks: m})
	}
	return out, nil
}

func (c *Checkout) marksOf(data []byte) uint64 {
	var m uint64
	for i, x := range c.index {
		if bytes.Contains(data, []byte(x)) {
			m |= 1 << i
		}
	}
	return m
}

func readHeader(rd *bufio.Reader, oid string) (int64, error) {
	header, err := rd.ReadString('\n')
	if err != nil {
		return 0, err
	}
	f := strings.Fields(header)
	if len(f) != 3 || f[0] != oid {
		return 0, fmt.Errorf("unexpected answer %q", strings.TrimSpace(header))
	}
	size, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || size < 0 {
		return 0, fmt.Errorf("bad size %q", f[2])
	}
	return size, nil
}

func readBody(rd *bufio.Reader, size int64) ([]byte, error) {
	data := make([]byte, size)
	_, err := io.ReadFull(rd, data)
	return data, err
}

// blobReader answers single blob reads from one long-lived `git cat-file --batch`, one at a time.
type blobReader struct {
	mu     sync.Mutex
	repo   *Repo
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	err    error
}

func (c *Checkout) reader() *blobReader {
	c.readerOnce.Do(func() { c.blobRd = &blobReader{repo: c.repo} })
	return c.blobRd
}

// read returns a blob's content; the limits that apply are those of the files that name it (callers check sizes
// with Entry first).
func (b *blobReader) read(oid string) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cmd == nil && b.err == nil {
		cmd := b.repo.command(context.Background(), "cat-file", "--batch")
		stdin, err := cmd.StdinPipe()
		if err == nil {
			var stdout io.ReadCloser
			if stdout, err = cmd.StdoutPipe(); err == nil {
				if err = cmd.Start(); err == nil {
					b.cmd, b.stdin, b.stdout = cmd, stdin, bufio.NewReaderSize(stdout, 64<<10)
				}
			}
		}
		if err != nil {
			b.err = fmt.Errorf("starting git cat-file: %w", err)
		}
	}
	if b.err != nil {
		return nil, b.err
	}
	if _, err := io.WriteString(b.stdin, oid+"\n"); err != nil {
		b.err = fmt.Errorf("reading blob %s: %w", oid, err)
		return nil, b.err
	}
	size, err := readHeader(b.stdout, oid)
	if err == nil {
		var data []byte
		if data, err = readBody(b.stdout, size); err == nil {
			if nl, e := b.stdout.ReadByte(); e != nil || nl != '\n' {
				err = errors.New("missing terminator")
			} else {
				return data, nil
			}
		}
	}
	b.err = fmt.Errorf("reading blob %s: %w", oid, err)
	return nil, b.err
}

func (b *blobReader) close() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cmd != nil {
		_ = b.stdin.Close()
		_ = b.cmd.Wait()
		b.cmd = nil
	}
	b.err = errors.New("checkout closed")
}
