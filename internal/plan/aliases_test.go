package plan

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/testkit/memceiling"
)

// bombNodes defines x-l0 … x-l<levels-1>, each a list of nine aliases of the one before (9^levels nodes).
func bombNodes(levels int, leaf string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "x-l0: &l0 [%s]\n", strings.TrimSuffix(strings.Repeat(leaf+", ", 9), ", "))
	for i := 1; i < levels; i++ {
		p := fmt.Sprintf("*l%d", i-1)
		fmt.Fprintf(&b, "x-l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(p+", ", 9), ", "))
	}
	return b.String()
}

// TestPolicyAliasBombs: a .fleetwave.yaml alias bomb anywhere in the policy is refused with a diagnostic, within a
// 1 GiB heap ceiling (each case runs in a child process).
func TestPolicyAliasBombs(t *testing.T) {
	head := "apiVersion: " + APIVersion + "\n"
	tests := []struct{ name, policy string }{
		{"waves", head + bombNodes(9, "x") + "waves: *l8\n"},
		{"waves of mappings", head + bombNodes(9, "{name: w, selector: {}}") + "waves: *l8\n"},
		{"selector expressions", head + bombNodes(9, "{key: e, operator: Exists}") + "waves:\n- {name: w, selector: {matchExpressions: *l8}}\n"},
		{"selector values", head + bombNodes(9, "v") + "waves:\n- {name: w, selector: {matchExpressions: [{key: e, operator: In, values: *l8}]}}\n"},
		{"commands", head + bombNodes(9, "x") + "waves:\n- {name: w, selector: {}}\ncommands: {approve: {teams: *l8}}\n"},
		{"unknown field", head + bombNodes(9, "x") + "waves:\n- {name: w, selector: {}}\nbogus: *l8\n"},
		{"second document", head + "waves:\n- {name: w, selector: {}}\n---\n" + bombNodes(9, "x") + "y: *l8\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			memceiling.Run(t, 1<<30, func(t *testing.T) {
				_, err := ParsePolicy(".fleetwave.yaml", []byte(tt.policy))
				if err == nil {
					t.Fatal("alias bomb accepted")
				}
				if len(err.Error()) > 20000 {
					t.Errorf("error is %d bytes", len(err.Error()))
				}
			})
		})
	}
}
