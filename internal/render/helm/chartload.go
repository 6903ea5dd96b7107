package helm

import (
	"bytes"
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/ignore"

	"github.com/fleetwave/fleetwave/internal/render/helm/helmtemplate"
	"github.com/fleetwave/fleetwave/internal/render/helm/helmvalues"
	"github.com/fleetwave/fleetwave/internal/render/repofs"
)

var utf8bom = []byte{0xEF, 0xBB, 0xBF}

// chartFiles is a chart directory read into memory, with the hash of its contents.
type chartFiles struct {
	files []*loader.BufferedFile
	hash  string
}

// readChartDir is helm's pkg/chart/loader/directory.go LoadDir up to LoadFiles, over a confined checkout:
// the top-level .helmignore plus the default rule (templates/.?*), a lexical walk that follows symbolic links
// (internal/sympath.Walk), ignored directories skipped whole, irregular and oversized files refused, UTF-8 BOMs
// trimmed. Every file read and directory listed is recorded by the FS.
func readChartDir(fsys *repofs.FS, dir string, lim Limits) (*chartFiles, error) {
	rules := ignore.Empty()
	ifile := path.Join(dir, ignore.HelmIgnore)
	if st, err := fsys.Stat(ifile); err == nil && !st.IsDir() {
		b, err := fsys.ReadFile(ifile)
		if err != nil {
			return nil, err
		}
		if rules, err = ignore.Parse(bytes.NewReader(b)); err != nil {
			return nil, fmt.Errorf("%s: %w", ifile, err)
		}
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	rules.AddDefaults()

	var (
		files []*loader.BufferedFile
		total int64
	)
	var walk func(rel string, depth int) error
	walk = func(rel string, depth int) error {
		if depth > lim.MaxDirDepth {
			return fmt.Errorf("%s: directories nested deeper than %d (symbolic link loop?)", path.Join(dir, rel), lim.MaxDirDepth)
		}
		ents, err := fsys.ReadDir(path.Join(dir, rel))
		if err != nil {
			return err
		}
		for _, ent := range ents { // sorted by name, as sympath's readDirNames
			n := path.Join(rel, ent.Name())
			full := path.Join(dir, n)
			mode := ent.Type()
			if mode&fs.ModeSymlink != 0 {
				fi, err := fsys.Stat(full) // follow, confined
				if err != nil {
					return err
				}
				mode = fi.Mode().Type()
			}
			if mode.IsDir() {
				if rules.Ignore(n, entryInfo{ent.Name(), mode}) {
					continue
				}
				if err := walk(n, depth+1); err != nil {
					return err
				}
				continue
			}
			if rules.Ignore(n, entryInfo{ent.Name(), mode}) {
				continue
			}
			if !mode.IsRegular() {
				return fmt.Errorf("cannot load irregular file %s as it has file mode type bits set", full)
			}
			if len(files) >= lim.MaxChartFiles {
				return fmt.Errorf("chart %s has more than %d files", dir, lim.MaxChartFiles)
			}
			data, err := fsys.ReadFile(full)
			if err != nil {
				return err
			}
			if int64(len(data)) > loader.MaxDecompressedFileSize {
				return fmt.Errorf("chart file %q is larger than the maximum file size %d", full, loader.MaxDecompressedFileSize)
			}
			if total += int64(len(data)); total > lim.MaxChartBytes {
				return fmt.Errorf("chart %s is larger than %d bytes", dir, lim.MaxChartBytes)
			}
			files = append(files, &loader.BufferedFile{Name: n, Data: bytes.TrimPrefix(data, utf8bom)})
		}
		return nil
	}
	if err := walk("", 0); err != nil {
		return nil, err
	}
	return &chartFiles{files: files, hash: hashFiles(files)}, nil
}

// entryInfo is the os.FileInfo the .helmignore rules look at (only IsDir matters), without an lstat per file.
type entryInfo struct {
	name string
	mode fs.FileMode
}

func (e entryInfo) Name() string       { return e.name }
func (e entryInfo) Size() int64        { return 0 }
func (e entryInfo) Mode() fs.FileMode  { return e.mode }
func (e entryInfo) ModTime() time.Time { return time.Time{} }
func (e entryInfo) IsDir() bool        { return e.mode.IsDir() }
func (e entryInfo) Sys() any           { return nil }

func hashFiles(files []*loader.BufferedFile) string {
	h := sha256.New()
	var n [8]byte
	for _, f := range files {
		binary.BigEndian.PutUint64(n[:], uint64(len(f.Name)))
		h.Write(n[:])
		h.Write([]byte(f.Name))
		binary.BigEndian.PutUint64(n[:], uint64(len(f.Data)))
		h.Write(n[:])
		h.Write(f.Data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// load parses the files into a chart (loader.LoadFiles, subcharts in a fixed order), or returns the cached parse
// of identical files. The returned chart is shared and must not be modified: render a copyChart of it.
func (e *Engine) load(cf *chartFiles) (*chart.Chart, error) {
	if ch, ok := e.cache.get(cf.hash); ok {
		return ch, nil
	}
	// LoadFiles rewrites the names of the files it hands to subcharts: give it copies.
	in := make([]*loader.BufferedFile, len(cf.files))
	for i, f := range cf.files {
		in[i] = &loader.BufferedFile{Name: f.Name, Data: f.Data}
	}
	ch, err := loader.LoadFiles(in)
	if err != nil {
		return nil, err
	}
	helmtemplate.SortDependencies(ch, func(c *chart.Chart) string { return c.Metadata.Version })
	e.cache.put(cf.hash, ch)
	return ch, nil
}

// copyChart copies what rendering mutates (chartutil.ProcessDependencies rewrites dependency lists, the
// Enabled/Name/ImportValues of requirements and chart values), so concurrent renders never share it. Templates
// and files are read-only and shared.
func copyChart(c *chart.Chart) *chart.Chart {
	n := *c
	if c.Metadata != nil {
		md := *c.Metadata
		if c.Metadata.Dependencies != nil {
			md.Dependencies = make([]*chart.Dependency, len(c.Metadata.Dependencies))
			for i, d := range c.Metadata.Dependencies {
				if d == nil {
					continue
				}
				dd := *d
				dd.Tags = append([]string(nil), d.Tags...)
				dd.ImportValues = append([]interface{}(nil), d.ImportValues...)
				md.Dependencies[i] = &dd
			}
		}
		n.Metadata = &md
	}
	n.Values = helmvalues.Copy(c.Values)
	deps := make([]*chart.Chart, 0, len(c.Dependencies()))
	for _, d := range c.Dependencies() {
		deps = append(deps, copyChart(d))
	}
	n.SetDependencies(deps...)
	return &n
}

// chartCache is a small LRU of parsed charts keyed by content hash: Helm 3's *chart.Chart, or helm 4's.
type chartCache[C any] struct {
	mu    sync.Mutex
	max   int
	ll    *list.List
	items map[string]*list.Element
}

type cacheEntry[C any] struct {
	key string
	ch  C
}

func newChartCache[C any](max int) *chartCache[C] {
	if max <= 0 {
		max = 128
	}
	return &chartCache[C]{max: max, ll: list.New(), items: map[string]*list.Element{}}
}

func (c *chartCache[C]) get(key string) (C, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.ll.MoveToFront(el)
		return el.Value.(*cacheEntry[C]).ch, true
	}
	var zero C
	return zero, false
}

func (c *chartCache[C]) put(key string, ch C) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.ll.MoveToFront(el)
		return
	}
	c.items[key] = c.ll.PushFront(&cacheEntry[C]{key: key, ch: ch})
	for c.ll.Len() > c.max {
		last := c.ll.Back()
		c.ll.Remove(last)
		delete(c.items, last.Value.(*cacheEntry[C]).key)
	}
}
