package blockyaml_test

import (
	"os"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v2"

	"github.com/fleetwave/fleetwave/internal/kit/yamlcodec/blockyaml"
)

// BenchmarkDecode compares Decode with yaml.v2's Unmarshal on the test documents it decodes (B/s: bytes of YAML
// decoded). FLEETWAVE_BENCH_YAML names other files to decode instead (a chart's CRDs, say).
func BenchmarkDecode(b *testing.B) {
	files, _ := filepath.Glob("testdata/*.yaml")
	if g := os.Getenv("FLEETWAVE_BENCH_YAML"); g != "" {
		files, _ = filepath.Glob(g)
	}
	var docs [][]byte
	size := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := blockyaml.Decode(data); ok {
			docs = append(docs, data)
			size += len(data)
		}
	}
	b.Run("blockyaml", func(b *testing.B) {
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			for _, d := range docs {
				if _, ok := blockyaml.Decode(d); !ok {
					var v interface{}
					_ = yaml.Unmarshal(d, &v)
				}
			}
		}
	})
	b.Run("yaml.v2", func(b *testing.B) {
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			for _, d := range docs {
				var v interface{}
				_ = yaml.Unmarshal(d, &v)
			}
		}
	})
}
