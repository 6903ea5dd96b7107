package discover

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/kit/yamlcodec/blockyaml"
	"github.com/fleetwave/fleetwave/internal/kit/yamlcodec/manifestyaml"
	"github.com/fleetwave/fleetwave/internal/kit/yamlcodec/plainyaml"
	"github.com/fleetwave/fleetwave/internal/render/repofs"
)

// maxManifestBytes caps a YAML file discovery parses.
const maxManifestBytes = 8 << 20

// Problem is one thing discovery could not do, reported as one line naming the file, the app and the cause.
type Problem struct {
	File string // repository-relative path, if any
	App  string // namespace/name of the Application or ApplicationSet concerned, if any
	Err  error
}

func (p Problem) Error() string {
	var parts []string
	if p.File != "" {
		parts = append(parts, p.File)
	}
	if p.App != "" {
		parts = append(parts, p.App)
	}
	parts = append(parts, p.Err.Error())
	return strings.Join(parts, ": ")
}

func (p Problem) Unwrap() error { return p.Err }

type foundApp struct {
	file string
	app  *v1alpha1.Application
}

type foundAppSet struct {
	file string
	set  *v1alpha1.ApplicationSet
}

// scanResult is what the repository's YAML files declare.
type scanResult struct {
	apps     []foundApp
	appSets  []foundAppSet
	clusters []Cluster
	problems []Problem
}

// scan finds the Applications, ApplicationSets and Argo CD cluster Secrets a checkout declares. Files in Helm
// chart directories (their templates are not YAML until rendered; app-of-apps charts are followed through
// their parent app), files a kustomization next to them uses as patches, and hidden directories are left out.
// With mentions, only those files are read; otherwise every YAML/JSON file is.
func scan(tree *dirTree, mentions map[string]bool, reuse map[string]*fileScan, changed map[string]bool, cache *ScanCache) (scanResult, map[string]*fileScan) {
	var res scanResult
	scanned := map[string]*fileScan{}
	files, err := tree.Files()
	if err != nil {
		res.problems = append(res.problems, Problem{Err: fmt.Errorf("walking repository: %w", err)})
		return res, scanned
	}
	charts := map[string]bool{}
	kustomizations := map[string]string{} // dir -> kustomization file
	for _, f := range files {
		switch path.Base(f) {
		case "Chart.yaml":
			charts[path.Dir(f)] = true
		case "kustomization.yaml", "kustomization.yml", "Kustomization":
			kustomizations[path.Dir(f)] = f
		}
	}
	var candidates []string
	for _, f := range files {
		switch strings.ToLower(path.Ext(f)) {
		case ".yaml", ".yml", ".json":
		default:
			continue
		}
		if mentions != nil && !mentions[f] || hiddenOrChart(f, charts) {
			continue
		}
		candidates = append(candidates, f)
	}
	near := map[string]string{}
	for _, f := range candidates {
		if k, ok := kustomizations[path.Dir(f)]; ok {
			near[path.Dir(f)] = k
		}
	}
	patches := patchFiles(tree, near)
	var todo []string
	for _, rel := range candidates {
		if patches[rel] {
			continue
		}
		if fs, ok := reuse[rel]; ok && !changed[rel] {
			scanned[rel] = fs
		} else if fs, ok := cache.get(cacheKey(rel, tree.blobID(rel))); ok {
			scanned[rel] = fs
		} else {
			todo = append(todo, rel)
		}
	}
	// Parsing is the cost of discovering a large repository: the files are parsed on every core, then added in
	// file order as before.
	parsed := make([]*fileScan, len(todo))
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < min(runtime.GOMAXPROCS(0), len(todo)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < len(todo); i = int(next.Add(1)) - 1 {
				parsed[i] = scanFile(tree, todo[i])
			}
		}()
	}
	wg.Wait()
	for i, rel := range todo {
		scanned[rel] = parsed[i]
		cache.put(cacheKey(rel, tree.blobID(rel)), parsed[i])
	}
	for _, rel := range candidates {
		if fs, ok := scanned[rel]; ok {
			fs.addTo(&res, rel)
		}
	}
	return res, scanned
}

// hiddenOrChart reports a file below a hidden directory or inside a Helm chart directory.
func hiddenOrChart(f string, charts map[string]bool) bool {
	for d := path.Dir(f); d != "."; d = path.Dir(d) {
		if charts[d] || strings.HasPrefix(path.Base(d), ".") {
			return true
		}
	}
	return false
}

