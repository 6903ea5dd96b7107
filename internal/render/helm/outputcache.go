package helm

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// outputKey identifies a render: the chart's content hash and everything else `helm template` depends on. A
// render is deterministic given these (charts calling rand*/uuid/now/genCA excepted: a cache hit repeats the
// first render's values, as Argo CD's own manifest cache does for a revision). It is not cacheable when the
// values do not marshal.
func outputKey(chartHash string, vals map[string]interface{}, o renderOpts) (string, bool) {
	v, err := json.Marshal(vals) // map keys sorted: canonical
	if err != nil {
		return "", false
	}
	h := sha256.New()
	var n [8]byte
	put := func(s string) {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	put(chartHash)
	put(o.helmCLI)
	put(string(v))
	put(o.name)
	put(o.namespace)
	if o.kubeVersion != nil {
		put(o.kubeVersion.Version + "\x00" + o.kubeVersion.Major + "\x00" + o.kubeVersion.Minor)
	} else {
		put("")
	}
	binary.BigEndian.PutUint64(n[:], uint64(len(o.apiVersions)))
	h.Write(n[:])
	for _, a := range o.apiVersions {
		put(a)
	}
	flags := []byte{0, 0, 0}
	for i, b := range []bool{o.includeCrds, o.skipSchemaValidation, o.skipTests} {
		if b {
			flags[i] = 1
		}
	}
	h.Write(flags)
	// The output caps: a render refused by them is cached as refused, for these caps only.
	binary.BigEndian.PutUint64(n[:], uint64(o.output.MaxBytes))
	h.Write(n[:])
	binary.BigEndian.PutUint64(n[:], uint64(o.output.MaxDocuments))
	h.Write(n[:])
	return hex.EncodeToString(h.Sum(nil)), true
}

// outputCache is an LRU of render results (objects or the error), bounded by entries and by the size of helm's
// output. Stored objects are never handed out: callers get deep copies.
type outputCache struct {
	mu         sync.Mutex
	maxEntries int
	maxBytes   int64
	bytes      int64
	ll         *list.List
	items      map[string]*list.Element
}

type outputEntry struct {
	key  string
	objs []*unstructured.Unstructured
	err  error
	size int64
}

func newOutputCache(maxEntries int, maxBytes int64) *outputCache {
	return &outputCache{maxEntries: maxEntries, maxBytes: maxBytes, ll: list.New(), items: map[string]*list.Element{}}
}

func (c *outputCache) get(key string) ([]*unstructured.Unstructured, error, bool) {
	if c == nil || c.maxEntries <= 0 {
		return nil, nil, false
	}
	c.mu.Lock()
	el, ok := c.items[key]
	if ok {
		c.ll.MoveToFront(el)
	}
	c.mu.Unlock()
	if !ok {
		return nil, nil, false
	}
	ent := el.Value.(*outputEntry)
	return copyObjects(ent.objs), ent.err, true
}

func (c *outputCache) put(key string, objs []*unstructured.Unstructured, err error, size int) {
	if c == nil || c.maxEntries <= 0 || int64(size) > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[key]; ok {
		return
	}
	c.items[key] = c.ll.PushFront(&outputEntry{key: key, objs: copyObjects(objs), err: err, size: int64(size)})
	c.bytes += int64(size)
	for c.ll.Len() > c.maxEntries || c.bytes > c.maxBytes {
		last := c.ll.Back()
		ent := last.Value.(*outputEntry)
		c.ll.Remove(last)
		delete(c.items, ent.key)
		c.bytes -= ent.size
	}
}

func copyObjects(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	if objs == nil {
		return nil
	}
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		if o != nil {
			out[i] = o.DeepCopy()
		}
	}
	return out
}
