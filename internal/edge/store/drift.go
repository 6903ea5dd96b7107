package store

import (
	"context"
	"fmt"
	"time"
)

// DriftReport is the GitHub issue fleetwave keeps open for an app in lasting drift (internal/drift): one per
// app, recorded so that a restarted replica, or another one, edits and closes that issue instead of opening a
// second.
type DriftReport struct {
	App    AppKey
	Repo   string // owner/name of the repository the issue is in
	Number int    // the number
	// Digest is what the issue last said, in short (the reporter's choice), so that an unchanged state is not
	// written again.
	Digest     string
	OpenedAt   time.Time
	ReportedAt time.Time // when the issue was last written
}

func (r DriftReport) valid() error {
	if r.App.Name == "" || r.Repo == "" || r.Number <= 0 {
		return fmt.Errorf("drift report of %s: app, repository and issue number are required", r.App)
	}
	return nil
}

// PutDriftReport records (or replaces) the report of r.App. OpenedAt and ReportedAt are written as given (zero:
// the store's clock).
func (s *Store) PutDriftReport(ctx context.Context, r DriftReport) error {
	if err := r.valid(); err != nil {
		return err
	}
	now := s.now()
	if r.OpenedAt.IsZero() {
		r.OpenedAt = now
	}
	if r.ReportedAt.IsZero() {
		r.ReportedAt = now
	}
	q := s.d.q(`INSERT INTO drift_reports (app_instance, app_namespace, app_name, repo, issue_number, digest, opened_at, reported_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (app_instance, app_namespace, app_name) DO UPDATE SET repo = excluded.repo, issue_number = excluded.issue_number,
    digest = excluded.digest, opened_at = excluded.opened_at, reported_at = excluded.reported_at`)
	if _, err := s.w.ExecContext(ctx, q, r.App.Instance, r.App.Namespace, r.App.Name, r.Repo, r.Number, r.Digest,
		s.d.timeArg(r.OpenedAt), s.d.timeArg(r.ReportedAt)); err != nil {
		return fmt.Errorf("recording the drift report of %s: %w", r.App, err)
	}
	return nil
}

// ListDriftReports lists the recorded drift reports by app.
func (s *Store) ListDriftReports(ctx context.Context) ([]DriftReport, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT app_instance, app_namespace, app_name, repo, issue_number, digest, opened_at, reported_at
FROM drift_reports ORDER BY app_instance, app_namespace, app_name`)
	if err != nil {
		return nil, fmt.Errorf("listing drift reports: %w", err)
	}
	defer rows.Close()
	var out []DriftReport
	for rows.Next() {
		var r DriftReport
		if err := rows.Scan(&r.App.Instance, &r.App.Namespace, &r.App.Name, &r.Repo, &r.Number, &r.Digest,
			timeCol{&r.OpenedAt}, timeCol{&r.ReportedAt}); err != nil {
			return nil, fmt.Errorf("listing drift reports: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing drift reports: %w", err)
	}
	return out, nil
}

// DeleteDriftReport forgets the report of app (its issue was closed); an app without one is no error.
func (s *Store) DeleteDriftReport(ctx context.Context, app AppKey) error {
	if _, err := s.w.ExecContext(ctx, s.d.q(`DELETE FROM drift_reports WHERE app_instance = ? AND app_namespace = ? AND app_name = ?`),
		app.Instance, app.Namespace, app.Name); err != nil {
		return fmt.Errorf("removing the drift report of %s: %w", app, err)
	}
	return nil
}

// AppsAboutToSync lists the apps an unfinished rollout is about to sync: those with a step not done yet
// (pending, intent or triggered) in a rollout that is not finished (pending, running, paused, awaiting
// approval, rolling back). Their drift is the rollout's business, not an alert.
func (s *Store) AppsAboutToSync(ctx context.Context) ([]AppKey, error) {
	unfinished := unfinishedRolloutStates()
	waiting := []StepState{StepPending, StepIntent, StepTriggered}
	args := make([]any, 0, len(unfinished)+len(waiting))
	for _, st := range unfinished {
		args = append(args, string(st))
	}
	for _, st := range waiting {
		args = append(args, string(st))
	}
	q := `SELECT DISTINCT s.app_instance, s.app_namespace, s.app_name FROM app_steps s JOIN rollouts r ON r.id = s.rollout_id
WHERE r.state IN (` + placeholders(len(unfinished)) + `) AND s.state IN (` + placeholders(len(waiting)) + `)
ORDER BY s.app_instance, s.app_namespace, s.app_name`
	rows, err := s.r.QueryContext(ctx, s.d.q(q), args...)
	if err != nil {
		return nil, fmt.Errorf("listing the apps rollouts are about to sync: %w", err)
	}
	defer rows.Close()
	var out []AppKey
	for rows.Next() {
		var k AppKey
		if err := rows.Scan(&k.Instance, &k.Namespace, &k.Name); err != nil {
			return nil, fmt.Errorf("listing the apps rollouts are about to sync: %w", err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing the apps rollouts are about to sync: %w", err)
	}
	return out, nil
}
