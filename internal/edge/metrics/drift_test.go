package metrics

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/fleetwave/fleetwave/internal/drift"
	"github.com/fleetwave/fleetwave/internal/inventory"
)

func alert(instance, project, name string, states ...string) drift.Alert {
	return drift.Alert{App: inventory.App{Key: inventory.Key{Instance: instance, Namespace: "argocd", Name: name}, Project: project}, States: states}
}

// TestDrift: the gauge counts the apps in lasting drift by instance, project and state, follows the decisions
// (a series drops to 0, not away), never names an app, and keeps its labels bounded.
func TestDrift(t *testing.T) {
	m := New()
	var now []drift.Alert
	m.Drift(func() []drift.Alert { return now }, []string{"eu", "us"})
	now = []drift.Alert{
		alert("eu", "payments", "web-eu", drift.OutOfSync),
		alert("eu", "payments", "api-eu", drift.OutOfSync, drift.Degraded),
		alert("us", "search", "web-us", drift.Degraded),
		alert("ap", "search", "web-ap", drift.OutOfSync), // not a configured instance
	}
	want := `
# HELP fleetwave_drift_apps Apps in lasting drift (OutOfSync or Degraded past the threshold, outside a rollout about to sync them), by Argo CD instance, project and state; an app in both states counts in each.
# TYPE fleetwave_drift_apps gauge
fleetwave_drift_apps{instance="eu",project="payments",state="Degraded"} 1
fleetwave_drift_apps{instance="eu",project="payments",state="OutOfSync"} 2
fleetwave_drift_apps{instance="other",project="search",state="OutOfSync"} 1
fleetwave_drift_apps{instance="us",project="search",state="Degraded"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "fleetwave_drift_apps"); err != nil {
		t.Fatal(err)
	}
	// web-eu converges, api-eu is only Degraded now: the OutOfSync series of payments goes to 0.
	now = []drift.Alert{alert("eu", "payments", "api-eu", drift.Degraded)}
	want = `
# HELP fleetwave_drift_apps Apps in lasting drift (OutOfSync or Degraded past the threshold, outside a rollout about to sync them), by Argo CD instance, project and state; an app in both states counts in each.
# TYPE fleetwave_drift_apps gauge
fleetwave_drift_apps{instance="eu",project="payments",state="Degraded"} 1
fleetwave_drift_apps{instance="eu",project="payments",state="OutOfSync"} 0
fleetwave_drift_apps{instance="other",project="search",state="OutOfSync"} 0
fleetwave_drift_apps{instance="us",project="search",state="Degraded"} 0
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "fleetwave_drift_apps"); err != nil {
		t.Fatal(err)
	}

	// Many projects: the first MaxDriftProjects keep their name (two are admitted already), the rest are "other".
	now = nil
	for i := 0; i < 3*MaxDriftProjects; i++ {
		now = append(now, alert("eu", fmt.Sprintf("team-%02d", i), fmt.Sprintf("app-%d", i), drift.OutOfSync))
	}
	out, err := testutil.CollectAndFormat(m.Registry(), expfmt.TypeTextPlain, "fleetwave_drift_apps")
	if err != nil {
		t.Fatal(err)
	}
	projects := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if i := strings.Index(line, `project="`); i >= 0 {
			p, _, _ := strings.Cut(line[i+len(`project="`):], `"`)
			projects[p] = true
		}
		if strings.Contains(line, "app-") || strings.Contains(line, "web-") {
			t.Errorf("a series names an app: %s", line)
		}
	}
	if len(projects) != MaxDriftProjects+1 || !projects["other"] {
		t.Errorf("%d project values %v; want %d and other", len(projects), projects, MaxDriftProjects)
	}
	if !strings.Contains(string(out), `fleetwave_drift_apps{instance="eu",project="other",state="OutOfSync"} 42`) {
		t.Errorf("the projects past the cap are not folded into other:\n%s", out)
	}
}
