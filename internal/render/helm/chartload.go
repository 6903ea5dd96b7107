package helm

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"sync"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/fleetwave/fleetwave/internal/render/helm/chartdir"
	"github.com/fleetwave/fleetwave/internal/render/helm/helmtemplate"
	"github.com/fleetwave/fleetwave/internal/render/helm/helmvalues"
	"github.com/fleetwave/fleetwave/internal/render/repofs"
)

// chartFiles is a chart directory read into memory, with the hash of its contents.
type chartFiles struct {
	files []*loader.BufferedFile
	hash  string
}

// readChartDir reads the chart directory dir (chartdir.Read: helm's LoadDir up to LoadFiles, over the confined
// checkout) and hashes its contents.
func readChartDir(fsys *repofs.FS, dir string, lim Limits) (*chartFiles, error) {
	files, err := chartdir.Read(fsys, dir, chartdir.Limits{MaxFiles: lim.MaxChartFiles, MaxBytes: lim.MaxChartBytes, MaxDepth: lim.MaxDirDepth})
	if err != nil {
		return nil, err
	}
	return &chartFiles{files: files, hash: hashFiles(files)}, nil
}

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
