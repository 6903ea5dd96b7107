package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// PlanDigest is the digest the store records for a plan: "sha256:" and the hex SHA-256 of its bytes.
func PlanDigest(plan []byte) string {
	sum := sha256.Sum256(plan)
	return "sha256:" + hex.EncodeToString(sum[:])
}

type rowScanner interface{ Scan(dest ...any) error }

// queryRower runs a single-row query: *sql.DB or *sql.Tx.
type queryRower interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

const rolloutCols = "id, repo, pr_number, merge_sha, base_sha, plan, plan_digest, state, message, superseded_by, " +
	"check_run_id, rollback_check_run_id, created_at, updated_at, version, installation_id"

// prefixed qualifies a column list with a table alias.
func prefixed(alias, cols string) string {
	parts := strings.Split(cols, ", ")
	for i := range parts {
		parts[i] = alias + "." + parts[i]
	}
	return strings.Join(parts, ", ")
}

func scanRollout(sc rowScanner) (Rollout, error) {
	var (
		r     Rollout
		sup   sql.NullInt64
		plan  []byte
		state string
	)
	err := sc.Scan(&r.ID, &r.Repo, &r.PRNumber, &r.MergeSHA, &r.BaseSHA, &plan, &r.PlanDigest, &state, &r.Message,
		&sup, &r.CheckRunID, &r.RollbackCheckRunID, timeCol{&r.CreatedAt}, timeCol{&r.UpdatedAt}, &r.Version, &r.InstallationID)
	if err != nil {
		return Rollout{}, err
	}
	r.Plan, r.State, r.SupersededBy = plan, RolloutState(state), sup.Int64
	return r, nil
}

