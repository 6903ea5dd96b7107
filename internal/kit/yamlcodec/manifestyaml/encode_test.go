package manifestyaml

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/testkit/sharedtest"
)

// checkEncode asserts that the encoder covers obj and writes sigsyaml.Marshal's bytes, and yaml.v2's for obj
// itself where yaml.v2 writes obj as sigsyaml.Marshal does (direct).
func checkEncode(t *testing.T, obj map[string]interface{}) {
	t.Helper()
	got, ok := encode(obj, nil)
	if !ok {
		t.Fatalf("encode gave up on %#v", obj)
	}
	want, err := sigsyaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encode of %#v:\n%s\nsigsyaml.Marshal:\n%s", obj, got, want)
	}
	if direct(obj, 0) {
		if v2, err := yaml.Marshal(obj); err != nil || !bytes.Equal(got, v2) {
			t.Fatalf("encode of %#v:\n%s\nyaml.v2:\n%s (%v)", obj, got, v2, err)
		}
	}
}

// trickyScalars are strings whose style, quoting, escapes or folding yaml.v2 decides with care.
var trickyScalars = []string{
	"", "true", "True", "TRUE", "false", "yes", "Yes", "no", "on", "off", "OFF", "y", "n", "Y", "N", "~", "null", "Null", "NULL",
	"1", "-1", "+1", "1.5", ".5", "5.", "0x1F", "0o17", "017", "0b101", "-0b101", "0b102", "1e3", "1E3", "1e", "1_000",
	"9223372036854775807", "9223372036854775808", "18446744073709551616", "-9223372036854775809",
	".inf", ".Inf", "-.inf", "+.inf", ".nan", ".NaN", ".", "..", "...", "...x", "---", "---x", "--", "-",
	"2001-12-14", "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10", "2001-1-2", "2001-13-45", "20011-12-14",
	"190:20:30", "-1:30", "1:60", "1:2:3.5", "12:30", "a:b", "<<", "<", "=",
	": ", ":", "a: b", "a:", "a :b", "? x", "?", "?x", "- x", "-x", "x -", " #", "#x", "a #b", "a#b",
	"@x", "`x", "%x", "!x", "&x", "*x", "|x", ">x", "'x", "\"x", "{x", "}x", "[x", "]x", ",x", "x,y", "x[y]", "{}", "[]",
	" x", "x ", " ", "  ", "x  y", "it's", "'", "''", "\"", "\\", "a\\b", "a\"b",
	"\t", "a\tb", "\tx", "x\t", "a\x01b", "\x00", "\x07\x08\x0b\x0c\x1b", "\r", "a\rb", "a\r\nb",
	"naïve", "日本語", "🚀", "é x", "\u00a0", "a\u00a0b", "\ufeff", "\ufeffx y", "x\ufeff", "\u2028", "a\u2028b", "a\u2029",
	"\ue000", "\ufffc", "\ufeff\u00fe\u00ff\u0100", "\ufeff\U0001F680\u00a0\n\t\"\\", "\ufeffa\u2028\u2029\u00a0 b",
	"x\n", "x\n\n", "\n", "\n\n", "\nx", " \nx", "x \ny", "x\n y", "x\n\ny\n", "x\n ", "a\nb\n\n\n", "  lead\n", "\tx\ny",
	"x\ny\u2028", "x\u2028\n", "x\n\u2028", "#!/bin/sh\necho \"hi\"\n", "x\r\ny\n", "x\n\ty\n", "\u00e9\n\u00e9",
	strings.Repeat("word ", 30), strings.Repeat("w", 100), strings.Repeat("w", 100) + " x", "x " + strings.Repeat("w", 100),
	strings.Repeat("a b  ", 30), strings.Repeat("x ", 60) + "@", "@" + strings.Repeat(" x", 60), strings.Repeat("\t x", 40),
	strings.Repeat("é ", 50), strings.Repeat("日本 ", 40), "\ufeff" + strings.Repeat("ab ", 40), strings.Repeat("it's ", 30),
	strings.Repeat("line\n", 5) + strings.Repeat("long ", 30), strings.Repeat(" x", 50) + "\n", strings.Repeat("a\"b ", 30),
}

