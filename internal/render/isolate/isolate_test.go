package isolate_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/config"
	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/render/isolate"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
)

// TestMain lets the test binary be its own render worker, so `go test` needs no build first.
func TestMain(m *testing.M) {
	probeWorkerEnv()
	isolate.WorkerMain()
	os.Exit(m.Run())
}

func appReq(t testing.TB, name, source string, root string) render.Request {
	t.Helper()
	app, err := render.ParseApplication([]byte("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: " + name +
		", namespace: argocd}\nspec:\n  destination: {namespace: d}\n  source: " + source + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	return render.Request{App: app, Repos: func(u string) (string, bool) { return root, u == "https://example.com/r.git" }}
}

func yamlOf(t *testing.T, res *render.Result) string {
	t.Helper()
	var b bytes.Buffer
	if err := render.WriteYAML(&b, res.Objects); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestPoolRendersAsInProcess: a worker's render is the in-process render (objects, read files, source types),
// and its errors are the same lines, matching the same sentinels.
func TestPoolRendersAsInProcess(t *testing.T) {
	root := filetest.Tree(t, map[string]string{
		"chart/Chart.yaml":          "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
		"chart/values.yaml":         "replicas: 3\nratio: 0.5\n",
		"chart/templates/d.yaml":    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: {{ .Release.Name }}}\nspec: {replicas: {{ .Values.replicas }}, x: {{ .Values.ratio }}}\n",
		"kust/kustomization.yaml":   "resources: [cm.yaml]\nnamePrefix: p-\n",
		"kust/cm.yaml":              "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: k}\ndata: {a: '1'}\n",
		"dir/main.jsonnet":          "[{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'j'}, data: {n: '2'}}]",
		"dir/list.yaml":             "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Secret, metadata: {name: s}}\n",
		"plugin/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
		"badset/kustomization.yaml": "resources: [missing.yaml]\n",
	})
	pool, err := isolate.New(isolate.Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	inproc := render.New(render.Options{})
	ctx := context.Background()
	for _, src := range []string{
		"{repoURL: https://example.com/r.git, path: chart}",
		"{repoURL: https://example.com/r.git, path: kust}",
		"{repoURL: https://example.com/r.git, path: dir}",
	} {
		req := appReq(t, "a", src, root)
		want, err := inproc.Render(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pool.Render(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if w, g := yamlOf(t, want), yamlOf(t, got); w != g {
			t.Errorf("%s: worker render differs:\n%s\nin-process:\n%s", src, g, w)
		}
		// Asked for YAML, the worker sends the stream the parent would have written.
		yreq := req
		yreq.YAML = true
		gotYAML, err := pool.Render(ctx, yreq)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if gotYAML.YAML == nil || gotYAML.Objects != nil || string(gotYAML.YAML) != yamlOf(t, want) {
			t.Errorf("%s: YAML %q (and %d objects), want %q", src, gotYAML.YAML, len(gotYAML.Objects), yamlOf(t, want))
		}
		if strings.Join(want.ReadFiles, ",") != strings.Join(got.ReadFiles, ",") || strings.Join(want.ReadDirs, ",") != strings.Join(got.ReadDirs, ",") ||
			strings.Join(want.SourceTypes, ",") != strings.Join(got.SourceTypes, ",") {
			t.Errorf("%s: read sets or types differ: %v %v %v, want %v %v %v", src, got.ReadFiles, got.ReadDirs, got.SourceTypes, want.ReadFiles, want.ReadDirs, want.SourceTypes)
		}
	}
	for _, tc := range []struct {
		src      string
		sentinel error
	}{
		{"{repoURL: https://other.example/x.git, path: chart}", render.ErrExternalSource},
		{"{repoURL: https://example.com/r.git, path: plugin, plugin: {name: p}}", render.ErrPluginSource},
		{"{repoURL: https://example.com/r.git, path: badset}", nil},
	} {
		req := appReq(t, "e", tc.src, root)
		_, want := inproc.Render(ctx, req)
		_, got := pool.Render(ctx, req)
		if want == nil || got == nil || got.Error() != want.Error() {
			t.Errorf("%s: error %v, want %v", tc.src, got, want)
			continue
		}
		var re *render.Error
		if !errors.As(got, &re) || re.App != "e" {
			t.Errorf("%s: %T is not a *render.Error of the app", tc.src, got)
		}
		if tc.sentinel != nil && !errors.Is(got, tc.sentinel) {
			t.Errorf("%s: errors.Is(%v) is false", tc.src, tc.sentinel)
		}
	}
	if n := pool.Started(); n > 2 {
		t.Errorf("%d workers started for 9 renders; want them reused (at most 2)", n)
	}
}

// TestPoolCancelKillsTheRender: a caller that gives up (a newer commit) gets its error at once and the worker
// burning CPU is killed, then replaced.
func TestPoolCancelKillsTheRender(t *testing.T) {
	root := filetest.Tree(t, map[string]string{
		"loop/Chart.yaml":       "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
		"loop/templates/x.yaml": "{{ range $i := until 100000000 }}{{ range $j := until 100000000 }}{{ end }}{{ end }}",
		"ok/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
	})
	pool, err := isolate.New(isolate.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := pool.Prestart(context.Background()); err != nil { // the deadline is the render's, not the start's
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = pool.Render(ctx, appReq(t, "loop", "{repoURL: https://example.com/r.git, path: loop}", root))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the caller's deadline", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("returned after %s", d)
	}
	if _, err := pool.Render(context.Background(), appReq(t, "ok", "{repoURL: https://example.com/r.git, path: ok}", root)); err != nil {
		t.Fatal(err)
	}
	if n := pool.Started(); n != 2 {
		t.Errorf("%d workers started; want the killed one replaced (2)", n)
	}
}

// TestPoolYAMLPastItsBound: YAML indents what JSON brackets, so a deeply nested object's YAML outgrows its JSON
// quadratically; past the bound for the output cap, the worker sends the objects instead, and the caller that
// asked for YAML writes them as before.
func TestPoolYAMLPastItsBound(t *testing.T) {
	const depth = 150
	nested := strings.Repeat("{a: ", depth) + "x" + strings.Repeat("}", depth)
	root := filetest.Tree(t, map[string]string{
		"deep/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: " + nested + "\n",
		"flat/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n",
	})
	limits := render.Limits{MaxOutputBytes: 4000}
	pool, err := isolate.New(isolate.Options{Workers: 1, Render: render.Options{Limits: limits}})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	inproc := render.New(render.Options{Limits: limits})
	for _, tc := range []struct {
		path     string
		wantYAML bool
	}{{"flat", true}, {"deep", false}} {
		req := appReq(t, "a", "{repoURL: https://example.com/r.git, path: "+tc.path+"}", root)
		want, err := inproc.Render(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		req.YAML = true
		got, err := pool.Render(context.Background(), req)
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		if (got.YAML != nil) != tc.wantYAML {
			t.Fatalf("%s: YAML sent: %v, want %v (%d bytes of YAML in-process)", tc.path, got.YAML != nil, tc.wantYAML, len(yamlOf(t, want)))
		}
		gotYAML := string(got.YAML)
		if got.YAML == nil {
			gotYAML = yamlOf(t, got)
		}
		if gotYAML != yamlOf(t, want) {
			t.Errorf("%s: the worker's render differs from the in-process one", tc.path)
		}
	}
}

// TestPoolOneRender: render.Options.OneRender reaches the workers: a chart's second render with the same inputs is
// Helm's own, not the first one's kept output (random values differ).
func TestPoolOneRender(t *testing.T) {
	root := filetest.Tree(t, map[string]string{
		"c/Chart.yaml":        "apiVersion: v2\nname: c\nversion: 0.1.0\n",
		"c/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: r}\ndata: {v: {{ randAlphaNum 32 | quote }}}\n",
	})
	for _, one := range []bool{false, true} {
		pool, err := isolate.New(isolate.Options{Workers: 1, Render: render.Options{OneRender: one}})
		if err != nil {
			t.Fatal(err)
		}
		req := appReq(t, "a", "{repoURL: https://example.com/r.git, path: c}", root)
		var out [2]string
		for i := range out {
			res, err := pool.Render(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			out[i] = yamlOf(t, res)
		}
		pool.Close()
		if (out[0] == out[1]) == one {
			t.Errorf("OneRender %v: the second render repeats the first: %v", one, out[0] == out[1])
		}
	}
}

func TestSizesAndDurations(t *testing.T) {
	for in, want := range map[string]string{"1GiB": "1 GiB", "512MiB": "512 MiB", "1073741824": "1 GiB", "1.5GiB": "1.5 GiB", "64M": "64 MiB"} {
		n, err := config.ParseBytes(in)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if got := isolate.FormatBytes(n); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
	for _, bad := range []string{"", "x", "-1", "1TB?"} {
		if _, err := config.ParseBytes(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestPoolCallerGivesUpDuringStart: a caller whose context ends while its worker is still starting returns at
// once; the worker started joins the pool for the next render.
func TestPoolCallerGivesUpDuringStart(t *testing.T) {
	root := filetest.Tree(t, map[string]string{"ok/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"})
	pool, err := isolate.New(isolate.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := pool.Render(ctx, appReq(t, "ok", "{repoURL: https://example.com/r.git, path: ok}", root)); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want the caller's cancellation", err)
	}
	if _, err := pool.Render(context.Background(), appReq(t, "ok", "{repoURL: https://example.com/r.git, path: ok}", root)); err != nil {
		t.Fatal(err)
	}
	if n := pool.Started(); n > 1 {
		t.Errorf("%d workers started; want the first one reused", n)
	}
}

// TestWorkerCollector: a pool's GCPercent reaches its workers from their start-up (in their environment), with a
// soft memory limit of half their cap; by default they keep Go's collector settings and no soft limit.
func TestWorkerCollector(t *testing.T) {
	t.Setenv("GOGC", "") // a GOGC of the caller's would be the workers' (Pool.spawn)
	for _, tt := range []struct {
		name      string
		opts      isolate.Options
		want, not string
	}{
		{"default", isolate.Options{Workers: 1, MemoryBytes: 512 << 20}, "", "GOGC"},
		{"render --app", isolate.Options{Workers: 1, MemoryBytes: 512 << 20, GCPercent: 400}, "GOGC 400 from start-up under a soft limit of 256 MiB", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pool, err := isolate.New(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			if err := pool.Prestart(context.Background()); err != nil {
				t.Fatal(err)
			}
			limits := isolate.WorkerLimits(pool)
			if len(limits) != 1 {
				t.Fatalf("%d workers, want 1", len(limits))
			}
			if tt.want != "" && !strings.Contains(limits[0], tt.want) || tt.not != "" && strings.Contains(limits[0], tt.not) {
				t.Errorf("worker limits %q: want %q, not %q", limits[0], tt.want, tt.not)
			}
		})
	}
}
