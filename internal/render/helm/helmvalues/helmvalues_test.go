package helmvalues

import (
	"reflect"
	"testing"
)

func TestMerge(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b map[string]any
		want map[string]any
	}{
		{name: "both empty", a: nil, b: nil, want: map[string]any{}},
		{name: "b adds keys", a: map[string]any{"x": 1}, b: map[string]any{"y": 2}, want: map[string]any{"x": 1, "y": 2}},
		{name: "b replaces a scalar", a: map[string]any{"x": 1}, b: map[string]any{"x": "two"}, want: map[string]any{"x": "two"}},
		{name: "maps merge at depth",
			a:    map[string]any{"img": map[string]any{"repo": "r", "tag": "1", "pull": map[string]any{"policy": "Always"}}},
			b:    map[string]any{"img": map[string]any{"tag": "2", "pull": map[string]any{"secret": "s"}}},
			want: map[string]any{"img": map[string]any{"repo": "r", "tag": "2", "pull": map[string]any{"policy": "Always", "secret": "s"}}}},
		{name: "lists are replaced whole", a: map[string]any{"l": []any{1, 2}}, b: map[string]any{"l": []any{3}}, want: map[string]any{"l": []any{3}}},
		{name: "a map over a scalar replaces it", a: map[string]any{"x": 1}, b: map[string]any{"x": map[string]any{"y": 1}},
			want: map[string]any{"x": map[string]any{"y": 1}}},
		{name: "a scalar over a map replaces it", a: map[string]any{"x": map[string]any{"y": 1}}, b: map[string]any{"x": nil},
			want: map[string]any{"x": nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := Copy(tc.a)
			if got := Merge(tc.a, tc.b); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Merge = %v, want %v", got, tc.want)
			}
			if !reflect.DeepEqual(tc.a, before) {
				t.Errorf("Merge modified a: %v, was %v", tc.a, before)
			}
		})
	}
}

func TestCopy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     map[string]any
		mutate func(m map[string]any)
	}{
		{name: "nested map", in: map[string]any{"a": map[string]any{"b": 1}},
			mutate: func(m map[string]any) { m["a"].(map[string]any)["b"] = 2 }},
		{name: "list", in: map[string]any{"l": []any{1, map[string]any{"x": "y"}}},
			mutate: func(m map[string]any) { m["l"].([]any)[1].(map[string]any)["x"] = "z" }},
		{name: "top level", in: map[string]any{"k": "v"}, mutate: func(m map[string]any) { m["k"] = "w" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Copy(tc.in)
			if !reflect.DeepEqual(c, tc.in) {
				t.Fatalf("Copy = %v, want %v", c, tc.in)
			}
			tc.mutate(c)
			if reflect.DeepEqual(c, tc.in) {
				t.Errorf("changing the copy changed the original: %v", tc.in)
			}
		})
	}
	if Copy(nil) != nil {
		t.Error("Copy(nil) is not nil")
	}
}