// foldingScalars put a space at each column around best_width (80), after keys of several lengths at several
// depths (below), in the plain, single-quoted and double-quoted styles.
func foldingScalars() []string {
	var out []string
	for n := 60; n <= 90; n++ {
		w := strings.Repeat("x", n)
		out = append(out,
			w+" y", w+" y z", w+"  y", w+" "+w, // plain
			"@"+w+" y", w+": y", w+" #y", // single-quoted
			"@"+w+" ", "@"+w+"  ", "@"+w+" y ", // single-quoted, trailing spaces
			"\t"+w+" y", w+"\t y", w+" \ty", w+"  y\t", w+" \"y", "\t"+w+" ", "\t"+w+"  ", "\t"+w+" y ", // double-quoted
			w+" y\n", w+"\ny", // literal: no folding
			strings.Repeat("é", n)+" y", strings.Repeat("日", n)+" y",
		)
	}
	return out
}

func TestEncodeScalars(t *testing.T) {
	scalars := append(append([]string(nil), trickyScalars...), foldingScalars()...)
	keys := []string{"k", "key", strings.Repeat("k", 10), strings.Repeat("k", 17)}
	for _, s := range scalars {
		t.Run(fmt.Sprintf("%.40q", s), func(t *testing.T) {
			for _, k := range keys {
				// Values at depths 0 to 3, in mappings and in sequences, and the string as a key.
				checkEncode(t, map[string]interface{}{k: s})
				checkEncode(t, map[string]interface{}{"a": map[string]interface{}{k: s}})
				checkEncode(t, map[string]interface{}{"a": map[string]interface{}{"b": map[string]interface{}{k: s, "z": s}}})
				checkEncode(t, map[string]interface{}{"a": []interface{}{s, map[string]interface{}{k: s}, []interface{}{s}}})
				checkEncode(t, map[string]interface{}{"a": []interface{}{[]interface{}{map[string]interface{}{k: []interface{}{s}}}}})
			}
			if len(s) <= maxKeyBytes {
				checkEncode(t, map[string]interface{}{s: "v"})
				checkEncode(t, map[string]interface{}{"a": map[string]interface{}{s: []interface{}{s}, "b": s}})
				checkEncode(t, map[string]interface{}{"a": []interface{}{map[string]interface{}{s: map[string]interface{}{s: 1}}}})
			}
		})
	}
}

