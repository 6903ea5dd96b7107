package kustomize

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/fleetwave/fleetwave/internal/render/repofs"
)

// vroot is the absolute path at which the checkout appears to kustomize. kustomize works with absolute paths
// (loader roots, the load restrictor); the real location of the checkout never reaches kustomize, so it never
// appears in an error message or an origin annotation.
const vroot = "/repo"

// errReadOnly is returned by every mutating filesys.FileSystem method: a build never writes into the checkout.
var errReadOnly = errors.New("the repository is read-only during a build")

// buildFS is the kyaml filesys.FileSystem kustomize builds on. It behaves like kustomize's fsOnDisk with the
// working directory at the repository root (Argo CD runs `kustomize build <path>` with cmd.Dir = repoRoot,
// util/kustomize/kustomize.go), except that:
//   - every path is confined to the checkout through repofs (no "..", absolute path or symbolic link leaving it),
//     and every file read is recorded;
//   - an in-memory overlay holds the edited kustomization and the rendered Helm charts, keyed by their
//     symlink-resolved repository-relative path, so nothing is ever written into the checkout;
//   - each kustomization file read is first vetted by the check hook (remote references, Helm charts that were
//     not rendered in-process);
//   - a refusal is remembered, so that a build which tolerated the failed access still fails (Argo CD refuses a
//     checkout with out-of-bounds symbolic links outright).
type buildFS struct {
	repo    *view  // the checkout, with fetched remote bases mounted
	cwd     string // repository-relative working directory for relative paths ("." for the root)
	overlay map[string][]byte
	// checkKustomization vets a kustomization file before kustomize sees it: the directory it was read from (the
	// kustomization root, resolved), the file (resolved) and its content.
	checkKustomization func(dir, file string, data []byte) error
	// aliases is the build's budget of YAML alias expansion (nil: the per-file rule only). Every file read is
	// checked before kustomize sees it: kyaml expands aliases without limit (RNode.DeAnchor).
	aliases *repofs.AliasBudget

	mu      sync.Mutex
	refusal error
}

var _ filesys.FileSystem = (*buildFS)(nil)

func newBuildFS(repo *view, overlay map[string][]byte) *buildFS {
	return &buildFS{repo: repo, cwd: ".", overlay: overlay}
}

// firstRefusal returns the first confinement refusal met during the build, if any.
func (f *buildFS) firstRefusal() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refusal
}

func (f *buildFS) noteRefusal(err error) error {
	var r *repofs.Refusal
	if errors.As(err, &r) {
		f.mu.Lock()
		if f.refusal == nil {
			f.refusal = err
		}
		f.mu.Unlock()
	}
	return err
}

// virtual returns the absolute path kustomize sees for a repository-relative path.
func virtual(rel string) string {
	if rel == "." || rel == "" {
		return vroot
	}
	return vroot + "/" + rel
}

// rel maps a path as kustomize passes it (absolute under vroot, or relative to the working directory: the
// repository root for Argo CD's kustomize build, the application path for its kustomize edit commands) to its
// cleaned repository-relative form.
func (f *buildFS) rel(p string) (string, error) {
	s := filepath.ToSlash(p)
	if !path.IsAbs(s) {
		s = path.Join(virtual(f.cwd), s)
	}
	s = path.Clean(s)
	switch {
	case s == vroot:
		return ".", nil
	case strings.HasPrefix(s, vroot+"/"):
		return s[len(vroot)+1:], nil
	}
	shown := p
	if !path.IsAbs(filepath.ToSlash(p)) {
		shown = s
	}
	return "", f.noteRefusal(&repofs.Refusal{Rule: repofs.RulePathEscape, Path: shown, Detail: "path leaves the repository root"})
}

