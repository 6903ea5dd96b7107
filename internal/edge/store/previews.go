package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// PreviewKey names a pull request's change: the same base and head preview the same.
type PreviewKey struct {
	Repo       string // owner/name
	PR         int
	Head, Base string // commit ids
}

func (k PreviewKey) String() string {
	return fmt.Sprintf("%s#%d %.7s..%.7s", k.Repo, k.PR, k.Base, k.Head)
}

func (k PreviewKey) valid() error {
	if k.Repo == "" || k.PR <= 0 || k.Head == "" || k.Base == "" {
		return fmt.Errorf("preview key %q #%d %q..%q: repository, pull request, base and head are required", k.Repo, k.PR, k.Base, k.Head)
	}
	return nil
}

// ClaimPreview claims the preview of a change for ttl and reports whether the caller got it. It is atomic: of
// concurrent claims of one change, across replicas, at most one gets true. A change nobody previewed is
// claimed; one done is claimed only with force (a re-run, /plan); one running only once its claim expired (the
// replica running it died). FinishPreview marks it done, ReleasePreview gives it up.
func (s *Store) ClaimPreview(ctx context.Context, k PreviewKey, force bool, ttl time.Duration) (bool, error) {
	if err := k.valid(); err != nil {
		return false, err
	}
	if ttl <= 0 {
		return false, fmt.Errorf("claiming the preview of %s: claim time %s is not positive", k, ttl)
	}
	now := s.now()
	forced := 0
	if force {
		forced = 1
	}
	res, err := s.w.ExecContext(ctx, s.d.q(`INSERT INTO previews (repo, pr_number, head_sha, base_sha, state, claimed_until, updated_at)
VALUES (?, ?, ?, ?, 'running', ?, ?)
ON CONFLICT (repo, pr_number, head_sha, base_sha) DO UPDATE
SET state = 'running', claimed_until = excluded.claimed_until, updated_at = excluded.updated_at
WHERE (previews.state = 'running' AND previews.claimed_until < ?) OR (previews.state = 'done' AND ? = 1)`),
		k.Repo, k.PR, k.Head, k.Base, s.d.timeArg(now.Add(ttl)), s.d.timeArg(now), s.d.timeArg(now), forced)
	if err != nil {
		return false, fmt.Errorf("claiming the preview of %s: %w", k, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("claiming the preview of %s: %w", k, err)
	}
	return n == 1, nil
}

// PreviewDone reports whether the change's preview is done (its results posted).
func (s *Store) PreviewDone(ctx context.Context, k PreviewKey) (bool, error) {
	var state string
	err := s.r.QueryRowContext(ctx, s.d.q("SELECT state FROM previews WHERE repo = ? AND pr_number = ? AND head_sha = ? AND base_sha = ?"),
		k.Repo, k.PR, k.Head, k.Base).Scan(&state)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the preview of %s: %w", k, err)
	}
	return state == "done", nil
}

// FinishPreview marks the change previewed: later claims without force are refused.
func (s *Store) FinishPreview(ctx context.Context, k PreviewKey) error {
	now := s.now()
	_, err := s.w.ExecContext(ctx, s.d.q(`INSERT INTO previews (repo, pr_number, head_sha, base_sha, state, claimed_until, updated_at)
VALUES (?, ?, ?, ?, 'done', ?, ?)
ON CONFLICT (repo, pr_number, head_sha, base_sha) DO UPDATE SET state = 'done', updated_at = excluded.updated_at`),
		k.Repo, k.PR, k.Head, k.Base, s.d.timeArg(now), s.d.timeArg(now))
	if err != nil {
		return fmt.Errorf("recording the preview of %s: %w", k, err)
	}
	return nil
}

// ReleasePreview gives up a running claim (the preview was cancelled or found stale): the next delivery naming
// the change claims it again. A change already done stays done.
func (s *Store) ReleasePreview(ctx context.Context, k PreviewKey) error {
	_, err := s.w.ExecContext(ctx, s.d.q("DELETE FROM previews WHERE repo = ? AND pr_number = ? AND head_sha = ? AND base_sha = ? AND state = 'running'"),
		k.Repo, k.PR, k.Head, k.Base)
	if err != nil {
		return fmt.Errorf("releasing the preview of %s: %w", k, err)
	}
	return nil
}

// CheckRunID returns the id of the check run named name that fleetwave created on head, 0 when none.
func (s *Store) CheckRunID(ctx context.Context, repo, head, name string) (int64, error) {
	var id int64
	err := s.r.QueryRowContext(ctx, s.d.q("SELECT check_run_id FROM head_check_runs WHERE repo = ? AND head_sha = ? AND name = ?"),
		repo, head, name).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading check run %s of %s@%.7s: %w", name, repo, head, err)
	}
	return id, nil
}

// SaveCheckRunID records the check run named name created on head (replacing an id recorded before).
func (s *Store) SaveCheckRunID(ctx context.Context, repo, head, name string, id int64) error {
	if repo == "" || head == "" || name == "" || id <= 0 {
		return fmt.Errorf("recording check run %q (%d) of %q@%q: repository, head, name and id are required", name, id, repo, head)
	}
	_, err := s.w.ExecContext(ctx, s.d.q(`INSERT INTO head_check_runs (repo, head_sha, name, check_run_id, created_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (repo, head_sha, name) DO UPDATE SET check_run_id = excluded.check_run_id, created_at = excluded.created_at`),
		repo, head, name, id, s.d.timeArg(s.now()))
	if err != nil {
		return fmt.Errorf("recording check run %s of %s@%.7s: %w", name, repo, head, err)
	}
	return nil
}

// PrunePreviews deletes the previews, check-run ids and comments last written more than olderThan ago (a running claim
// only once expired), and returns how many rows it deleted. A change pruned is previewed again if a delivery
// names it later.
func (s *Store) PrunePreviews(ctx context.Context, olderThan time.Duration) (int64, error) {
	if olderThan <= 0 {
		return 0, fmt.Errorf("pruning previews: retention %s is not positive", olderThan)
	}
	now := s.now()
	cutoff := s.d.timeArg(now.Add(-olderThan))
	var total int64
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{"DELETE FROM previews WHERE updated_at < ? AND (state = 'done' OR claimed_until < ?)", []any{cutoff, s.d.timeArg(now)}},
		{"DELETE FROM head_check_runs WHERE created_at < ?", []any{cutoff}},
		{"DELETE FROM preview_comments WHERE updated_at < ?", []any{cutoff}},
	} {
		res, err := s.w.ExecContext(ctx, s.d.q(q.sql), q.args...)
		if err != nil {
			return total, fmt.Errorf("pruning previews older than %s: %w", olderThan, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, fmt.Errorf("pruning previews older than %s: %w", olderThan, err)
		}
		total += n
	}
	return total, nil
}
