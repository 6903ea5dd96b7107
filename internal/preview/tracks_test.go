package preview

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

// TestPlanFollowsTracks: the example change under a policy with tracks. The preview gives the planner each
// app's risk classes, so the app whose change only adds resources (a new tenant) rolls out in a wave of its own, first,, the Secret change waits
// for an approval before each of its waves, and the plan says which track each took and why.
func TestPlanFollowsTracks(t *testing.T) {
	dir := exampleRepo(t)
	policy, err := os.ReadFile(filepath.Join(dir, ".fleetwave.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	policy = append(policy, []byte(`tracks:
  - name: secrets
    classes: [secret-keys]
    approveEveryWave: true
  - name: quick
    classes: [added, metadata]
    oneWave: true
`)...)
	if err := os.WriteFile(filepath.Join(dir, ".fleetwave.yaml"), policy, 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, dir, "commit", "-q", "-am", "tracks")
	rep, err := Run(context.Background(), theRenderer(), Input{RepoDir: dir, Base: "main", Head: "change", Plan: true})
	if err != nil {
		t.Fatal(err)
	}
	pl := rep.Plan
	tracks := map[string]plan.TrackUse{}
	for _, u := range pl.Tracks {
		tracks[u.Name] = u
	}
	if u := tracks["secrets"]; u.Apps != 1 || u.Why == nil || u.Why.Class != "secret-keys" || !strings.Contains(u.Why.Resource, "Secret") {
		t.Errorf("secrets track = %+v, want the payments app for its Secret", u)
	}
	if u := tracks["quick"]; u.Apps != 1 || pl.Waves[0].Name != "quick" || pl.Waves[0].Gates.Soak != 0 {
		t.Errorf("quick track = %+v, first wave %q: want the new tenant in a first wave of its own", u, pl.Waves[0].Name)
	}
	if u := tracks[plan.StandardTrack]; u.Apps == 0 {
		t.Errorf("no app took the policy's waves: %+v", pl.Tracks)
	}
	for _, w := range pl.Waves {
		for _, b := range w.Batches {
			for _, a := range b.Apps {
				if a.Track == "secrets" && !w.Gates.Approval.Before() {
					t.Errorf("wave %q holds %s of the secrets track without an approval before it", w.Name, a.Name)
				}
			}
		}
	}
	if md := rep.Report.Markdown(); !strings.Contains(md, "**Tracks**: ") || !strings.Contains(md, "because of `secret-keys` in Secret payments/") {
		t.Errorf("the comment does not say the tracks and why")
	}
}
