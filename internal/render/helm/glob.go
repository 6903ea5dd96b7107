package helm

import (
	"errors"
	"io/fs"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/fleetwave/fleetwave/internal/render/repofs"
)

// glob is doublestar.FilepathGlob (the function reposerver/repository/repository.go getResolvedValueFiles uses
// on value-file patterns) over a confined checkout: split the pattern into a literal base and a pattern, glob
// the base directory, join. Matches come back in lexical order, directory by directory, as from os.DirFS.
func glob(fsys *repofs.FS, pattern string) ([]string, error) {
	pattern = path.Clean(pattern)
	base, f := doublestar.SplitPattern(pattern)
	if f == "" || f == "." || f == ".." {
		// FilepathGlob's special case: no meta characters left, the (unescaped) path itself if it exists.
		if !doublestar.ValidatePathPattern(pattern) {
			return nil, doublestar.ErrBadPattern
		}
		p := unescapeMeta(pattern)
		if _, err := fsys.Stat(p); err != nil {
			return nil, nil
		}
		return []string{p}, nil
	}
	matches, err := doublestar.Glob(globFS{fsys: fsys, base: base}, f)
	if err != nil {
		return nil, err
	}
	for i := range matches {
		matches[i] = path.Join(base, matches[i])
	}
	return matches, nil
}

var metaReplacer = strings.NewReplacer("\\*", "*", "\\?", "?", "\\[", "[", "\\]", "]", "\\{", "{", "\\}", "}")

func unescapeMeta(p string) string { return metaReplacer.Replace(p) }

// globFS adapts a checkout subtree to the io/fs interfaces doublestar uses (ReadDir, Stat). Every listing goes
// through repofs, so it is confined and recorded.
type globFS struct {
	fsys *repofs.FS
	base string
}

func (g globFS) Open(name string) (fs.File, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: errors.ErrUnsupported}
}

func (g globFS) ReadDir(name string) ([]fs.DirEntry, error) {
	return g.fsys.ReadDir(path.Join(g.base, name))
}

func (g globFS) Stat(name string) (fs.FileInfo, error) {
	return g.fsys.Stat(path.Join(g.base, name))
}
