package discover

import (
	"encoding/json"
	"maps"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	yamlv3 "gopkg.in/yaml.v3"
	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/kit/yamlcodec/blockyaml"
)

// Reach is a superset of the repository files an app's render can read, computed from its definition and the
// files it names — without rendering. A change that touches nothing in an app's reach cannot change its
// manifests, so the app need not be rendered at all; an app whose reach holds no file mentioning Applications
// cannot be an app-of-apps. Where the reach cannot be bounded (Jsonnet imports, a source at the repository root,
// paths built from variables) it is unbounded and the app is always rendered.
//
// Per source in this repository: its path (everything below it, which covers .argocd-source*.yaml, chart
// files and templates, plain manifests); for Helm, its value files and file parameters ("$ref/..." resolved
// against the ref source) and file:// chart dependencies, recursively; for Kustomize, the closure of every path
// its kustomization files (and the files they name) mention — resources, components, patches, generators,
// transformers, replacements — recursively. The Kustomize rule errs on the side of inclusion: any string that
// resolves to a repository path counts.
type Reach struct{ set *reachSet }

// Unbounded reports a reach that may be the whole repository.
func (r Reach) Unbounded() bool { return r.set == nil || r.set.all }

// Touches reports whether any of files is in the reach. Over a file set asked about again and again (every app
// of a large repository against the same files) TouchesAny on a Paths is linear in the reach instead.
func (r Reach) Touches(files []string) bool {
	for _, f := range files {
		if r.Unbounded() || r.set.touches(f) {
			return true
		}
	}
	return false
}

// Paths returns the reach's entries: paths (directories stand for everything below them) and globs. An
// unbounded reach has none: it is everything.
func (r Reach) Paths() (paths, globs []string) {
	if r.Unbounded() {
		return nil, nil
	}
	for d := range r.set.dirs {
		paths = append(paths, d)
	}
	sort.Strings(paths)
	return paths, append([]string(nil), r.set.globs...)
}

// Paths is a set of repository files indexed for reach queries: each file and every directory above it. Built
// once per set, it answers TouchesAny in time proportional to the reach, not to the set: the inverted form of
// "does any of these files lie in this app's reach", asked for every app of a repository.
type Paths struct {
	files []string
	above map[string]bool // every file and each of its parent directories
}

// NewPaths indexes files (slash paths relative to the repository root).
func NewPaths(files []string) *Paths {
	p := &Paths{files: files, above: make(map[string]bool, 2*len(files))}
	for _, f := range files {
		for d := f; d != "." && d != "/" && d != "" && !p.above[d]; d = path.Dir(d) {
			p.above[d] = true
		}
	}
	return p
}

// Len is the number of files.
func (p *Paths) Len() int { return len(p.files) }

// TouchesAny reports whether any file of p is in the reach: the same answer as Touches(files), since a file is
// in the reach when it or a directory above it is a reach entry, or it matches a reach glob.
func (r Reach) TouchesAny(p *Paths) bool {
	if p == nil || len(p.files) == 0 {
		return false
	}
	if r.Unbounded() {
		return true
	}
	for d := range r.set.dirs {
		if p.above[d] {
			return true
		}
	}
	for _, g := range r.set.globs {
		for _, f := range p.files {
			if ok, _ := path.Match(g, f); ok {
				return true
			}
		}
	}
	return false
}

// reachSet is a set of repository paths: whole directories, single files and globs.
type reachSet struct {
	all   bool
	dirs  map[string]bool
	globs []string
}

func newReach() *reachSet { return &reachSet{dirs: map[string]bool{}} }

func (r *reachSet) addDir(d string) {
	if d == "" || d == "." {
		r.all = true
		return
	}
	r.dirs[d] = true
}

func (r *reachSet) merge(o *reachSet) {
	if o == nil {
		return
	}
	r.all = r.all || o.all
	if len(o.dirs) > len(r.dirs) {
		// Merging a closure into an app's reach of a few entries: a copy of the closure's map, which maps.Clone
		// makes whole, takes the few instead of growing entry by entry.
		dirs := maps.Clone(o.dirs)
		for d := range r.dirs {
			dirs[d] = true
		}
		r.dirs = dirs
	} else {
		for d := range o.dirs {
			r.dirs[d] = true
		}
	}
	r.globs = append(r.globs, o.globs...)
}

