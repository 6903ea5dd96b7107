package discover

import (
	"container/list"
	"sync"
)

// ScanCache keeps what discovery parsed from files across inventories, by path and content (the file's blob id,
// from the Reader): the Applications, ApplicationSets and clusters a file declares, and the strings of the
// kustomization files reaches are computed from. A long-running bot parses only the files a revision changed
// since the revisions it saw before, on every pull request of a repository, however many Applications the
// repository holds. It is bounded (least recently used entries go first) and safe for concurrent use; the zero
// value is not ready, use NewScanCache. A nil *ScanCache keeps nothing.
type ScanCache struct {
	mu    sync.Mutex
	max   int
	items map[string]*list.Element
	order *list.List // front: most recently used
	hits  int64
}

type cacheEntry struct {
	key string
	val any // *fileScan, or []string
}

// NewScanCache returns a cache of at most maxFiles parsed files (one Application manifest is a few KiB).
func NewScanCache(maxFiles int) *ScanCache {
	return &ScanCache{max: max(maxFiles, 1), items: map[string]*list.Element{}, order: list.New()}
}

// Hits is the number of files taken from the cache instead of being parsed.
func (c *ScanCache) Hits() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits
}

// Len is the number of files kept.
func (c *ScanCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items)
}

func (c *ScanCache) get(key string) (*fileScan, bool) {
	v, ok := c.lookup(key)
	fs, _ := v.(*fileScan)
	return fs, ok && fs != nil
}

func (c *ScanCache) put(key string, fs *fileScan) { c.store(key, fs) }

// strings returns a file's path-like strings (reach.go yamlStrings), by content.
func (c *ScanCache) strings(key string) ([]string, bool) {
	v, ok := c.lookup(key)
	s, isStrings := v.([]string)
	return s, ok && isStrings
}

func (c *ScanCache) putStrings(key string, s []string) { c.store(key, s) }

func (c *ScanCache) lookup(key string) (any, bool) {
	if c == nil || key == "" {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	c.hits++
	return e.Value.(*cacheEntry).val, true
}

func (c *ScanCache) store(key string, val any) {
	if c == nil || key == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		c.order.MoveToFront(e)
		return
	}
	c.items[key] = c.order.PushFront(&cacheEntry{key: key, val: val})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*cacheEntry).key)
	}
}

// cacheKey is a file's key: its path (problems name it) and its content; or what is kept ("strings") and the
// content.
func cacheKey(rel, blob string) string {
	if blob == "" {
		return ""
	}
	return rel + "\x00" + blob
}
