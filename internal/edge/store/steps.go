package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

const stepCols = "id, rollout_id, wave_idx, batch_idx, app_namespace, app_name, cluster, previous_revision, " +
	"target_revision, state, op, attempts, intent_at, triggered_at, op_started_at, op_finished_at, health, message, " +
	"updated_at, version, app_instance"

func scanStep(sc rowScanner) (AppStep, error) {
	var (
		st        AppStep
		state, op string
	)
	err := sc.Scan(&st.ID, &st.RolloutID, &st.Wave, &st.Batch, &st.App.Namespace, &st.App.Name, &st.Cluster,
		&st.PreviousRevision, &st.TargetRevision, &state, &op, &st.Attempts, timeCol{&st.IntentAt},
		timeCol{&st.TriggeredAt}, timeCol{&st.OpStartedAt}, timeCol{&st.OpFinishedAt}, &st.Health, &st.Message,
		timeCol{&st.UpdatedAt}, &st.Version, &st.App.Instance)
	if err != nil {
		return AppStep{}, err
	}
	st.State, st.Op = StepState(state), Op(op)
	return st, nil
}

// StepFilter selects the steps of a rollout; zero fields select all.
type StepFilter struct {
	Waves  []int
	States []StepState
}

// ListSteps lists the app steps of a rollout by wave, batch and app.
func (s *Store) ListSteps(ctx context.Context, rolloutID int64, f StepFilter) ([]AppStep, error) {
	q := "SELECT " + stepCols + " FROM app_steps WHERE rollout_id = ?"
	args := []any{rolloutID}
	if len(f.Waves) > 0 {
		q += " AND wave_idx IN (" + placeholders(len(f.Waves)) + ")"
		for _, w := range f.Waves {
			args = append(args, w)
		}
	}
	if len(f.States) > 0 {
		q += " AND state IN (" + placeholders(len(f.States)) + ")"
		for _, st := range f.States {
			args = append(args, string(st))
		}
	}
	q += " ORDER BY wave_idx, batch_idx, app_instance, app_namespace, app_name"
	rows, err := s.r.QueryContext(ctx, s.d.q(q), args...)
	if err != nil {
		return nil, fmt.Errorf("listing the steps of rollout %d: %w", rolloutID, err)
	}
	defer rows.Close()
	var out []AppStep
	for rows.Next() {
		st, err := scanStep(rows)
		if err != nil {
			return nil, fmt.Errorf("listing the steps of rollout %d: %w", rolloutID, err)
		}
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing the steps of rollout %d: %w", rolloutID, err)
	}
	return out, nil
}

