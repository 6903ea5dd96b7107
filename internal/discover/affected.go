package discover

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	apppath "github.com/argoproj/argo-cd/v3/util/app/path"

	"github.com/fleetwave/fleetwave/internal/edge/source"
)

// The rules that make an app affected by a change. Each Reason names one.
const (
	RuleAdded            = "added"               // the app exists only at head
	RuleRemoved          = "removed"             // the app exists only at base
	RuleDefinition       = "application-changed" // its Application (spec or annotations) changed
	RuleBaseRenderFailed = "base-render-failed"  // nothing is known of what it reads: render both sides
	RuleGeneratePaths    = "manifest-generate-paths"
	RuleReadFile         = "read-file"   // the base render read a changed file
	RuleReadDir          = "read-dir"    // a file was added to or removed from a directory the base render listed
	RuleSourcePath       = "source-path" // a changed file is under one of its sources' path
	RuleValueFile        = "value-file"  // a changed file is one of its Helm value files or file parameters
	RuleRefSource        = "ref-source"  // a changed file is under a ref source's path or is a $ref value file
)

// Reason is one piece of evidence that an app is affected.
type Reason struct {
	Rule string `json:"rule"`
	File string `json:"file,omitempty"`
}

func (r Reason) String() string {
	if r.File == "" {
		return r.Rule
	}
	return r.Rule + ": " + r.File
}

// Evidence is what is known of one app on both sides of a change.
type Evidence struct {
	Base *v1alpha1.Application // nil when the change adds the app
	Head *v1alpha1.Application // nil when the change removes it
	// BaseRenderFailed is set when the base render failed: what it reads is unknown.
	BaseRenderFailed bool
	// ReadFiles and ReadDirs are the repository paths the base render read and listed.
	ReadFiles []string
	ReadDirs  []string
}

// Verdict says whether an app must be rendered at head and diffed, and why.
type Verdict struct {
	Affected bool
	Reasons  []Reason
	// Warning is set when Argo CD would not regenerate the app's manifests although files they are built from
	// changed (they are outside its manifest-generate-paths annotation).
	Warning string
}

// Affected applies the affected-app rules to one app. changes are the change's files; isThisRepo tells which
// source repoURLs are the repository being changed (only their paths can be touched by the change).
//
// With the argocd.argoproj.io/manifest-generate-paths annotation, Argo CD's own rule decides
// (util/app/path/path.go GetSourceRefreshPaths + AppFilesHaveChanged, the check the repo-server's
// UpdateRevisionForPaths makes before reusing cached manifests). Without it, an app is affected when a changed
// file is one its base render read, appears in or disappears from a directory the render listed, or lies under
// a source path, a Helm value file, a file parameter or a ref source's path. A changed Application definition,
// a failed base render, and apps added or removed by the change are always affected.
func Affected(ev Evidence, changes []source.Change, isThisRepo func(string) bool) Verdict {
	switch {
	case ev.Base == nil && ev.Head == nil:
		return Verdict{}
	case ev.Base == nil:
		return Verdict{Affected: true, Reasons: []Reason{{Rule: RuleAdded}}}
	case ev.Head == nil:
		return Verdict{Affected: true, Reasons: []Reason{{Rule: RuleRemoved}}}
	}
	var v Verdict
	same := DefinitionEqual(ev.Base, ev.Head)
	if !same {
		v.Reasons = append(v.Reasons, Reason{Rule: RuleDefinition})
	}
	if ev.BaseRenderFailed {
		v.Reasons = append(v.Reasons, Reason{Rule: RuleBaseRenderFailed})
	}
	evidence := fileEvidence(ev, same, changes, isThisRepo)

	if paths, ok := generatePaths(ev.Head, isThisRepo); ok {
		files := source.Paths(changes)
		if len(files) > 0 && apppath.AppFilesHaveChanged(paths, files) {
			for _, f := range files {
				if apppath.AppFilesHaveChanged(paths, []string{f}) {
					v.Reasons = append(v.Reasons, Reason{Rule: RuleGeneratePaths, File: f})
				}
			}
		} else if len(evidence) > 0 {
			v.Warning = fmt.Sprintf("%s changed and feeds this app's manifests, but is outside its %s annotation: Argo CD keeps its cached manifests until a hard refresh",
				evidence[0].File, v1alpha1.AnnotationKeyManifestGeneratePaths)
		}
	} else {
		v.Reasons = append(v.Reasons, evidence...)
	}
	v.Affected = len(v.Reasons) > 0
	return v
}

