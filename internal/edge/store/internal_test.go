package store

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRebind(t *testing.T) {
	pg := dialect{backend: backendPostgres}
	got := pg.q("SELECT ? FROM t WHERE a = '?' AND b = ? AND c > {now} {ttl}")
	want := "SELECT $1 FROM t WHERE a = '?' AND b = $2 AND c > COALESCE(CAST($3 AS timestamptz), now()) + CAST($4 AS bigint) * interval '1 microsecond'"
	if got != want {
		t.Fatalf("pg.q = %s\nwant     %s", got, want)
	}
	lite := dialect{backend: backendSQLite}
	if got := lite.q("SELECT ? WHERE c > {now} {ttl}"); got != "SELECT ? WHERE c > ? + ?" {
		t.Fatalf("sqlite.q = %s", got)
	}
}

func TestMigrationsAlign(t *testing.T) {
	lite, err := loadMigrations(backendSQLite)
	if err != nil {
		t.Fatal(err)
	}
	pg, err := loadMigrations(backendPostgres)
	if err != nil {
		t.Fatal(err)
	}
	names := func(ms []migration) (out []string) {
		for _, m := range ms {
			out = append(out, m.name)
		}
		return out
	}
	if d := cmp.Diff(names(lite), names(pg)); d != "" {
		t.Fatalf("the dialects' migrations differ (-sqlite +postgres):\n%s", d)
	}
	if LatestSchemaVersion() != len(lite) {
		t.Fatalf("LatestSchemaVersion() = %d; want %d", LatestSchemaVersion(), len(lite))
	}
}

// columns lists the tables and columns of the store's schema: the logical schema, which must not depend on
// the backend.
func columns(t *testing.T, s *Store) map[string][]string {
	t.Helper()
	q := `SELECT m.name, p.name FROM sqlite_schema m, pragma_table_info(m.name) p
          WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' ORDER BY m.name, p.cid`
	if s.d.pg() {
		q = `SELECT table_name, column_name FROM information_schema.columns
             WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`
	}
	rows, err := s.r.QueryContext(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var table, col string
		if err := rows.Scan(&table, &col); err != nil {
			t.Fatal(err)
		}
		out[table] = append(out[table], col)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func openSQLite(t *testing.T) (*Store, string) {
	t.Helper()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "fw.db")
	s, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dsn
}

func TestLogicalSchemaSameOnBothBackends(t *testing.T) {
	lite, _ := openSQLite(t)
	got := columns(t, lite)
	want := map[string][]string{
		"schema_migrations": {"version", "name", "applied_at"},
		"deliveries":        {"id", "received_at"},
		"rollouts": {"id", "repo", "pr_number", "merge_sha", "base_sha", "plan", "plan_digest", "state", "message",
			"superseded_by", "check_run_id", "rollback_check_run_id", "created_at", "updated_at", "version", "installation_id"},
		"waves": {"rollout_id", "idx", "name", "state", "check_run_id", "approved_by", "approved_at", "gate_state",
			"message", "started_at", "finished_at", "updated_at", "version"},
		"app_steps": {"id", "rollout_id", "wave_idx", "batch_idx", "app_namespace", "app_name", "cluster",
			"previous_revision", "target_revision", "state", "op", "attempts", "intent_at", "triggered_at",
			"op_started_at", "op_finished_at", "health", "message", "updated_at", "version", "app_instance"},
		"events":           {"id", "rollout_id", "at", "actor", "action", "target", "result", "message", "delivery_id"},
		"leases":           {"rollout_id", "owner", "epoch", "acquired_at", "expires_at"},
		"previews":         {"repo", "pr_number", "head_sha", "base_sha", "state", "claimed_until", "updated_at"},
		"head_check_runs":  {"repo", "head_sha", "name", "check_run_id", "created_at"},
		"preview_comments": {"repo", "pr_number", "head_sha", "base_sha", "parts", "shown", "updated_at"},
		"automated_sync_holds": {"repo", "pr_number", "head_sha", "app_namespace", "app_name", "merge_group", "held_at",
			"app_instance"},
		"drift_reports": {"app_instance", "app_namespace", "app_name", "repo", "issue_number", "digest", "opened_at",
			"reported_at"},
		"app_since": {"app_instance", "app_namespace", "app_name", "sync", "sync_since", "health", "health_since"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("sqlite schema (-want +got):\n%s", d)
	}
	dsn := os.Getenv("FLEETWAVE_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Log("FLEETWAVE_TEST_POSTGRES_DSN not set: PostgreSQL schema not compared")
		return
	}
	pg, err := Open(context.Background(), postgresSchemaDSN(t, dsn))
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if d := cmp.Diff(want, columns(t, pg)); d != "" {
		t.Fatalf("postgres schema (-want +got):\n%s", d)
	}
}

// postgresSchemaDSN makes a throwaway schema (dropped at the end of the test) and returns a DSN using it.
func postgresSchemaDSN(t *testing.T, base string) string {
	t.Helper()
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	schema := "fwtest_schema_" + strings.ReplaceAll(strings.ToLower(t.Name()), "/", "_")
	if _, err := db.Exec("DROP SCHEMA IF EXISTS " + schema + " CASCADE; CREATE SCHEMA " + schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Exec("DROP SCHEMA " + schema + " CASCADE") }) //nolint:errcheck // best effort
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "search_path=" + schema
}

func TestRefusesNewerSchema(t *testing.T) {
	s, dsn := openSQLite(t)
	if _, err := s.w.Exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'from-the-future', 0)", LatestSchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2, err := Open(context.Background(), dsn)
	if err == nil {
		s2.Close()
		t.Fatal("Open of a database with a newer schema succeeded")
	}
	if !strings.Contains(err.Error(), "newer than this fleetwave knows") {
		t.Fatalf("Open error %q", err)
	}
}
