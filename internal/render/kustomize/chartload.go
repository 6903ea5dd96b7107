package kustomize

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/ignore"
)

var utf8bom = []byte{0xEF, 0xBB, 0xBF}

// loadChartDir loads the chart in the repository directory dir the way helm's loader.LoadDir does
// (helm.sh/helm/v3@v3.19.4 pkg/chart/loader/directory.go): .helmignore rules plus the defaults, a walk in lexical
// order that follows symbolic links (internal/sympath), irregular files refused, a UTF-8 byte-order mark dropped.
// Every read goes through repofs, so the walk cannot leave the checkout and every file is recorded.
func loadChartDir(repo *view, dir string) (*chart.Chart, error) {
	rules := ignore.Empty()
	ifile := path.Join(dir, ignore.HelmIgnore)
	if repo.Exists(ifile) {
		b, err := repo.ReadFile(ifile)
		if err != nil {
			return nil, err
		}
		r, err := ignore.Parse(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		rules = r
	}
	rules.AddDefaults()

	var files []*loader.BufferedFile
	var walk func(rel, n string, fi fs.FileInfo) error
	walk = func(rel, n string, fi fs.FileInfo) error {
		if fi.IsDir() {
			if n != "" && rules.Ignore(n, fi) {
				return nil // filepath.SkipDir
			}
			ents, err := repo.ReadDir(rel)
			if err != nil {
				return err
			}
			for _, e := range ents {
				crel := path.Join(rel, e.Name())
				cn := e.Name()
				if n != "" {
					cn = n + "/" + e.Name()
				}
				cfi, err := repo.Stat(crel) // follows symbolic links, confined to the checkout
				if err != nil {
					if e.Type()&fs.ModeSymlink != 0 {
						return fmt.Errorf("error evaluating symlink %s: %w", crel, err)
					}
					return err
				}
				if err := walk(crel, cn, cfi); err != nil {
					return err
				}
			}
			return nil
		}
		if rules.Ignore(n, fi) {
			return nil
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("cannot load irregular file %s as it has file mode type bits set", rel)
		}
		if fi.Size() > loader.MaxDecompressedFileSize {
			return fmt.Errorf("chart file %q is larger than the maximum file size %d", fi.Name(), loader.MaxDecompressedFileSize)
		}
		data, err := repo.ReadFile(rel)
		if err != nil {
			return fmt.Errorf("error reading %s: %w", n, err)
		}
		files = append(files, &loader.BufferedFile{Name: n, Data: bytes.TrimPrefix(data, utf8bom)})
		return nil
	}
	st, err := repo.Stat(dir)
	if err != nil {
		return nil, err
	}
	if err := walk(dir, "", st); err != nil {
		return &chart.Chart{}, err
	}
	return loader.LoadFiles(files)
}
