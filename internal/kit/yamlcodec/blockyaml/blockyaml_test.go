package blockyaml_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"
	kubeyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/fleetwave/fleetwave/internal/kit/yamlcodec/blockyaml"
	"github.com/fleetwave/fleetwave/internal/testkit/sharedtest"
)

// same reports whether a and b are equal as yaml.v2 values, NaN equal to NaN.
func same(a, b interface{}) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || math.IsNaN(x) && math.IsNaN(y))
	case map[interface{}]interface{}:
		y, ok := b.(map[interface{}]interface{})
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !same(v, w) {
				return false
			}
		}
		return true
	case []interface{}:
		y, ok := b.([]interface{})
		if !ok || len(x) != len(y) || (x == nil) != (y == nil) {
			return false
		}
		for i := range x {
			if !same(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return reflect.TypeOf(a) == reflect.TypeOf(b) && a == b
}

// check decodes doc with both and fails when Decode answers something yaml.v2 does not. It returns whether
// Decode answered.
func check(t testing.TB, doc string) bool {
	t.Helper()
	got, ok := blockyaml.Decode([]byte(doc))
	if !ok {
		return false
	}
	var want interface{}
	err := yaml.Unmarshal([]byte(doc), &want)
	if err != nil {
		t.Fatalf("Decode(%q) = %#v, but yaml.v2 fails: %v", doc, got, err)
	}
	if !same(got, want) {
		t.Fatalf("Decode(%q)\n got %#v\nwant %#v", doc, got, want)
	}
	return true
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		decoded bool // false: left to yaml.v2
	}{
		{"empty", "", true},
		{"comments only", "# a\n\n  # b\n", true},
		{"mapping", "a: b\nc: d\n", true},
		{"nested", "a:\n  b:\n    c: d\n  e: f\ng: h\n", true},
		{"sequence", "- a\n- b\n", true},
		{"same-column sequence", "a:\n- x\n- y\nb: z\n", true},
		{"indented sequence", "a:\n  - x\n  - y\nb: z\n", true},
		{"compact mappings", "- name: a\n  image: b\n- name: c\n  ports:\n  - 80\n  - 443\n", true},
		{"compact mapping, wider", "-   name: a\n    image: b\n", true},
		{"null values", "a:\nb: ~\nc: null\nd: Null\ne:\n  # c\nf: x\n", true},
		{"null item", "-\n- a\n-   # c\n", true},
		{"booleans", "a: true\nb: yes\nc: On\nd: n\ne: FALSE\nf: off\ng: y\n", true},
		{"numbers", "a: 1\nb: -2\nc: +3\nd: 0x1F\ne: 010\nf: 1_000\ng: 1.5\nh: 1e3\ni: .5\nj: 0b101\nk: -0b11\nl: 9223372036854775808\nm: .inf\nn: -.Inf\no: .nan\np: 1.2.3\nq: 0o7\n", true},
		{"timestamps stay strings", "a: 2001-12-14\nb: 2001-12-14t21:59:43.10-05:00\nc: 2001-12-14 21:59:43.10\nd: 2001-13-45\n", true},
		{"key types", "1: a\ntrue: b\n~: c\n1.5: d\n", true},
		{"duplicate key, last wins", "a: 1\na: 2\n", true},
		{"plain with colons and hashes", "a: http://x:80/#frag\nb: c#d\nc: e # comment\nd: 'f' # comment\n", true},
		{"plain with indicators inside", "a: b, [c] {d} & *e !f\nb: -x\nc: ?y\nd: :z\n", true},
		{"single quotes", "a: 'it''s'\nb: ''\nc: '#x: y'\n'k': v\n", true},
		{"double quotes", "a: \"x\\ty\\n\\\"z\\\\ \\u00e9 \\x41 \\U0001F600 \\' \\_ \\N \\L\"\n\"k\": v\nb: \"null\"\nc: \"\"\n", true},
		{"quoted null-like", "a: 'null'\nb: \"~\"\n", true},
		{"empty flow", "a: {}\nb: []\nc: {} # x\n- x\n", false},
		{"empty flow only", "a: {}\nb: []\nc: {} # x\n", true},
		{"literal", "a: |\n  x\n  y\nb: z\n", true},
		{"literal strip keep", "a: |-\n  x\n\n  y\n\n\nb: |+\n  x\n\n\nc: z\n", true},
		{"literal more indented lines", "a: |\n  x\n    y\n  z\n", true},
		{"literal leading empty lines", "a: |\n\n\n  x\nb: 1\n", true},
		{"literal at end without newline", "a: |\n  x", true},
		{"literal in sequence", "- |\n  x\n- |-\n  y\n- key: |\n    z\n  k2: w\n", true},
		{"literal with tabs and comments", "a: |\n  x\ty\n  # not a comment\n# a comment\nb: c\n", true},
		{"literal with spaces-only lines", "a: |\n  x\n \n  y\n", true},
		{"multi-line plain", "a: b\n  c\n\n\n   d # comment\ne: f\n  g\n\nh: i\n", true},
		{"multi-line plain with indicators", "a: b\n  - c\n  > d\n  ? e\n  `f` {g} [h] 'i' \"j\" *k &l !m %n @o |p\n", true},
		{"multi-line plain in a sequence", "- a\n  b\n- c\n", true},
		{"multi-line plain on its own lines", "a:\n  b\n  c\nd: e\n", true},
		{"multi-line plain resolved", "a: 1\n  2\nb: tr\n  ue\n", true},
		{"multi-line plain then comment then deeper", "a: b\n# c\n  d\n", false},
		{"multi-line plain with a colon", "a: b\n  c: d\n", false},
		{"multi-line quoted", "a: 'b\n  c'\nb: \"d\n\n  e\"\n- x\n", false},
		{"multi-line quoted in a mapping", "a: 'b\n  c'\nb: \"d\n\n  e\"\n", true},
		{"unicode", "a: é€😀\nb: 'ü'\n", true},
		{"key with spaces before colon", "k : v\n\"q\": w\n", true},
		{"top-level scalar", "hello\n", true},
		// Left to yaml.v2.
		{"anchor", "a: &x 1\nb: *x\n", false},
		{"tag", "a: !!str 1\n", false},
		{"flow sequence", "a: [1, 2]\n", true},
		{"flow mapping", "a: {b: c}\n", true},
		{"flow collections", "a: {b: [1, 'x, y', \"z\"], c: {d: e}, f: ~, g: yes}  # c\nh: [ ]\ni: [a,b]\nj: {k: v:w}\n- x\n", false},
		{"nested flow collections", "a: {b: [1, 'x, y', \"z\"], c: {d: e}, f: ~, g: yes}  # c\nh: [ ]\ni: [a,b]\nl: [{m: n}, [o]]\n", true},
		{"flow in a sequence", "- [a, b]\n- {c: d}\n", true},
		{"flow plain with colons", "a: [http://x, b:c]\n", false},
		{"flow pair in a sequence", "a: [b: c]\n", false},
		{"flow trailing comma", "a: [b, ]\n", false},
		{"flow empty value", "a: {b: }\n", false},
		{"flow key only", "a: {b}\n", false},
		{"flow over lines", "a: [b,\n  c]\n", false},
		{"flow comment inside", "a: [b #c\n  ]\n", false},
		{"flow explicit key", "a: {? b: c}\n", false},
		{"flow anchor", "a: [&x b, *x]\n", false},
		{"flow quoted key", "a: {'b c': d, \"e\": f}\n", true},
		{"flow glued value", "a: {\"b\":c}\n", false},
		{"flow after text", "a: [b] c\n", false},
		{"multi-line quoted with spaces", "a: 'b   \n    c\n\n  d  '\nb: \"x \n  \\u00e9\\ \n  y\"\n", true},
		{"multi-line quoted ending at the margin", "a: 'b\nc'\n", false},
		{"escaped line break", "a: \"b\\\n  c\"\n", false},
		{"folded", "a: >\n  x\n", false},
		{"indentation indicator", "a: |2\n   x\n", false},
		{"complex key", "? a\n: b\n", false},
		{"merge key", "<<: {a: 1}\n", false},
		{"tab indentation", "a:\n\tb: c\n", false},
		{"tab in value", "a: b\tc\n", false},
		{"carriage return", "a: b\r\n", false},
		{"document marker", "---\na: b\n", false},
		{"directive", "%YAML 1.1\n---\na: b\n", false},
		{"nested compact sequence", "- - a\n", false},
		{"mapping value error", "a: b: c\n", false},
		{"bad indentation", "a:\n    b: c\n  d: e\n", false},
		{"NEL", "a: b\u0085c\n", false},
		{"control character", "a: b\x01c\n", false},
		{"invalid escape", "a: \"\\q\"\n", false},
		{"surrogate escape", "a: \"\\ud800\"\n", false},
		{"long key", strings.Repeat("k", 1001) + ": v\n", false},
		{"value then deeper line", "a: b\n  c: d\n", false},
		{"empty literal", "a: |\nb: c\n", false},
		{"literal keep at end", "a: |+\n  x\n\n", false},
		{"top-level literal needs an indentation", "|\n0", false},
		{"top-level literal", "|\n 0\n", true},
		{"tab after the indentation of a literal", "|\n \t", false},
		{"tab inside a literal", "a: |\n  x\n  \ty\t\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := check(t, tt.doc); got != tt.decoded {
				var v interface{}
				err := yaml.Unmarshal([]byte(tt.doc), &v)
				t.Errorf("Decode answered: %v, want %v (yaml.v2: %#v, %v)", got, tt.decoded, v, err)
			}
		})
	}
}

