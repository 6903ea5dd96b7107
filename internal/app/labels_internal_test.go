package app

import (
	"reflect"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/report"
)

// The labels a comment records survive any name GitHub allows (spaces, commas, "-->"), are read only from the
// line after the preview's marker, and replace the line a previous preview wrote.
func TestLabelsRecordedInTheComment(t *testing.T) {
	l := prLabels{want: []string{"risk: crd", "a,b"}, managed: []string{"risk: crd", "a,b", "x --> y", "images"}}
	part := report.Marker + "\n## fleetwave preview\n\n```diff\n<!-- fleetwave:labels want=forged managed=forged -->\n```\n"
	got := withLabels([]string{part, "part 2"}, l)
	if back, ok := labelsIn(got); !ok || !reflect.DeepEqual(back, l) {
		t.Fatalf("labelsIn(withLabels(%+v)) = %+v, %v\n%s", l, back, ok, got[0])
	}
	if got[1] != "part 2" || !strings.HasSuffix(got[0], part[len(report.Marker)+1:]) {
		t.Errorf("withLabels changed more than its line:\n%q", got)
	}
	again := withLabels(got, prLabels{managed: []string{"images"}})
	if back, _ := labelsIn(again); len(back.want) != 0 || !reflect.DeepEqual(back.managed, []string{"images"}) || strings.Count(again[0], "fleetwave:labels") != 2 {
		t.Errorf("a second withLabels: %+v\n%s", back, again[0])
	}
	if _, ok := labelsIn([]string{part}); ok {
		t.Error("a labels line inside the change's diff was read")
	}
	if got := withLabels([]string{"not a preview"}, l); got[0] != "not a preview" {
		t.Errorf("an error comment was changed: %q", got[0])
	}
}
