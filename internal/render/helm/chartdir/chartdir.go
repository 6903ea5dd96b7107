// Package chartdir reads a chart directory out of a confined checkout into the files helm's loader parses, as
// `helm template <dir>` reads it: for Argo CD's Helm sources (internal/render/helm) and for Kustomize's
// helmCharts (internal/render/kustomize) alike.
package chartdir

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/ignore"
)

// FS is the checkout a chart is read from: repofs.FS, or Kustomize's view over several. Names are slash paths
// from its root; Stat follows symbolic links, and refuses those that leave the checkout.
type FS interface {
	Stat(name string) (fs.FileInfo, error)
	ReadFile(name string) ([]byte, error)
	ReadDir(name string) ([]fs.DirEntry, error)
}

// Limits bound what one chart directory may hold; helm's own per-file limit (loader.MaxDecompressedFileSize)
// applies besides.
type Limits struct {
	MaxFiles int   // files in the tree, subcharts included
	MaxBytes int64 // their total size
	MaxDepth int   // directory nesting (a symbolic link loop ends here)
}

// DefaultLimits are 20,000 files, 100 MiB (helm's MaxDecompressedChartSize) and 64 levels.
var DefaultLimits = Limits{MaxFiles: 20000, MaxBytes: 100 << 20, MaxDepth: 64}

var utf8bom = []byte{0xEF, 0xBB, 0xBF}

// Read is helm's pkg/chart/loader/directory.go LoadDir up to LoadFiles (helm.sh/helm/v3@v3.19.4), over a
// confined checkout: the top-level .helmignore plus the default rule (templates/.?*), a walk in lexical order
// that follows symbolic links (internal/sympath.Walk), ignored directories skipped whole, irregular and
// oversized files refused, UTF-8 byte-order marks dropped. File names are relative to dir. Every file read and
// directory listed goes through fsys (and is recorded by a repofs.FS), whose errors, which name the path, are
// returned as they are.
func Read(fsys FS, dir string, lim Limits) ([]*loader.BufferedFile, error) {
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
		if depth > lim.MaxDepth {
			return fmt.Errorf("%s: directories nested deeper than %d (symbolic link loop?)", path.Join(dir, rel), lim.MaxDepth)
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
			if len(files) >= lim.MaxFiles {
				return fmt.Errorf("chart %s has more than %d files", dir, lim.MaxFiles)
			}
			data, err := fsys.ReadFile(full)
			if err != nil {
				return err
			}
			if int64(len(data)) > loader.MaxDecompressedFileSize {
				return fmt.Errorf("chart file %q is larger than the maximum file size %d", full, loader.MaxDecompressedFileSize)
			}
			if total += int64(len(data)); total > lim.MaxBytes {
				return fmt.Errorf("chart %s is larger than %d bytes", dir, lim.MaxBytes)
			}
			files = append(files, &loader.BufferedFile{Name: n, Data: bytes.TrimPrefix(data, utf8bom)})
		}
		return nil
	}
	if err := walk("", 0); err != nil {
		return nil, err
	}
	return files, nil
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
