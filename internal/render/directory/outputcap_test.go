package directory

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/render/outputcap"
	"github.com/fleetwave/fleetwave/internal/render/repofs/repofstest"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
)

// jsonnetObjects is a Jsonnet program of n ConfigMaps, each with a value of size bytes.
func jsonnetObjects(n, size int) string {
	return fmt.Sprintf("std.makeArray(%d, function(i) {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'c' + i}, data: {x: std.repeat('x', %d)}})", n, size)
}

// yamlObjects is a YAML stream of n ConfigMaps.
func yamlObjects(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c%d}\n", i)
	}
	return b.String()
}

// TestOutputCaps: a directory whose output is just over a cap is refused with the cap's rule before it is
// parsed (Jsonnet's JSON by its length and its array's items, the files' documents in their text); one at the
// caps renders.
func TestOutputCaps(t *testing.T) {
	caps := outputcap.Limits{MaxBytes: 4096, MaxDocuments: 10}
	for _, tc := range []struct {
		name  string
		files map[string]string
		n     int    // objects when it renders
		want  string // "" renders
	}{
		{"jsonnet: 10 objects", map[string]string{"app/a.jsonnet": jsonnetObjects(10, 1)}, 10, ""},
		{"jsonnet: 11 objects", map[string]string{"app/a.jsonnet": jsonnetObjects(11, 1)}, 0, "refused (document-count): more than 10 objects"},
		{"jsonnet: one object of 4 KiB", map[string]string{"app/a.jsonnet": jsonnetObjects(1, 4096)}, 0, "refused (output-size): manifests exceed 4096 bytes"},
		{"jsonnet: two files over the count together", map[string]string{"app/a.jsonnet": jsonnetObjects(6, 1), "app/b.jsonnet": jsonnetObjects(5, 1)}, 0, "refused (document-count): more than 10 objects"},
		{"yaml: 10 documents and empty ones", map[string]string{"app/a.yaml": yamlObjects(10) + "---\n---\n"}, 10, ""},
		{"yaml: 11 documents in two files", map[string]string{"app/a.yaml": yamlObjects(6), "app/b.yaml": yamlObjects(5)}, 0, "refused (document-count): more than 10 objects"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := repofstest.Open(t, filetest.Tree(t, tc.files))
			objs, err := Render(context.Background(), Input{FS: fsys, AppPath: "app", Output: caps})
			if tc.want == "" {
				if err != nil || len(objs) != tc.n {
					t.Fatalf("%d objects, %v; want %d", len(objs), err, tc.n)
				}
				return
			}
			var ex *outputcap.Exceeded
			if err == nil || !errors.As(err, &ex) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "directory app: ") {
				t.Fatalf("err = %v; want %q naming the directory", err, tc.want)
			}
		})
	}
}

func TestJSONArrayItems(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		isAr bool
	}{
		{"{}", 0, false},
		{" [\n]\n", 0, true},
		{"[1]", 1, true},
		{`[{"a": [1, 2], "b": {"c": ","}}, "x,]", 3]`, 3, true},
		{`["\"],", {}]`, 2, true},
		{"[\n   {\n      \"a\": 1\n   },\n   {\n      \"b\": 2\n   }\n]\n", 2, true},
	} {
		n, ok := jsonArrayItems(tc.in)
		if n != tc.n || ok != tc.isAr {
			t.Errorf("jsonArrayItems(%q) = %d, %v; want %d, %v", tc.in, n, ok, tc.n, tc.isAr)
		}
	}
}

// TestOutputCapsSpareMemory measures the bytes allocated by a Jsonnet program refused before its output is
// parsed, against the same program parsed into objects (what render.go counted before).
func TestOutputCapsSpareMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("evaluates thousands of objects")
	}
	// The values are imported, not built: go-jsonnet's own evaluation (std.repeat allocates ~700× the string)
	// would hide what the parse costs. What Jsonnet allocates while it evaluates is the worker's memory cap's.
	x := strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		name string
		prog string
		caps outputcap.Limits
	}{
		{"5,000 objects over a 1,000 cap", jsonnetObjects(5000, 1), outputcap.Limits{MaxDocuments: 1000}},
		{"6 MiB over a 1 MiB cap", "[{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'c' + i}, data: {x: importstr 'x.txt'}} for i in std.range(1, 6)]",
			outputcap.Limits{MaxBytes: 1 << 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := repofstest.Open(t, filetest.Tree(t, map[string]string{"app/a.jsonnet": tc.prog, "app/x.txt": x}))
			measure := func(caps outputcap.Limits) (uint64, error) {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				_, err := Render(context.Background(), Input{FS: fsys, AppPath: "app", Output: caps})
				runtime.ReadMemStats(&after)
				return after.TotalAlloc - before.TotalAlloc, err
			}
			early, err := measure(tc.caps)
			if err == nil {
				t.Fatal("the program was not refused")
			}
			late, err := measure(outputcap.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("allocated: %d MiB refused before the parse, %d MiB parsed (%.2f×)", early>>20, late>>20, float64(late)/float64(early))
			// The parse allocates at least the objects' strings, a copy of the output or more.
			if late-early < 1<<20 {
				t.Errorf("the early refusal allocated %d bytes, the parse %d: it spared less than a MiB", early, late)
			}
		})
	}
}