// touches: a path below (or equal to) any directory entry, or matching a glob.
func (r *reachSet) touches(f string) bool {
	if r.all {
		return true
	}
	for d := f; d != "." && d != "/" && d != ""; d = path.Dir(d) {
		if r.dirs[d] {
			return true
		}
	}
	for _, g := range r.globs {
		if ok, _ := path.Match(g, f); ok {
			return true
		}
	}
	return false
}

// reachCalc computes one app's reach. The closures of kustomization and chart directories are shared by many
// apps: each is computed once per inventory and kept (immutable from then on) in Inventory.reach, whose mutex
// guards only the map, so apps' reaches are computed on every core at once. A directory met again while its own
// closure is being computed (a cycle, which Kustomize refuses anyway) adds nothing, and nothing computed across a
// cycle is kept: queried on its own later, such a directory gets its whole closure.
type reachCalc struct {
	inv      *Inventory
	visiting map[string]bool
	cycles   int
	started  map[string]int // key -> cycles seen when its computation began
}

// begin returns the kept closure of key (ok false), or starts computing it (ok true).
func (c *reachCalc) begin(key string) (*reachSet, bool) {
	c.inv.reachMu.Lock()
	rs, kept := c.inv.reach[key]
	c.inv.reachMu.Unlock()
	if kept {
		return rs, false
	}
	if c.visiting[key] {
		c.cycles++
		return newReach(), false
	}
	c.visiting[key] = true
	if c.started == nil {
		c.started = map[string]int{}
	}
	c.started[key] = c.cycles
	return nil, true
}

// end keeps key's closure unless a cycle was met while computing it.
func (c *reachCalc) end(key string, rs *reachSet) {
	delete(c.visiting, key)
	if c.cycles != c.started[key] {
		return
	}
	c.inv.reachMu.Lock()
	if _, ok := c.inv.reach[key]; !ok {
		c.inv.reach[key] = rs
	}
	c.inv.reachMu.Unlock()
}

// Reach returns the reach of an app at this inventory's revision. It is safe for concurrent use.
func (inv *Inventory) Reach(a *App) Reach {
	c := &reachCalc{inv: inv, visiting: map[string]bool{}}
	rs := newReach()
	app := a.App
	sources := app.Spec.GetSources()
	refs := refSourcesOf(app)
	this := inv.opts.IsThisRepo
	if this == nil {
		this = func(string) bool { return false }
	}
	for _, s := range sources {
		if !this(s.RepoURL) || s.Chart != "" {
			// A chart from a chart repository (or another repository) may still take value files from this
			// one through a ref source.
			if s.Helm != nil {
				c.refValueFiles(rs, s, refs, this)
			}
			if rs.all {
				return Reach{rs}
			}
			continue
		}
		if s.Ref != "" && s.Path == "" {
			continue // read only through $ref value files
		}
		dir := cleanRel(s.Path)
		rs.addDir(dir)
		if rs.all {
			return Reach{rs}
		}
		if s.Helm != nil || inv.tree.has(path.Join(dir, "Chart.yaml")) {
			c.helmReach(rs, app, s, dir, refs, this)
		}
		if s.Kustomize != nil || kustomizationIn(inv.tree, dir) != "" {
			rs.merge(c.kustomizeClosure(dir))
			if s.Kustomize != nil {
				raw, _ := json.Marshal(s.Kustomize)
				var v any
				_ = json.Unmarshal(raw, &v)
				c.stringPaths(rs, v, []string{dir}, map[string]bool{}, 0)
			}
		}
		if s.Directory != nil && (len(s.Directory.Jsonnet.Libs) > 0 || len(s.Directory.Jsonnet.ExtVars) > 0 || len(s.Directory.Jsonnet.TLAs) > 0) {
			rs.all = true
		}
		for _, f := range inv.tree.under(dir) {
			if ext := path.Ext(f); ext == ".jsonnet" || ext == ".libsonnet" {
				rs.all = true // imports may reach anywhere
				break
			}
		}
		if rs.all {
			return Reach{rs}
		}
	}
	return Reach{rs}
}

// refValueFiles adds a Helm source's "$ref/..." value files.
func (c *reachCalc) refValueFiles(rs *reachSet, s v1alpha1.ApplicationSource, refs refSources, this func(string) bool) {
	for _, vf := range s.Helm.ValueFiles {
		if c.addRef(rs, vf, refs, this); rs.all {
			return
		}
	}
}

