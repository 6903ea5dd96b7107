package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MarkDelivery records a GitHub webhook delivery (X-GitHub-Delivery) and reports whether this is the first
// time the store sees it. It is atomic: of concurrent calls with one id, across replicas, exactly one gets
// true.
func (s *Store) MarkDelivery(ctx context.Context, id string) (firstTime bool, err error) {
	if id == "" {
		return false, errors.New("marking a delivery: empty delivery id")
	}
	res, err := s.w.ExecContext(ctx, s.d.q("INSERT INTO deliveries (id, received_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING"),
		id, s.d.timeArg(s.now()))
	if err != nil {
		return false, fmt.Errorf("marking delivery %q: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("marking delivery %q: %w", id, err)
	}
	return n == 1, nil
}

// UnmarkDelivery forgets a delivery, so GitHub's redelivery of it is processed: for a delivery that was
// marked but then refused (queue full, 503).
func (s *Store) UnmarkDelivery(ctx context.Context, id string) error {
	if _, err := s.w.ExecContext(ctx, s.d.q("DELETE FROM deliveries WHERE id = ?"), id); err != nil {
		return fmt.Errorf("unmarking delivery %q: %w", id, err)
	}
	return nil
}

// PruneDeliveries deletes the deliveries received more than olderThan ago and returns how many it deleted.
// GitHub redelivers for at most a few days, so a week or a month is plenty.
func (s *Store) PruneDeliveries(ctx context.Context, olderThan time.Duration) (int64, error) {
	if olderThan <= 0 {
		return 0, fmt.Errorf("pruning deliveries: retention %s is not positive", olderThan)
	}
	cutoff := s.now().Add(-olderThan)
	res, err := s.w.ExecContext(ctx, s.d.q("DELETE FROM deliveries WHERE received_at < ?"), s.d.timeArg(cutoff))
	if err != nil {
		return 0, fmt.Errorf("pruning deliveries older than %s: %w", olderThan, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("pruning deliveries older than %s: %w", olderThan, err)
	}
	return n, nil
}
