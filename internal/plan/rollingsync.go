package plan

import (
	"fmt"
	"strconv"
	"strings"
)

// RollingSyncStep is one step of an ApplicationSet's spec.strategy.rollingSync.steps (strategy type
// RollingSync), as Argo CD defines it in pkg/apis/application/v1alpha1/applicationset_types.go
// (ApplicationSetRolloutStep).
type RollingSyncStep struct {
	MatchExpressions []Requirement `json:"matchExpressions,omitempty"`
	// MaxUpdate is the step's maxUpdate as text: "" when unset (all at once), "3", or "10%".
	MaxUpdate string `json:"maxUpdate,omitempty"`
}

// ImportRollingSync turns rollingSync steps into a policy whose waves reproduce what Argo CD's ApplicationSet
// controller would do (argo-cd v3.2.11 applicationset/controllers/applicationset_controller.go):
//   - wave "step-N" per step, in order; an app belongs to the first step whose matchExpressions all hold on
//     the Application's own labels (buildAppDependencyList; cluster labels play no part);
//   - In/NotIn as Argo CD evaluates them; any other operator fails when the key is present and is ignored when
//     it is absent (labelMatchedExpression);
//   - maxUpdate becomes maxParallel: unset = no limit; "N" = N; "P%" = P% rounded down but at least 1 for
//     P > 0 (updateApplicationSetApplicationStatusProgress); 0 and "0%" never update: unsatisfiable-limits;
//     an unreadable value means 1, as in Argo CD. Argo CD counts Applications of the whole step where
//     fleetwave counts the affected apps' clusters; with the usual one app per cluster they coincide;
//   - apps no step selects are uncovered (Argo CD leaves them to a manual sync);
//   - automated sync is no violation: the controller removes it from RollingSync apps (syncValidApplications).
func ImportRollingSync(steps []RollingSyncStep) *Policy {
	return &Policy{
		Source:        "ApplicationSet rollingSync",
		APIVersion:    APIVersion,
		OnFailure:     OnFailurePause,
		AutomatedSync: AutomatedSyncForbid, // rollingSync waves are exempt one by one
		Commands:      map[string]CommandRule{},
		Waves:         importWaves(steps, ""),
	}
}

func importWaves(steps []RollingSyncStep, prefix string) []WavePolicy {
	waves := make([]WavePolicy, 0, len(steps))
	for i, s := range steps {
		w := WavePolicy{
			Name:          fmt.Sprintf("%sstep-%d", prefix, i+1),
			Selector:      Selector{MatchExpressions: s.MatchExpressions, argo: true},
			rollingSync:   true,
			lenientLabels: true,
		}
		if q := maxUpdate(s.MaxUpdate); q != nil {
			w.MaxParallel = q
			if q.Of(1) == 0 {
				w.unsatisfiableNote = fmt.Sprintf("rollingSync step %d has maxUpdate %s: Argo CD never syncs its apps "+
					"(hint: raise maxUpdate, or sync them by hand)", i+1, s.MaxUpdate)
			}
		}
		waves = append(waves, w)
	}
	return waves
}

// maxUpdate reads a maxUpdate value the way Argo CD resolves it (see ImportRollingSync); nil = no limit.
func maxUpdate(s string) *Quantity {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	if num, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.Atoi(num)
		switch {
		case s == "0%":
			return &Quantity{Value: 0, Percent: true, roundDown: true}
		case err != nil || v < 1:
			return &Quantity{Value: 1} // Argo CD: scaled value < 1 for anything but "0%" becomes 1
		default:
			return &Quantity{Value: min(v, 100), Percent: true, roundDown: true}
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return &Quantity{Value: 1}
	}
	return &Quantity{Value: max(v, 0)}
}

// stepsKey is a canonical text of steps, to group apps whose ApplicationSets roll out alike.
func stepsKey(steps []RollingSyncStep) string {
	if len(steps) == 0 {
		return ""
	}
	var sb strings.Builder
	for _, s := range steps {
		sb.WriteString("step[")
		for _, r := range s.MatchExpressions {
			sb.WriteString(strconv.Quote(r.Key))
			sb.WriteByte(' ')
			sb.WriteString(string(r.Operator))
			for _, v := range r.Values {
				sb.WriteByte(' ')
				sb.WriteString(strconv.Quote(v))
			}
			sb.WriteByte(';')
		}
		sb.WriteString("] max ")
		sb.WriteString(strconv.Quote(s.MaxUpdate))
		sb.WriteByte('\n')
	}
	return sb.String()
}