// fileScan is what one file declares.
type fileScan struct {
	objs     []any // *v1alpha1.Application, *v1alpha1.ApplicationSet, Cluster
	problems []Problem
}

// add appends a file's findings to res (copies of the Applications and ApplicationSets, which discovery
// normalises in place).
func (f *fileScan) addTo(res *scanResult, rel string) {
	res.problems = append(res.problems, f.problems...)
	for _, o := range f.objs {
		switch x := o.(type) {
		case *v1alpha1.Application:
			res.apps = append(res.apps, foundApp{file: rel, app: x.DeepCopy()})
		case *v1alpha1.ApplicationSet:
			res.appSets = append(res.appSets, foundAppSet{file: rel, set: x.DeepCopy()})
		case Cluster:
			res.clusters = append(res.clusters, x)
		}
	}
}

func scanFile(tree *dirTree, rel string) *fileScan {
	fs := &fileScan{}
	regular, size, err := tree.lstat(rel)
	if err != nil {
		fs.problems = append(fs.problems, Problem{File: rel, Err: err})
		return fs
	}
	if !regular || size > maxManifestBytes {
		return fs // links are not followed: they may point outside the checkout
	}
	data, err := tree.read(rel)
	if err != nil {
		fs.problems = append(fs.problems, Problem{File: rel, Err: err})
		return fs
	}
	// Only files that can declare what discovery looks for are parsed.
	if !bytes.Contains(data, []byte("argoproj.io")) && !bytes.Contains(data, []byte(secretTypeLabel)) {
		return fs
	}
	// The YAML library refuses an alias bomb one document at a time; a file of many is refused as a whole.
	if err := repofs.CheckYAMLAliases(rel, data, nil); err != nil {
		var r *repofs.Refusal
		if errors.As(err, &r) {
			err = fmt.Errorf("refused (%s): %s", r.Rule, r.Detail)
		}
		fs.problems = append(fs.problems, Problem{File: rel, Err: err})
		return fs
	}
	docs, err := splitDocuments(data)
	if err != nil {
		if mentionsArgoKinds(data) {
			fs.problems = append(fs.problems, Problem{File: rel, Err: fmt.Errorf("parsing YAML: %w", err)})
		}
		return fs
	}
	for i, doc := range docs {
		obj, js, err := documentObject(doc)
		if err != nil {
			if mentionsArgoKinds(doc) {
				fs.problems = append(fs.problems, Problem{File: rel, Err: fmt.Errorf("document %d: parsing YAML: %s", i+1, text.FirstLine(err.Error()))})
			}
			continue
		}
		if obj == nil {
			continue
		}
		found, err := decodeObject(obj, js)
		if err != nil {
			fs.problems = append(fs.problems, Problem{File: rel, App: objectKey(obj), Err: fmt.Errorf("document %d: %w", i+1, err)})
			continue
		}
		if found != nil {
			fs.objs = append(fs.objs, found)
		}
	}
	return fs
}

// documentObject is what sigs.k8s.io/yaml.YAMLToJSON makes of a YAML document (js) and json.Unmarshal of that JSON
// into a map (obj, nil for null), without yaml.v2 where it can (its parse was most of discovery's time on a
// large repository), to the same value:
//   - a document in plainyaml's subset (plain scalars, one-line flow collections: most generated Application
//     files) is parsed by it, its JSON written by plainyaml.AppendJSON;
//   - a mapping in blockyaml's (quoted and literal scalars too, such as inline Helm values) is decoded to the
//     value yaml.v2 decodes, manifestyaml.JSONValue is that value as YAMLToJSON's JSON reads back, and js is
//     json.Marshal of it, YAMLToJSON's bytes.
//
// Either way obj holds its integers as float64, as JSON decoding into an interface{} makes them.
func documentObject(doc []byte) (obj map[string]any, js []byte, err error) {
	if v, ok := plainyaml.Parse(doc); ok {
		js = plainyaml.AppendJSON(make([]byte, 0, len(doc)+len(doc)/4), v) // JSON is about YAML's length
		jsonNumbers(v)
		return v, js, nil
	}
	return blockObject(doc)
}

