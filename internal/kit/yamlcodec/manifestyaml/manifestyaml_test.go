package manifestyaml

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/utils/kube"
	"go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kubeyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/testkit/sharedtest"
)

const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"

// streams are YAML and JSON streams where the shortcut must give way to the libraries, or agree with them.
var streams = []struct{ name, in string }{
	{"empty", ""},
	{"only separators and nulls", "---\n---\nnull\n---\n"},
	{"one object", cm + "data:\n  a: b\n"},
	{"two objects and a comment", "# Source: x\n" + cm + "---\n# Source: y\n" + cm},
	{"numbers", cm + "n:\n  i: 42\n  neg: -7\n  f: 1.5\n  fint: 2.0\n  negzero: -0.0\n  big: 18446744073709551615\n  bigger: 1e21\n  tiny: 1e-7\n  hex: 0x1F\n  oct: 0o17\n  sexa: 190:20:30\n  inf: .inf\n"},
	{"strings that look like other things", cm + "data:\n  a: \"true\"\n  b: \"1.0\"\n  c: \"~\"\n  d: \"null\"\n  e: \"yes\"\n  f: \"0x10\"\n  g: \"\"\n  h: \" lead\"\n  i: \"trail \"\n  j: \"a: b\"\n  k: \"- x\"\n"},
	{"booleans of YAML 1.1", cm + "data2:\n  a: yes\n  b: off\n  c: ~\n"},
	{"multi-line strings", cm + "data:\n  script: |\n    #!/bin/sh\n    echo \"hi\"\n\n  folded: >\n    a\n    b\n  trailing: \"x\\n\\n\"\n"},
	{"html and separators escaped by JSON", cm + "data:\n  a: \"<b>&amp;</b>\"\n  b: \"line\\u2028sep\\u2029\"\n  c: \"tab\\there\"\n  d: \"nul\\0x\"\n"},
	{"DEL, which YAML refuses unescaped", cm + "data:\n  a: \"x\\x7Fy\"\n"},
	{"C1 control", cm + "data:\n  a: \"x\\u0080y\"\n"},
	{"NEL, which YAML allows", cm + "data:\n  a: \"x\\Ny\"\n"},
	{"BOM inside a string", cm + "data:\n  a: \"x\uFEFFy\"\n  \"\uFEFFk\": v\n"},
	{"noncharacter U+FFFE", cm + "data:\n  a: \"x\\uFFFEy\"\n"},
	{"U+FFFD", cm + "data:\n  a: \"x\uFFFDy\"\n"},
	{"non-ASCII text", cm + "data:\n  a: \"naïve — ünïcödé 日本 🚀\"\n"},
	{"long key", cm + "data:\n  " + strings.Repeat("k", 1100) + ": v\n"},
	{"long key, explicit", cm + "data:\n  ? " + strings.Repeat("k", 1100) + "\n  : v\n"},
	{"key of 161 bytes", cm + "data:\n  " + strings.Repeat("k", 161) + ": v\n"},
	{"long escaped key, explicit", cm + "data:\n  ? \"" + strings.Repeat("\\x01", 200) + "\"\n  : v\n"},
	{"merge key, quoted and plain", cm + "base: &b\n  x: 1\nm:\n  <<: *b\n  y: 2\nq:\n  \"<<\": z\n"},
	{"non-string keys", cm + "data:\n  1: a\n  true: b\n  1.5: c\n"},
	// Not here: keys that collide once made strings (1 and "1"), for which sigs.k8s.io/yaml's result depends on
	// Go's map order (kube.SplitYAML differs from itself); Split hands them to the library.
	{"binary and timestamps", cm + "data:\n  bin: !!binary /w==\n  ts: 2001-12-14t21:59:43.10-05:00\n  d: 2002-12-14\n"},
	{"integers at the edges of int64", cm + "n:\n  max: 9223372036854775807\n  over: 9223372036854775808\n  min: -9223372036854775808\n  under: -9223372036854775809\n  f: 9223372036854775808.0\n  e: 1e300\n  neg: -1e-300\n"},
	{"kind that is not a string", "apiVersion: v1\nkind: 5\nmetadata: {name: x}\n"},
	{"empty kind", "apiVersion: v1\nkind: \"\"\nmetadata: {name: x}\n"},
	{"top-level list", "- a\n- b\n"},
	{"top-level string", "hello\n"},
	{"duplicate keys", cm + "a: 1\na: 2\n"},
	{"anchors", cm + "a: &x [1, 2]\nb: *x\n"},
	{"list kind", "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(cm, "\n", "\n  ") + "\n"},
	{"empty containers", cm + "data: {}\nlist: []\nnil:\n"},
	{"no kind", "apiVersion: v1\nmetadata:\n  name: x\n"},
	{"no kind after a good one", cm + "---\napiVersion: v1\nmetadata:\n  name: x\n"},
	{"bad YAML after a good one", cm + "---\na: [\n"},
	{"scalar document", cm + "---\n42\n"},
	{"deep nesting", cm + "d: " + strings.Repeat("[", 1200) + strings.Repeat("]", 1200) + "\n"},
	{"JSON stream", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"n":1.0}}`},
	{"JSON stream with duplicate keys", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"a":1,"a":2}`},
	{"JSON then YAML", "  \n" + `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}` + "\n---\n" + cm},
	{"keys equal once converted", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata: {0: A, \"0\": B, 1: C}\n"},
	{"keys equal once converted, no kind", "apiVersion: v1\ndata: {0: A, \"0\": B}\n"},
	{"flow mapping not first", "---\n{apiVersion: v1, kind: ConfigMap, metadata: {name: x}, n: 1.0}\n"},
}

