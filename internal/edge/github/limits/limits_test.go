package limits

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// statedLimit is one of GitHub's size limits written as a number (65535, 65536, 65_535, ...).
var statedLimit = regexp.MustCompile(`\b65_?53[56]\b`)

// TestLimitsStatedOnce: no Go code of the module but this package writes GitHub's size limits as numbers; the
// adapter, the presentations and the fake GitHub use these constants.
func TestLimitsStatedOnce(t *testing.T) {
	root := filepath.Join("..", "..", "..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || filepath.Dir(path) == filepath.Join(root, "internal", "edge", "github", "limits") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			if code, _, _ := strings.Cut(line, "//"); statedLimit.MatchString(code) {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s:%d states a GitHub limit as a number: use internal/edge/github/limits: %s", rel, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
