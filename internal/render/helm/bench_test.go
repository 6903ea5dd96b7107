package helm

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/render/repofs/repofstest"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
)

func guestbookInput(b testing.TB) Input {
	return Input{
		FS: repofstest.Open(b, filepath.Join("testdata", "bench")), AppPath: "guestbook", AppName: "guestbook", Namespace: "default",
		KubeVersion: "v1.30.0", APIVersions: []string{"v1", "apps/v1", "networking.k8s.io/v1"},
		Helm: &v1alpha1.ApplicationSourceHelm{
			Values:     "replicaCount: 2\ningress:\n  enabled: true\n",
			Parameters: []v1alpha1.HelmParameter{{Name: "image.tag", Value: "v6"}},
		},
	}
}

// BenchmarkTemplateGuestbook renders a small chart on a warm cache: files are read and hashed (and recorded),
// values merged, and the cached result is copied out.
func BenchmarkTemplateGuestbook(b *testing.B) {
	e := New()
	in := guestbookInput(b)
	if objs, err := e.Template(context.Background(), in); err != nil || len(objs) != 3 {
		b.Fatalf("%d objects, %v", len(objs), err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.Template(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTemplateGuestbookCold parses the chart every time (a new engine per render), for comparison.
func BenchmarkTemplateGuestbookCold(b *testing.B) {
	in := guestbookInput(b)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := New().Template(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzTemplateValues feeds arbitrary values, parameters and value-file names to the engine: it may refuse, it
// must not panic or escape the checkout.
func FuzzTemplateValues(f *testing.F) {
	dir := filetest.Tree(f, echoChart(map[string]string{"app/values-a.yaml": "a: 1\n", "outside.yaml": "o: 1\n"}))
	fsys := repofstest.Open(f, filepath.Join(dir, "app"))
	f.Add("a: 1\nb: [1, 2]\n", "x.y[0]", "v,w", false, "values-a.yaml")
	f.Add("{}", "list", "{a,b}", true, "../outside.yaml")
	f.Add("- not a map", "a", `\,`, false, "*.yaml")
	f.Add("a: &x [*x]", "a.b.c", "$ARGOCD_APP_NAME", true, "$ref/x.yaml")
	f.Add("", "a[70000]", "1", false, "https://example.com/v.yaml")
	e := New()
	f.Fuzz(func(t *testing.T, values, name, value string, forceString bool, valueFile string) {
		in := Input{FS: fsys, AppPath: ".", AppName: "fuzz", Namespace: "ns",
			Env: &v1alpha1.Env{{Name: "ARGOCD_APP_NAME", Value: "fuzz"}},
			Helm: &v1alpha1.ApplicationSourceHelm{
				Values:                  values,
				ValueFiles:              []string{valueFile},
				IgnoreMissingValueFiles: true,
				Parameters:              []v1alpha1.HelmParameter{{Name: name, Value: value, ForceString: forceString}},
			}}
		_, _ = e.Template(context.Background(), in)
	})
}

// BenchmarkTemplateGuestbookParsedCache renders every time from the cached parsed chart (no output cache).
func BenchmarkTemplateGuestbookParsedCache(b *testing.B) {
	e := New(WithOutputCache(-1, 0))
	in := guestbookInput(b)
	if _, err := e.Template(context.Background(), in); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.Template(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
}