// TestEncodeValues covers the other values, the containers, long keys and the key order.
func TestEncodeValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  map[string]interface{}
	}{
		{"empty", map[string]interface{}{}},
		{"numbers", map[string]interface{}{"a": int64(math.MaxInt64), "b": int64(math.MinInt64), "c": 0, "d": -1, "e": int64(7)}},
		{"floats", map[string]interface{}{"a": 2.0, "b": 0.1, "c": 1e21, "d": 1e-7, "e": math.Copysign(0, -1), "f": 1e20, "g": 1.8e19, "h": -1.5e300, "i": 5e-324, "j": 123456789.125}},
		{"floats at 2^53 and 2^63", map[string]interface{}{"a": 1 << 53, "b": float64(1<<53 - 1), "c": -float64(1<<53 - 1), "d": float64(1 << 53), "e": float64(1<<53 + 2), "f": -float64(1 << 53), "g": float64(1 << 63), "h": -float64(1 << 63), "i": float64(1 << 64), "j": 1e21 - 65536*2}},
		{"numbers as JSON decoding into interface{} makes them", map[string]interface{}{"replicas": 3.0, "port": 8080.0, "ratio": 0.25, "neg": -1.0, "list": []interface{}{1.0, 2.5, map[string]interface{}{"x": 100.0}}}},
		{"what the diff's Secret masking writes", map[string]interface{}{"kind": "Secret", "data": map[string]interface{}{"a": "++++++++ (changed)", "b": "[]uint8:[1 2]", "c": "invalid-base64:%%%", "d": "line\nbreak"}}},
		{"booleans and null", map[string]interface{}{"a": true, "b": false, "c": nil}},
		{"nil and empty containers", map[string]interface{}{"a": map[string]interface{}(nil), "b": []interface{}(nil), "c": map[string]interface{}{}, "d": []interface{}{}, "e": []interface{}{map[string]interface{}{}, []interface{}{}, nil}}},
		{"sequences of sequences", map[string]interface{}{"a": []interface{}{[]interface{}{[]interface{}{"x", 1}}, []interface{}{map[string]interface{}{"b": []interface{}{"y"}}}}}},
		{"mapping in a sequence in a sequence", map[string]interface{}{"a": []interface{}{[]interface{}{map[string]interface{}{"b": 1, "c": map[string]interface{}{"d": []interface{}{}}}}}}},
		{"keys of 128 and 129 bytes", map[string]interface{}{strings.Repeat("k", 128): "v", strings.Repeat("l", 129): "v", strings.Repeat("m", 129): []interface{}{"x"}, strings.Repeat("n", 129): map[string]interface{}{"o": 1}}},
		{"long multi-byte key", map[string]interface{}{strings.Repeat("é", 70): "v"}},
		{"multi-line keys", map[string]interface{}{"a\nb": "v", "a\n": []interface{}{1}, "\n": map[string]interface{}{"c\nd": "e\n"}, "a\u2028b": "x", "x\ny": nil}},
		{"keys that need quoting", map[string]interface{}{"": 1, "true": 2, "1": 3, "- x": 4, "a: b": 5, "#": 6, " x": 7, "@": 8, "'": 9, "\t": 10, "\ufeff": 11, "<<": 12}},
		{"key order", map[string]interface{}{"a10": 1, "a9": 2, "B": 3, "b": 4, "1": 5, "10": 6, "2": 7, "-": 8, "_": 9, "~": 10, "Z": 11, "a": 12, "ab": 13, "a-b": 14, "a.b": 15, "a/b": 16, "é": 17, "e": 18, "日": 19}},
		{"key order with zeros", map[string]interface{}{"a0": 1, "a00": 2, "a01": 3, "a1": 4, "a10": 5, "a010": 6, "x1y": 7, "x01y": 8, "x1z": 9}},
		{"Kubernetes keys", map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]interface{}{"name": "x", "labels": map[string]interface{}{"app.kubernetes.io/name": "x", "k8s-app": "y", "helm.sh/chart": "z-1.2.3"}}, "data": map[string]interface{}{"config.yaml": "a: 1\nb:\n  - c\n", "run.sh": "#!/bin/sh\nexec x \"$@\"\n"}}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkEncode(t, tc.obj) })
	}
}

// TestEncodeGivesUp checks what the encoder leaves to the libraries, and that Marshal still matches them there.
func TestEncodeGivesUp(t *testing.T) {
	deep := map[string]interface{}{}
	for i := 0; i < maxDepth+5; i++ {
		deep = map[string]interface{}{"a": deep}
	}
	for _, tc := range []struct {
		name string
		obj  map[string]interface{}
	}{
		{"NaN", map[string]interface{}{"a": math.NaN()}},
		{"infinity", map[string]interface{}{"a": []interface{}{math.Inf(1)}}},
		{"NEL", map[string]interface{}{"a": "x\u0085y"}},
		{"DEL", map[string]interface{}{"a": "x\x7fy"}},
		{"invalid UTF-8", map[string]interface{}{"a": "x\xffy"}},
		{"U+FFFE", map[string]interface{}{"a": "x\ufffe"}},
		{"key over maxKeyBytes", map[string]interface{}{strings.Repeat("k", maxKeyBytes+1): "v"}},
		{"unprintable key", map[string]interface{}{"a\x7f": "v"}},
		{"int32", map[string]interface{}{"a": int32(1)}},
		{"[]string", map[string]interface{}{"a": []string{"x"}}},
		{"keys keyList.Less does not order", map[string]interface{}{"0001": 1, "000a": 2, "001": 3}},
		{"too deep", deep},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := encode(tc.obj, nil); ok {
				t.Fatalf("encode covered %.200v", tc.obj)
			}
			if tc.name != "keys keyList.Less does not order" { // yaml.v2's own order varies there
				checkMarshal(t, tc.obj)
			}
		})
	}
}

// TestPrintableText compares printableText with printable on strings with each kind of character at each
// position of an eight-byte word.
func TestPrintableText(t *testing.T) {
	for _, c := range []string{"a", "~", "\x00", "\x7f", "\u0080", "\u0085", "\u00ff", "\ufeff", "\ufffe", "\U0001F680", "\xff", "\xc3"} {
		for pre := 0; pre < 20; pre++ {
			for _, post := range []string{"", "x", "abcdefghijklmnop"} {
				s := strings.Repeat("x", pre) + c + post
				if printableText(s) != printable(s) {
					t.Fatalf("printableText(%q) = %v, printable: %v", s, printableText(s), printable(s))
				}
			}
		}
	}
}