func TestSplitMatchesGitopsEngine(t *testing.T) {
	for _, tc := range streams {
		t.Run(tc.name, func(t *testing.T) { checkSplit(t, []byte(tc.in)) })
	}
}

// checkSplit compares Split with kube.SplitYAML, and Marshal with sigsyaml.Marshal on what they return.
// kube.SplitYAML is not always deterministic: a mapping whose keys differ in YAML but not once converted to
// JSON (0 and "0") keeps the value of whichever key sigs.k8s.io/yaml's convertToJSONableObject meets last in
// a Go map's random order, in the object or in the error that quotes it. Split's answer must then be one the
// library gives: the library is asked again, up to libraryTries times, before a difference fails.
func checkSplit(t *testing.T, in []byte) {
	t.Helper()
	checkDocuments(t, in)
	got, gotErr := Split(in)
	want, wantErr := kube.SplitYAML(in)
	for try := 1; try < libraryTries && !sameSplit(got, gotErr, want, wantErr); try++ {
		if w, werr := kube.SplitYAML(in); sameSplit(got, gotErr, w, werr) {
			want, wantErr = w, werr
		}
	}
	if errString(gotErr) != errString(wantErr) {
		t.Fatalf("error %q, kube.SplitYAML's %q", errString(gotErr), errString(wantErr))
	}
	if len(got) != len(want) {
		t.Fatalf("%d objects, kube.SplitYAML returns %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i].Object, want[i].Object) {
			t.Fatalf("object %d:\n got %#v\nwant %#v", i, got[i].Object, want[i].Object)
		}
		checkMarshal(t, want[i].Object)
	}
}

// libraryTries bounds how often checkSplit asks kube.SplitYAML again: two keys colliding give each answer
// with probability 1/2 per call, so 64 calls miss Split's answer with probability 2^-63.
const libraryTries = 64

func sameSplit(got []*unstructured.Unstructured, gotErr error, want []*unstructured.Unstructured, wantErr error) bool {
	if errString(gotErr) != errString(wantErr) || len(got) != len(want) {
		return false
	}
	for i := range want {
		if !reflect.DeepEqual(got[i].Object, want[i].Object) {
			return false
		}
	}
	return true
}

// checkMarshal compares Marshal with sigsyaml.Marshal. On keys yaml.v2's keyList.Less does not order
// consistently (it is not transitive on some keys with digits: "1000A" < "1A2" < "2" < "1000A"), the library's
// order depends on Go's map iteration and differs from call to call, and Marshal takes the library's path
// (sortEntries): the library is asked again, up to libraryTries times, for the answer Marshal gave.
func checkMarshal(t *testing.T, obj map[string]interface{}) {
	t.Helper()
	want, wantErr := sigsyaml.Marshal(obj)
	got, gotErr := Marshal(obj)
	for try := 1; try < libraryTries && (errString(gotErr) != errString(wantErr) || !bytes.Equal(got, want)); try++ {
		if w, werr := sigsyaml.Marshal(obj); errString(gotErr) == errString(werr) && bytes.Equal(got, w) {
			want, wantErr = w, werr
		}
	}
	if errString(gotErr) != errString(wantErr) {
		t.Fatalf("Marshal error %q, sigsyaml.Marshal's %q", errString(gotErr), errString(wantErr))
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Marshal:\n%s\nsigsyaml.Marshal:\n%s", got, want)
	}
}

