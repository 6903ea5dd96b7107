package helm_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/fleetwave/fleetwave/internal/render/helm"
	"github.com/fleetwave/fleetwave/internal/sharedtest"
)

// BenchmarkTemplateCorpus renders each Helm case of the fidelity corpus on a warm cache (skipped without the
// corpus). Compare with -bench TemplateCorpus/cold= for cold renders.
func BenchmarkTemplateCorpus(b *testing.B) {
	for _, dir := range sharedtest.FidelityCaseDirs(b) {
		name := filepath.Base(dir)
		tc := readCase(b, dir, renderEnv{})
		if !tc.isHelm() {
			continue
		}
		in, _ := tc.input(b)
		e := helm.New()
		if _, err := e.Template(context.Background(), in); err != nil {
			continue // refusals (where Argo CD refuses too) are not benchmarked
		}
		b.Run("warm="+name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := e.Template(context.Background(), in); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("cold="+name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := helm.New().Template(context.Background(), in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
