package discover

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/fleetwave/fleetwave/internal/testkit/fleetgen"
)

// fleetDocuments are the YAML documents discovery parses in a generated fleet of clusters clusters
// (internal/testkit/fleetgen): every Application file and cluster Secret, split as scanFile splits them.
func fleetDocuments(tb testing.TB, clusters int) [][]byte {
	tb.Helper()
	dir := tb.TempDir()
	if err := fleetgen.Write(dir, "https://github.com/acme/fleet.git", clusters); err != nil {
		tb.Fatal(err)
	}
	var docs [][]byte
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".yaml" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !bytes.Contains(data, []byte("argoproj.io")) && !bytes.Contains(data, []byte(secretTypeLabel)) {
			return nil // what scanFile does not parse
		}
		split, err := splitDocuments(data)
		if err != nil {
			return err
		}
		docs = append(docs, split...)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return docs
}

// BenchmarkDiscoveryYAML compares discovery's two YAML paths on the Application manifests and cluster Secrets of
// a generated fleet: documentObject (plainyaml first, blockyaml for what it refuses) against blockObject
// (blockyaml alone), which is what discovery would run without plainyaml. Both make the same objects and JSON
// (checked first). Figures are in docs/figures.md.
func BenchmarkDiscoveryYAML(b *testing.B) {
	docs := fleetDocuments(b, 100)
	var size int64
	for _, doc := range docs {
		size += int64(len(doc))
		_, js1, err1 := documentObject(doc)
		_, js2, err2 := blockObject(doc)
		if (err1 == nil) != (err2 == nil) || !bytes.Equal(js1, js2) {
			b.Fatalf("the two paths differ on\n%s\nplainyaml: %s %v\nblockyaml: %s %v", doc, js1, err1, js2, err2)
		}
	}
	for _, bc := range []struct {
		name   string
		decode func([]byte) (map[string]any, []byte, error)
	}{{"plainyaml", documentObject}, {"blockyaml", blockObject}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				for _, doc := range docs {
					if _, _, err := bc.decode(doc); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(docs)), "ns/doc")
		})
	}
}