// checkDocuments compares splitDocuments with apimachinery's YAMLReader: the same documents where it answers,
// and it answers unless YAMLReader refuses the stream or the stream holds a carriage return.
func checkDocuments(t *testing.T, in []byte) {
	t.Helper()
	var want [][]byte
	var wantErr error
	rd := kubeyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(in)))
	for {
		doc, err := rd.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			wantErr = err
			break
		}
		if len(doc) != 0 {
			want = append(want, doc)
		}
	}
	got, ok := splitDocuments(in)
	switch {
	case !ok && wantErr == nil && !bytes.ContainsRune(in, '\r'):
		t.Fatalf("splitDocuments gave up on %q, which YAMLReader splits", in)
	case ok && wantErr != nil:
		t.Fatalf("splitDocuments split %q, which YAMLReader refuses: %v", in, wantErr)
	case ok && !reflect.DeepEqual(got, want):
		t.Fatalf("splitDocuments(%q)\n got %q\nwant %q", in, got, want)
	}
}

// TestSplitDocuments: the documents of streams as YAMLReader reads them, whatever the separators, the end of
// the stream and the lines around them.
func TestSplitDocuments(t *testing.T) {
	for _, in := range []string{
		"", "\n", "\n\n", "---", "---\n", "---\n---\n", "a: 1", "a: 1\n", "a: 1\n---", "a: 1\n---\n", "---\na: 1\n---\nb: 2",
		"--- # c\na: 1\n---\t\n\nb: 2\n", "--- x\na: 1\n", "a: 1\n----\nb: 2\n", "a: 1\n---x\n", "a: 1\n--- \u00a0\n", "a: 1\n ---\nb: 2\n",
		"a: |\n  ---\n---\n", "a: 1\r\n---\r\nb: 2\r\n", "# Source: x\n" + cm + "---\n# Source: y\n" + cm, "a: 1\n---\n\n\n",
		"a: 1\n--- #\n", strings.Repeat("x", 5000) + "\n---\n" + strings.Repeat("y", 5000),
	} {
		checkDocuments(t, []byte(in))
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestMarshalMatchesSigsYAML covers the values code puts into objects, which no decoder makes.
func TestMarshalMatchesSigsYAML(t *testing.T) {
	var objs []map[string]interface{}
	for _, tc := range []struct {
		name string
		obj  map[string]interface{}
	}{
		{"int and int64", map[string]interface{}{"a": 1, "b": int64(-2), "c": int64(math.MaxInt64)}},
		{"floats", map[string]interface{}{"a": 2.0, "b": 0.1, "c": 1e21, "d": 1e-7, "e": math.Copysign(0, -1), "f": 1e20, "g": 123456789.0}},
		{"NaN", map[string]interface{}{"a": math.NaN()}},
		{"int32 and []string", map[string]interface{}{"a": int32(3), "b": []string{"x"}}},
		{"map[string]string", map[string]interface{}{"a": map[string]string{"b": "c", "d": "true"}}},
		{"nil map and slice", map[string]interface{}{"a": map[string]interface{}(nil), "b": []interface{}(nil), "c": nil}},
		{"empty map and slice", map[string]interface{}{"a": map[string]interface{}{}, "b": []interface{}{}}},
		{"NEL, BOM and line separators", map[string]interface{}{"a": "x\u0085y", "b": "\ufeffz", "c": "p\u2028q\u2029"}},
		{"invalid UTF-8", map[string]interface{}{"a": "x\xffy", "b\xfe": "z"}},
		{"DEL in a key", map[string]interface{}{"a\x7f": "z"}},
		{"keys sorted as yaml.v2 sorts them", map[string]interface{}{"a10": 1, "a9": 2, "B": 3, "b": 4, "1": 5, "10": 6, "2": 7, "-": 8}},
		{"strings YAML would resolve", map[string]interface{}{"a": "true", "b": "1.0", "c": "~", "d": "", "e": "yes", "f": "1e3", "g": "0o17", "h": "2024-01-01", "i": "<<", "j": "=", "k": " x", "l": "x\n", "m": "a\nb\n", "n": "#x", "o": "@x"}},
		{"long key", map[string]interface{}{strings.Repeat("k", 2000): "v"}},
		{"nested", map[string]interface{}{"a": []interface{}{map[string]interface{}{"b": []interface{}{int64(1), "c", nil, true}}}}},
		{"nested, a float deep inside", map[string]interface{}{"a": []interface{}{map[string]interface{}{"b": []interface{}{int64(1), 2.0, 0.5}}}}},
		{"nested, a nil map deep inside", map[string]interface{}{"a": map[string]interface{}{"b": []interface{}{map[string]interface{}(nil)}}}},
		{"int and int64 at every level", map[string]interface{}{"a": []interface{}{1, int64(2), map[string]interface{}{"b": int64(math.MinInt64), "c": -3}}}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkMarshal(t, tc.obj) })
		objs = append(objs, tc.obj)
	}
	// MarshalEach, on all CPUs, is Marshal of each, errors (the NaN) in their place.
	out, errs := MarshalEach(objs)
	for i, obj := range objs {
		want, wantErr := sigsyaml.Marshal(obj)
		if !bytes.Equal(out[i], want) || errString(errs[i]) != errString(wantErr) {
			t.Fatalf("MarshalEach[%d] = %q, %v; sigsyaml.Marshal: %q, %v", i, out[i], errs[i], want, wantErr)
		}
	}
}

// TestCorpus compares Split and Marshal with the libraries on every reference output of the fidelity corpus
// (Argo CD's own manifests of real charts and overlays), and checks that the shortcut is what runs there: an
// output kept identical only by falling back would not be any faster.
func TestCorpus(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(sharedtest.Fidelity(t), "cases", "*", "expected*.yaml"))
	if len(files) == 0 {
		t.Fatal("no expected*.yaml in the fidelity corpus")
	}
	docs, fallbacks, copied := 0, 0, 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(filepath.Dir(f))+"/"+filepath.Base(f), func(t *testing.T) { checkSplit(t, data) })
		objs, err := Split(data)
		if err != nil {
			continue
		}
		for _, o := range objs {
			docs++
			if _, ok := yamlValue(o.Object, 0); !ok || !plain(o.Object, 0) {
				fallbacks++
			}
			if !direct(o.Object, 0) {
				copied++
			}
		}
	}
	if docs == 0 || fallbacks*100 > docs {
		t.Fatalf("%d of %d corpus objects take the libraries' path, want at most 1%%", fallbacks, docs)
	}
	if copied*100 > docs {
		t.Fatalf("%d of %d corpus objects are copied before Marshal encodes them, want at most 1%%", copied, docs)
	}
	t.Logf("%d files, %d objects, %d through the libraries' path, %d copied for Marshal", len(files), docs, fallbacks, copied)
}

