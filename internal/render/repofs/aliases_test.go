package repofs

import (
	"errors"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/testkit/hostileyaml"
)

// padded is hostileyaml.AliasBomb("", levels) with enough nodes written to pass the ratio alone.
func padded(levels int) string {
	return hostileyaml.AliasBomb("", levels) + "pad: [" + strings.TrimSuffix(strings.Repeat("x,", 1000), ",") + "]\n"
}

func TestCheckYAMLAliases(t *testing.T) {
	tests := []struct {
		name   string
		data   string
		budget *AliasBudget
		refuse bool
	}{
		{name: "no aliases", data: "a: 1\nb: [x, y]\n"},
		{name: "anchor and alias", data: "a: &a {x: 1}\nb: *a\nc:\n  <<: *a\n"},
		{name: "not YAML", data: "a: &a [\n*a *a: ]: {"},
		{name: "billion laughs", data: hostileyaml.AliasBomb("", 9), refuse: true},
		{name: "100 levels", data: hostileyaml.AliasBomb("", 100), refuse: true},
		{name: "bomb in a later document", data: "a: 1\n---\n" + hostileyaml.AliasBomb("", 9), refuse: true},
		// kyaml decodes the first document of each part between "---" lines: a broken second document in the first
		// part stops a stream decoder but not kyaml, which goes on to the bomb.
		{name: "bomb after a part kyaml reads and a stream decoder does not", data: "a: 1\n...\n]]: [\n---\n" + hostileyaml.AliasBomb("", 9), refuse: true},
		{name: "one small bomb", data: hostileyaml.AliasBomb("", 3)},
		{name: "bomb padded to pass the ratio", data: padded(5)},
		{name: "padded bombs in many documents", data: strings.Repeat(padded(5)+"---\n", 40), refuse: true},
		{name: "over the budget", data: padded(5), budget: &AliasBudget{Max: 1000}, refuse: true},
		{name: "within the budget", data: padded(5), budget: &AliasBudget{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckYAMLAliases("dir/f.yaml", []byte(tt.data), tt.budget)
			if !tt.refuse {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var r *Refusal
			if !errors.As(err, &r) || r.Rule != RuleYAMLAliases || r.Path != "dir/f.yaml" {
				t.Fatalf("got %v, want a %s refusal of dir/f.yaml", err, RuleYAMLAliases)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("not one line: %q", err)
			}
		})
	}
}

// TestAliasBudgetCountsAFileOnce: a file read again (a base reached twice, the pre-walk and the build) does not
// use the budget twice.
func TestAliasBudgetCountsAFileOnce(t *testing.T) {
	b := &AliasBudget{Max: 100000}
	for i := 0; i < 3; i++ {
		if err := CheckYAMLAliases("f.yaml", []byte(padded(5)), b); err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
	}
	if err := CheckYAMLAliases("g.yaml", []byte(padded(5)), b); err == nil {
		t.Fatal("second file within the budget")
	}
}