// addRef adds a "$ref/..." path (false for another path): the path in a ref source of this repository; an
// unresolved $variable reaches everything.
func (c *reachCalc) addRef(rs *reachSet, p string, refs refSources, this func(string) bool) bool {
	ref, isRef := refs.lookup(p)
	switch {
	case !isRef:
		return false
	case !ref.known:
		rs.all = true
	case this(ref.src.RepoURL):
		c.addPath(rs, ref.rel)
	}
	return true
}

// helmReach adds a Helm source's value files, file parameters and file:// dependencies.
func (c *reachCalc) helmReach(rs *reachSet, app *v1alpha1.Application, s v1alpha1.ApplicationSource, dir string, refs refSources, this func(string) bool) {
	if s.Helm != nil {
		files := append([]string(nil), s.Helm.ValueFiles...)
		for _, fp := range s.Helm.FileParameters {
			files = append(files, fp.Path)
		}
		for _, vf := range files {
			if c.addRef(rs, vf, refs, this) {
				if rs.all {
					return
				}
				continue
			}
			if isURL(vf) {
				continue
			}
			vf = substituteAppEnv(vf, app)
			if strings.Contains(vf, "$") {
				rs.all = true
				return
			}
			c.addPath(rs, cleanRel(path.Join(dir, vf)))
		}
	}
	rs.merge(c.chartDeps(dir))
}

func (c *reachCalc) addPath(rs *reachSet, p string) {
	if hasGlob(p) {
		rs.globs = append(rs.globs, p)
		return
	}
	rs.addDir(p)
}

// substituteAppEnv replaces the build environment variables Argo CD substitutes in value file paths that
// depend on the Application alone (reposerver/repository/repository.go newEnv).
func substituteAppEnv(s string, app *v1alpha1.Application) string {
	if !strings.Contains(s, "$") {
		return s
	}
	return os.Expand(s, func(k string) string {
		switch k {
		case "ARGOCD_APP_NAME":
			return app.Name
		case "ARGOCD_APP_NAMESPACE":
			return app.Spec.Destination.Namespace
		case "ARGOCD_APP_PROJECT_NAME":
			return app.Spec.Project
		}
		return "$" + k
	})
}

// chartDeps is the reach of a chart's file:// dependencies (Chart.yaml or requirements.yaml), recursively.
func (c *reachCalc) chartDeps(dir string) *reachSet {
	key := "helm:" + dir
	if rs, ok := c.begin(key); !ok {
		return rs
	}
	rs := newReach()
	defer c.end(key, rs)
	for _, name := range []string{"Chart.yaml", "requirements.yaml"} {
		data, err := c.inv.tree.ReadFile(path.Join(dir, name))
		if err != nil {
			continue
		}
		var chart struct {
			Dependencies []struct {
				Repository string `json:"repository"`
			} `json:"dependencies"`
		}
		if yaml.Unmarshal(data, &chart) != nil {
			continue
		}
		for _, d := range chart.Dependencies {
			rel, ok := strings.CutPrefix(d.Repository, "file://")
			if !ok {
				continue
			}
			p := path.Join(dir, rel)
			if strings.HasPrefix(p, "..") {
				continue // outside the repository: the renderer refuses it
			}
			p = cleanRel(p)
			rs.addDir(p)
			rs.merge(c.chartDeps(p))
		}
	}
	return rs
}

// kustomizationNames are the names of a kustomization file, in the order Kustomize looks for them
// (sigs.k8s.io/kustomize/api konfig/general.go RecognizedKustomizationFileNames).
func kustomizationNames() []string {
	return []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}
}

// ReadByName lists the names of the files Reach reads wherever the tree holds them: kustomization files (every
// Kustomize app's) and chart definitions. A Reader that has them at hand spares Reach a read of each.
func ReadByName() []string {
	return append(kustomizationNames(), "Chart.yaml", "requirements.yaml")
}

func kustomizationIn(t *dirTree, dir string) string {
	for _, n := range kustomizationNames() {
		if p := path.Join(dir, n); t.has(p) {
			return p
		}
	}
	return ""
}

// kustomizeClosure is the reach of a kustomization directory: the directory, and every repository path that a
// string of its kustomization file (or of a YAML file it names) resolves to, with the closures of the
// kustomization directories among them.
func (c *reachCalc) kustomizeClosure(dir string) *reachSet {
	key := "kustomize:" + dir
	if rs, ok := c.begin(key); !ok {
		return rs
	}
	rs := newReach()
	defer c.end(key, rs)
	rs.addDir(dir)
	k := kustomizationIn(c.inv.tree, dir)
	if k == "" {
		return rs
	}
	c.fileStrings(rs, k, []string{dir}, map[string]bool{}, 0)
	return rs
}

