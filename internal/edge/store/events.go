package store

import (
	"context"
	"fmt"
	"time"
)

const eventCols = "id, rollout_id, at, actor, action, target, result, message, delivery_id"

// AppendEvent adds a line to a rollout's audit log and returns it with its ID (and At, when it was zero).
func (s *Store) AppendEvent(ctx context.Context, e Event) (Event, error) {
	if e.Actor == "" || e.Action == "" {
		return Event{}, fmt.Errorf("appending an event to rollout %d: actor and action are required", e.RolloutID)
	}
	if e.At.IsZero() {
		e.At = s.now()
	}
	err := s.w.QueryRowContext(ctx, s.d.q(`INSERT INTO events (rollout_id, at, actor, action, target, result, message, delivery_id)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`),
		e.RolloutID, s.d.timeArg(e.At), e.Actor, e.Action, e.Target, e.Result, e.Message, e.DeliveryID).Scan(&e.ID)
	if err != nil {
		return Event{}, fmt.Errorf("appending event %q by %s to rollout %d: %w", e.Action, e.Actor, e.RolloutID, err)
	}
	e.At = e.At.UTC().Truncate(time.Microsecond)
	return e, nil
}

// ListEvents lists a rollout's events with an ID above afterID, oldest first, at most limit (0: all).
func (s *Store) ListEvents(ctx context.Context, rolloutID, afterID int64, limit int) ([]Event, error) {
	q := "SELECT " + eventCols + " FROM events WHERE rollout_id = ? AND id > ? ORDER BY id"
	if limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", limit)
	}
	rows, err := s.r.QueryContext(ctx, s.d.q(q), rolloutID, afterID)
	if err != nil {
		return nil, fmt.Errorf("listing the events of rollout %d: %w", rolloutID, err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var e Event
		if err := rows.Scan(&e.ID, &e.RolloutID, timeCol{&e.At}, &e.Actor, &e.Action, &e.Target, &e.Result, &e.Message, &e.DeliveryID); err != nil {
			return nil, fmt.Errorf("listing the events of rollout %d: %w", rolloutID, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing the events of rollout %d: %w", rolloutID, err)
	}
	return out, nil
}