// blockObject is documentObject without plainyaml: blockyaml, else yaml.v2 (BenchmarkDiscoveryYAML compares them).
func blockObject(doc []byte) (obj map[string]any, js []byte, err error) {
	if y, ok := blockyaml.Decode(doc); ok {
		if v, ok := manifestyaml.JSONValue(y); ok {
			if m, ok := v.(map[string]any); ok {
				if js, err = json.Marshal(m); err == nil {
					jsonNumbers(m)
					return m, js, nil
				}
			}
		}
	}
	js, err = yaml.YAMLToJSON(doc)
	if err == nil {
		err = json.Unmarshal(js, &obj)
	}
	return obj, js, err
}

// jsonNumbers replaces, in place, the int64s of plainyaml's or JSONValue's value by the float64 json.Unmarshal
// reads from their JSON text: both are the nearest float64 to the integer.
func jsonNumbers(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if n, ok := e.(int64); ok {
				x[k] = float64(n)
			} else {
				jsonNumbers(e)
			}
		}
	case []any:
		for i, e := range x {
			if n, ok := e.(int64); ok {
				x[i] = float64(n)
			} else {
				jsonNumbers(e)
			}
		}
	}
}

// decodeObject types an object (js is its JSON): *Application, *ApplicationSet, Cluster, or nil for anything else.
func decodeObject(obj map[string]any, js []byte) (any, error) {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if strings.HasPrefix(apiVersion, "argoproj.io/") {
		switch kind {
		case "Application":
			var app v1alpha1.Application
			if err := json.Unmarshal(js, &app); err != nil {
				return nil, fmt.Errorf("decoding Application: %s", text.FirstLine(err.Error()))
			}
			if app.Name == "" {
				return nil, fmt.Errorf("application has no metadata.name")
			}
			return &app, nil
		case "ApplicationSet":
			var set v1alpha1.ApplicationSet
			if err := json.Unmarshal(js, &set); err != nil {
				return nil, fmt.Errorf("decoding ApplicationSet: %s", text.FirstLine(err.Error()))
			}
			if set.Name == "" {
				return nil, fmt.Errorf("applicationset has no metadata.name")
			}
			return &set, nil
		}
		return nil, nil
	}
	c, ok, err := clusterFromSecret(obj)
	if err != nil || !ok {
		return nil, err
	}
	return c, nil
}