// TestKeyLess compares keyLess with yaml.v2's order on all short strings of a small alphabet: yaml.v2 sorts
// each pair (a two-key map: its order is the order keyList.Less gives whatever the map's iteration order).
func TestKeyLess(t *testing.T) {
	alphabet := []string{"0", "1", "9", "a", "B", "-", "é", "٣"}
	var all []string
	var gen func(string, int)
	gen = func(s string, n int) {
		all = append(all, s)
		for _, c := range alphabet {
			if n > 0 {
				gen(s+c, n-1)
			}
		}
	}
	gen("", 2)
	for _, a := range all {
		for _, b := range all {
			if a == b {
				continue
			}
			out, err := yaml.Marshal(map[string]int{a: 0, b: 1})
			if err != nil {
				t.Fatal(err)
			}
			var first yaml.MapSlice
			if err := yaml.Unmarshal(out, &first); err != nil {
				t.Fatal(err)
			}
			if v2Less := first[0].Value == 0; keyLess(a, b) != v2Less {
				t.Fatalf("keyLess(%q, %q) = %v, yaml.v2 writes %q", a, b, !v2Less, out)
			}
		}
	}
}

// TestKeyLessTransitiveWithoutDigits backs sortEntries' shortcut: on ASCII keys without a digit keyList.Less
// is a total order (checked on all keys of up to two characters of an alphabet of letters and punctuation).
func TestKeyLessTransitiveWithoutDigits(t *testing.T) {
	all := []string{""}
	for _, a := range "aZz-._/~ " {
		all = append(all, string(a))
		for _, b := range "aZz-._/~ " {
			all = append(all, string(a)+string(b))
		}
	}
	for _, a := range all {
		for _, b := range all {
			if a == b || !keyLess(a, b) {
				continue
			}
			if keyLess(b, a) {
				t.Fatalf("keyLess(%q, %q) and keyLess(%q, %q)", a, b, b, a)
			}
			for _, c := range all {
				if keyLess(b, c) && !keyLess(a, c) {
					t.Fatalf("%q < %q < %q but not %q < %q", a, b, c, a, c)
				}
			}
		}
	}
}

// TestSortEntries checks the order sortEntries gives and that it refuses the keys keyList.Less does not order.
func TestSortEntries(t *testing.T) {
	for _, tc := range []struct {
		keys []string
		want []string // nil: refused
	}{
		{[]string{"b", "a", "B", "-", "ab"}, []string{"-", "B", "a", "ab", "b"}},
		{[]string{"a10", "a2", "a1", "a01", "b"}, []string{"a1", "a01", "a2", "a10", "b"}},
		{[]string{"001", "0001", "000a"}, nil},
		{[]string{"x001", "x0001", "x000a", "y"}, nil},
	} {
		entries := make([]entry, len(tc.keys))
		for i, k := range tc.keys {
			entries[i] = entry{key: k}
		}
		ok := sortEntries(entries)
		if ok != (tc.want != nil) {
			t.Fatalf("sortEntries(%q) = %v", tc.keys, ok)
		}
		for i, w := range tc.want {
			if entries[i].key != w {
				t.Fatalf("sortEntries(%q): %v, want %q", tc.keys, entries, tc.want)
			}
		}
	}
}

// TestEncodeCorpus checks the encoder on every object of the fidelity corpus: it covers all of them and writes
// yaml.v2's bytes.
func TestEncodeCorpus(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(sharedtest.Fidelity(t), "cases", "*", "expected*.yaml"))
	if len(files) == 0 {
		t.Fatal("no expected*.yaml in the fidelity corpus")
	}
	objects := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := Split(data)
		if err != nil {
			continue
		}
		for i, o := range objs {
			objects++
			t.Run(fmt.Sprintf("%s/%s/%d", filepath.Base(filepath.Dir(f)), filepath.Base(f), i), func(t *testing.T) {
				checkEncode(t, o.Object)
			})
		}
	}
	if objects == 0 {
		t.Fatal("no objects in the fidelity corpus")
	}
	t.Logf("%d files, %d objects", len(files), objects)
}