// TestDecodeCorpus decodes every document of the fidelity corpus's expected renders (Argo CD's own output
// of 44 real charts and overlays) and of the charts' own YAML files: wherever Decode answers, yaml.v2 agrees;
// and Decode answers for the bulk of them, the CRDs of kube-prometheus-stack above all, or the speed-up is lost.
func TestDecodeCorpus(t *testing.T) {
	corpus := filepath.Join(sharedtest.Fidelity(t), "cases")
	var docs, decoded, bytesAll, bytesDecoded int
	err := filepath.WalkDir(corpus, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rd := kubeyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := rd.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				break
			}
			var v interface{}
			if yaml.Unmarshal(doc, &v) != nil {
				continue // not YAML (a template): yaml.v2 reports its error
			}
			docs++
			bytesAll += len(doc)
			if check(t, string(doc)) {
				decoded++
				bytesDecoded += len(doc)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d YAML documents decoded here (%.0f%% of %d bytes); yaml.v2 agrees on all of them", decoded, docs, 100*float64(bytesDecoded)/float64(bytesAll), bytesAll)
	if docs == 0 || float64(bytesDecoded) < 0.9*float64(bytesAll) {
		t.Errorf("Decode answered for %d of %d bytes: under 90%%, the fast path no longer covers what charts render", bytesDecoded, bytesAll)
	}
}

func FuzzDecode(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.yaml")
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	for _, s := range []string{"a: b\n", "- a\n- b: c\n  d: |\n    x\n", "a: 'x'\nb: \"\\u00e9\"\n", "a:\n- 1\n- true\n- ~\n",
		"a: {b: [1, 'x, y', \"z\"], c: {d: e}, f: ~}\ng: [a, {h: i}]\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		check(t, doc)
	})
}

func ExampleDecode() {
	v, ok := blockyaml.Decode([]byte("kind: ConfigMap\ndata:\n  a: |\n    x\n  b: 1\n"))
	fmt.Printf("%v %v\n", ok, v)
	// Output: true map[data:map[a:x
	//  b:1] kind:ConfigMap]
}
