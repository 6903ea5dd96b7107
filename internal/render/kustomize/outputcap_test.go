package kustomize

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/render/outputcap"
	"github.com/fleetwave/fleetwave/internal/render/repofs/repofstest"
	"github.com/fleetwave/fleetwave/internal/render/target"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
)

// capOverlay is a kustomization of n ConfigMaps, each with a value of size bytes.
func capOverlay(n, size int) map[string]string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c%d}\ndata: {x: %s}\n", i, strings.Repeat("x", size))
	}
	return map[string]string{"app/kustomization.yaml": "resources: [cms.yaml]\n", "app/cms.yaml": b.String()}
}

// encodedSize is the size of capOverlay's build as kustomize writes it (keys sorted, "---" between objects).
func encodedSize(n, size int) int64 {
	total := 0
	for i := range n {
		if i > 0 {
			total += len("---\n")
		}
		total += len(fmt.Sprintf("apiVersion: v1\ndata:\n  x: %s\nkind: ConfigMap\nmetadata:\n  name: c%d\n", strings.Repeat("x", size), i))
	}
	return int64(total)
}

// TestOutputCaps: a build just over a cap is refused with the cap's rule once krusty returns its ResMap, before
// the text is split; one at both caps builds.
func TestOutputCaps(t *testing.T) {
	at := encodedSize(10, 100)
	for _, tc := range []struct {
		name    string
		n, size int
		caps    outputcap.Limits
		want    string // "" builds
	}{
		{"at both caps", 10, 100, outputcap.Limits{MaxBytes: at, MaxDocuments: 10}, ""},
		{"one object over", 11, 1, outputcap.Limits{MaxBytes: at, MaxDocuments: 10}, "refused (document-count): more than 10 objects"},
		{"one byte over", 10, 100, outputcap.Limits{MaxBytes: at - 1, MaxDocuments: 10}, fmt.Sprintf("refused (output-size): manifests exceed %d bytes", at-1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := repofstest.Open(t, filetest.Tree(t, capOverlay(tc.n, tc.size)))
			objs, err := New().Build(context.Background(), Input{FS: fsys, AppPath: "app", Output: tc.caps})
			if tc.want == "" {
				if err != nil || len(objs) != tc.n {
					t.Fatalf("%d objects, %v; want %d", len(objs), err, tc.n)
				}
				return
			}
			var ex *outputcap.Exceeded
			if err == nil || !errors.As(err, &ex) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "kustomize build app: ") {
				t.Fatalf("err = %v; want %q naming the kustomization", err, tc.want)
			}
		})
	}
}

// TestOutputCapsSpareMemory measures the bytes allocated by a build refused by the object cap on its ResMap,
// against the same build encoded and split into objects (what render.go counted before).
func TestOutputCapsSpareMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds thousands of objects")
	}
	fsys := repofstest.Open(t, filetest.Tree(t, capOverlay(600, 10)))
	measure := func(caps outputcap.Limits) (uint64, error) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := New().Build(context.Background(), Input{FS: fsys, AppPath: "app", Output: caps})
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc, err
	}
	early, err := measure(outputcap.Limits{MaxDocuments: 200})
	if err == nil {
		t.Fatal("the build was not refused")
	}
	late, err := measure(outputcap.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("allocated: %d MiB refused on the ResMap, %d MiB encoded and split (%.2f×)", early>>20, late>>20, float64(late)/float64(early))
	if early*2 > late {
		t.Errorf("the early refusal allocated %d bytes, more than half of the %d without it", early, late)
	}
}

// TestOutputCapsHelmCharts: a helmCharts chart whose output is over a cap is refused as helm returns it, before
// kustomize parses it (the error comes from the chart's inflation, not from the finished ResMap), with helm 3
// (Argo CD 3.4) and helm 4.
func TestOutputCapsHelmCharts(t *testing.T) {
	files := map[string]string{
		"app/kustomization.yaml":             "helmCharts:\n- {name: bomb, releaseName: rel}\n",
		"app/charts/bomb/Chart.yaml":         "apiVersion: v2\nname: bomb\nversion: 0.1.0\n",
		"app/charts/bomb/values.yaml":        "{}\n",
		"app/charts/bomb/templates/cms.yaml": "{{ range $i := until 50 }}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c{{ $i }}}\n{{ end }}",
	}
	for _, tc := range []struct {
		name   string
		target target.Version
	}{
		{"helm 3", target.Version{Major: 3, Minor: 4}},
		{"helm 4", target.Newest},
	} {
		for _, c := range []struct {
			caps outputcap.Limits
			want string
		}{
			{outputcap.Limits{MaxDocuments: 50}, ""},
			{outputcap.Limits{MaxDocuments: 49}, "refused (document-count): more than 49 objects"},
			{outputcap.Limits{MaxBytes: 1000}, "refused (output-size): manifests exceed 1000 bytes"},
		} {
			t.Run(fmt.Sprintf("%s/%+v", tc.name, c.caps), func(t *testing.T) {
				fsys := repofstest.Open(t, filetest.Tree(t, files))
				objs, err := New().Build(context.Background(), Input{FS: fsys, AppPath: "app", BuildOptions: "--enable-helm", Target: tc.target, Output: c.caps})
				if c.want == "" {
					if err != nil || len(objs) != 50 {
						t.Fatalf("%d objects, %v; want 50", len(objs), err)
					}
					return
				}
				if err == nil || !strings.Contains(err.Error(), `helmCharts "bomb": `+c.want) {
					t.Fatalf("err = %v; want %q from the chart's inflation", err, c.want)
				}
			})
		}
	}
}
