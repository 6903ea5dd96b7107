package blockyaml_test

import (
	"testing"

	"go.yaml.in/yaml/v2"
	yamlv3 "gopkg.in/yaml.v3"

	"github.com/fleetwave/fleetwave/internal/kit/yamlcodec/blockyaml"
)

// libraryStrings is every string value (not key) in what yaml.v2 or yaml.v3 decoded.
func libraryStrings(v interface{}, out map[string]bool) {
	switch x := v.(type) {
	case string:
		out[x] = true
	case []interface{}:
		for _, e := range x {
			libraryStrings(e, out)
		}
	case map[interface{}]interface{}:
		for _, e := range x {
			libraryStrings(e, out)
		}
	case map[string]interface{}:
		for _, e := range x {
			libraryStrings(e, out)
		}
	}
}

// checkStrings fails when a string value either library decodes from doc is missing from Strings(doc).
func checkStrings(t testing.TB, doc string) bool {
	t.Helper()
	got, ok := blockyaml.Strings([]byte(doc))
	if !ok {
		return false
	}
	have := map[string]bool{}
	for _, s := range got {
		have[s] = true
	}
	for name, unmarshal := range map[string]func([]byte, interface{}) error{"yaml.v2": yaml.Unmarshal, "yaml.v3": yamlv3.Unmarshal} {
		var v interface{}
		if unmarshal([]byte(doc), &v) != nil {
			continue
		}
		want := map[string]bool{}
		libraryStrings(v, want)
		for s := range want {
			if !have[s] {
				t.Fatalf("Strings(%q) = %q: misses %q, which %s decodes", doc, got, s, name)
			}
		}
	}
	return true
}

func TestStrings(t *testing.T) {
	tests := []struct {
		doc  string
		want []string
	}{
		{"resources:\n- base/a.yaml\n- ../b\npatches:\n- path: p.yaml\n  target: {}\n", []string{"base/a.yaml", "../b", "p.yaml"}},
		{"a: yes\nb: on\nc: 1.10\nd: ~\ne: 'q'\nf: |\n  x\n", []string{"yes", "on", "1.10", "~", "q", "x\n"}},
		{"yes: a\n", []string{"a"}},
	}
	for _, tt := range tests {
		got, ok := blockyaml.Strings([]byte(tt.doc))
		if !ok || len(got) != len(tt.want) {
			t.Fatalf("Strings(%q) = %q, %v; want %q", tt.doc, got, ok, tt.want)
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("Strings(%q)[%d] = %q, want %q", tt.doc, i, got[i], tt.want[i])
			}
		}
		checkStrings(t, tt.doc)
	}
	if _, ok := blockyaml.Strings([]byte("a: &x b\n")); ok {
		t.Error("Strings answered for a document Decode leaves to yaml.v2")
	}
}

func FuzzStrings(f *testing.F) {
	for _, s := range []string{"resources:\n- a.yaml\n- 'b c'\n", "a: yes\nb:\n- on\n- \"x\\ty\"\nc: |-\n  z\n", "k: v\n  w\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		checkStrings(t, doc)
	})
}