// fuzzPieces are the alphabet of FuzzMarshal's strings: indicators, words YAML resolves, breaks, blanks,
// escapes, multi-byte characters and what the encoder leaves to the libraries (NEL, DEL).
var fuzzPieces = []string{
	"a", "b", "Z", "0", "1", "9", " ", "  ", "\n", "\t", "\r", ":", ": ", "#", " #", "-", "- ", "?", "'", "\"", "\\",
	"@", "`", "!", "&", "*", "|", ">", "%", ",", "[", "]", "{", "}", ".", "...", "---", "~", "_", "+",
	"true", "no", "null", "0x1F", "1e3", "1.5", "2001-12-14", "1:20", "<<",
	"é", "日", "🚀", "\u00a0", "\u2028", "\u2029", "\ufeff", "\x00", "\x01", "\x1b", "\u0085", "\x7f",
	"word", "longerword", "abcdefghijklmnopqrstuvwxyz",
}

// fuzzObject builds an object from fuzz bytes: nested mappings and sequences of strings, numbers, booleans,
// nulls, nil and empty containers, keys and strings drawn from fuzzPieces.
type fuzzObject struct {
	in []byte
}

func (f *fuzzObject) next() int {
	if len(f.in) == 0 {
		return 0
	}
	b := f.in[0]
	f.in = f.in[1:]
	return int(b)
}

func (f *fuzzObject) str() string {
	n := f.next() % 24
	if n >= 20 { // long: a piece repeated past the folding width
		p := fuzzPieces[f.next()%len(fuzzPieces)] + fuzzPieces[f.next()%len(fuzzPieces)]
		return strings.Repeat(p, 1+f.next()%60)
	}
	var b strings.Builder
	for range n {
		b.WriteString(fuzzPieces[f.next()%len(fuzzPieces)])
	}
	return b.String()
}

func (f *fuzzObject) value(depth int) interface{} {
	switch k := f.next() % 16; {
	case k < 6 || depth > 6:
		return f.str()
	case k == 6:
		return int64(f.next()-128) * int64(1+f.next()) * int64(1+f.next()*f.next())
	case k == 7:
		return []interface{}{nil, true, false}[f.next()%3]
	case k == 8:
		return []float64{0.5, 2, 1e21, 1e20, 1e-7, math.Copysign(0, -1), 1.8e19, -123.25, math.NaN()}[f.next()%9]
	case k == 9:
		return []interface{}{map[string]interface{}(nil), []interface{}(nil), map[string]interface{}{}, []interface{}{}}[f.next()%4]
	case k < 13:
		return f.mapping(depth + 1)
	default:
		s := make([]interface{}, f.next()%5)
		for i := range s {
			s[i] = f.value(depth + 1)
		}
		return s
	}
}

func (f *fuzzObject) mapping(depth int) map[string]interface{} {
	m := map[string]interface{}{}
	for n := f.next() % 6; n > 0; n-- {
		m[f.str()] = f.value(depth)
	}
	return m
}

// orderable reports whether every mapping in v has keys that keyList.Less orders consistently (elsewhere yaml.v2's
// output follows Go's map iteration order and cannot be compared).
func orderable(v interface{}) bool {
	switch t := v.(type) {
	case map[string]interface{}:
		entries := make([]entry, 0, len(t))
		for k, e := range t {
			if !orderable(e) {
				return false
			}
			entries = append(entries, entry{k, e})
		}
		return sortEntries(entries)
	case []interface{}:
		for _, e := range t {
			if !orderable(e) {
				return false
			}
		}
	}
	return true
}

// coverable reports whether the encoder must cover v (given orderable keys): printable strings and keys, keys
// within maxKeyBytes, finite numbers.
func coverable(v interface{}) bool {
	switch t := v.(type) {
	case string:
		return printable(t)
	case float64:
		return !math.IsNaN(t) && !math.IsInf(t, 0)
	case map[string]interface{}:
		for k, e := range t {
			if len(k) > maxKeyBytes || !printable(k) || !coverable(e) {
				return false
			}
		}
	case []interface{}:
		for _, e := range t {
			if !coverable(e) {
				return false
			}
		}
	}
	return true
}