func scanRollouts(rows *sql.Rows) ([]Rollout, error) {
	defer rows.Close()
	var out []Rollout
	for rows.Next() {
		r, err := scanRollout(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// stepInsertChunk bounds the rows of one multi-row INSERT (placeholders stay far below both databases' limits).
const stepInsertChunk = 100

// CreateRollout records a rollout with its waves and app steps, in one transaction. A rollout is identified by
// its repository and merge SHA: when one exists already (the pull_request and push events of one merge, or a
// redelivery), CreateRollout returns it with created false and changes nothing; compare PlanDigest to tell
// whether it was recorded with the same plan. The rollout's first events (NewRollout.Events) are written in the
// same transaction, only when it is created.
func (s *Store) CreateRollout(ctx context.Context, n NewRollout) (r Rollout, created bool, err error) {
	if err := n.validate(); err != nil {
		return Rollout{}, false, fmt.Errorf("creating rollout: %w", err)
	}
	now := s.d.timeArg(s.now())
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return Rollout{}, false, fmt.Errorf("creating rollout of %s@%s: %w", n.Repo, n.MergeSHA, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	var id int64
	err = tx.QueryRowContext(ctx, s.d.q(`INSERT INTO rollouts
    (repo, pr_number, merge_sha, base_sha, installation_id, plan, plan_digest, state, created_at, updated_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (repo, merge_sha) DO NOTHING RETURNING id`),
		n.Repo, n.PRNumber, n.MergeSHA, n.BaseSHA, n.InstallationID, []byte(n.Plan), PlanDigest(n.Plan), string(n.State), now, now).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		if err := tx.Rollback(); err != nil {
			return Rollout{}, false, fmt.Errorf("creating rollout of %s@%s: %w", n.Repo, n.MergeSHA, err)
		}
		existing, err := s.GetRolloutByMergeSHA(ctx, n.Repo, n.MergeSHA)
		return existing, false, err
	}
	if err != nil {
		return Rollout{}, false, fmt.Errorf("creating rollout of %s@%s: %w", n.Repo, n.MergeSHA, err)
	}
	if len(n.Waves) > 0 {
		args := make([]any, 0, 5*len(n.Waves))
		for i, w := range n.Waves {
			args = append(args, id, i, w.Name, string(WavePending), now)
		}
		rows := strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?), ", len(n.Waves)), ", ")
		if _, err := tx.ExecContext(ctx, s.d.q("INSERT INTO waves (rollout_id, idx, name, state, updated_at) VALUES "+rows), args...); err != nil {
			return Rollout{}, false, fmt.Errorf("creating the waves of rollout %s@%s: %w", n.Repo, n.MergeSHA, err)
		}
	}
	type stepRow struct {
		wave int
		st   NewStep
	}
	var steps []stepRow
	for wi, w := range n.Waves {
		for _, st := range w.Steps {
			steps = append(steps, stepRow{wi, st})
		}
	}
	for len(steps) > 0 {
		chunk := steps[:min(len(steps), stepInsertChunk)]
		steps = steps[len(chunk):]
		args := make([]any, 0, 11*len(chunk))
		for _, sr := range chunk {
			args = append(args, id, sr.wave, sr.st.Batch, sr.st.App.Instance, sr.st.App.Namespace, sr.st.App.Name,
				sr.st.Cluster, sr.st.PreviousRevision, sr.st.TargetRevision, string(StepPending), now)
		}
		rows := strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?), ", len(chunk)), ", ")
		if _, err := tx.ExecContext(ctx, s.d.q(`INSERT INTO app_steps
    (rollout_id, wave_idx, batch_idx, app_instance, app_namespace, app_name, cluster, previous_revision, target_revision, state, updated_at)
    VALUES `+rows), args...); err != nil {
			return Rollout{}, false, fmt.Errorf("creating the app steps of rollout %s@%s: %w", n.Repo, n.MergeSHA, err)
		}
	}
	for _, e := range n.Events {
		at := e.At
		if at.IsZero() {
			at = s.now()
		}
		if _, err := tx.ExecContext(ctx, s.d.q(`INSERT INTO events (rollout_id, at, actor, action, target, result, message, delivery_id)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?)`), id, s.d.timeArg(at), e.Actor, e.Action, e.Target, e.Result, e.Message, e.DeliveryID); err != nil {
			return Rollout{}, false, fmt.Errorf("creating the events of rollout %s@%s: %w", n.Repo, n.MergeSHA, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return Rollout{}, false, fmt.Errorf("creating rollout of %s@%s: %w", n.Repo, n.MergeSHA, err)
	}
	r, err = s.GetRollout(ctx, id)
	return r, true, err
}

// GetRollout reads one rollout.
func (s *Store) GetRollout(ctx context.Context, id int64) (Rollout, error) {
	r, err := scanRollout(s.r.QueryRowContext(ctx, s.d.q("SELECT "+rolloutCols+" FROM rollouts WHERE id = ?"), id))
	if errors.Is(err, sql.ErrNoRows) {
		return Rollout{}, fmt.Errorf("reading rollout %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return Rollout{}, fmt.Errorf("reading rollout %d: %w", id, err)
	}
	return r, nil
}

// GetRolloutByMergeSHA reads the rollout of a merge commit.
func (s *Store) GetRolloutByMergeSHA(ctx context.Context, repo, mergeSHA string) (Rollout, error) {
	r, err := scanRollout(s.r.QueryRowContext(ctx, s.d.q("SELECT "+rolloutCols+" FROM rollouts WHERE repo = ? AND merge_sha = ?"), repo, mergeSHA))
	if errors.Is(err, sql.ErrNoRows) {
		return Rollout{}, fmt.Errorf("reading the rollout of %s@%s: %w", repo, mergeSHA, ErrNotFound)
	}
	if err != nil {
		return Rollout{}, fmt.Errorf("reading the rollout of %s@%s: %w", repo, mergeSHA, err)
	}
	return r, nil
}

// RolloutFilter selects rollouts; zero fields select all.
type RolloutFilter struct {
	Repo       string
	PRNumber   int
	States     []RolloutState
	Unfinished bool // only rollouts in a non-terminal state
	Limit      int
}

// ListRollouts lists rollouts, newest first.
func (s *Store) ListRollouts(ctx context.Context, f RolloutFilter) ([]Rollout, error) {
	var (
		where []string
		args  []any
	)
	if f.Repo != "" {
		where, args = append(where, "repo = ?"), append(args, f.Repo)
	}
	if f.PRNumber != 0 {
		where, args = append(where, "pr_number = ?"), append(args, f.PRNumber)
	}
	states := f.States
	if f.Unfinished {
		states = intersectStates(states, unfinishedRolloutStates())
		if states == nil {
			return nil, nil
		}
	}
	if len(states) > 0 {
		where = append(where, "state IN ("+placeholders(len(states))+")")
		for _, st := range states {
			args = append(args, string(st))
		}
	}
	q := "SELECT " + rolloutCols + " FROM rollouts"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY id DESC"
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	rows, err := s.r.QueryContext(ctx, s.d.q(q), args...)
	if err != nil {
		return nil, fmt.Errorf("listing rollouts: %w", err)
	}
	out, err := scanRollouts(rows)
	if err != nil {
		return nil, fmt.Errorf("listing rollouts: %w", err)
	}
	return out, nil
}

// intersectStates keeps the states of b, or of a ∩ b when a is not empty; nil when the result is empty.
func intersectStates(a, b []RolloutState) []RolloutState {
	if len(a) == 0 {
		return b
	}
	var out []RolloutState
	for _, x := range a {
		for _, y := range b {
			if x == y {
				out = append(out, x)
			}
		}
	}
	return out
}

// UpdateRollout writes r's State, Message, SupersededBy, CheckRunID and RollbackCheckRunID if the stored
// rollout still has r.Version (compare-and-set) and its state may move to r.State (RolloutState.CanMoveTo).
// It returns the stored rollout with its new version. Errors: ErrNotFound, ErrConflict (stale version),
// ErrInvalidTransition.
func (s *Store) UpdateRollout(ctx context.Context, r Rollout) (Rollout, error) {
	return s.updateRollout(ctx, s.w, r)
}

// updateRollout is UpdateRollout through q: the store's writer or a transaction.
func (s *Store) updateRollout(ctx context.Context, q queryRower, r Rollout) (Rollout, error) {
	if !r.State.Valid() {
		return Rollout{}, fmt.Errorf("updating rollout %d: unknown state %q", r.ID, r.State)
	}
	var from []any
	for _, st := range RolloutStates {
		if st.CanMoveTo(r.State) {
			from = append(from, string(st))
		}
	}
	var sup any
	if r.SupersededBy != 0 {
		sup = r.SupersededBy
	}
	args := append([]any{string(r.State), r.Message, sup, r.CheckRunID, r.RollbackCheckRunID, s.d.timeArg(s.now()), r.ID, r.Version}, from...)
	got, err := scanRollout(q.QueryRowContext(ctx, s.d.q(`UPDATE rollouts SET
    state = ?, message = ?, superseded_by = ?, check_run_id = ?, rollback_check_run_id = ?, updated_at = ?, version = version + 1
    WHERE id = ? AND version = ? AND state IN (`+placeholders(len(from))+`)
    RETURNING `+rolloutCols), args...))
	if err == nil {
		return got, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return Rollout{}, fmt.Errorf("updating rollout %d: %w", r.ID, err)
	}
	cur, err := scanRollout(q.QueryRowContext(ctx, s.d.q("SELECT "+rolloutCols+" FROM rollouts WHERE id = ?"), r.ID))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Rollout{}, fmt.Errorf("updating rollout %d: %w", r.ID, ErrNotFound)
	case err != nil:
		return Rollout{}, fmt.Errorf("updating rollout %d: %w", r.ID, err)
	case cur.Version != r.Version:
		return Rollout{}, fmt.Errorf("updating rollout %d from version %d: now at version %d (%s): %w", r.ID, r.Version, cur.Version, cur.State, ErrConflict)
	default:
		return Rollout{}, fmt.Errorf("updating rollout %d: %s to %s: %w", r.ID, cur.State, r.State, ErrInvalidTransition)
	}
}

// UpdateRolloutWaves writes waves and then the rollout as UpdateWave and UpdateRollout do, in one transaction:
// all or nothing. A change that spans several rows (a rollback marks its waves and moves the rollout) must
// not be left half-done by a crash. Any stale version fails the whole call with ErrConflict.
func (s *Store) UpdateRolloutWaves(ctx context.Context, r Rollout, waves []Wave) (Rollout, []Wave, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return Rollout{}, nil, fmt.Errorf("updating rollout %d and its waves: %w", r.ID, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	out := make([]Wave, len(waves))
	for i, w := range waves {
		if w.RolloutID != r.ID {
			return Rollout{}, nil, fmt.Errorf("updating rollout %d: wave %d belongs to rollout %d", r.ID, w.Index, w.RolloutID)
		}
		if out[i], err = s.updateWave(ctx, tx, w); err != nil {
			return Rollout{}, nil, err
		}
	}
	nr, err := s.updateRollout(ctx, tx, r)
	if err != nil {
		return Rollout{}, nil, err
	}
	if err := tx.Commit(); err != nil {
		return Rollout{}, nil, fmt.Errorf("updating rollout %d and its waves: %w", r.ID, err)
	}
	return nr, out, nil
}

// appMatchChunk bounds the apps matched by one query.
const appMatchChunk = 200

// ActiveRolloutsTouching lists the unfinished rollouts that have a step on any of apps, oldest first: the
// rollouts a new merge touching those apps must wait for or supersede. An empty repo matches every repository
// (an Argo CD app may take sources from several).
//
// Each unfinished rollout's steps are probed by key through the (rollout_id, app_instance, app_namespace, app_name) unique
// index — a row-value IN over a VALUES list, which SQLite and PostgreSQL both plan as a lookup per key — so the
// cost grows with the apps asked about, not with their product with the rollout's steps; the matching rollouts
// are read once, at the end.
func (s *Store) ActiveRolloutsTouching(ctx context.Context, repo string, apps []AppKey) ([]Rollout, error) {
	var ids []any
	seen := map[int64]bool{}
	unfinished := unfinishedRolloutStates()
	for len(apps) > 0 {
		chunk := apps[:min(len(apps), appMatchChunk)]
		apps = apps[len(chunk):]
		args := make([]any, 0, len(unfinished)+1+3*len(chunk))
		for _, st := range unfinished {
			args = append(args, string(st))
		}
		q := "SELECT r.id FROM rollouts r WHERE r.state IN (" + placeholders(len(unfinished)) + ")"
		if repo != "" {
			q += " AND r.repo = ?"
			args = append(args, repo)
		}
		for _, a := range chunk {
			args = append(args, a.Instance, a.Namespace, a.Name)
		}
		q += " AND EXISTS (SELECT 1 FROM app_steps s WHERE s.rollout_id = r.id AND (s.app_instance, s.app_namespace, s.app_name) IN (VALUES " +
			strings.TrimSuffix(strings.Repeat("(?, ?, ?), ", len(chunk)), ", ") + "))"
		rows, err := s.r.QueryContext(ctx, s.d.q(q), args...)
		if err != nil {
			return nil, fmt.Errorf("listing the rollouts touching %d apps: %w", len(chunk), err)
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, fmt.Errorf("listing the rollouts touching %d apps: %w", len(chunk), err)
			}
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("listing the rollouts touching %d apps: %w", len(chunk), err)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("listing the rollouts touching %d apps: %w", len(chunk), err)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := s.r.QueryContext(ctx, s.d.q("SELECT "+rolloutCols+" FROM rollouts WHERE id IN ("+placeholders(len(ids))+") ORDER BY id"), ids...)
	if err != nil {
		return nil, fmt.Errorf("reading the rollouts touching the apps: %w", err)
	}
	out, err := scanRollouts(rows)
	if err != nil {
		return nil, fmt.Errorf("reading the rollouts touching the apps: %w", err)
	}
	return out, nil
}
