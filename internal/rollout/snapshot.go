package rollout

import (
	"context"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/plan"
)

// Reporter shows a rollout where people look: internal/checkrun turns each snapshot into GitHub check-runs on
// the merge commit. Publishing is best effort: an error is logged and the rollout goes on; the next
// publication carries the whole state again.
type Reporter interface {
	// Publish shows s. sent is the reporter's memory for one driver of the rollout (what it last sent, so an
	// unchanged view is not sent again): Publish reads and updates it. It returns the ids of the check-runs it
	// created, which the executor stores with the rollout and its waves (so they are updated in place after a
	// restart or on another replica), and an error when a view could not be published.
	Publish(ctx context.Context, s Snapshot, sent Sent) (CheckRunIDs, error)
}

// Sent is a Reporter's memory of what it last published for one rollout, by view; the executor keeps one per
// driver and never reads it.
type Sent map[string]string

// CheckRunIDs are the check-runs a Reporter created (0: none created).
type CheckRunIDs struct {
	Rollout  int64
	Rollback int64
	Waves    map[int]int64 // by wave index
}

// Snapshot is a rollout at one moment, everything its observers show: the rows of the store with the stored plan
// and the waves' gate bookkeeping decoded.
type Snapshot struct {
	Rollout store.Rollout
	// Plan is the plan executed (recomputed at the merge commit).
	Plan plan.Plan
	// PlanDigest is Plan's digest; PRPlanDigest the digest of the plan shown on the PR, when known, and
	// PlanChanges the apps that moved between the two.
	PlanDigest   string
	PRPlanDigest string
	PlanChanges  []string
	// AutomatedSync and OnConflict are the rollout's settings (Request).
	AutomatedSync plan.AutomatedSyncMode
	OnConflict    ConflictPolicy
	Waves         []WaveSnapshot
	Steps         []store.AppStep
	// WaitingFor are the older unfinished rollouts a pending one waits for; WaitedBy the newer ones waiting
	// for this one (both only while it is unfinished).
	WaitingFor []store.Rollout
	WaitedBy   []store.Rollout
}

// PlanDiffers reports whether the executed plan differs from the one shown on the PR.
func (s Snapshot) PlanDiffers() bool {
	return s.PRPlanDigest != "" && s.PRPlanDigest != s.PlanDigest
}

// WaveSnapshot is one wave: its row, its gates as planned and where they are.
type WaveSnapshot struct {
	store.Wave
	// Gates are the wave's gates in the plan; nil when the stored plan has no such wave.
	Gates *plan.Gates
	// SoakStartedAt and SoakUntil are zero until the soak started; SoakDone when it passed.
	SoakStartedAt time.Time
	SoakUntil     time.Time
	SoakDone      bool
	// Metrics are the last evaluation of each metric gate.
	Metrics []MetricCheck
	// Hold is set while sync windows hold the running wave.
	Hold *Hold
	// Unreachable are the Argo CD instances holding the running wave's apps on them (none answering, or
	// refusing the token), sorted by instance.
	Unreachable []InstanceHold
}

// InstanceHold is an Argo CD instance found not answering while a wave ran: its apps wait for it.
type InstanceHold struct {
	Instance string
	Since    time.Time
	Why      string // the error, on one line
	// Description says it in one line: "instance eu unreachable since 10:02: dial tcp …".
	Description string
}

// UnreachableInstances are the instances a wave's gate state says hold its apps (for readers of the store, such
// as `rollout status`).
func UnreachableInstances(w store.Wave) []InstanceHold {
	var out []InstanceHold
	for _, h := range readGateState(w).Unreachable {
		out = append(out, InstanceHold{Instance: h.Instance, Since: h.Since, Why: h.Why, Description: h.describe()})
	}
	return out
}

// MetricCheck is one evaluation of a metric gate.
type MetricCheck struct {
	Query  string
	At     time.Time
	OK     bool
	Result string
}

// Hold is a wave held by Argo CD sync windows.
type Hold struct {
	Reason string
	// Until is when the first held app may sync; zero when not known.
	Until time.Time
	Since time.Time
	// Description says it in one line: the held apps, the window and Until.
	Description string
}

// Touched reports whether the step's app may run the rollout's revision (or be about to): what a rollback
// takes back.
func Touched(s store.AppStep) bool { return touched(s) }

type nopReporter struct{}

func (nopReporter) Publish(context.Context, Snapshot, Sent) (CheckRunIDs, error) {
	return CheckRunIDs{}, nil
}

// publish asks the driver's publisher to publish the rollout. It does not wait: reporting (GitHub calls) never
// slows a rollout down; requests made while a publication runs are coalesced into the next one.
func (d *driver) publish(context.Context, int64) {
	select {
	case d.pubCh <- struct{}{}:
	default:
	}
}

// publisher publishes on request until ctx ends.
func (d *driver) publisher(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.pubCh:
			d.flush(ctx)
		}
	}
}