// GetStep reads one app step.
func (s *Store) GetStep(ctx context.Context, id int64) (AppStep, error) {
	st, err := scanStep(s.r.QueryRowContext(ctx, s.d.q("SELECT "+stepCols+" FROM app_steps WHERE id = ?"), id))
	if errors.Is(err, sql.ErrNoRows) {
		return AppStep{}, fmt.Errorf("reading app step %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return AppStep{}, fmt.Errorf("reading app step %d: %w", id, err)
	}
	return st, nil
}

// Intent announces a side effect on an app before the executor performs it.
type Intent struct {
	StepID  int64
	Version int64 // the version the caller read
	Op      Op    // default OpSync
	// PreviousRevision (OpSync) is the revision the app runs now; it is recorded only if the step has none yet,
	// so a retry never overwrites it with the rollout's own revision.
	PreviousRevision string
	// Owner, when set, fences the write: it succeeds only while Owner holds an unexpired lease on the step's
	// rollout (ErrLeaseLost otherwise), so a replica that lost its lease cannot start new work.
	Owner string
}

// Outcome records what became of an intent, after reconciling with Argo CD when needed.
type Outcome struct {
	StepID  int64
	Version int64
	// State is where the step goes:
	//   synced       from intent or triggered, Op sync: observed applied, reconciled and healthy
	//   rolled-back  from intent or triggered, Op rollback
	//   failed       from intent or triggered
	//   skipped      from pending, or from intent with Op sync: the app already ran the target revision
	//   pending      from intent with Op sync: reconciliation found that the sync never started
	//   out-of-plan  from pending, or from intent with Op sync: someone else (Argo CD's automated sync, a person)
	//                synced the app to the target outside the plan
	State StepState
	// OpStartedAt and OpFinishedAt are the observed Argo CD operation's timestamps.
	OpStartedAt, OpFinishedAt time.Time
	Health                    string
	Message                   string
	// PreviousRevision (out-of-plan only) is the revision the app ran before the sync outside the plan; it is
	// recorded only if the step has none yet, so a rollback can take the app back.
	PreviousRevision string
}

// fromCond is one state a step move may start from; op restricts it to steps whose current Op is op.
type fromCond struct {
	state StepState
	op    Op
}

type stepMove struct {
	action string // for errors, e.g. "recording the sync intent of"
	from   []fromCond
	// needPrevious: the step must have a PreviousRevision (rollbacks go back to it).
	needPrevious bool
	owner        string // lease fence
	set          string // SET clause without updated_at and version
	setArgs      []any
}

func (m stepMove) allows(cur AppStep) bool {
	if m.needPrevious && cur.PreviousRevision == "" {
		return false
	}
	for _, f := range m.from {
		if cur.State == f.state && (f.op == "" || cur.Op == f.op) {
			return true
		}
	}
	return false
}

// moveStep is the compare-and-set at the heart of the intent/outcome protocol: one UPDATE that succeeds only if
// the step still has the version the caller read, is in a state the move may start from and, when fenced, the
// caller holds the rollout's lease. When it does not succeed, the step is read again to say why.
func (s *Store) moveStep(ctx context.Context, id, version int64, m stepMove) (AppStep, error) {
	conds := make([]string, len(m.from))
	var condArgs []any
	for i, f := range m.from {
		if f.op == "" {
			conds[i] = "state = ?"
			condArgs = append(condArgs, string(f.state))
		} else {
			conds[i] = "(state = ? AND op = ?)"
			condArgs = append(condArgs, string(f.state), string(f.op))
		}
	}
	q := "UPDATE app_steps SET " + m.set + ", updated_at = ?, version = version + 1 WHERE id = ? AND version = ? AND (" +
		strings.Join(conds, " OR ") + ")"
	args := append(append([]any{}, m.setArgs...), s.d.timeArg(s.now()), id, version)
	args = append(args, condArgs...)
	if m.needPrevious {
		q += " AND previous_revision <> ''"
	}
	if m.owner != "" {
		q += " AND EXISTS (SELECT 1 FROM leases l WHERE l.rollout_id = app_steps.rollout_id AND l.owner = ? AND l.expires_at > {now})"
		args = append(args, m.owner, s.leaseNowArg())
	}
	var got AppStep
	err := s.writeRow(ctx, s.d.q(q+" RETURNING "+stepCols), args, func(row *sql.Row) (err error) {
		got, err = scanStep(row)
		return err
	})
	if err == nil {
		return got, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return AppStep{}, fmt.Errorf("%s app step %d: %w", m.action, id, err)
	}
	cur, err := s.GetStep(ctx, id)
	switch {
	case err != nil:
		return AppStep{}, fmt.Errorf("%s app step %d: %w", m.action, id, err)
	case cur.Version != version:
		return AppStep{}, fmt.Errorf("%s app %s (step %d) from version %d: now at version %d (%s): %w",
			m.action, cur.App, id, version, cur.Version, cur.State, ErrConflict)
	case m.needPrevious && cur.PreviousRevision == "":
		return AppStep{}, fmt.Errorf("%s app %s (step %d): no previous revision recorded to roll back to: %w",
			m.action, cur.App, id, ErrInvalidTransition)
	case !m.allows(cur):
		return AppStep{}, fmt.Errorf("%s app %s (step %d): state %s (op %s) does not allow it: %w",
			m.action, cur.App, id, cur.State, cur.Op, ErrInvalidTransition)
	default:
		return AppStep{}, fmt.Errorf("%s app %s (step %d): %q holds no unexpired lease on rollout %d: %w",
			m.action, cur.App, id, m.owner, cur.RolloutID, ErrLeaseLost)
	}
}

// RecordIntent writes, before a side effect, that the executor is about to perform in.Op on the app:
// the step moves to intent, Attempts grows by one and IntentAt is set; the observation fields are cleared.
// A sync intent may start from pending, failed, or a sync intent that reconciliation found never started; a
// rollback intent from synced, failed, out-of-plan or a rollback intent, and only when a previous revision is
// recorded.
// A step in triggered must be reconciled (RecordOutcome) first.
func (s *Store) RecordIntent(ctx context.Context, in Intent) (AppStep, error) {
	if in.Op == "" {
		in.Op = OpSync
	}
	if !in.Op.Valid() {
		return AppStep{}, fmt.Errorf("recording an intent for app step %d: unknown op %q", in.StepID, in.Op)
	}
	m := stepMove{
		action: "recording the " + string(in.Op) + " intent of",
		owner:  in.Owner,
		set: "state = ?, op = ?, attempts = attempts + 1, intent_at = ?, triggered_at = NULL, op_started_at = NULL, " +
			"op_finished_at = NULL, health = '', message = '', " +
			"previous_revision = CASE WHEN previous_revision = '' THEN ? ELSE previous_revision END",
	}
	prev := ""
	switch in.Op {
	case OpSync:
		prev = in.PreviousRevision
		m.from = []fromCond{{StepPending, ""}, {StepFailed, ""}, {StepIntent, OpSync}}
	case OpRollback:
		m.needPrevious = true
		m.from = []fromCond{{StepSynced, ""}, {StepFailed, ""}, {StepIntent, OpRollback}, {StepOutOfPlan, ""}}
	}
	m.setArgs = []any{string(StepIntent), string(in.Op), s.d.timeArg(s.now()), prev}
	return s.moveStep(ctx, in.StepID, in.Version, m)
}

// MarkTriggered records that Argo CD accepted the request the intent announced: intent → triggered, once.
func (s *Store) MarkTriggered(ctx context.Context, stepID, version int64) (AppStep, error) {
	return s.moveStep(ctx, stepID, version, stepMove{
		action:  "marking triggered",
		from:    []fromCond{{StepIntent, ""}},
		set:     "state = ?, triggered_at = ?",
		setArgs: []any{string(StepTriggered), s.d.timeArg(s.now())},
	})
}

// RecordOutcome records the result of a step's operation; see Outcome.State for the moves allowed.
func (s *Store) RecordOutcome(ctx context.Context, o Outcome) (AppStep, error) {
	m := stepMove{
		action: "recording the " + string(o.State) + " outcome of",
		set:    "state = ?, op_started_at = ?, op_finished_at = ?, health = ?, message = ?",
		setArgs: []any{string(o.State), s.d.timeArg(o.OpStartedAt), s.d.timeArg(o.OpFinishedAt), o.Health,
			o.Message},
	}
	switch o.State {
	case StepSynced:
		m.from = []fromCond{{StepIntent, OpSync}, {StepTriggered, OpSync}}
	case StepRolledBack:
		m.from = []fromCond{{StepIntent, OpRollback}, {StepTriggered, OpRollback}}
	case StepFailed:
		m.from = []fromCond{{StepIntent, ""}, {StepTriggered, ""}}
	case StepSkipped:
		m.from = []fromCond{{StepPending, ""}, {StepIntent, OpSync}}
	case StepOutOfPlan:
		m.from = []fromCond{{StepPending, ""}, {StepIntent, OpSync}}
		m.set += ", previous_revision = CASE WHEN previous_revision = '' THEN ? ELSE previous_revision END"
		m.setArgs = append(m.setArgs, o.PreviousRevision)
	case StepPending:
		m.from = []fromCond{{StepIntent, OpSync}}
		m.set += ", triggered_at = NULL"
	default:
		return AppStep{}, fmt.Errorf("recording an outcome for app step %d: %q is not an outcome state", o.StepID, o.State)
	}
	return s.moveStep(ctx, o.StepID, o.Version, m)
}
