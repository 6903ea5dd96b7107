package helm

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/render/outputcap"
	"github.com/fleetwave/fleetwave/internal/render/repofs/repofstest"
	"github.com/fleetwave/fleetwave/internal/render/target"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
)

// capChart is a chart whose one template writes n ConfigMaps, each with a value of size bytes.
func capChart(n, size int) map[string]string {
	return map[string]string{
		"app/Chart.yaml": "apiVersion: v2\nname: bomb\nversion: 0.1.0\n",
		"app/templates/cm.yaml": "{{ range $i := until " + strconv.Itoa(n) + " }}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c{{ $i }}}\n" +
			"data: {x: {{ repeat " + strconv.Itoa(size) + " \"x\" | quote }}}\n{{ end }}",
	}
}

var capTargets = []struct {
	name   string
	target target.Version
}{
	{"helm 3", target.Version{Major: 3, Minor: 4}},
	{"helm 4", target.Newest},
}

// TestOutputCaps: a chart whose output is just over a cap is refused with the cap's rule when Helm's engine
// returns, for Helm 3 and Helm 4; one just under renders.
func TestOutputCaps(t *testing.T) {
	caps := outputcap.Limits{MaxBytes: 64 << 10, MaxDocuments: 100}
	for _, tg := range capTargets {
		for _, tc := range []struct {
			name    string
			n, size int
			want    string // "" renders
		}{
			{"100 objects: at the count cap", 100, 10, ""},
			{"101 objects: one over", 101, 10, "refused (document-count): more than 100 objects"},
			{"one object under the size cap", 1, 60 << 10, ""},
			{"one object just over the size cap", 1, 64 << 10, "refused (output-size): manifests exceed 65536 bytes"},
		} {
			t.Run(tg.name+"/"+tc.name, func(t *testing.T) {
				fsys := repofstest.Open(t, filetest.Tree(t, capChart(tc.n, tc.size)))
				objs, err := New().Template(context.Background(), Input{FS: fsys, AppPath: "app", AppName: "bomb", Target: tg.target, Output: caps})
				if tc.want == "" {
					if err != nil || len(objs) != tc.n {
						t.Fatalf("%d objects, %v; want %d", len(objs), err, tc.n)
					}
					return
				}
				var ex *outputcap.Exceeded
				if err == nil || !errors.As(err, &ex) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "helm template app:") {
					t.Fatalf("err = %v; want %q naming the chart", err, tc.want)
				}
			})
		}
	}
}

// TestOutputCapsSpareMemory measures what the early refusal saves: the bytes allocated by rendering a bomb
// refused when the engine returns, against the same render without the early caps (what render.go measured
// before: the text sorted, assembled and split into objects, then counted).
func TestOutputCapsSpareMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("renders megabytes")
	}
	for _, tg := range capTargets {
		for _, tc := range []struct {
			name    string
			n, size int
			caps    outputcap.Limits
		}{
			{"4,000 objects over a 1,000 cap", 4000, 10, outputcap.Limits{MaxDocuments: 1000}},
			{"4 MiB over a 1 MiB cap", 4, 1 << 20, outputcap.Limits{MaxBytes: 1 << 20}},
		} {
			t.Run(tg.name+"/"+tc.name, func(t *testing.T) {
				fsys := repofstest.Open(t, filetest.Tree(t, capChart(tc.n, tc.size)))
				measure := func(caps outputcap.Limits) (uint64, error) {
					e := New(WithOutputCache(-1, 0))
					in := Input{FS: fsys, AppPath: "app", AppName: "bomb", Target: tg.target, Output: caps}
					if _, err := e.Template(context.Background(), in); err != nil && caps == (outputcap.Limits{}) {
						t.Fatalf("without caps: %v", err)
					}
					var before, after runtime.MemStats
					runtime.GC()
					runtime.ReadMemStats(&before)
					_, err := e.Template(context.Background(), in) // the chart parsed and cached by the first
					runtime.ReadMemStats(&after)
					return after.TotalAlloc - before.TotalAlloc, err
				}
				early, err := measure(tc.caps)
				if err == nil {
					t.Fatal("the bomb was not refused")
				}
				late, _ := measure(outputcap.Limits{})
				t.Logf("allocated: %d MiB refused early, %d MiB rendered to objects (%.1f×)", early>>20, late>>20, float64(late)/float64(early))
				if early*2 > late {
					t.Errorf("the early refusal allocated %d bytes, more than half of the %d without it", early, late)
				}
			})
		}
	}
}
