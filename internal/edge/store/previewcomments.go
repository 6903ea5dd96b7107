package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// SaveComment records parts as the sticky comment posted for the change k, shown now on its pull request (no
// other change of the pull request is shown any more).
func (s *Store) SaveComment(ctx context.Context, k PreviewKey, parts []string) error {
	if parts == nil {
		parts = []string{}
	}
	return s.showComment(ctx, k, parts)
}

// ShowComment records that the pull request's comment shows the change k again, its comment recorded before
// (the pull request's head returned to it and its stored comment was posted again).
func (s *Store) ShowComment(ctx context.Context, k PreviewKey) error {
	return s.showComment(ctx, k, nil)
}

// showComment marks k the pull request's shown change, recording parts as its comment unless nil.
func (s *Store) showComment(ctx context.Context, k PreviewKey, parts []string) error {
	if err := k.valid(); err != nil {
		return err
	}
	now := s.d.timeArg(s.now())
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("recording the comment of %s: %w", k, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if _, err := tx.ExecContext(ctx, s.d.q("UPDATE preview_comments SET shown = 0 WHERE repo = ? AND pr_number = ? AND shown = 1"), k.Repo, k.PR); err != nil {
		return fmt.Errorf("recording the comment of %s: %w", k, err)
	}
	if parts == nil {
		res, err := tx.ExecContext(ctx, s.d.q(`UPDATE preview_comments SET shown = 1, updated_at = ?
WHERE repo = ? AND pr_number = ? AND head_sha = ? AND base_sha = ?`), now, k.Repo, k.PR, k.Head, k.Base)
		if err != nil {
			return fmt.Errorf("recording the comment of %s as shown: %w", k, err)
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return fmt.Errorf("recording the comment of %s as shown: no comment is recorded for it", k)
		}
	} else {
		body, err := json.Marshal(parts)
		if err != nil {
			return fmt.Errorf("recording the comment of %s: %w", k, err)
		}
		if _, err := tx.ExecContext(ctx, s.d.q(`INSERT INTO preview_comments (repo, pr_number, head_sha, base_sha, parts, shown, updated_at)
VALUES (?, ?, ?, ?, ?, 1, ?)
ON CONFLICT (repo, pr_number, head_sha, base_sha) DO UPDATE SET parts = excluded.parts, shown = 1, updated_at = excluded.updated_at`),
			k.Repo, k.PR, k.Head, k.Base, string(body), now); err != nil {
			return fmt.Errorf("recording the comment of %s: %w", k, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("recording the comment of %s: %w", k, err)
	}
	return nil
}

// Comment returns the sticky comment recorded for the change k (SaveComment), nil when none.
func (s *Store) Comment(ctx context.Context, k PreviewKey) ([]string, error) {
	var body string
	err := s.r.QueryRowContext(ctx, s.d.q("SELECT parts FROM preview_comments WHERE repo = ? AND pr_number = ? AND head_sha = ? AND base_sha = ?"),
		k.Repo, k.PR, k.Head, k.Base).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the comment of %s: %w", k, err)
	}
	var parts []string
	if err := json.Unmarshal([]byte(body), &parts); err != nil {
		return nil, fmt.Errorf("reading the comment of %s: %w", k, err)
	}
	return parts, nil
}

// ShownComment returns the change whose comment the pull request shows (the last SaveComment of it), the zero
// key when none is recorded.
func (s *Store) ShownComment(ctx context.Context, repo string, pr int) (PreviewKey, error) {
	k := PreviewKey{Repo: repo, PR: pr}
	err := s.r.QueryRowContext(ctx, s.d.q("SELECT head_sha, base_sha FROM preview_comments WHERE repo = ? AND pr_number = ? AND shown = 1"),
		repo, pr).Scan(&k.Head, &k.Base)
	if errors.Is(err, sql.ErrNoRows) {
		return PreviewKey{}, nil
	}
	if err != nil {
		return PreviewKey{}, fmt.Errorf("reading the comment shown on %s#%d: %w", repo, pr, err)
	}
	return k, nil
}
