package helm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/render/repofs/repofstest"
	"github.com/fleetwave/fleetwave/internal/render/target"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
)

// chartArchive builds a chart .tgz holding files under name/.
func chartArchive(t testing.TB, name string, files map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		body := files[n]
		if err := tw.WriteHeader(&tar.Header{Name: name + "/" + n, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

const echoTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  helm: {{ .Capabilities.HelmVersion.Version | quote }}
  namespace: {{ .Release.Namespace | quote }}
  values: {{ toJson .Values | quote }}
`

func echoChart(extra map[string]string) map[string]string {
	files := map[string]string{
		"app/Chart.yaml":          "apiVersion: v2\nname: echo\nversion: 0.1.0\n",
		"app/templates/echo.yaml": echoTemplate,
	}
	for k, v := range extra {
		files[k] = v
	}
	return files
}

func render(t testing.TB, e *Engine, in Input) (map[string]string, error) {
	t.Helper()
	objs, err := e.Template(context.Background(), in)
	if err != nil {
		return nil, err
	}
	if len(objs) != 1 {
		t.Fatalf("%d objects, want 1", len(objs))
	}
	data, _, _ := unstructured.NestedStringMap(objs[0].Object, "data")
	return data, nil
}

func TestCleanSetParameters(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"a,b", `a\,b`},
		{`a\,b`, `a\,b`},
		{"{a,b}", "{a,b}"},
		{"{a,b", `{a\,b`},
		{"plain", "plain"},
		{",,", `\,\,`},
		{"", ""},
	} {
		if got := cleanSetParameters(c.in); got != c.want {
			t.Errorf("cleanSetParameters(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestKubeVersionAndCapabilities(t *testing.T) {
	fsys := repofstest.Open(t, filetest.Tree(t, echoChart(nil)))
	e := New()
	for _, tc := range []struct {
		target            target.Version
		helm, defaultKube string // the released helm binary the target's Argo CD ships, and its default
	}{
		{target.Version{Major: 3, Minor: 2}, "v3.19.4", "v1.34.0"},
		{target.Version{Major: 3, Minor: 4}, "v3.19.4", "v1.34.0"},
		{target.Version{Major: 3, Minor: 5}, "v4.2.1", "v1.36.0"},
		{target.Version{Major: 3, Minor: 6}, "v4.3.1", "v1.37.0"},
		{target.Version{}, "v4.3.1", "v1.37.0"}, // the newest
	} {
		for _, c := range []struct{ kube, want string }{
			{"", tc.defaultKube},
			{"v1.30.0", "v1.30.0"},
			{"1.29", "v1.29"},               // ParseGeneric keeps the components given
			{"v1.31.2-eks-1234", "v1.31.2"}, // parseKubeVersion strips what helm cannot parse
		} {
			data, err := render(t, e, Input{FS: fsys, AppPath: "app", AppName: "a", Namespace: "ns", KubeVersion: c.kube, Target: tc.target})
			if err != nil {
				t.Fatalf("%s %q: %v", tc.target, c.kube, err)
			}
			if data["kube"] != c.want || data["helm"] != tc.helm {
				t.Errorf("Argo CD %s, kube %q: got kube %q helm %q, want %q %s", tc.target, c.kube, data["kube"], data["helm"], c.want, tc.helm)
			}
		}
	}
	if _, err := e.Template(context.Background(), Input{FS: fsys, AppPath: "app", AppName: "a", KubeVersion: "not-a-version"}); err == nil ||
		!strings.Contains(err.Error(), "could not parse kubernetes version") {
		t.Errorf("bad kube version: %v", err)
	}
}

func TestReleaseNameAndNamespace(t *testing.T) {
	fsys := repofstest.Open(t, filetest.Tree(t, echoChart(nil)))
	e := New()
	objs, err := e.Template(context.Background(), Input{FS: fsys, AppPath: "app", AppName: "team-a_web"})
	if err != nil {
		t.Fatal(err)
	}
	// The release name is the name part of "<namespace>_<name>"; no namespace means helm's "default".
	if objs[0].GetName() != "web" {
		t.Errorf("release name %q, want web", objs[0].GetName())
	}
	if ns, _, _ := unstructured.NestedString(objs[0].Object, "data", "namespace"); ns != "default" {
		t.Errorf("namespace %q, want default", ns)
	}
	_, err = e.Template(context.Background(), Input{FS: fsys, AppPath: "app", AppName: "a",
		Helm: &v1alpha1.ApplicationSourceHelm{ReleaseName: "Not_Valid"}})
	if err == nil || !strings.Contains(err.Error(), `release name "Not_Valid"`) {
		t.Errorf("invalid release name: %v", err)
	}
	_, err = e.Template(context.Background(), Input{FS: fsys, AppPath: "app", AppName: "a",
		Helm: &v1alpha1.ApplicationSourceHelm{Version: "v2"}})
	if err == nil || !strings.Contains(err.Error(), "helm version 'v2' is not supported") {
		t.Errorf("helm version v2: %v", err)
	}
}

func TestValueFileRules(t *testing.T) {
	fsys := repofstest.Open(t, filetest.Tree(t, echoChart(map[string]string{
		"app/values-a.yaml": "a: 1\n",
		"common/x.yaml":     "x: 1\n",
	})))
	e := New()
	for _, c := range []struct {
		name    string
		files   []string
		ignore  bool
		want    string // substring of the values JSON
		wantErr string
		is      error
	}{
		{name: "absolute path is relative to the repo root", files: []string{"/common/x.yaml"}, want: `"x":1`},
		{name: "relative path may leave the app dir", files: []string{"../common/x.yaml"}, want: `"x":1`},
		{name: "resolving to the root", files: []string{"/"}, wantErr: "repository root"},
		{name: "other URL scheme", files: []string{"ftp://example.com/v.yaml"}, wantErr: "the URL scheme 'ftp' is not allowed"},
		{name: "glob without match", files: []string{"nothing-*.yaml"}, wantErr: `values file glob "nothing-*.yaml" matched no files`, is: ErrValuesFileNotFound},
		{name: "glob without match ignored", files: []string{"nothing-*.yaml", "values-a.yaml"}, ignore: true, want: `"a":1`},
		{name: "a directory", files: []string{"templates"}, wantErr: "is a directory"},
		{name: "bad glob", files: []string{"[.yaml"}, wantErr: "error expanding glob pattern"},
		{name: "env var", files: []string{"values-$SUFFIX.yaml"}, want: `"a":1`},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := &v1alpha1.Env{{Name: "SUFFIX", Value: "a"}}
			data, err := render(t, e, Input{FS: fsys, AppPath: "app", AppName: "a", Env: env,
				Helm: &v1alpha1.ApplicationSourceHelm{ValueFiles: c.files, IgnoreMissingValueFiles: c.ignore}})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				if c.is != nil && !errors.Is(err, c.is) {
					t.Errorf("err %v is not %v", err, c.is)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(data["values"], c.want) {
				t.Errorf("values %s, want %s", data["values"], c.want)
			}
		})
	}
}

func TestRemoteRefusedEvenWhenAllowed(t *testing.T) {
	fsys := repofstest.Open(t, filetest.Tree(t, echoChart(nil)))
	for _, allow := range []bool{false, true} {
		for _, h := range []*v1alpha1.ApplicationSourceHelm{
			{ValueFiles: []string{"https://example.com/v.yaml"}},
			{FileParameters: []v1alpha1.HelmFileParameter{{Name: "f", Path: "http://example.com/f"}}},
		} {
			_, err := New().Template(context.Background(), Input{FS: fsys, AppPath: "app", AppName: "a", Helm: h, AllowRemote: allow})
			if !errors.Is(err, ErrRemote) {
				t.Errorf("allow=%v %+v: %v, want ErrRemote", allow, h, err)
			}
		}
	}
	// An operator who removed http(s) from helm.valuesFileSchemes gets Argo CD's error.
	_, err := New().Template(context.Background(), Input{FS: fsys, AppPath: "app", AppName: "a", ValuesFileSchemes: []string{},
		Helm: &v1alpha1.ApplicationSourceHelm{ValueFiles: []string{"https://example.com/v.yaml"}}})
	if err == nil || !strings.Contains(err.Error(), "the URL scheme 'https' is not allowed") {
		t.Errorf("no schemes: %v", err)
	}
}

func TestValuesFlagCSVSplit(t *testing.T) {
	// helm's --values is a StringSlice: Argo CD's "<abs>/a.yaml,b.yaml" reads a.yaml, then b.yaml relative to
	// the chart directory (the working directory).
	fsys := repofstest.Open(t, filetest.Tree(t, echoChart(map[string]string{
		"app/a.yaml,b.yaml": "never: read\n",
		"app/a.yaml":        "a: 1\nlast: a\n",
		"app/b.yaml":        "b: 1\nlast: b\n",
	})))
	data, err := render(t, New(), Input{FS: fsys, AppPath: "app", AppName: "a",
		Helm: &v1alpha1.ApplicationSourceHelm{ValueFiles: []string{"a.yaml,b.yaml"}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":1,"b":1,"last":"b"}`; data["values"] != want {
		t.Errorf("values %s, want %s", data["values"], want)
	}
}

func TestParameterPrecedence(t *testing.T) {
	fsys := repofstest.Open(t, filetest.Tree(t, echoChart(map[string]string{"app/values.yaml": "a: chart\n"})))
	data, err := render(t, New(), Input{FS: fsys, AppPath: "app", AppName: "a", Helm: &v1alpha1.ApplicationSourceHelm{
		Values: "a: values\nb: values\nc: values\n",
		Parameters: []v1alpha1.HelmParameter{
			{Name: "b", Value: "set"},
			{Name: "c", Value: "set"}, {Name: "c", Value: "string", ForceString: true}, // --set-string after --set
			{Name: "d", Value: "first"}, {Name: "d", Value: "last"}, // a map in Argo CD: the last wins
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":"values","b":"set","c":"string","d":"last"}`; data["values"] != want {
		t.Errorf("values %s, want %s", data["values"], want)
	}
}

func TestDependencyBuildVendoredDownload(t *testing.T) {
	// A dependency from a chart repository is vendored as an archive, a file:// one is missing: the offline
	// build packages the file:// one, keeps the vendored archive in place of the download, and deletes an
	// outdated archive as safeMoveDeps does.
	cm := func(n string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + n + "\n"
	}
	dir := filetest.Tree(t, map[string]string{
		"app/Chart.yaml": `apiVersion: v2
name: app
version: 1.0.0
dependencies:
- name: lib
  version: ~1.0.0
  repository: file://../lib
- name: redis
  version: 17.x
  repository: https://charts.example.com
`,
		"app/templates/app.yaml":     cm("app"),
		"app/charts/redis-17.1.tgz":  chartArchive(t, "redis", map[string]string{"Chart.yaml": "apiVersion: v2\nname: redis\nversion: 17.1.0\n", "templates/r.yaml": cm("redis")}),
		"app/charts/stale-0.1.0.tgz": chartArchive(t, "stale", map[string]string{"Chart.yaml": "apiVersion: v2\nname: stale\nversion: 0.1.0\n", "templates/s.yaml": cm("stale")}),
		"lib/Chart.yaml":             "apiVersion: v2\nname: lib\nversion: 1.0.3\n",
		"lib/templates/lib.yaml":     cm("lib"),
	})
	objs, err := New().Template(context.Background(), Input{FS: repofstest.Open(t, dir), AppPath: "app", AppName: "a"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.GetName())
	}
	if got, want := strings.Join(names, ","), "lib,redis,app"; got != want { // manifests of one kind: by template path
		t.Errorf("objects %s, want %s", got, want)
	}

	// The vendored archive does not satisfy the constraint: nothing stands for the download.
	if err := os.WriteFile(filepath.Join(dir, "app/charts/redis-17.1.tgz"),
		[]byte(chartArchive(t, "redis", map[string]string{"Chart.yaml": "apiVersion: v2\nname: redis\nversion: 16.0.0\n"})), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = New().Template(context.Background(), Input{FS: repofstest.Open(t, dir), AppPath: "app", AppName: "a"})
	if !errors.Is(err, ErrMissingDependency) || !errors.Is(err, ErrRemote) || !strings.Contains(err.Error(), `chart dependency "redis"`) {
		t.Errorf("err = %v", err)
	}
}

func TestDependencyBuildErrors(t *testing.T) {
	base := map[string]string{
		"app/templates/app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n",
		"lib/Chart.yaml":         "apiVersion: v2\nname: lib\nversion: 2.0.0\n",
	}
	for _, c := range []struct {
		name, chart, lock, want string
	}{
		{"version not satisfied", "dependencies:\n- name: lib\n  version: 1.x\n  repository: file://../lib\n", "",
			"can't get a valid version for dependency lib"},
		{"directory missing", "dependencies:\n- name: nope\n  version: 1.x\n  repository: file://../nope\n", "",
			"directory nope not found"},
		{"escaping the repository", "dependencies:\n- name: lib\n  version: 1.x\n  repository: file://../../../lib\n", "",
			"path leaves the repository root"},
		{"absolute path", "dependencies:\n- name: lib\n  version: 1.x\n  repository: file:///etc\n", "",
			"absolute path outside the repository"},
		{"local dependency missing", "dependencies:\n- name: lib\n  version: 2.0.0\n", "",
			"unable to load chart 'charts/lib'"},
		{"lock out of sync", "dependencies:\n- name: lib\n  version: 2.x\n  repository: file://../lib\n",
			"dependencies:\n- name: lib\n  version: 1.0.0\n  repository: file://../lib\ndigest: sha256:0000\ngenerated: \"2024-01-01T00:00:00Z\"\n",
			"the lock file (Chart.lock) is out of sync with the dependencies file (Chart.yaml)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			files := map[string]string{"app/Chart.yaml": "apiVersion: v2\nname: app\nversion: 1.0.0\n" + c.chart}
			for k, v := range base {
				files[k] = v
			}
			if c.lock != "" {
				files["app/Chart.lock"] = c.lock
			}
			_, err := New().Template(context.Background(), Input{FS: repofstest.Open(t, filetest.Tree(t, files)), AppPath: "app", AppName: "a"})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if !strings.Contains(err.Error(), "error building helm chart dependencies") {
				t.Errorf("err = %v, want it to name the dependency build", err)
			}
		})
	}
}

func TestDependencyBuildWithLock(t *testing.T) {
	// A Chart.lock in sync with Chart.yaml pins what the build packages.
	chartYAML := "apiVersion: v2\nname: app\nversion: 1.0.0\ndependencies:\n- name: lib\n  version: 2.x\n  repository: file://../lib\n"
	lockDeps := "- name: lib\n  version: 2.0.0\n  repository: file://../lib\n"
	sum := lockDigest(t, chartYAML, lockDeps)
	files := map[string]string{
		"app/Chart.yaml":         chartYAML,
		"app/Chart.lock":         "dependencies:\n" + lockDeps + "digest: " + sum + "\ngenerated: \"2024-01-01T00:00:00Z\"\n",
		"app/templates/app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n",
		"lib/Chart.yaml":         "apiVersion: v2\nname: lib\nversion: 2.0.0\n",
		"lib/templates/lib.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lib\n",
	}
	objs, err := New().Template(context.Background(), Input{FS: repofstest.Open(t, filetest.Tree(t, files)), AppPath: "app", AppName: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 {
		t.Errorf("%d objects, want 2", len(objs))
	}
}

// lockDigest computes helm's HashReq for a Chart.yaml and lock dependency list.
func lockDigest(t *testing.T, chartYAML, lockDeps string) string {
	t.Helper()
	dir := filetest.Tree(t, map[string]string{"c/Chart.yaml": chartYAML})
	cf, err := readChartDir(repofstest.Open(t, dir), "c", Limits{}.withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	ch, err := New().load(cf)
	if err != nil {
		t.Fatal(err)
	}
	lockCh := filetest.Tree(t, map[string]string{"c/Chart.yaml": "apiVersion: v2\nname: x\nversion: 1.0.0\ndependencies:\n" + lockDeps})
	lcf, err := readChartDir(repofstest.Open(t, lockCh), "c", Limits{}.withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	lch, err := New().load(lcf)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := digest([2]interface{}{ch.Metadata.Dependencies, lch.Metadata.Dependencies})
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func TestCacheReusesParsedCharts(t *testing.T) {
	dir := filetest.Tree(t, echoChart(nil))
	fsys := repofstest.Open(t, dir)
	e := New()
	in := Input{FS: fsys, AppPath: "app", AppName: "a"}
	if _, err := render(t, e, in); err != nil {
		t.Fatal(err)
	}
	cf, err := readChartDir(fsys, "app", e.limits)
	if err != nil {
		t.Fatal(err)
	}
	first, ok := e.cache.get(cf.hash)
	first4, ok4 := e.cache4.get(cf.hash) // the default target renders with helm 4
	if !ok || !ok4 {
		t.Fatalf("chart not cached: helm 3 parse %v, helm 4 parse %v", ok, ok4)
	}
	// Other values: the output cache misses, the parsed charts are reused.
	in2 := in
	in2.Helm = &v1alpha1.ApplicationSourceHelm{Parameters: []v1alpha1.HelmParameter{{Name: "p", Value: "1"}}}
	data2, err := render(t, e, in2)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(data2["values"], `"p":1`) {
		t.Errorf("second render's values: %s", data2["values"])
	}
	again, _ := e.cache.get(cf.hash)
	again4, _ := e.cache4.get(cf.hash)
	if again != first || e.cache.ll.Len() != 1 || again4 != first4 || e.cache4.ll.Len() != 1 {
		t.Errorf("second render did not reuse the cached charts (%d, %d entries)", e.cache.ll.Len(), e.cache4.ll.Len())
	}

	// A changed file is a different chart.
	if err := os.WriteFile(filepath.Join(dir, "app/values.yaml"), []byte("changed: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := render(t, e, in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(data["values"], "changed") || e.cache.ll.Len() != 2 {
		t.Errorf("changed chart: values %s, %d entries", data["values"], e.cache.ll.Len())
	}
	// The LRU bound holds.
	small := New(WithCacheEntries(1))
	for i := 0; i < 3; i++ {
		if err := os.WriteFile(filepath.Join(dir, "app/values.yaml"), []byte(fmt.Sprintf("i: %d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := render(t, small, in); err != nil {
			t.Fatal(err)
		}
	}
	if small.cache.ll.Len() != 1 {
		t.Errorf("%d entries, want 1", small.cache.ll.Len())
	}
}

// TestConcurrentRenders renders one chart with subcharts, aliases and conditions (what helm's dependency
// processing mutates) from many goroutines with different values; each result must equal the serial one. Run
// with -race.
func TestConcurrentRenders(t *testing.T) {
	fsys := repofstest.Open(t, filepath.Join("testdata", "fixtures", "subcharts-hooks"))
	inputs := make([]Input, 8)
	for i := range inputs {
		inputs[i] = Input{FS: fsys, AppPath: "src/shop", AppName: fmt.Sprintf("shop%d", i), Namespace: "ns", KubeVersion: "1.30",
			Helm: &v1alpha1.ApplicationSourceHelm{Parameters: []v1alpha1.HelmParameter{
				{Name: "replica.enabled", Value: fmt.Sprint(i%2 == 0)},
				{Name: "cache.enabled", Value: fmt.Sprint(i%3 == 0)},
				{Name: "replicas", Value: fmt.Sprint(i)},
				{Name: "primary.role", Value: fmt.Sprintf("role-%d", i)},
			}}}
	}
	serialize := func(objs []*unstructured.Unstructured) string {
		var b strings.Builder
		for _, o := range objs {
			y, err := yaml.Marshal(o.Object)
			if err != nil {
				t.Error(err)
			}
			b.Write(y)
			b.WriteString("---\n")
		}
		return b.String()
	}
	want := make([]string, len(inputs))
	for i, in := range inputs {
		objs, err := New().Template(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = serialize(objs)
	}
	if want[0] == want[1] {
		t.Fatal("inputs do not change the output; the test would prove nothing")
	}
	e := New(WithOutputCache(-1, 0)) // render every time: the shared parsed chart is what is under test
	var wg sync.WaitGroup
	for round := 0; round < 4; round++ {
		for i, in := range inputs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				objs, err := e.Template(context.Background(), in)
				if err != nil {
					t.Error(err)
					return
				}
				if got := serialize(objs); got != want[i] {
					t.Errorf("input %d: concurrent render differs from the serial one", i)
				}
			}()
		}
	}
	wg.Wait()
}

func TestContextCanceled(t *testing.T) {
	fsys := repofstest.Open(t, filetest.Tree(t, echoChart(nil)))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New().Template(ctx, Input{FS: fsys, AppPath: "app", AppName: "a"}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestChartLimits(t *testing.T) {
	files := echoChart(nil)
	for i := 0; i < 5; i++ {
		files[fmt.Sprintf("app/files/f%d.txt", i)] = "x"
	}
	fsys := repofstest.Open(t, filetest.Tree(t, files))
	_, err := New(WithLimits(Limits{MaxChartFiles: 3})).Template(context.Background(), Input{FS: fsys, AppPath: "app", AppName: "a"})
	if err == nil || !strings.Contains(err.Error(), "more than 3 files") {
		t.Errorf("file cap: %v", err)
	}
	_, err = New(WithLimits(Limits{MaxChartBytes: 10})).Template(context.Background(), Input{FS: fsys, AppPath: "app", AppName: "a"})
	if err == nil || !strings.Contains(err.Error(), "larger than 10 bytes") {
		t.Errorf("byte cap: %v", err)
	}
}

func TestSymlinkLoopInChart(t *testing.T) {
	dir := filetest.Tree(t, echoChart(nil))
	if err := os.Symlink("..", filepath.Join(dir, "app", "templates", "loop")); err != nil {
		t.Skip(err)
	}
	_, err := New().Template(context.Background(), Input{FS: repofstest.Open(t, dir), AppPath: "app", AppName: "a"})
	if err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Errorf("err = %v", err)
	}
}

func TestErrorsAreOneLine(t *testing.T) {
	files := echoChart(map[string]string{
		"app/values.schema.json": `{"type":"object","properties":{"replicas":{"type":"integer"}},"required":["replicas"]}`,
	})
	fsys := repofstest.Open(t, filetest.Tree(t, files))
	_, err := New().Template(context.Background(), Input{FS: fsys, AppPath: "app", AppName: "a",
		Helm: &v1alpha1.ApplicationSourceHelm{Values: "replicas: many\n"}})
	if err == nil || !strings.Contains(err.Error(), "values don't meet the specifications of the schema(s)") {
		t.Fatalf("err = %v", err)
	}
	if strings.ContainsAny(err.Error(), "\n\r") {
		t.Errorf("multi-line error: %q", err)
	}
	// skipSchemaValidation turns it off.
	if _, err := New().Template(context.Background(), Input{FS: fsys, AppPath: "app", AppName: "a",
		Helm: &v1alpha1.ApplicationSourceHelm{Values: "replicas: many\n", SkipSchemaValidation: true}}); err != nil {
		t.Errorf("skipSchemaValidation: %v", err)
	}
}

func TestNoHostAccessFromTemplates(t *testing.T) {
	t.Setenv("FLEETWAVE_TEST_SECRET", "s3cret")
	fsys := repofstest.Open(t, filetest.Tree(t, map[string]string{
		"app/Chart.yaml": "apiVersion: v2\nname: probe\nversion: 0.1.0\n",
		"app/templates/probe.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: probe
data:
  dns: {{ getHostByName "localhost" | quote }}
  lookup: {{ lookup "v1" "Secret" "kube-system" "" | toJson | quote }}
`,
	}))
	data, err := render(t, New(), Input{FS: fsys, AppPath: "app", AppName: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if data["dns"] != "" || data["lookup"] != "{}" {
		t.Errorf("dns %q lookup %q: want both empty, as in helm template", data["dns"], data["lookup"])
	}
	// The chart engine has no env function; --name-template must not have one either.
	for _, name := range []string{`{{ env "FLEETWAVE_TEST_SECRET" }}`, `{{ expandenv "$FLEETWAVE_TEST_SECRET" }}`} {
		_, err := New().Template(context.Background(), Input{FS: fsys, AppPath: "app", AppName: "a",
			Helm: &v1alpha1.ApplicationSourceHelm{ReleaseName: name}})
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("release name %s: %v", name, err)
		}
	}
}

func TestOutputCache(t *testing.T) {
	fsys := repofstest.Open(t, filetest.Tree(t, echoChart(map[string]string{"app/values.yaml": "a: 1\n"})))
	e := New()
	in := Input{FS: fsys, AppPath: "app", AppName: "a", Namespace: "ns"}
	first, err := e.Template(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	// Callers own what they get: changing it must not change later results.
	first[0].SetAnnotations(map[string]string{"mutated": "yes"})
	second, err := e.Template(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if e.outputs.ll.Len() != 1 {
		t.Errorf("%d cached outputs, want 1", e.outputs.ll.Len())
	}
	if second[0].GetAnnotations()["mutated"] != "" {
		t.Error("a caller's change leaked into the cache")
	}
	// Any input change is a different render.
	for _, change := range []func(*Input){
		func(in *Input) { in.Namespace = "other" },
		func(in *Input) { in.KubeVersion = "1.29.0" },
		func(in *Input) { in.APIVersions = []string{"example.com/v1"} },
		func(in *Input) { in.Helm = &v1alpha1.ApplicationSourceHelm{Values: "a: 2\n"} },
		func(in *Input) { in.Helm = &v1alpha1.ApplicationSourceHelm{SkipCrds: true} },
		func(in *Input) { in.AppName = "b" },
	} {
		c := in
		change(&c)
		if _, err := e.Template(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.outputs.ll.Len(); n != 7 {
		t.Errorf("%d cached outputs, want 7", n)
	}
	small := New(WithOutputCache(2, 1<<20))
	for i := 0; i < 5; i++ {
		c := in
		c.Namespace = fmt.Sprint("ns", i)
		if _, err := small.Template(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	if n := small.outputs.ll.Len(); n != 2 {
		t.Errorf("%d cached outputs, want 2 (bound)", n)
	}
}

// TestTargetRules checks the rules of options.go that depend on the Argo CD version rendered as: value-file glob
// patterns (expanded since 3.4; a literal path, here missing, before) and the accepted helm.version values ("v4"
// since 3.5, with 3.5's new wording of the refusal).
func TestTargetRules(t *testing.T) {
	fsys := repofstest.Open(t, filetest.Tree(t, echoChart(map[string]string{
		"app/values-a.yaml": "a: 1\n",
		"app/values-b.yaml": "b: 2\n",
	})))
	e := New()
	v := func(minor int) target.Version { return target.Version{Major: 3, Minor: minor} }
	for _, tc := range []struct {
		name     string
		target   target.Version
		helm     v1alpha1.ApplicationSourceHelm
		values   string // data.values; "" when an error is wanted
		wantErr  string
		notFound bool // the error is ErrValuesFileNotFound
	}{
		{name: "glob expanded", target: v(4), helm: v1alpha1.ApplicationSourceHelm{ValueFiles: []string{"values-*.yaml"}},
			values: `{"a":1,"b":2}`},
		{name: "glob expanded (newest)", helm: v1alpha1.ApplicationSourceHelm{ValueFiles: []string{"values-*.yaml"}},
			values: `{"a":1,"b":2}`},
		{name: "glob is a path before 3.4", target: v(3), helm: v1alpha1.ApplicationSourceHelm{ValueFiles: []string{"values-*.yaml"}},
			wantErr: `values file "values-*.yaml" not found`, notFound: true},
		{name: "glob is a path before 3.4, ignored when missing", target: v(2),
			helm:   v1alpha1.ApplicationSourceHelm{ValueFiles: []string{"values-*.yaml", "values-b.yaml"}, IgnoreMissingValueFiles: true},
			values: `{"b":2}`},
		{name: "helm v4 accepted from 3.5", target: v(5), helm: v1alpha1.ApplicationSourceHelm{Version: "v4"}, values: `{}`},
		{name: "helm v3 accepted on 3.6", target: v(6), helm: v1alpha1.ApplicationSourceHelm{Version: "v3"}, values: `{}`},
		{name: "helm v4 refused before 3.5", target: v(4), helm: v1alpha1.ApplicationSourceHelm{Version: "v4"},
			wantErr: "helm chart version 'v4' is not supported"},
		{name: "helm v2 refused on 3.6", target: v(6), helm: v1alpha1.ApplicationSourceHelm{Version: "v2"},
			wantErr: "helm version 'v2' is not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.helm
			data, err := render(t, e, Input{FS: fsys, AppPath: "app", AppName: "a", Namespace: "ns", Helm: &h, Target: tc.target})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				if tc.notFound != errors.Is(err, ErrValuesFileNotFound) {
					t.Errorf("errors.Is(err, ErrValuesFileNotFound) = %v", !tc.notFound)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if data["values"] != tc.values {
				t.Errorf("values = %s, want %s", data["values"], tc.values)
			}
		})
	}
}

// TestCachedChartsAreNotModified renders one chart with its subchart disabled, then enabled, on one Engine: each
// render must work on a copy of the cached parse (dependency processing drops disabled subcharts), with helm 3
// and with helm 4.
func TestCachedChartsAreNotModified(t *testing.T) {
	fsys := repofstest.Open(t, filetest.Tree(t, map[string]string{
		"app/Chart.yaml": "apiVersion: v2\nname: app\nversion: 0.1.0\n" +
			"dependencies:\n- name: sub\n  version: 0.1.0\n  condition: sub.enabled\n",
		"app/templates/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n",
		"app/charts/sub/Chart.yaml":        "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
		"app/charts/sub/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sub\n",
	}))
	for _, tgt := range []target.Version{{Major: 3, Minor: 4}, {Major: 3, Minor: 6}} {
		e := New()
		for _, c := range []struct {
			enabled string
			objects int
		}{{"false", 1}, {"true", 2}, {"false", 1}} {
			in := Input{FS: fsys, AppPath: "app", AppName: "a", Target: tgt,
				Helm: &v1alpha1.ApplicationSourceHelm{Parameters: []v1alpha1.HelmParameter{{Name: "sub.enabled", Value: c.enabled}}}}
			objs, err := e.Template(context.Background(), in)
			if err != nil {
				t.Fatalf("Argo CD %s, sub.enabled=%s: %v", tgt, c.enabled, err)
			}
			if len(objs) != c.objects {
				t.Errorf("Argo CD %s, sub.enabled=%s: %d objects, want %d", tgt, c.enabled, len(objs), c.objects)
			}
		}
	}
}
