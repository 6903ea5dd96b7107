// Package storetest is the conformance suite of package store: the same tests, run against every backend
// (SQLite always, PostgreSQL when a server is given), so both keep one behaviour.
//
//	func TestConformance(t *testing.T) { storetest.Run(t, storetest.SQLite) }
//
// The suite receives a Factory that makes a fresh empty database and returns its DSN, rather than an opened
// *store.Store, because several tests open the same database more than once (restart, migrations, two
// replicas) and inject a fake clock.
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/fleetwave/fleetwave/internal/edge/store"
)

// Factory makes a fresh, empty database for one test or benchmark and returns its DSN. It registers its own
// cleanup.
type Factory func(tb testing.TB) string

// SQLite is the Factory of SQLite databases in t.TempDir().
func SQLite(tb testing.TB) string {
	return "sqlite://" + filepath.Join(tb.TempDir(), "fleetwave.db")
}

// Postgres returns a Factory that gives each test its own schema in the database of baseDSN (through
// search_path), dropped when the test ends.
func Postgres(baseDSN string) Factory {
	return func(tb testing.TB) string {
		tb.Helper()
		u, err := url.Parse(baseDSN)
		if err != nil {
			tb.Fatalf("FLEETWAVE_TEST_POSTGRES_DSN is not a URL")
		}
		db, err := sql.Open("pgx", baseDSN)
		if err != nil {
			tb.Fatalf("opening postgres %s: %v", u.Redacted(), err)
		}
		tb.Cleanup(func() { db.Close() })
		var b [6]byte
		if _, err := rand.Read(b[:]); err != nil {
			tb.Fatal(err)
		}
		schema := "fwtest_" + hex.EncodeToString(b[:])
		ctx := context.Background()
		if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
			tb.Fatalf("creating schema %s in %s: %v", schema, u.Redacted(), err)
		}
		tb.Cleanup(func() {
			if _, err := db.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
				tb.Errorf("dropping schema %s: %v", schema, err)
			}
		})
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
}

// Epoch is the fake clock's start: it has nanoseconds, which the store keeps to the microsecond.
var Epoch = time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.UTC)

// env is one test's database, clock and open store.
type env struct {
	t     *testing.T
	ctx   context.Context
	dsn   string
	clock *clockwork.FakeClock
	s     *store.Store
	newDB Factory // for tests that need another fresh database
}

func newEnv(t *testing.T, newDB Factory) *env {
	e := &env{t: t, ctx: context.Background(), dsn: newDB(t), clock: clockwork.NewFakeClockAt(Epoch), newDB: newDB}
	e.s = e.open()
	return e
}

// open opens another handle on the test's database with the fake clock, closed at the end of the test.
func (e *env) open(opts ...store.Option) *store.Store {
	e.t.Helper()
	s, err := store.Open(e.ctx, e.dsn, append([]store.Option{store.WithClock(e.clock)}, opts...)...)
	if err != nil {
		e.t.Fatalf("opening the store: %v", err)
	}
	e.t.Cleanup(func() { s.Close() })
	return s
}

// now is the fake clock's time at the store's precision.
func (e *env) now() time.Time { return e.clock.Now().UTC().Truncate(time.Microsecond) }

// Run runs the conformance suite; each test gets a fresh database from newDB.
func Run(t *testing.T, newDB Factory) {
	t.Helper()
	groups := []struct {
		name  string
		tests []test
	}{
		{"migrations", migrationTests},
		{"deliveries", deliveryTests},
		{"rollouts", rolloutTests},
		{"waves", waveTests},
		{"steps", stepTests},
		{"events", eventTests},
		{"history", historyTests},
		{"leases", leaseTests},
		{"touching", touchingTests},
		{"restart", restartTests},
		{"counts", countTests},
		{"previews", previewTests},
		{"holds", holdTests},
		{"drift", driftTests},
		{"app since", appSinceTests},
		{"rollout marks", rolloutMarkTests},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					tc.fn(t, newEnv(t, newDB))
				})
			}
		})
	}
}

type test struct {
	name string
	fn   func(t *testing.T, e *env)
}

// sample is a rollout of two waves: canary (one app) and production (three apps in two batches).
func sample(repo, sha string) store.NewRollout {
	return store.NewRollout{
		Repo:           repo,
		PRNumber:       42,
		MergeSHA:       sha,
		BaseSHA:        "base-" + sha,
		InstallationID: 7,
		Plan:           []byte(`{"waves": [ {"name":"canary"}, {"name":"production"} ],  "z":1, "a":0}`),
		Waves: []store.NewWave{
			{Name: "canary", Steps: []store.NewStep{
				{Batch: 0, App: app("web-test"), Cluster: "test-1", PreviousRevision: "old-web-test"},
			}},
			{Name: "production", Steps: []store.NewStep{
				{Batch: 0, App: app("web-eu"), Cluster: "prd-eu-1"},
				{Batch: 0, App: app("web-us"), Cluster: "prd-us-1"},
				{Batch: 1, App: app("web-ap"), Cluster: "prd-ap-1", TargetRevision: "pinned"},
			}},
		},
	}
}

func app(name string) store.AppKey { return store.AppKey{Namespace: "argocd", Name: name} }

// mustCreate creates a rollout and returns it with its steps by app name.
func mustCreate(t *testing.T, e *env, n store.NewRollout) (store.Rollout, map[string]store.AppStep) {
	t.Helper()
	r, created, err := e.s.CreateRollout(e.ctx, n)
	if err != nil {
		t.Fatalf("CreateRollout: %v", err)
	}
	if !created {
		t.Fatalf("CreateRollout(%s@%s): created = false for a new rollout", n.Repo, n.MergeSHA)
	}
	steps, err := e.s.ListSteps(e.ctx, r.ID, store.StepFilter{})
	if err != nil {
		t.Fatalf("ListSteps: %v", err)
	}
	byName := map[string]store.AppStep{}
	for _, st := range steps {
		byName[st.App.Name] = st
	}
	return r, byName
}

func fmtErr(err error) string {
	if err == nil {
		return "nil"
	}
	return fmt.Sprintf("%q", err.Error())
}

// withState is r moved to state (not written).
func withState(r store.Rollout, state store.RolloutState) store.Rollout {
	r.State = state
	return r
}
