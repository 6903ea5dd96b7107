package helm_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/fleetwave/fleetwave/internal/render/helm"
	"github.com/fleetwave/fleetwave/internal/testkit/sharedtest"
)

// BenchmarkTemplateCorpus renders each Helm case of the fidelity corpus on a warm cache (skipped without the
// corpus), as Argo CD 3.6 (helm 4) and as 3.4 (helm 3). Compare with -bench TemplateCorpus/.*cold= for cold renders.
func BenchmarkTemplateCorpus(b *testing.B) {
	for _, argocdVersion := range []string{"3.6", "3.4"} {
		for _, dir := range sharedtest.FidelityCaseDirs(b) {
			name := filepath.Base(dir)
			tc := readCase(b, dir, renderEnv{})
			tc.env.ArgoCDVersion = argocdVersion
			if !tc.isHelm() {
				continue
			}
			in, _ := tc.input(b)
			e := helm.New()
			if _, err := e.Template(context.Background(), in); err != nil {
				continue // refusals (where Argo CD refuses too) are not benchmarked
			}
			b.Run("argocd-"+argocdVersion+"/warm="+name, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if _, err := e.Template(context.Background(), in); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("argocd-"+argocdVersion+"/cold="+name, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if _, err := helm.New().Template(context.Background(), in); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
