package store

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Hold records that fleetwave switched an app's Argo CD automated sync off for a change that has not merged yet:
// an open pull request whose plan check passed (PR > 0, Head its head commit), or a terminal's `fleetwave rollout
// prepare` (PR 0, Head the change's head commit). The switch itself lives on the Application (internal/autosync);
// the hold says who needs it, so that the switch is undone when the last holder lets go.
type Hold struct {
	Repo string // owner/name
	PR   int    // 0 for the terminal's rollout prepare
	Head string // commit id
	App  AppKey
	// Group: held by a merge group of the pull request (Head is the group's head commit).
	Group bool
	At    time.Time // when it was recorded (last)
}

func (h Hold) String() string {
	return fmt.Sprintf("%s#%d@%.7s %s", h.Repo, h.PR, h.Head, h.App)
}

func (h Hold) valid() error {
	if h.Repo == "" || h.PR < 0 || h.Head == "" || h.App.Name == "" {
		return fmt.Errorf("automated sync hold %s: repository, head and app are required (pull request 0 or more)", h)
	}
	return nil
}

// HoldFilter selects holds; a zero field matches every value.
type HoldFilter struct {
	Repo string
	PRs  []int // nil: every pull request (and the terminal's, 0)
	Head string
	Apps []AppKey
}

// PutHolds records holds (the time is the store's clock); a hold already recorded is kept with its new time.
// All or none.
func (s *Store) PutHolds(ctx context.Context, hs []Hold) error {
	if len(hs) == 0 {
		return nil
	}
	for _, h := range hs {
		if err := h.valid(); err != nil {
			return err
		}
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("recording automated sync holds: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	now := s.d.timeArg(s.now())
	q := s.d.q(`INSERT INTO automated_sync_holds (repo, pr_number, head_sha, app_instance, app_namespace, app_name, merge_group, held_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (repo, pr_number, head_sha, app_instance, app_namespace, app_name) DO UPDATE SET held_at = excluded.held_at, merge_group = excluded.merge_group`)
	for _, h := range hs {
		group := 0
		if h.Group {
			group = 1
		}
		if _, err := tx.ExecContext(ctx, q, h.Repo, h.PR, h.Head, h.App.Instance, h.App.Namespace, h.App.Name, group, now); err != nil {
			return fmt.Errorf("recording automated sync hold %s: %w", h, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("recording automated sync holds: %w", err)
	}
	return nil
}

// ListHolds lists the holds f selects, ordered by repository, pull request, app and head.
func (s *Store) ListHolds(ctx context.Context, f HoldFilter) ([]Hold, error) {
	var where []string
	var args []any
	if f.Repo != "" {
		where, args = append(where, "repo = ?"), append(args, f.Repo)
	}
	if f.Head != "" {
		where, args = append(where, "head_sha = ?"), append(args, f.Head)
	}
	if f.PRs != nil {
		if len(f.PRs) == 0 {
			return nil, nil
		}
		where = append(where, "pr_number IN ("+placeholders(len(f.PRs))+")")
		for _, n := range f.PRs {
			args = append(args, n)
		}
	}
	if f.Apps != nil {
		if len(f.Apps) == 0 {
			return nil, nil
		}
		var or []string
		for _, k := range f.Apps {
			or, args = append(or, "(app_instance = ? AND app_namespace = ? AND app_name = ?)"), append(args, k.Instance, k.Namespace, k.Name)
		}
		where = append(where, "("+strings.Join(or, " OR ")+")")
	}
	q := "SELECT repo, pr_number, head_sha, app_instance, app_namespace, app_name, merge_group, held_at FROM automated_sync_holds"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY repo, pr_number, app_instance, app_namespace, app_name, head_sha"
	rows, err := s.r.QueryContext(ctx, s.d.q(q), args...)
	if err != nil {
		return nil, fmt.Errorf("listing automated sync holds: %w", err)
	}
	defer rows.Close()
	var out []Hold
	for rows.Next() {
		var h Hold
		var group int
		if err := rows.Scan(&h.Repo, &h.PR, &h.Head, &h.App.Instance, &h.App.Namespace, &h.App.Name, &group, timeCol{&h.At}); err != nil {
			return nil, fmt.Errorf("listing automated sync holds: %w", err)
		}
		h.Group = group != 0
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing automated sync holds: %w", err)
	}
	return out, nil
}

// DeleteHolds removes holds (by repository, pull request, head and app; At is ignored); absent ones are no error.
// All or none.
func (s *Store) DeleteHolds(ctx context.Context, hs []Hold) error {
	if len(hs) == 0 {
		return nil
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("removing automated sync holds: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	q := s.d.q(`DELETE FROM automated_sync_holds WHERE repo = ? AND pr_number = ? AND head_sha = ? AND app_instance = ? AND app_namespace = ? AND app_name = ?`)
	for _, h := range hs {
		if _, err := tx.ExecContext(ctx, q, h.Repo, h.PR, h.Head, h.App.Instance, h.App.Namespace, h.App.Name); err != nil {
			return fmt.Errorf("removing automated sync hold %s: %w", h, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("removing automated sync holds: %w", err)
	}
	return nil
}
