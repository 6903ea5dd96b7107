package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

const waveCols = "rollout_id, idx, name, state, check_run_id, approved_by, approved_at, gate_state, message, " +
	"started_at, finished_at, updated_at, version"

func scanWave(sc rowScanner) (Wave, error) {
	var (
		w     Wave
		state string
		gate  sql.NullString
	)
	err := sc.Scan(&w.RolloutID, &w.Index, &w.Name, &state, &w.CheckRunID, &w.ApprovedBy, timeCol{&w.ApprovedAt},
		&gate, &w.Message, timeCol{&w.StartedAt}, timeCol{&w.FinishedAt}, timeCol{&w.UpdatedAt}, &w.Version)
	if err != nil {
		return Wave{}, err
	}
	w.State = WaveState(state)
	if gate.Valid {
		w.GateState = []byte(gate.String)
	}
	return w, nil
}

// ListWaves lists the waves of a rollout in order.
func (s *Store) ListWaves(ctx context.Context, rolloutID int64) ([]Wave, error) {
	rows, err := s.r.QueryContext(ctx, s.d.q("SELECT "+waveCols+" FROM waves WHERE rollout_id = ? ORDER BY idx"), rolloutID)
	if err != nil {
		return nil, fmt.Errorf("listing the waves of rollout %d: %w", rolloutID, err)
	}
	defer rows.Close()
	var out []Wave
	for rows.Next() {
		w, err := scanWave(rows)
		if err != nil {
			return nil, fmt.Errorf("listing the waves of rollout %d: %w", rolloutID, err)
		}
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing the waves of rollout %d: %w", rolloutID, err)
	}
	return out, nil
}

// GetWave reads one wave.
func (s *Store) GetWave(ctx context.Context, rolloutID int64, index int) (Wave, error) {
	w, err := scanWave(s.r.QueryRowContext(ctx, s.d.q("SELECT "+waveCols+" FROM waves WHERE rollout_id = ? AND idx = ?"), rolloutID, index))
	if errors.Is(err, sql.ErrNoRows) {
		return Wave{}, fmt.Errorf("reading wave %d of rollout %d: %w", index, rolloutID, ErrNotFound)
	}
	if err != nil {
		return Wave{}, fmt.Errorf("reading wave %d of rollout %d: %w", index, rolloutID, err)
	}
	return w, nil
}

// UpdateWave writes w's State, CheckRunID, GateState, Message, StartedAt and FinishedAt if the stored wave still
// has w.Version (compare-and-set), and returns it with its new version. The approval is not written (see
// ApproveWave), so an approval given meanwhile makes this update fail with ErrConflict instead of being lost.
func (s *Store) UpdateWave(ctx context.Context, w Wave) (Wave, error) {
	return s.updateWave(ctx, s.w, w)
}

// updateWave is UpdateWave through q: the store's writer or a transaction.
func (s *Store) updateWave(ctx context.Context, q queryRower, w Wave) (Wave, error) {
	if !w.State.Valid() {
		return Wave{}, fmt.Errorf("updating wave %d of rollout %d: unknown state %q", w.Index, w.RolloutID, w.State)
	}
	var gate any
	if w.GateState != nil {
		gate = string(w.GateState)
	}
	got, err := scanWave(q.QueryRowContext(ctx, s.d.q(`UPDATE waves SET
    state = ?, check_run_id = ?, gate_state = ?, message = ?, started_at = ?, finished_at = ?, updated_at = ?, version = version + 1
    WHERE rollout_id = ? AND idx = ? AND version = ?
    RETURNING `+waveCols),
		string(w.State), w.CheckRunID, gate, w.Message, s.d.timeArg(w.StartedAt), s.d.timeArg(w.FinishedAt),
		s.d.timeArg(s.now()), w.RolloutID, w.Index, w.Version))
	if err == nil {
		return got, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return Wave{}, fmt.Errorf("updating wave %d of rollout %d: %w", w.Index, w.RolloutID, err)
	}
	cur, err := scanWave(q.QueryRowContext(ctx, s.d.q("SELECT "+waveCols+" FROM waves WHERE rollout_id = ? AND idx = ?"), w.RolloutID, w.Index))
	if errors.Is(err, sql.ErrNoRows) {
		return Wave{}, fmt.Errorf("updating wave %d of rollout %d: %w", w.Index, w.RolloutID, ErrNotFound)
	}
	if err != nil {
		return Wave{}, fmt.Errorf("updating wave %d of rollout %d: %w", w.Index, w.RolloutID, err)
	}
	return Wave{}, fmt.Errorf("updating wave %q of rollout %d from version %d: now at version %d: %w", cur.Name, w.RolloutID, w.Version, cur.Version, ErrConflict)
}

// ApproveWave records the approval of a wave by a user, once: it reports approved true when this call
// approved the wave, false when it was approved already (the returned wave says by whom).
func (s *Store) ApproveWave(ctx context.Context, rolloutID int64, index int, by string) (w Wave, approved bool, err error) {
	if by == "" {
		return Wave{}, false, fmt.Errorf("approving wave %d of rollout %d: no approver", index, rolloutID)
	}
	now := s.d.timeArg(s.now())
	w, err = scanWave(s.w.QueryRowContext(ctx, s.d.q(`UPDATE waves SET approved_by = ?, approved_at = ?, updated_at = ?, version = version + 1
    WHERE rollout_id = ? AND idx = ? AND approved_by = ''
    RETURNING `+waveCols), by, now, now, rolloutID, index))
	if err == nil {
		return w, true, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return Wave{}, false, fmt.Errorf("approving wave %d of rollout %d: %w", index, rolloutID, err)
	}
	w, err = s.GetWave(ctx, rolloutID, index)
	if err != nil {
		return Wave{}, false, fmt.Errorf("approving wave %d of rollout %d: %w", index, rolloutID, err)
	}
	return w, false, nil
}
