package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/edge/store/storetest"
)

// postgresDSN is the server the PostgreSQL runs use (testdata/start-postgres.sh prints one); empty skips them.
func postgresDSN(t testing.TB) string {
	dsn := os.Getenv("FLEETWAVE_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("FLEETWAVE_TEST_POSTGRES_DSN is not set (testdata/start-postgres.sh starts a throwaway server)")
	}
	return dsn
}

func TestConformanceSQLite(t *testing.T) {
	storetest.Run(t, storetest.SQLite)
}

func TestConformancePostgres(t *testing.T) {
	storetest.Run(t, storetest.Postgres(postgresDSN(t)))
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, c := range []struct {
		name, dsn, want string
	}{
		{"empty", "", "store DSN is empty"},
		{"no scheme", "/var/lib/fleetwave.db", "store DSN has no scheme"},
		{"unknown scheme", "mysql://root:hunter2@db/fleetwave", `unknown store scheme "mysql"`},
		{"sqlite without file", "sqlite://", "names no file"},
		{"sqlite in memory", "sqlite://:memory:", "in-memory"},
		{"sqlite with parameters", "sqlite://./x.db?_journal_mode=DELETE", "query parameters are not supported"},
		{"sqlite missing directory", "sqlite://" + filepath.Join(dir, "missing", "fleetwave.db"), "directory " + filepath.Join(dir, "missing") + " does not exist"},
		{"unreachable postgres, password in the query", "postgres://127.0.0.1:1/fleetwave?password=hunter2&connect_timeout=2", "connecting to postgres postgres://127.0.0.1:1/fleetwave?"},
		{"unreachable postgres", "postgres://fleetwave:hunter2@127.0.0.1:1/fleetwave?sslmode=disable&connect_timeout=2", "connecting to postgres postgres://fleetwave:xxxxx@127.0.0.1:1/fleetwave"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := store.Open(ctx, c.dsn)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%q) succeeded", c.dsn)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Open(%q) error %q; want it to contain %q", c.dsn, err, c.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("Open(%q) error %q repeats the password", c.dsn, err)
			}
		})
	}
}

func TestSQLiteDSNForms(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t.Chdir(dir)
	for _, c := range []struct{ dsn, file string }{
		{"sqlite://./relative.db", filepath.Join(dir, "relative.db")},
		{"sqlite://bare.db", filepath.Join(dir, "bare.db")},
		{"sqlite://" + filepath.Join(dir, "abs.db"), filepath.Join(dir, "abs.db")},
		{"SQLite3://" + filepath.Join(dir, "upper.db"), filepath.Join(dir, "upper.db")},
	} {
		s, err := store.Open(ctx, c.dsn)
		if err != nil {
			t.Fatalf("Open(%q): %v", c.dsn, err)
		}
		if s.Backend() != "sqlite" {
			t.Errorf("Open(%q).Backend() = %q", c.dsn, s.Backend())
		}
		s.Close()
		if _, err := os.Stat(c.file); err != nil {
			t.Errorf("Open(%q) did not create %s: %v", c.dsn, c.file, err)
		}
	}
}

func TestSQLiteUsesWAL(t *testing.T) {
	dir := t.TempDir()
	s, err := store.Open(context.Background(), "sqlite://"+filepath.Join(dir, "fw.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.MarkDelivery(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "fw.db-wal")); err != nil {
		t.Fatalf("no write-ahead log next to the database: %v", err)
	}
}

// backends runs a benchmark on SQLite and, when FLEETWAVE_TEST_POSTGRES_DSN is set, on PostgreSQL.
func backends(b *testing.B, bench func(b *testing.B, dsn string)) {
	b.Run("sqlite", func(b *testing.B) { bench(b, storetest.SQLite(b)) })
	b.Run("postgres", func(b *testing.B) { bench(b, storetest.Postgres(postgresDSN(b))(b)) })
}

func BenchmarkMarkDelivery(b *testing.B) {
	backends(b, func(b *testing.B, dsn string) {
		ctx := context.Background()
		s, err := store.Open(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			first, err := s.MarkDelivery(ctx, fmt.Sprintf("delivery-%d", i))
			if err != nil || !first {
				b.Fatalf("MarkDelivery = %v, %v", first, err)
			}
		}
	})
}

func BenchmarkMarkDeliveryParallel(b *testing.B) {
	backends(b, func(b *testing.B, dsn string) {
		ctx := context.Background()
		s, err := store.Open(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		var n atomic.Int64
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := s.MarkDelivery(ctx, fmt.Sprintf("delivery-%d", n.Add(1))); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkIntentOutcome measures the store's share of syncing one app: a fenced intent, triggered, outcome.
func BenchmarkIntentOutcome(b *testing.B) {
	backends(b, func(b *testing.B, dsn string) {
		ctx := context.Background()
		s, steps := store.StepsFixture(b, dsn, "bench", b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			st, err := s.RecordIntent(ctx, store.Intent{StepID: steps[i].ID, Version: steps[i].Version, Owner: "bench", PreviousRevision: "p"})
			if err != nil {
				b.Fatal(err)
			}
			if st, err = s.MarkTriggered(ctx, st.ID, st.Version); err != nil {
				b.Fatal(err)
			}
			if _, err = s.RecordOutcome(ctx, store.Outcome{StepID: st.ID, Version: st.Version, State: store.StepSynced, Health: "Healthy"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkIntentOutcomeParallel is BenchmarkIntentOutcome with the apps of a wave working at once (100
// goroutines per CPU), as the executor drives them: on SQLite their writes share the single writer.
func BenchmarkIntentOutcomeParallel(b *testing.B) {
	backends(b, func(b *testing.B, dsn string) {
		ctx := context.Background()
		s, steps := store.StepsFixture(b, dsn, "bench", b.N)
		var next atomic.Int64
		b.SetParallelism(100)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				step := steps[next.Add(1)-1]
				st, err := s.RecordIntent(ctx, store.Intent{StepID: step.ID, Version: step.Version, Owner: "bench", PreviousRevision: "p"})
				if err == nil {
					st, err = s.MarkTriggered(ctx, st.ID, st.Version)
				}
				if err == nil {
					_, err = s.RecordOutcome(ctx, store.Outcome{StepID: st.ID, Version: st.Version, State: store.StepSynced, Health: "Healthy"})
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
