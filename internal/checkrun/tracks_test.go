package checkrun

import (
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/plan"
)

// A wave's check-run says the track its apps took and why; without tracks it says nothing of them.
func TestWaveCheckRunSaysTheTrack(t *testing.T) {
	v := midway()
	if s := waveCheckRun(v, 1).Output.Summary; strings.Contains(s, "Track") {
		t.Fatalf("a plan without tracks shows one:\n%s", s)
	}
	v.Plan.Waves[1].Tracks = []string{"careful", "standard"}
	v.Plan.Tracks = []plan.TrackUse{
		{Name: "careful", Describe: "the policy's waves, each after an approval", Apps: 1,
			Why: &plan.Risk{Class: "crd", Resource: "apiextensions.k8s.io/CustomResourceDefinition widgets.acme.io", Detail: "spec.versions[v2]"}},
		{Name: "standard", Describe: "the policy's waves", Apps: 2, Why: &plan.Risk{Class: "other"}},
	}
	want := "**Tracks (the strictest holds the wave):** `careful` (the policy's waves, each after an approval), because of `crd` in " +
		"apiextensions.k8s.io/CustomResourceDefinition widgets.acme.io: spec.versions[v2]; `standard` (the policy's waves), because of `other`\n"
	if s := waveCheckRun(v, 1).Output.Summary; !strings.Contains(s, want) {
		t.Errorf("summary lacks %q:\n%s", want, s)
	}
	if s := waveCheckRun(v, 0).Output.Summary; strings.Contains(s, "Track") {
		t.Errorf("wave 0 has no tracks but shows some:\n%s", s)
	}
}
