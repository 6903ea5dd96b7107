package preview

import (
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/report"
)

// planRisks are the risk classes of an app's change as the planner takes them to choose its track.
func planRisks(a *report.App) []plan.Risk {
	fs := a.Findings()
	if len(fs) == 0 {
		return nil
	}
	out := make([]plan.Risk, len(fs))
	for i, f := range fs {
		out[i] = plan.Risk{Class: string(f.Class), Resource: f.Resource, Detail: f.Detail}
	}
	return out
}