// fileStrings adds the paths named by the strings of a YAML file.
func (c *reachCalc) fileStrings(rs *reachSet, file string, bases []string, seen map[string]bool, depth int) {
	if seen[file] || depth > 8 {
		return
	}
	seen[file] = true
	data, err := c.inv.tree.ReadFile(file)
	if err != nil {
		return
	}
	key := cacheKey("strings", c.inv.tree.blobID(file))
	strs, ok := c.inv.opts.Cache.strings(key)
	if !ok {
		strs = yamlStrings(data)
		c.inv.opts.Cache.putStrings(key, strs)
	}
	for _, s := range strs {
		c.addString(rs, s, bases, seen, depth)
	}
}

// yamlStrings lists the string values of a YAML stream that may name a path (addString's test), in document order.
// Only the strings matter: one YAML pass (yaml.v3, which refuses alias bombs), not sigs.k8s.io/yaml's three (YAML
// to JSON and back). A file's strings depend only on its content: ScanCache keeps them by blob id.
func yamlStrings(data []byte) []string {
	docs, err := splitDocuments(data)
	if err != nil {
		return nil
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, val := range x {
				walk(val)
			}
		case map[any]any: // yaml.v3 for a mapping with a key that is not a string
			for _, val := range x {
				walk(val)
			}
		case []any:
			for _, val := range x {
				walk(val)
			}
		case string:
			if pathLike(x) {
				out = append(out, x)
			}
		}
	}
	for _, d := range docs {
		// blockyaml's strings are a superset of yaml.v3's for the documents it decodes (most kustomization files,
		// their quoted names and literal patches included).
		if strs, ok := blockyaml.Strings(d); ok {
			for _, s := range strs {
				if pathLike(s) {
					out = append(out, s)
				}
			}
			continue
		}
		var v any
		if yamlv3.Unmarshal(d, &v) == nil {
			walk(v)
		}
	}
	return out
}

// pathLike is a string that may name a repository path: not blank, no whitespace inside, not a URL or an
// absolute path.
func pathLike(x string) bool {
	s := strings.TrimSpace(x)
	return s != "" && !strings.ContainsAny(s, "\n\t ") && !strings.Contains(s, "://") && !strings.HasPrefix(s, "git@") && !strings.HasPrefix(s, "/")
}

// stringPaths adds every repository path that a string value of v resolves to, relative to any of bases.
func (c *reachCalc) stringPaths(rs *reachSet, v any, bases []string, seen map[string]bool, depth int) {
	switch x := v.(type) {
	case map[string]any:
		for _, val := range x {
			c.stringPaths(rs, val, bases, seen, depth)
		}
	case map[any]any: // yaml.v3 for a mapping with a key that is not a string
		for _, val := range x {
			c.stringPaths(rs, val, bases, seen, depth)
		}
	case []any:
		for _, val := range x {
			c.stringPaths(rs, val, bases, seen, depth)
		}
	case string:
		c.addString(rs, x, bases, seen, depth)
	}
}

// addString adds the repository paths a string value resolves to, relative to any of bases.
func (c *reachCalc) addString(rs *reachSet, x string, bases []string, seen map[string]bool, depth int) {
	if !pathLike(x) {
		return
	}
	s := strings.TrimSpace(x)
	// configMapGenerator/secretGenerator entries may be "key=path"; envs are plain paths.
	if _, after, ok := strings.Cut(s, "="); ok {
		s = after
	}
	for _, b := range bases {
		p := path.Join(b, s)
		if strings.HasPrefix(p, "..") {
			continue
		}
		p = cleanRel(p)
		if p == "" {
			continue
		}
		switch {
		case c.inv.tree.isDir(p):
			rs.addDir(p)
			if kustomizationIn(c.inv.tree, p) != "" {
				rs.merge(c.kustomizeClosure(p))
			}
		case c.inv.tree.has(p):
			rs.addDir(p)
			switch strings.ToLower(filepath.Ext(p)) {
			case ".yaml", ".yml", ".json":
				c.fileStrings(rs, p, append([]string{path.Dir(p)}, bases...), seen, depth+1)
			}
		default:
			// Not (yet) in the repository: a change that adds it must still count.
			if hasGlob(p) {
				rs.globs = append(rs.globs, p)
			} else {
				rs.addDir(p)
			}
		}
	}
}
