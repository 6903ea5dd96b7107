package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Leases share the rollouts among replicas. A lease is a row per rollout: its owner, when it expires and an
// epoch that grows each time it changes hands. Every check compares with the same clock: the PostgreSQL
// server's now() (unless WithClock), or the store's clock for SQLite, never the time of the replica asking.
// Acquiring, renewing and releasing are single statements, atomic under concurrency.

// AcquireLease makes owner the runner of a rollout for ttl and reports whether it is: true when the rollout
// had no lease, its lease had expired (a takeover), or owner held it already (then it is extended).
func (s *Store) AcquireLease(ctx context.Context, rolloutID int64, owner string, ttl time.Duration) (bool, error) {
	if owner == "" || ttl <= 0 {
		return false, fmt.Errorf("acquiring the lease of rollout %d: need an owner and a positive ttl", rolloutID)
	}
	now := s.leaseNowArg()
	// INSERT … SELECT … WHERE: no row when the rollout does not exist. SQLite needs the WHERE to parse the
	// upsert after a SELECT.
	err := s.w.QueryRowContext(ctx, s.d.q(`INSERT INTO leases (rollout_id, owner, epoch, acquired_at, expires_at)
    SELECT id, ?, 1, {now}, {now} {ttl} FROM rollouts WHERE id = ?
    ON CONFLICT (rollout_id) DO UPDATE SET
        epoch = CASE WHEN leases.owner = excluded.owner AND leases.expires_at > {now} THEN leases.epoch ELSE leases.epoch + 1 END,
        acquired_at = CASE WHEN leases.owner = excluded.owner AND leases.expires_at > {now} THEN leases.acquired_at ELSE excluded.acquired_at END,
        owner = excluded.owner,
        expires_at = excluded.expires_at
    WHERE leases.owner = excluded.owner OR leases.expires_at <= {now}
    RETURNING epoch`),
		owner, now, now, ttl.Microseconds(), rolloutID, now, now, now).Scan(new(int64))
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("acquiring the lease of rollout %d for %s: %w", rolloutID, owner, err)
	}
	if _, err := s.GetRollout(ctx, rolloutID); err != nil {
		return false, fmt.Errorf("acquiring the lease of rollout %d for %s: %w", rolloutID, owner, err)
	}
	return false, nil
}

// RenewLease extends owner's unexpired lease to ttl from now. It reports false when owner no longer holds it
// (expired or taken over): the caller must stop starting work on the rollout; it may try AcquireLease.
func (s *Store) RenewLease(ctx context.Context, rolloutID int64, owner string, ttl time.Duration) (bool, error) {
	if ttl <= 0 {
		return false, fmt.Errorf("renewing the lease of rollout %d: ttl %s is not positive", rolloutID, ttl)
	}
	now := s.leaseNowArg()
	res, err := s.w.ExecContext(ctx, s.d.q(`UPDATE leases SET expires_at = {now} {ttl}
    WHERE rollout_id = ? AND owner = ? AND expires_at > {now}`), now, ttl.Microseconds(), rolloutID, owner, now)
	if err != nil {
		return false, fmt.Errorf("renewing the lease of rollout %d for %s: %w", rolloutID, owner, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("renewing the lease of rollout %d for %s: %w", rolloutID, owner, err)
	}
	return n == 1, nil
}

// ReleaseLease gives up owner's lease on a rollout (a no-op when owner does not hold it), so another replica can
// take the rollout at once: on graceful shutdown, or when the rollout finished.
func (s *Store) ReleaseLease(ctx context.Context, rolloutID int64, owner string) error {
	if _, err := s.w.ExecContext(ctx, s.d.q("DELETE FROM leases WHERE rollout_id = ? AND owner = ?"), rolloutID, owner); err != nil {
		return fmt.Errorf("releasing the lease of rollout %d for %s: %w", rolloutID, owner, err)
	}
	return nil
}

// GetLease reads the lease of a rollout, expired or not (Live tells, by the leases' clock); ErrNotFound when
// it has none.
func (s *Store) GetLease(ctx context.Context, rolloutID int64) (Lease, error) {
	var (
		l    Lease
		live int
	)
	err := s.r.QueryRowContext(ctx, s.d.q(`SELECT rollout_id, owner, epoch, acquired_at, expires_at,
    CASE WHEN expires_at > {now} THEN 1 ELSE 0 END FROM leases WHERE rollout_id = ?`), s.leaseNowArg(), rolloutID).
		Scan(&l.RolloutID, &l.Owner, &l.Epoch, timeCol{&l.AcquiredAt}, timeCol{&l.ExpiresAt}, &live)
	l.Live = live == 1
	if errors.Is(err, sql.ErrNoRows) {
		return Lease{}, fmt.Errorf("reading the lease of rollout %d: %w", rolloutID, ErrNotFound)
	}
	if err != nil {
		return Lease{}, fmt.Errorf("reading the lease of rollout %d: %w", rolloutID, err)
	}
	return l, nil
}

// ListClaimable lists the unfinished rollouts nobody runs, oldest first: no lease, or an expired one (the
// replica that ran it was killed or cut off). Another replica takes one over with AcquireLease, which only one
// of several contenders wins.
func (s *Store) ListClaimable(ctx context.Context) ([]Rollout, error) {
	unfinished := unfinishedRolloutStates()
	args := make([]any, 0, len(unfinished)+1)
	for _, st := range unfinished {
		args = append(args, string(st))
	}
	args = append(args, s.leaseNowArg())
	rows, err := s.r.QueryContext(ctx, s.d.q("SELECT "+prefixed("r", rolloutCols)+` FROM rollouts r
    LEFT JOIN leases l ON l.rollout_id = r.id
    WHERE r.state IN (`+placeholders(len(unfinished))+`) AND (l.rollout_id IS NULL OR l.expires_at <= {now})
    ORDER BY r.id`), args...)
	if err != nil {
		return nil, fmt.Errorf("listing claimable rollouts: %w", err)
	}
	out, err := scanRollouts(rows)
	if err != nil {
		return nil, fmt.Errorf("listing claimable rollouts: %w", err)
	}
	return out, nil
}

// ListUnreleased lists the finished rollouts that still have a lease held by owner (from before a restart) or
// expired, oldest first. A replica releases a rollout's lease only after publishing its final state, so these
// are rollouts whose replica died between finishing them and reporting it: whoever takes the lease publishes
// and releases it.
func (s *Store) ListUnreleased(ctx context.Context, owner string) ([]Rollout, error) {
	unfinished := unfinishedRolloutStates()
	args := make([]any, 0, len(unfinished)+2)
	for _, st := range unfinished {
		args = append(args, string(st))
	}
	args = append(args, owner, s.leaseNowArg())
	rows, err := s.r.QueryContext(ctx, s.d.q("SELECT "+prefixed("r", rolloutCols)+` FROM rollouts r
    JOIN leases l ON l.rollout_id = r.id
    WHERE r.state NOT IN (`+placeholders(len(unfinished))+`) AND (l.owner = ? OR l.expires_at <= {now})
    ORDER BY r.id`), args...)
	if err != nil {
		return nil, fmt.Errorf("listing finished rollouts with a lease: %w", err)
	}
	out, err := scanRollouts(rows)
	if err != nil {
		return nil, fmt.Errorf("listing finished rollouts with a lease: %w", err)
	}
	return out, nil
}
