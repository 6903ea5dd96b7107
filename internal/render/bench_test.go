package render_test

import (
	"path/filepath"
	"testing"

	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/testkit/sharedtest"
)

// BenchmarkRenderLargeChart is what `fleetwave render` does in-process for the corpus's largest chart,
// kube-prometheus-stack (147 objects, 5 MB of YAML, mostly CRDs), as Argo CD 3.4 (helm 3): render, then write
// the YAML stream. cold= renders with a new Renderer each time (no chart or output cache), as a fresh process
// does; warm= reuses one.
func BenchmarkRenderLargeChart(b *testing.B) {
	dir := filepath.Join(sharedtest.Fidelity(b), "cases", "helm-kube-prometheus-stack")
	run := func(b *testing.B, r func() *render.Renderer) {
		for i := 0; i < b.N; i++ {
			got, err := renderCaseAs(r(), dir, "3.4")
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(got)))
		}
	}
	b.Run("cold", func(b *testing.B) { run(b, func() *render.Renderer { return render.New(render.Options{}) }) })
	warm := render.New(render.Options{})
	b.Run("warm", func(b *testing.B) { run(b, func() *render.Renderer { return warm }) })
}
