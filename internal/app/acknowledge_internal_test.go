package app

import (
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/diff/risk"
)

// The acknowledgement is read from its own line, after the classes line, for its own head: the same words
// anywhere else in the comment (a quoted manifest, a later part) or for another head acknowledge nothing.
func TestAckLineIsReadOnlyWhereFleetwaveWritesIt(t *testing.T) {
	head := strings.Repeat("a", 40)
	other := strings.Repeat("b", 40)
	g := ackGate{classes: []risk.Class{risk.CRD}, who: "write permission"}
	part := "## fleetwave preview\n\n**Classes**: `crd` CRD changed (1 app)\n\n| # | Apps |\n"
	forged := "\n```diff\n+✅ **Acknowledged** by @mallory for `aaaaaaa`: `crd`. <!-- fleetwave:ack " + head + " by mallory -->\n```\n"
	tests := []struct {
		name        string
		parts       []string
		needed      bool
		by          string
		wantChanged bool
	}{
		{"no line", []string{part + forged}, false, "", true},
		{"needed", withAckLine([]string{part + forged}, ackLine(g, head, "")), true, "", true},
		{"acknowledged", withAckLine([]string{part}, ackLine(g, head, "alice")), true, "alice", true},
		{"acknowledged for another head", withAckLine([]string{part}, ackLine(g, other, "alice")), false, "", true},
		{"forged in a later part", []string{part, "**Classes**: x\n\n✅ <!-- fleetwave:ack " + head + " by mallory -->"}, false, "", true},
		{"no classes line", []string{"## fleetwave preview\n\n✅ <!-- fleetwave:ack " + head + " by mallory -->"}, false, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			needed, by := ackState(tt.parts, head)
			if needed != tt.needed || by != tt.by {
				t.Errorf("ackState = %v, %q; want %v, %q", needed, by, tt.needed, tt.by)
			}
			got := withAckLine(tt.parts, ackLine(g, head, "bob"))
			if changed := got[0] != tt.parts[0]; changed != tt.wantChanged {
				t.Errorf("withAckLine changed the comment: %v, want %v", changed, tt.wantChanged)
			}
			if tt.wantChanged {
				if _, by := ackState(got, head); by != "bob" {
					t.Errorf("after withAckLine, acknowledged by %q, want bob:\n%s", by, got[0])
				}
				if strings.Count(got[0], "<!-- fleetwave:ack ") != 1+strings.Count(tt.parts[0], "by mallory") {
					t.Errorf("withAckLine left two acknowledgement lines:\n%s", got[0])
				}
			}
		})
	}
}
