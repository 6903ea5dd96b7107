package isolate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/fleetwave/fleetwave/internal/kit/yamlcodec/manifestyaml"
	"github.com/fleetwave/fleetwave/internal/testkit/sharedtest"
)

// BenchmarkDecodeObjects decodes kube-prometheus-stack's manifests (the fidelity corpus's, 5 MB of JSON) as
// they cross the worker's pipe: decodeObject against apimachinery's json.Unmarshal, which it replaced.
func BenchmarkDecodeObjects(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(sharedtest.Fidelity(b), "cases", "helm-kube-prometheus-stack", "expected.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	objs, err := manifestyaml.Split(data)
	if err != nil {
		b.Fatal(err)
	}
	var raws [][]byte
	size := 0
	for _, o := range objs {
		raw, err := json.Marshal(o.Object)
		if err != nil {
			b.Fatal(err)
		}
		raws = append(raws, raw)
		size += len(raw)
	}
	b.Run("jsontext", func(b *testing.B) {
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			for _, raw := range raws {
				if _, err := decodeObject(raw); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("apimachinery", func(b *testing.B) {
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			for _, raw := range raws {
				var m map[string]any
				if err := utiljson.Unmarshal(raw, &m); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
