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
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/testkit/sharedtest"
)

// checkEncode asserts that the encoder covers obj and writes sigsyaml.Marshal's bytes, and yaml.v2's for obj
// itself where yaml.v2 writes obj as sigsyaml.Marshal does (direct).
func checkEncode(t *testing.T, obj map[string]interface{}) {
	t.Helper()
	got, ok := encode(obj, 0)
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
			if _, ok := encode(tc.obj, 0); ok {
				t.Fatalf("encode covered %.200v", tc.obj)
			}
			if tc.name != "keys keyList.Less does not order" { // yaml.v2's own order varies there
				checkMarshal(t, tc.obj)
			}
		})
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
