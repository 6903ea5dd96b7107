package store

import (
	"context"
	"fmt"
	"time"
)

// AppSince is since when an app of the inventory has its sync and health status (#37): kept so that a restart of
// fleetwave keeps an app's "OutOfSync since 09:12" rather than restarting the clock.
type AppSince struct {
	App         AppKey
	Sync        string
	SyncSince   time.Time
	Health      string
	HealthSince time.Time
}

// PutAppSince records apps' statuses and since times, replacing what was recorded for them, in one transaction.
func (s *Store) PutAppSince(ctx context.Context, rows []AppSince) error {
	if len(rows) == 0 {
		return nil
	}
	for _, r := range rows {
		if r.App.Name == "" {
			return fmt.Errorf("recording since times of %s: the app's name is required", r.App)
		}
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("recording since times: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	q := s.d.q(`INSERT INTO app_since (app_instance, app_namespace, app_name, sync, sync_since, health, health_since)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (app_instance, app_namespace, app_name) DO UPDATE SET sync = excluded.sync, sync_since = excluded.sync_since,
health = excluded.health, health_since = excluded.health_since`)
	stmt, err := tx.PrepareContext(ctx, q)
	if err != nil {
		return fmt.Errorf("recording since times: %w", err)
	}
	defer stmt.Close()
	for _, r := range rows {
		if _, err := stmt.ExecContext(ctx, r.App.Instance, r.App.Namespace, r.App.Name, r.Sync, s.d.timeArg(r.SyncSince),
			r.Health, s.d.timeArg(r.HealthSince)); err != nil {
			return fmt.Errorf("recording since times of %s: %w", r.App, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("recording since times: %w", err)
	}
	return nil
}

// DeleteAppSince forgets apps (deleted in Argo CD); absent ones are no error. All or none.
func (s *Store) DeleteAppSince(ctx context.Context, apps []AppKey) error {
	if len(apps) == 0 {
		return nil
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("removing since times: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	stmt, err := tx.PrepareContext(ctx, s.d.q(`DELETE FROM app_since WHERE app_instance = ? AND app_namespace = ? AND app_name = ?`))
	if err != nil {
		return fmt.Errorf("removing since times: %w", err)
	}
	defer stmt.Close()
	for _, k := range apps {
		if _, err := stmt.ExecContext(ctx, k.Instance, k.Namespace, k.Name); err != nil {
			return fmt.Errorf("removing since times of %s: %w", k, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("removing since times: %w", err)
	}
	return nil
}

// ListAppSince lists the recorded since times of one instance's apps, ordered by namespace and name.
func (s *Store) ListAppSince(ctx context.Context, instance string) ([]AppSince, error) {
	rows, err := s.r.QueryContext(ctx, s.d.q(`SELECT app_instance, app_namespace, app_name, sync, sync_since, health, health_since
FROM app_since WHERE app_instance = ? ORDER BY app_namespace, app_name`), instance)
	if err != nil {
		return nil, fmt.Errorf("listing since times: %w", err)
	}
	defer rows.Close()
	var out []AppSince
	for rows.Next() {
		var r AppSince
		if err := rows.Scan(&r.App.Instance, &r.App.Namespace, &r.App.Name, &r.Sync, timeCol{&r.SyncSince}, &r.Health,
			timeCol{&r.HealthSince}); err != nil {
			return nil, fmt.Errorf("listing since times: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing since times: %w", err)
	}
	return out, nil
}

// RolloutMark is fleetwave's last rollout that planned an app (#37): the rollout, the revision it syncs the app
// to, and the app step's state (synced or skipped: the app reached it).
type RolloutMark struct {
	App      AppKey
	Rollout  int64
	Revision string
	State    StepState
}

// LastRolloutMarks lists, for each app of instance that a rollout planned, the step of the newest such rollout
// (steps out of the plan left out), ordered by namespace and name.
func (s *Store) LastRolloutMarks(ctx context.Context, instance string) ([]RolloutMark, error) {
	rows, err := s.r.QueryContext(ctx, s.d.q(`SELECT s.app_instance, s.app_namespace, s.app_name, s.rollout_id, s.target_revision, s.state
FROM app_steps s JOIN (
    SELECT app_instance, app_namespace, app_name, MAX(rollout_id) AS rid FROM app_steps
    WHERE app_instance = ? AND state <> ? GROUP BY app_instance, app_namespace, app_name
) l ON s.app_instance = l.app_instance AND s.app_namespace = l.app_namespace AND s.app_name = l.app_name AND s.rollout_id = l.rid
ORDER BY s.app_namespace, s.app_name`), instance, string(StepOutOfPlan))
	if err != nil {
		return nil, fmt.Errorf("listing the last rollout of each app: %w", err)
	}
	defer rows.Close()
	var out []RolloutMark
	for rows.Next() {
		var m RolloutMark
		if err := rows.Scan(&m.App.Instance, &m.App.Namespace, &m.App.Name, &m.Rollout, &m.Revision, &m.State); err != nil {
			return nil, fmt.Errorf("listing the last rollout of each app: %w", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing the last rollout of each app: %w", err)
	}
	return out, nil
}
