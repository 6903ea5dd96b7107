package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/edge/store"
)

// TestStatusAcrossInstances: `rollout status` names each app with its Argo CD instance in a fleet of several and
// says which instance holds a running wave and why; a one-instance rollout reads as before.
func TestStatusAcrossInstances(t *testing.T) {
	gate := json.RawMessage(`{"unreachable":[{"instance":"eu","since":"2026-05-01T10:02:00Z","why":"dial tcp 10.0.0.7:443: connect: connection refused"}]}`)
	steps := []store.AppStep{
		{App: store.AppKey{Namespace: "argocd", Name: "web-1"}, State: store.StepSynced},
		{App: store.AppKey{Instance: "eu", Namespace: "argocd", Name: "web-2"}, State: store.StepPending},
	}
	s := snapshot{r: store.Rollout{ID: 3, State: store.RolloutRunning},
		waves: []store.Wave{{Name: "production", State: store.WaveRunning, GateState: gate}}, steps: steps}
	got := summaryText(rolloutEvent{Rollout: 3, Summary: summarize(s)})
	for _, want := range []string{"synced: (default)/web-1", "not started: eu/web-2",
		"wave production: instance eu unreachable since 10:02: dial tcp 10.0.0.7:443: connect: connection refused; its apps there wait"} {
		if !strings.Contains(got, want) {
			t.Errorf("status text lacks %q:\n%s", want, got)
		}
	}
	b, _ := json.Marshal(summarize(s))
	if !strings.Contains(string(b), `"unreachable":["instance eu unreachable since 10:02: dial tcp`) {
		t.Errorf("status JSON lacks the unreachable instance: %s", b)
	}

	one := snapshot{r: s.r, waves: []store.Wave{{Name: "production", State: store.WaveRunning}},
		steps: []store.AppStep{steps[0], {App: store.AppKey{Namespace: "argocd", Name: "web-2"}, State: store.StepPending}}}
	got = summaryText(rolloutEvent{Rollout: 3, Summary: summarize(one)})
	if strings.Contains(got, "(default)") || strings.Contains(got, "unreachable") || !strings.Contains(got, "synced: web-1") {
		t.Errorf("a one-instance status changed:\n%s", got)
	}
	if b, _ := json.Marshal(summarize(one)); strings.Contains(string(b), "unreachable") {
		t.Errorf("a one-instance status JSON changed: %s", b)
	}
}