// flush publishes now (the final state, before the driver lets the rollout go) and reports whether every view
// is up to date.
func (d *driver) flush(ctx context.Context) bool {
	d.pubMu.Lock()
	defer d.pubMu.Unlock()
	return d.e.publishAll(ctx, d.id, d.published)
}

// publishFinished publishes a rollout nobody drives (recorded finished, e.g. a plan that breaks the policy).
func (e *Executor) publishFinished(ctx context.Context, r store.Rollout) {
	e.publishAll(ctx, r.ID, Sent{})
}

// publishAll publishes a snapshot of the rollout and stores the ids of the check-runs created. It reports
// whether everything is published.
func (e *Executor) publishAll(ctx context.Context, id int64, sent Sent) bool {
	if _, none := e.rep.(nopReporter); none {
		return true
	}
	if ctx.Err() != nil {
		return false
	}
	s, err := readSnapshot(ctx, e.st, id)
	if err != nil {
		e.o.log.Warn("reading a rollout to publish it", "rollout", id, "err", err)
		return false
	}
	ids, err := e.rep.Publish(ctx, s, sent)
	e.saveCheckRunIDs(ctx, s, ids)
	if err != nil {
		e.o.log.Warn("publishing a rollout", "rollout", id, "err", err)
		return false
	}
	return true
}

// saveCheckRunIDs stores the ids of check-runs just created, unless another publication stored one first.
func (e *Executor) saveCheckRunIDs(ctx context.Context, s Snapshot, ids CheckRunIDs) {
	var err error
	if ids.Rollout != 0 || ids.Rollback != 0 {
		_, err = e.updateRollout(ctx, s.Rollout.ID, func(x *store.Rollout) (bool, error) {
			changed := false
			if ids.Rollout != 0 && x.CheckRunID == 0 {
				x.CheckRunID, changed = ids.Rollout, true
			}
			if ids.Rollback != 0 && x.RollbackCheckRunID == 0 {
				x.RollbackCheckRunID, changed = ids.Rollback, true
			}
			return changed, nil
		})
	}
	for wi, id := range ids.Waves {
		if id == 0 {
			continue
		}
		if _, werr := e.updateWave(ctx, s.Rollout.ID, wi, func(x *store.Wave) (bool, error) {
			ok := x.CheckRunID == 0
			x.CheckRunID = id
			return ok, nil
		}); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		e.o.log.Warn("recording a check-run id", "rollout", s.Rollout.ID, "err", err)
	}
}

// readSnapshot reads a rollout for its Reporter.
func readSnapshot(ctx context.Context, st snapshotSource, id int64) (Snapshot, error) {
	r, err := st.GetRollout(ctx, id)
	if err != nil {
		return Snapshot{}, err
	}
	sp, err := parseStoredPlan(r.Plan)
	if err != nil {
		return Snapshot{}, err
	}
	waves, err := st.ListWaves(ctx, id)
	if err != nil {
		return Snapshot{}, err
	}
	steps, err := st.ListSteps(ctx, id, store.StepFilter{})
	if err != nil {
		return Snapshot{}, err
	}
	s := newSnapshot(r, sp, waves, steps)
	if !r.State.Terminal() && len(steps) > 0 {
		keys := make([]store.AppKey, len(steps))
		for i, st := range steps {
			keys[i] = st.App
		}
		act, err := st.ActiveRolloutsTouching(ctx, "", keys)
		if err != nil {
			return Snapshot{}, err
		}
		for _, o := range act {
			switch {
			case o.ID < r.ID && r.State == store.RolloutPending:
				s.WaitingFor = append(s.WaitingFor, o)
			case o.ID > r.ID:
				s.WaitedBy = append(s.WaitedBy, o)
			}
		}
	}
	return s, nil
}

// newSnapshot decodes a rollout's rows: the stored plan and each wave's gate bookkeeping.
func newSnapshot(r store.Rollout, sp *storedPlan, waves []store.Wave, steps []store.AppStep) Snapshot {
	s := Snapshot{Rollout: r, Plan: sp.Plan, PlanDigest: sp.Execution.PlanDigest, PRPlanDigest: sp.Execution.PRPlanDigest,
		PlanChanges: sp.Execution.PlanChanges, AutomatedSync: sp.Execution.AutomatedSync, OnConflict: sp.Execution.OnConflict,
		Steps: steps}
	for i, w := range waves {
		gs := readGateState(w)
		ws := WaveSnapshot{Wave: w, SoakStartedAt: gs.SoakStartedAt, SoakUntil: gs.SoakUntil, SoakDone: gs.SoakDone}
		if i < len(sp.Waves) {
			ws.Gates = &sp.Waves[i].Gates
		}
		for _, m := range gs.Metrics {
			ws.Metrics = append(ws.Metrics, MetricCheck(m))
		}
		if h := gs.Window; h != nil {
			ws.Hold = &Hold{Reason: h.Reason, Until: h.Until, Since: h.Since, Description: h.describe()}
		}
		ws.Unreachable = UnreachableInstances(w)
		s.Waves = append(s.Waves, ws)
	}
	return s
}