// resolve returns the symlink-resolved repository-relative form of p (p need not exist).
func (f *buildFS) resolve(p string) (string, error) {
	r, err := f.rel(p)
	if err != nil {
		return "", err
	}
	abs, err := f.repo.Resolve(r)
	if err != nil {
		return "", f.noteRefusal(err)
	}
	rr, err := f.repo.Rel(abs)
	if err != nil {
		return "", f.noteRefusal(err)
	}
	return rr, nil
}

func (f *buildFS) overlayFile(resolved string) ([]byte, bool) {
	b, ok := f.overlay[resolved]
	return b, ok
}

// CleanedAbs mirrors fsOnDisk.CleanedAbs: the symlink-resolved directory, plus the file name when path is a file.
func (f *buildFS) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	rr, err := f.resolve(p)
	if err != nil {
		return "", "", err
	}
	if _, ok := f.overlayFile(rr); ok {
		return filesys.ConfirmedDir(virtual(path.Dir(rr))), path.Base(rr), nil
	}
	st, err := f.repo.Stat(rr)
	if err != nil {
		return "", "", fmt.Errorf("evalsymlink failure on '%s' : %w", p, f.noteRefusal(err))
	}
	if st.IsDir() {
		return filesys.ConfirmedDir(virtual(rr)), "", nil
	}
	if rr == "." {
		return "", "", fmt.Errorf("'%s' is not a directory", p)
	}
	return filesys.ConfirmedDir(virtual(path.Dir(rr))), path.Base(rr), nil
}

// Exists reports whether p exists (fsOnDisk uses os.Stat, which follows symbolic links).
func (f *buildFS) Exists(p string) bool {
	rr, err := f.resolve(p)
	if err != nil {
		return false
	}
	if _, ok := f.overlayFile(rr); ok {
		return true
	}
	_, err = f.repo.Stat(rr)
	if err != nil {
		f.noteRefusal(err)
	}
	return err == nil
}

// IsDir reports whether p is a directory.
func (f *buildFS) IsDir(p string) bool {
	rr, err := f.resolve(p)
	if err != nil {
		return false
	}
	if _, ok := f.overlayFile(rr); ok {
		return false
	}
	st, err := f.repo.Stat(rr)
	if err != nil {
		f.noteRefusal(err)
		return false
	}
	return st.IsDir()
}

