package store

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migrations are embedded SQL files, one directory per dialect, named NNNN_description.sql. Both directories
// hold the same versions describing the same logical schema (a test checks the versions and the columns).
// Open applies the missing ones in order, in one transaction, and records each in schema_migrations.
//
//go:embed migrations/sqlite/*.sql migrations/postgres/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations(b backend) ([]migration, error) {
	dir := path.Join("migrations", string(b))
	entries, err := fs.ReadDir(migrationFiles, dir)
	if err != nil {
		return nil, fmt.Errorf("reading embedded migrations %s: %w", dir, err)
	}
	var out []migration
	for _, e := range entries {
		num, rest, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 || !strings.HasSuffix(rest, ".sql") {
			return nil, fmt.Errorf("embedded migration %s/%s: want NNNN_name.sql", dir, e.Name())
		}
		body, err := fs.ReadFile(migrationFiles, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("reading embedded migration %s/%s: %w", dir, e.Name(), err)
		}
		out = append(out, migration{version: v, name: strings.TrimSuffix(rest, ".sql"), sql: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("embedded migrations %s: version %d where %d was expected", dir, m.version, i+1)
		}
	}
	return out, nil
}

// migrationLockKey is the PostgreSQL advisory lock that serialises replicas migrating at the same time.
const migrationLockKey = 0x666c7477 // "fltw"

// migrate applies the missing migrations, up to version upTo when it is positive (tests), else all.
func (s *Store) migrate(ctx context.Context, upTo int) error {
	ms, err := loadMigrations(s.d.backend)
	if err != nil {
		return err
	}
	if upTo > 0 && upTo < len(ms) {
		ms = ms[:upTo]
	}
	// SQLite: the writer's transactions begin IMMEDIATE, which takes the write lock (other processes wait on
	// the busy timeout). PostgreSQL: an advisory lock held until commit.
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("beginning the migration transaction: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	appliedAt := "INTEGER"
	if s.d.pg() {
		appliedAt = "TIMESTAMPTZ"
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLockKey); err != nil {
			return fmt.Errorf("taking the migration lock: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER NOT NULL PRIMARY KEY,
    name       TEXT    NOT NULL,
    applied_at `+appliedAt+` NOT NULL
)`); err != nil {
		return fmt.Errorf("creating schema_migrations: %w", err)
	}
	var current int
	if err := tx.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&current); err != nil {
		return fmt.Errorf("reading the schema version: %w", err)
	}
	latest := len(ms)
	if current > latest {
		return fmt.Errorf("the database has schema version %d, newer than this fleetwave knows (%d): upgrade fleetwave", current, latest)
	}
	for _, m := range ms[current:] {
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("applying migration %04d_%s: %w", m.version, m.name, err)
		}
		if _, err := tx.ExecContext(ctx, s.d.q("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)"),
			m.version, m.name, s.d.timeArg(s.now())); err != nil {
			return fmt.Errorf("recording migration %04d_%s: %w", m.version, m.name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("committing migrations: %w", err)
	}
	return nil
}

// SchemaVersion is the highest migration applied to the database.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	if err := s.r.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&v); err != nil {
		return 0, fmt.Errorf("reading the schema version: %w", err)
	}
	return v, nil
}

// LatestSchemaVersion is the schema version this build migrates databases to.
func LatestSchemaVersion() int {
	ms, err := loadMigrations(backendSQLite)
	if err != nil {
		return 0
	}
	return len(ms)
}
