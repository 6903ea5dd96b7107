package helm

import (
	"os"
	"path/filepath"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/render/helm/helmtemplate"
	"github.com/fleetwave/fleetwave/internal/testkit/sharedtest"
)

// kubePrometheusStackTemplates is the engine's output for the fidelity corpus's kube-prometheus-stack case (its
// chart, its Application's values, release kps in monitoring), what SortManifests sorts; the case is skipped
// without the corpus.
func kubePrometheusStackTemplates(tb testing.TB) map[string]string {
	tb.Helper()
	dir := filepath.Join(sharedtest.Fidelity(tb), "cases", "helm-kube-prometheus-stack")
	ch, err := loader.Load(filepath.Join(dir, "src", "kube-prometheus-stack"))
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "app.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	var app struct {
		Spec struct {
			Source struct {
				Helm struct {
					ValuesObject map[string]interface{} `json:"valuesObject"`
				} `json:"helm"`
			} `json:"source"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &app); err != nil {
		tb.Fatal(err)
	}
	vals := app.Spec.Source.Helm.ValuesObject
	if err := chartutil.ProcessDependenciesWithMerge(ch, vals); err != nil {
		tb.Fatal(err)
	}
	options := chartutil.ReleaseOptions{Name: "kps", Namespace: "monitoring", Revision: 1, IsInstall: true}
	top, err := chartutil.ToRenderValues(ch, vals, options, chartutil.DefaultCapabilities)
	if err != nil {
		tb.Fatal(err)
	}
	files, err := engine.Render(ch, top)
	if err != nil {
		tb.Fatal(err)
	}
	helmtemplate.DropNotes(files)
	return files
}

// TestSortManifestsKubePrometheusStack holds the port to Helm 3's SortManifests on a large chart's output.
func TestSortManifestsKubePrometheusStack(t *testing.T) {
	if testing.Short() {
		t.Skip("renders a large chart")
	}
	files := kubePrometheusStackTemplates(t)
	hooks, manifests, _ := checkSortManifests(t, files)
	if len(manifests) < 100 || len(hooks) == 0 {
		t.Errorf("%d manifests and %d hooks: not the large chart's output", len(manifests), len(hooks))
	}
}

// BenchmarkSortManifests compares the port (port) with Helm 3's SortManifests (sdk) on kube-prometheus-stack's
// templates.
func BenchmarkSortManifests(b *testing.B) {
	files := kubePrometheusStackTemplates(b)
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, _, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("port", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, _, err := sortManifests(files); err != nil {
				b.Fatal(err)
			}
		}
	})
}
