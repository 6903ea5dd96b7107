package checkrun

import (
	"strings"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/rollout"
	"github.com/fleetwave/fleetwave/internal/testkit/golden"
)

// TestCheckRunsAcrossInstances renders a rollout across two Argo CD instances, its production wave running while
// instance eu does not answer: each app shows its instance, the wave says which instance holds it and why. (A
// one-instance rollout shows no instance: TestCheckRunGolden's file is unchanged.)
func TestCheckRunsAcrossInstances(t *testing.T) {
	v := midway()
	t0 := v.Rollout.CreatedAt
	v.Rollout.State = store.RolloutRunning
	v.Waves[1].State = store.WaveRunning
	v.Waves[1].Metrics = nil
	for i := range v.Steps {
		if strings.HasSuffix(v.Steps[i].App.Name, "-2") || strings.HasSuffix(v.Steps[i].App.Name, "-3") {
			v.Steps[i].App.Instance = "eu"
		}
	}
	v.Steps[3].State, v.Steps[3].Message = store.StepPending, ""
	v.Waves[1].Unreachable = []rollout.InstanceHold{{Instance: "eu", Since: t0.Add(13 * time.Minute), Why: "dial tcp 10.0.0.7:443: connect: connection refused",
		Description: "instance eu unreachable since 12:13: dial tcp 10.0.0.7:443: connect: connection refused"}}
	var b strings.Builder
	writeCheckRun(&b, 100, rolloutCheckRun(v))
	writeCheckRun(&b, 102, waveCheckRun(v, 1))
	golden.Assert(t, "instances.golden.md", b.String())
}
