package helm_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/fleetwave/fleetwave/internal/render/helm"
)

// BenchmarkTemplateCorpus renders each Helm case of the fidelity corpus on a warm cache (skipped without the
// corpus). Compare with -bench TemplateCorpus/cold= for cold renders.
func BenchmarkTemplateCorpus(b *testing.B) {
	root := fidelityDir()
	cases, err := os.ReadDir(filepath.Join(root, "cases"))
	if err != nil {
		b.Skipf("fidelity corpus not found at %s: %v", root, err)
	}
	for _, c := range cases {
		dir := filepath.Join(root, "cases", c.Name())
		if _, err := os.Stat(filepath.Join(dir, "app.yaml")); err != nil {
			continue
		}
		tc := readCase(b, dir, renderEnv{})
		if !tc.isHelm() {
			continue
		}
		in, _ := tc.input(b)
		e := helm.New()
		if _, err := e.Template(context.Background(), in); err != nil {
			continue // refusals (expected errors, incomplete cases) are not benchmarked
		}
		b.Run("warm="+c.Name(), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := e.Template(context.Background(), in); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("cold="+c.Name(), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := helm.New().Template(context.Background(), in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