// FuzzMarshal compares the encoder with yaml.v2 and sigsyaml.Marshal on random objects, and Marshal with
// sigsyaml.Marshal where the encoder gives up.
func FuzzMarshal(f *testing.F) {
	f.Add([]byte("\x0a\x03\x05\x01\x02\x00\x0b\x02\x14\x03\x04\x05\x10"))
	f.Add([]byte(strings.Repeat("\x0c\x04\x14\x30\x31\x20", 8)))
	f.Fuzz(func(t *testing.T, in []byte) {
		obj := (&fuzzObject{in: in}).mapping(0)
		if !orderable(obj) {
			return
		}
		got, ok := encode(obj, nil)
		want, wantErr := sigsyaml.Marshal(obj)
		if !ok {
			if coverable(obj) {
				t.Fatalf("encode gave up on %#v", obj)
			}
			checkMarshal(t, obj)
			return
		}
		if wantErr != nil || !bytes.Equal(got, want) {
			t.Fatalf("encode of %#v:\n%s\nsigsyaml.Marshal (%v):\n%s", obj, got, wantErr, want)
		}
		if direct(obj, 0) {
			if v2, err := yaml.Marshal(obj); err != nil || !bytes.Equal(got, v2) {
				t.Fatalf("encode of %#v:\n%s\nyaml.v2 (%v):\n%s", obj, got, err, v2)
			}
		}
	})
}

// BenchmarkMarshalGeneratedCRDs is BenchmarkMarshalLargeChart on generated objects shaped like a chart's CRDs
// (deep openAPIV3Schema properties with long descriptions), for a clone without the fidelity corpus: about
// 40 objects, 2.5 MB of YAML.
func BenchmarkMarshalGeneratedCRDs(b *testing.B) {
	objs := make([]*unstructured.Unstructured, 40)
	for i := range objs {
		objs[i] = &unstructured.Unstructured{Object: generatedCRD(i)}
	}
	benchmarkMarshal(b, objs)
}

// generatedCRD is a CustomResourceDefinition whose schema nests objects four levels deep, each property with a
// description long enough to fold, an enum, a pattern and the usual Kubernetes keys.
func generatedCRD(n int) map[string]interface{} {
	var props func(depth int) map[string]interface{}
	props = func(depth int) map[string]interface{} {
		m := map[string]interface{}{}
		for i := 0; i < 7; i++ {
			p := map[string]interface{}{
				"description": fmt.Sprintf("Field %d of level %d. ", i, depth) + strings.Repeat("It configures how the operator reconciles the resource, see the docs. ", 1+i%3),
				"type":        "string",
			}
			switch {
			case depth < 3 && i%3 == 0:
				p["type"] = "object"
				p["properties"] = props(depth + 1)
				p["required"] = []interface{}{"name", "key"}
				p["x-kubernetes-map-type"] = "atomic"
			case i%3 == 1:
				p["type"] = "array"
				p["items"] = map[string]interface{}{"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"}
			default:
				p["enum"] = []interface{}{"Always", "IfNotPresent", "Never"}
				p["default"] = "IfNotPresent"
				p["format"] = "int-or-string"
				p["x-kubernetes-int-or-string"] = true
			}
			m[fmt.Sprintf("field%dName%s", i, strings.Repeat("x", depth))] = p
		}
		return m
	}
	return map[string]interface{}{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata": map[string]interface{}{
			"name":        fmt.Sprintf("things%d.example.com", n),
			"annotations": map[string]interface{}{"controller-gen.kubebuilder.io/version": "v0.16.1", "argocd.argoproj.io/sync-options": "ServerSideApply=true"},
			"labels":      map[string]interface{}{"app.kubernetes.io/name": "thing", "helm.sh/chart": "thing-1.2.3"},
		},
		"spec": map[string]interface{}{
			"group": "example.com",
			"names": map[string]interface{}{"kind": "Thing", "listKind": "ThingList", "plural": "things", "singular": "thing"},
			"scope": "Namespaced",
			"versions": []interface{}{map[string]interface{}{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]interface{}{"openAPIV3Schema": map[string]interface{}{
					"type":       "object",
					"properties": map[string]interface{}{"spec": map[string]interface{}{"type": "object", "properties": props(0)}},
				}},
			}},
		},
	}
}