// generatePaths returns the refresh paths of the manifest-generate-paths annotation over the app's sources in
// this repository; ok=false when the annotation does not apply: absent or empty, an app with a Helm-repository
// or OCI source (the controller regenerates those every time: controller/state.go CompareAppState checks the
// annotation only for other sources), or no path at all (AppFilesHaveChanged then always refreshes).
func generatePaths(app *v1alpha1.Application, isThisRepo func(string) bool) ([]string, bool) {
	if v := app.Annotations[v1alpha1.AnnotationKeyManifestGeneratePaths]; v == "" {
		return nil, false
	}
	for _, src := range app.Spec.GetSources() {
		if src.IsHelm() || src.IsOCI() {
			return nil, false
		}
	}
	var paths []string
	for _, src := range app.Spec.GetSources() {
		if !isThisRepo(src.RepoURL) {
			continue
		}
		paths = append(paths, apppath.GetSourceRefreshPaths(app, src)...)
	}
	return paths, len(paths) > 0
}

// fileEvidence lists the changed files that an app's render depends on, by the read-set and static rules. same
// tells that both sides have the same spec, hence the same static paths: the head's are not listed again (a file
// one of them matches, the base's list matches first).
func fileEvidence(ev Evidence, same bool, changes []source.Change, isThisRepo func(string) bool) []Reason {
	read := toSet(ev.ReadFiles)
	listed := toSet(ev.ReadDirs)
	var out []Reason
	seen := map[string]bool{}
	add := func(rule, file string) {
		if !seen[file] {
			seen[file] = true
			out = append(out, Reason{Rule: rule, File: file})
		}
	}
	static := staticPaths(ev.Base, isThisRepo)
	if !same {
		static = append(static, staticPaths(ev.Head, isThisRepo)...)
	}
	for _, c := range changes {
		for _, f := range []string{c.Path, c.OldPath} {
			if f == "" {
				continue
			}
			if read[f] {
				add(RuleReadFile, f)
				continue
			}
			if createdOrDeleted(c) && listed[path.Dir(f)] {
				add(RuleReadDir, f)
				continue
			}
			for _, sp := range static {
				if sp.matches(f) {
					add(sp.rule, f)
					break
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out
}

func createdOrDeleted(c source.Change) bool {
	switch c.Status {
	case "A", "D", "R", "C", "T":
		return true
	}
	return false
}

func toSet(list []string) map[string]bool {
	m := make(map[string]bool, len(list))
	for _, s := range list {
		m[s] = true
	}
	return m
}

// staticPath is a repository path an app depends on by its definition alone.
type staticPath struct {
	rule string
	path string // cleaned slash path relative to the repository root; "" = the whole repository
	glob bool   // path is a path.Match pattern
	dir  bool   // path is a directory: everything below it matches
}

func (s staticPath) matches(f string) bool {
	switch {
	case s.path == "":
		return true
	case s.glob:
		ok, _ := path.Match(s.path, f)
		return ok
	case s.dir:
		return f == s.path || len(f) > len(s.path) && f[len(s.path)] == '/' && strings.HasPrefix(f, s.path)
	default:
		return f == s.path
	}
}

// staticPaths lists the paths an Application names: each in-repo source's path, its Helm value files and file
// parameters (relative to the source path, or to a ref source's repository root for "$ref/..." files), and ref
// sources' paths.
func staticPaths(app *v1alpha1.Application, isThisRepo func(string) bool) []staticPath {
	if app == nil {
		return nil
	}
	sources := app.Spec.GetSources()
	refs := refSourcesOf(app)
	var out []staticPath
	for _, s := range sources {
		local := isThisRepo(s.RepoURL)
		if local && (s.Chart == "" || s.Path != "") {
			rule := RuleSourcePath
			if s.Ref != "" {
				rule = RuleRefSource
			}
			if s.Ref == "" || s.Path != "" {
				out = append(out, staticPath{rule: rule, path: cleanRel(s.Path), dir: true})
			}
		}
		if s.Helm == nil {
			continue
		}
		files := append([]string(nil), s.Helm.ValueFiles...)
		for _, fp := range s.Helm.FileParameters {
			files = append(files, fp.Path)
		}
		for _, vf := range files {
			if ref, isRef := refs.lookup(vf); isRef {
				if ref.known && isThisRepo(ref.src.RepoURL) {
					out = append(out, staticPath{rule: RuleRefSource, path: ref.rel, glob: hasGlob(ref.rel)})
				}
				continue
			}
			if !local || isURL(vf) {
				continue
			}
			p := cleanRel(path.Join(s.Path, vf))
			out = append(out, staticPath{rule: RuleValueFile, path: p, glob: hasGlob(p)})
		}
	}
	return out
}

func cleanRel(p string) string {
	p = path.Clean("/" + p)
	return strings.TrimPrefix(p, "/")
}

func hasGlob(p string) bool { return strings.ContainsAny(p, "*?[") }

func isURL(s string) bool { return strings.Contains(s, "://") }
