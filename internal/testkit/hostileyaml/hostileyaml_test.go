package hostileyaml

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestAliasBomb(t *testing.T) {
	for _, tc := range []struct {
		indent string
		levels int
		want   string
	}{
		{"", 1, "l0: &l0 [x,x,x,x,x,x,x,x,x]\n"},
		{"  ", 2, "  l0: &l0 [x,x,x,x,x,x,x,x,x]\n  l1: &l1 [*l0,*l0,*l0,*l0,*l0,*l0,*l0,*l0,*l0]\n"},
	} {
		if got := AliasBomb(tc.indent, tc.levels); got != tc.want {
			t.Errorf("AliasBomb(%q, %d) = %q, want %q", tc.indent, tc.levels, got, tc.want)
		}
	}
	// It is valid YAML whose aliases multiply: 3 levels are 9^3 scalars once expanded.
	var m map[string]any
	if err := yaml.Unmarshal([]byte(AliasBomb("", 3)), &m); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range m["l2"].([]any) {
		for _, b := range a.([]any) {
			n += len(b.([]any))
		}
	}
	if n != 729 || !strings.HasPrefix(AliasBomb("", 9), "l0:") {
		t.Errorf("3 levels expand to %d scalars, want 729", n)
	}
}
