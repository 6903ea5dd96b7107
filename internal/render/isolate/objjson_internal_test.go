package isolate

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// TestDecodeObjectMatchesAPIMachinery holds decodeObject to apimachinery's json.Unmarshal, which decoded the
// worker's manifests before: numbers, strings, nesting, duplicates, invalid UTF-8.
func TestDecodeObjectMatchesAPIMachinery(t *testing.T) {
	docs := []string{
		`{}`,
		`{"kind":"ConfigMap","data":{"a":"x","b":""},"list":[],"empty":{},"n":null,"t":true,"f":false}`,
		`{"ints":[0,-0,1,-1,9223372036854775807,-9223372036854775808,9223372036854775808,-9223372036854775809,123456789012345678901234567890]}`,
		`{"floats":[1.0,-0.0,1.5,1e3,1E-3,-2.5e+10,0.1,1.7976931348623157e308,5e-324,10.00]}`,
		`{"s":"\u00e9\ud83d\ude00 \"q\" \\ \/ \b\f\n\r\t \u0000 \u2028 <>&"}`,
		"{\"bad\":\"\xff\xfe x \xe2\x82\"}",
		`{"dup":1,"dup":2,"nested":{"dup":[1],"dup":{"x":"y"}}}`,
		` { "spaced" : [ 1 , { "a" : [ [ ] ] } ] } `,
	}
	for _, doc := range docs {
		got, err := decodeObject([]byte(doc))
		if err != nil {
			t.Errorf("decodeObject(%s): %v", doc, err)
			continue
		}
		var want map[string]any
		if err := utiljson.Unmarshal([]byte(doc), &want); err != nil {
			t.Fatalf("apimachinery refuses %s: %v", doc, err)
		}
		if !sameJSON(got, want) {
			t.Errorf("decodeObject(%s)\n got %#v\nwant %#v", doc, got, want)
		}
	}
	for _, bad := range []string{``, `[]`, `"x"`, `{"a":}`, `{"a":1}{}`, `{"a":1`} {
		if _, err := decodeObject([]byte(bad)); err == nil {
			t.Errorf("decodeObject(%q) accepted it", bad)
		}
	}
}

// FuzzDecodeObject: wherever apimachinery decodes an object, decodeObject decodes the same.
func FuzzDecodeObject(f *testing.F) {
	f.Add(`{"a":[1,2.5,"x",true,null,{"b":{}}]}`)
	f.Add(`{"n":-12e3,"m":"\u00e9"}`)
	f.Fuzz(func(t *testing.T, doc string) {
		var want map[string]any
		if utiljson.Unmarshal([]byte(doc), &want) != nil || want == nil {
			return
		}
		if !json.Valid([]byte(doc)) {
			return // the old decoder's tolerance of what is not JSON is not the pipe's concern
		}
		got, err := decodeObject([]byte(doc))
		if err != nil {
			t.Fatalf("decodeObject(%q): %v, apimachinery decodes %#v", doc, err, want)
		}
		if !sameJSON(got, want) {
			t.Fatalf("decodeObject(%q)\n got %#v\nwant %#v", doc, got, want)
		}
	})
}

func sameJSON(a, b any) bool {
	if x, ok := a.(float64); ok {
		y, ok := b.(float64)
		return ok && (x == y && math.Signbit(x) == math.Signbit(y) || math.IsNaN(x) && math.IsNaN(y))
	}
	return reflect.DeepEqual(a, b)
}