// ReadFile reads p from the overlay or the checkout. Kustomization files are vetted before they are returned.
func (f *buildFS) ReadFile(p string) ([]byte, error) {
	r, err := f.rel(p)
	if err != nil {
		return nil, err
	}
	rr, err := f.resolve(p)
	if err != nil {
		return nil, err
	}
	b, ok := f.overlayFile(rr)
	if !ok {
		b, err = f.repo.ReadFile(r)
		if err != nil {
			return nil, f.noteRefusal(err)
		}
	}
	if err := f.checkAliases(rr, b); err != nil {
		return nil, err
	}
	if f.checkKustomization != nil && isKustomizationName(path.Base(r)) {
		dir, err := f.resolve(virtual(path.Dir(r)))
		if err != nil {
			return nil, err
		}
		if err := f.checkKustomization(dir, rr, b); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// checkAliases refuses (and remembers the refusal of) a file whose YAML aliases expand too far.
func (f *buildFS) checkAliases(resolved string, data []byte) error {
	return f.noteRefusal(repofs.CheckYAMLAliases(resolved, data, f.aliases))
}

// ReadDir lists p, including overlay files.
func (f *buildFS) ReadDir(p string) ([]string, error) {
	r, err := f.rel(p)
	if err != nil {
		return nil, err
	}
	ents, err := f.repo.ReadDir(r)
	if err != nil {
		return nil, f.noteRefusal(err)
	}
	names := make([]string, 0, len(ents))
	seen := map[string]bool{}
	for _, e := range ents {
		names = append(names, e.Name())
		seen[e.Name()] = true
	}
	if rr, err := f.resolve(p); err == nil {
		for k := range f.overlay {
			if path.Dir(k) == rr && !seen[path.Base(k)] {
				names = append(names, path.Base(k))
			}
		}
	}
	sort.Strings(names)
	return names, nil
}

// Glob mirrors fsOnDisk.Glob: filepath.Glob semantics, hidden files dropped unless the pattern names one.
func (f *buildFS) Glob(pattern string) ([]string, error) {
	all, err := f.glob(pattern, 0)
	if err != nil {
		return nil, err
	}
	if filesys.IsHiddenFilePath(pattern) {
		return all, nil
	}
	return filesys.RemoveHiddenFiles(all), nil
}

// glob ports path/filepath.Glob over the confined view (paths stay as the caller wrote them).
func (f *buildFS) glob(pattern string, depth int) ([]string, error) {
	if _, err := filepath.Match(pattern, ""); err != nil {
		return nil, err
	}
	if depth > 10000 {
		return nil, filepath.ErrBadPattern
	}
	if !hasGlobMeta(pattern) {
		if !f.Exists(pattern) {
			return nil, nil
		}
		return []string{pattern}, nil
	}
	dir, file := filepath.Split(pattern)
	dir = cleanGlobPath(dir)
	if !hasGlobMeta(dir) {
		return f.globDir(dir, file, nil)
	}
	if dir == pattern {
		return nil, filepath.ErrBadPattern
	}
	ds, err := f.glob(dir, depth+1)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range ds {
		out, err = f.globDir(d, file, out)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func (f *buildFS) globDir(dir, pattern string, matches []string) ([]string, error) {
	if !f.IsDir(dir) {
		return matches, nil
	}
	names, err := f.ReadDir(dir)
	if err != nil {
		return matches, nil //nolint:nilerr // filepath.Glob ignores I/O errors
	}
	for _, n := range names {
		ok, err := filepath.Match(pattern, n)
		if err != nil {
			return matches, err
		}
		if ok {
			matches = append(matches, filepath.Join(dir, n))
		}
	}
	return matches, nil
}

func hasGlobMeta(p string) bool { return strings.ContainsAny(p, `*?[\`) }

func cleanGlobPath(p string) string {
	switch p {
	case "":
		return "."
	case "/":
		return p
	default:
		return p[:len(p)-1]
	}
}

// Walk is not used by kustomize builds; it walks the confined view for completeness.
func (f *buildFS) Walk(p string, fn filepath.WalkFunc) error {
	rr, err := f.resolve(p)
	if err != nil {
		return fn(p, nil, err)
	}
	st, err := f.repo.Stat(rr)
	if err != nil {
		return fn(p, nil, err)
	}
	return f.walk(p, rr, st, fn)
}

func (f *buildFS) walk(p, rr string, st fs.FileInfo, fn filepath.WalkFunc) error {
	if err := fn(p, st, nil); err != nil || !st.IsDir() {
		if errors.Is(err, filepath.SkipDir) {
			return nil
		}
		return err
	}
	ents, err := f.repo.ReadDir(rr)
	if err != nil {
		return fn(p, st, err)
	}
	for _, e := range ents {
		cp, cr := filepath.Join(p, e.Name()), path.Join(rr, e.Name())
		cst, err := f.repo.Stat(cr)
		if err != nil {
			if err := fn(cp, nil, err); err != nil {
				return err
			}
			continue
		}
		if err := f.walk(cp, cr, cst, fn); err != nil {
			return err
		}
	}
	return nil
}

// Create, Mkdir, MkdirAll, RemoveAll, WriteFile and Open are refused: kustomize builds only read.
func (f *buildFS) Create(string) (filesys.File, error) { return nil, errReadOnly }
func (f *buildFS) Mkdir(string) error                  { return errReadOnly }
func (f *buildFS) MkdirAll(string) error               { return errReadOnly }
func (f *buildFS) RemoveAll(string) error              { return errReadOnly }
func (f *buildFS) WriteFile(string, []byte) error      { return errReadOnly }
func (f *buildFS) Open(p string) (filesys.File, error) { return nil, errReadOnly }