func objectKey(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	ns, _ := meta["namespace"].(string)
	if name == "" {
		return ""
	}
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func mentionsArgoKinds(b []byte) bool {
	return bytes.Contains(b, []byte("argoproj.io")) &&
		(bytes.Contains(b, []byte("Application")) || bytes.Contains(b, []byte("ApplicationSet")))
}

// patchFiles lists the files kustomizations use as patches (patches[].path, patchesStrategicMerge[],
// patchesJson6902[].path): they hold fragments of objects, not objects.
func patchFiles(tree *dirTree, kustomizations map[string]string) map[string]bool {
	out := map[string]bool{}
	for dir, file := range kustomizations {
		data, err := tree.ReadFile(file)
		if err != nil {
			continue
		}
		var k struct {
			Patches []struct {
				Path string `json:"path"`
			} `json:"patches"`
			PatchesStrategicMerge []string `json:"patchesStrategicMerge"`
			PatchesJSON6902       []struct {
				Path string `json:"path"`
			} `json:"patchesJson6902"`
		}
		if err := yaml.Unmarshal(data, &k); err != nil {
			continue
		}
		add := func(p string) {
			if p == "" || strings.Contains(p, "\n") {
				return
			}
			out[path.Clean(path.Join(dir, p))] = true
		}
		for _, p := range k.Patches {
			add(p.Path)
		}
		for _, p := range k.PatchesStrategicMerge {
			add(p)
		}
		for _, p := range k.PatchesJSON6902 {
			add(p.Path)
		}
	}
	return out
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

// Reader reads a revision's files by slash path (internal/edge/source.Checkout implements it).
type Reader interface {
	// Entry reports whether rel is a regular file (not a symbolic link) and its size; ok is false when the
	// revision has no file rel.
	Entry(rel string) (regular bool, size int64, ok bool)
	// ReadFile returns a regular file's content.
	ReadFile(rel string) ([]byte, error)
	// BlobID names rel's content (git's object id): files with the same path and id parse the same, which
	// ScanCache relies on. "" when unknown.
	BlobID(rel string) string
}

// dirTree is a Tree over a checkout directory: listed once, by walking it or from a given file list. With a
// Reader, its files are read through it instead of from the directory.
type dirTree struct {
	rd       Reader
	root     string
	once     sync.Once
	dirsOnce sync.Once
	dirs     []string // made when first asked for (git directory generators): most inventories never are
	files    []string
	err      error
}

// NewTree returns the Tree of a checkout directory.
func NewTree(root string) Tree { return &dirTree{root: root} }

// treeFromFiles is the Tree of a checkout whose files are known (slash paths).
func treeFromFiles(root string, files []string) *dirTree {
	t := &dirTree{root: root, files: append([]string(nil), files...)}
	if !sort.StringsAreSorted(t.files) { // a checkout's list is
		sort.Strings(t.files)
	}
	t.once.Do(func() {})
	return t
}

// dirsOf lists the directories holding files, hidden ones (and everything below them) left out.
func dirsOf(files []string) []string {
	seen := map[string]bool{}
	var dirs []string
	for _, f := range files {
		for d := path.Dir(f); d != "." && !seen[d]; d = path.Dir(d) {
			seen[d] = true
		}
	}
	for d := range seen {
		hidden := false
		for x := d; x != "."; x = path.Dir(x) {
			if strings.HasPrefix(path.Base(x), ".") {
				hidden = true
				break
			}
		}
		if !hidden {
			dirs = append(dirs, d)
		}
	}
	sort.Strings(dirs)
	return dirs
}

func (t *dirTree) list() {
	t.once.Do(func() {
		t.err = filepath.WalkDir(t.root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !(d.Type().IsRegular() || d.Type()&fs.ModeSymlink != 0) {
				return nil
			}
			rel, _ := filepath.Rel(t.root, p)
			t.files = append(t.files, filepath.ToSlash(rel))
			return nil
		})
		sort.Strings(t.files)
	})
}

func (t *dirTree) Dirs() ([]string, error) {
	t.list()
	t.dirsOnce.Do(func() { t.dirs = dirsOf(t.files) })
	return t.dirs, t.err
}

func (t *dirTree) Files() ([]string, error) {
	t.list()
	return t.files, t.err
}

// has reports whether rel is a file of the tree.
func (t *dirTree) has(rel string) bool {
	t.list()
	i := sort.SearchStrings(t.files, rel)
	return i < len(t.files) && t.files[i] == rel
}

// isDir reports whether rel is a directory holding files (hidden ones included).
func (t *dirTree) isDir(rel string) bool {
	t.list()
	if rel == "" || rel == "." {
		return true
	}
	i := sort.SearchStrings(t.files, rel+"/")
	return i < len(t.files) && strings.HasPrefix(t.files[i], rel+"/")
}

// under lists the files below dir ("" for all).
func (t *dirTree) under(dir string) []string {
	t.list()
	if dir == "" || dir == "." {
		return t.files
	}
	i := sort.SearchStrings(t.files, dir+"/")
	j := i
	for j < len(t.files) && strings.HasPrefix(t.files[j], dir+"/") {
		j++
	}
	return t.files[i:j]
}

func (t *dirTree) ReadFile(rel string) ([]byte, error) {
	if !t.has(rel) {
		return nil, fmt.Errorf("%s: %w", rel, fs.ErrNotExist)
	}
	regular, size, err := t.lstat(rel)
	if err != nil {
		return nil, err
	}
	if !regular {
		return nil, fmt.Errorf("%s: not a regular file", rel)
	}
	if size > maxManifestBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", rel, maxManifestBytes)
	}
	return t.read(rel)
}

// lstat reports whether rel is a regular file, and its size, without following a link.
func (t *dirTree) lstat(rel string) (regular bool, size int64, err error) {
	if t.rd != nil {
		regular, size, ok := t.rd.Entry(rel)
		if !ok {
			return false, 0, fmt.Errorf("%s: %w", rel, fs.ErrNotExist)
		}
		return regular, size, nil
	}
	st, err := os.Lstat(filepath.Join(t.root, filepath.FromSlash(rel)))
	if err != nil {
		return false, 0, err
	}
	return st.Mode().IsRegular(), st.Size(), nil
}

// blobID is rel's content id, "" without a Reader that knows it.
func (t *dirTree) blobID(rel string) string {
	if t.rd == nil {
		return ""
	}
	return t.rd.BlobID(rel)
}

// read returns rel's content (its kind and size checked by the caller).
func (t *dirTree) read(rel string) ([]byte, error) {
	if t.rd != nil {
		return t.rd.ReadFile(rel)
	}
	return os.ReadFile(filepath.Join(t.root, filepath.FromSlash(rel)))
}