// FuzzSplit compares Split and Marshal with kube.SplitYAML and sigsyaml.Marshal on any input.
func FuzzSplit(f *testing.F) {
	for _, tc := range streams {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 64<<10 {
			return
		}
		checkSplit(t, in)
	})
}

// BenchmarkMarshalLargeChart encodes kube-prometheus-stack's 147 objects (5 MB of YAML, mostly CRDs) as
// render's YAML stream does: encoder= Marshal (the encoder of encode.go), yaml.v2= yaml.v2's encoder given
// the object as it is (Marshal before the encoder, when direct holds), copied= the value yamlValue copies,
// encoded by yaml.v2.
func BenchmarkMarshalLargeChart(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(sharedtest.Fidelity(b), "cases", "helm-kube-prometheus-stack", "expected-helm3.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	objs, err := Split(data)
	if err != nil {
		b.Fatal(err)
	}
	benchmarkMarshal(b, objs)
}

func benchmarkMarshal(b *testing.B, objs []*unstructured.Unstructured) {
	b.Run("encoder", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			for _, o := range objs {
				if _, err := Marshal(o.Object); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("each", func(b *testing.B) { // MarshalEach, as WriteYAML encodes: on all CPUs, a buffer per CPU
		maps := make([]map[string]interface{}, len(objs))
		for i, o := range objs {
			maps[i] = o.Object
		}
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, errs := MarshalEach(maps); errors.Join(errs...) != nil {
				b.Fatal(errors.Join(errs...))
			}
		}
	})
	b.Run("yaml.v2", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			for _, o := range objs {
				if !direct(o.Object, 0) {
					b.Fatal("not direct")
				}
				if _, err := yaml.Marshal(o.Object); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("copied", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			for _, o := range objs {
				v, _ := yamlValue(o.Object, 0)
				if _, err := yaml.Marshal(v); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
