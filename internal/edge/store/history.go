package store

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// HistoryFilter selects the events of the audit trail export (ListHistory); zero fields select all.
type HistoryFilter struct {
	// AfterID: only events with a higher ID (the cursor a consumer resumes from).
	AfterID int64
	// Since: only events at or after this time.
	Since time.Time
	// Repo: only the rollouts of this repository (owner/name).
	Repo string
	// RolloutID: only this rollout's events.
	RolloutID int64
	// Limit bounds the events returned (0: all).
	Limit int
}

// ListHistory lists the events of every rollout the filter selects, in the order they were appended (by ID):
// the audit trail across rollouts, read page by page with AfterID.
func (s *Store) ListHistory(ctx context.Context, f HistoryFilter) ([]Event, error) {
	where := []string{"e.id > ?"}
	args := []any{f.AfterID}
	if !f.Since.IsZero() {
		where, args = append(where, "e.at >= ?"), append(args, s.d.timeArg(f.Since))
	}
	if f.RolloutID != 0 {
		where, args = append(where, "e.rollout_id = ?"), append(args, f.RolloutID)
	}
	q := "SELECT " + prefixed("e", eventCols) + " FROM events e"
	if f.Repo != "" {
		q += " JOIN rollouts r ON r.id = e.rollout_id"
		where, args = append(where, "r.repo = ?"), append(args, f.Repo)
	}
	q += " WHERE " + strings.Join(where, " AND ") + " ORDER BY e.id"
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	rows, err := s.r.QueryContext(ctx, s.d.q(q), args...)
	if err != nil {
		return nil, fmt.Errorf("listing the rollout history: %w", err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var e Event
		if err := rows.Scan(&e.ID, &e.RolloutID, timeCol{&e.At}, &e.Actor, &e.Action, &e.Target, &e.Result, &e.Message, &e.DeliveryID); err != nil {
			return nil, fmt.Errorf("listing the rollout history: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing the rollout history: %w", err)
	}
	return out, nil
}

// DeleteFinishedRollouts deletes the rollouts in a terminal state (RolloutState.Terminal) not updated since
// before, oldest first, each with everything of it (events, app steps, waves, lease) in one transaction, and
// returns how many it deleted. A running, paused or otherwise unfinished rollout is never deleted, nor one
// that a rollout kept names as the one that superseded it (it goes with that one, later). The retention of
// the audit trail (FLEETWAVE_HISTORY_RETENTION).
func (s *Store) DeleteFinishedRollouts(ctx context.Context, before time.Time) (int, error) {
	var terminal []any
	for _, st := range RolloutStates {
		if st.Terminal() {
			terminal = append(terminal, string(st))
		}
	}
	args := append(append([]any{}, terminal...), s.d.timeArg(before))
	rows, err := s.r.QueryContext(ctx, s.d.q("SELECT id FROM rollouts WHERE state IN ("+placeholders(len(terminal))+
		") AND updated_at < ? ORDER BY id"), args...)
	if err != nil {
		return 0, fmt.Errorf("listing the finished rollouts to delete: %w", err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, fmt.Errorf("listing the finished rollouts to delete: %w", err)
		}
		ids = append(ids, id)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return 0, fmt.Errorf("listing the finished rollouts to delete: %w", err)
	}
	n := 0
	for _, id := range ids {
		ok, err := s.deleteFinishedRollout(ctx, id, terminal, before)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// deleteFinishedRollout deletes one rollout and everything of it in one transaction, if it is still finished
// and old (a /rollback may have moved it to rolling-back since it was listed) and no other rollout names it as
// the one that superseded it: the rollout's own row goes last, on those conditions, and the transaction is
// rolled back when they no longer hold.
func (s *Store) deleteFinishedRollout(ctx context.Context, id int64, terminal []any, before time.Time) (bool, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("deleting rollout %d: %w", id, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	for _, q := range []string{
		"DELETE FROM events WHERE rollout_id = ?",
		"DELETE FROM leases WHERE rollout_id = ?",
		"DELETE FROM app_steps WHERE rollout_id = ?",
		"DELETE FROM waves WHERE rollout_id = ?",
	} {
		if _, err := tx.ExecContext(ctx, s.d.q(q), id); err != nil {
			return false, fmt.Errorf("deleting rollout %d: %w", id, err)
		}
	}
	args := append(append([]any{id}, terminal...), s.d.timeArg(before), id)
	res, err := tx.ExecContext(ctx, s.d.q("DELETE FROM rollouts WHERE id = ? AND state IN ("+placeholders(len(terminal))+
		") AND updated_at < ? AND NOT EXISTS (SELECT 1 FROM rollouts o WHERE o.superseded_by = ?)"), args...)
	if err != nil {
		return false, fmt.Errorf("deleting rollout %d: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("deleting rollout %d: %w", id, err)
	}
	return true, nil
}
