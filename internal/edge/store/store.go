package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // registers the "sqlite" database/sql driver (pure Go)
)

// Errors the store's methods wrap; test them with errors.Is.
var (
	// ErrNotFound: no such rollout, wave, step or lease.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the row changed since the caller read it (its version is stale); re-read and decide again.
	ErrConflict = errors.New("stale version: changed since read")
	// ErrInvalidTransition: the row is in a state the requested move cannot start from.
	ErrInvalidTransition = errors.New("invalid state transition")
	// ErrLeaseLost: the caller does not hold an unexpired lease on the rollout.
	ErrLeaseLost = errors.New("lease not held")
)

// Clock tells the time. github.com/jonboulle/clockwork's clocks satisfy it.
type Clock interface {
	Now() time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// Option configures Open.
type Option func(*options)

type options struct {
	clock       Clock
	busyTimeout time.Duration
	// schemaUpTo stops the migrations at this version (0: all); tests write databases of an older schema.
	schemaUpTo int
}

// WithClock sets the clock of every timestamp the store writes and of delivery pruning. With PostgreSQL and no
// WithClock, lease expiry is measured by the database server's clock (now()), never a replica's, so replicas
// with skewed clocks agree; WithClock makes leases follow the given clock on both backends (tests).
func WithClock(c Clock) Option { return func(o *options) { o.clock = c } }

// WithBusyTimeout sets how long a SQLite write waits for another process's lock before failing (default 5 s).
func WithBusyTimeout(d time.Duration) Option { return func(o *options) { o.busyTimeout = d } }

// Store is the bot's durable state. It is safe for concurrent use.
type Store struct {
	d     dialect
	w     *sql.DB // writes; for SQLite a single connection, so writers queue in-process instead of failing busy
	r     *sql.DB // reads; for SQLite a read-only pool (WAL lets it read while the writer writes)
	clock Clock
	// leaseClockFromDB: leases are measured with the database's now() (PostgreSQL without WithClock).
	leaseClockFromDB bool
	// stmts caches the writer's prepared statements of the hot path by query text (SQLite: parsing a statement
	// costs as much as running it; pgx caches its own).
	stmts sync.Map
	// group batches the step moves of concurrent callers into one transaction (SQLite only; see group.go).
	group *groupCommitter
}

// Open opens the store named by dsn and applies pending schema migrations:
//
//	sqlite:///var/lib/fleetwave/fleetwave.db   absolute path
//	sqlite://./fleetwave.db                    relative to the working directory
//	postgres://user:pass@host:5432/db?sslmode=disable   (or postgresql://; any pgx connection string)
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	o := options{busyTimeout: 5 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	clockSet := o.clock != nil
	if !clockSet {
		o.clock = systemClock{}
	}
	loc, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	s := &Store{clock: o.clock}
	switch loc.backend {
	case backendSQLite:
		err = s.openSQLite(ctx, loc.sqlitePath, o.busyTimeout)
	case backendPostgres:
		s.leaseClockFromDB = !clockSet
		err = s.openPostgres(ctx, loc.pgDSN, loc.redacted)
	}
	if err != nil {
		return nil, err
	}
	if err := s.migrate(ctx, o.schemaUpTo); err != nil {
		s.Close()
		return nil, fmt.Errorf("migrating store %s: %w", loc.redacted, err)
	}
	return s, nil
}

func (s *Store) openSQLite(ctx context.Context, path string, busy time.Duration) error {
	if err := checkSQLitePath(path); err != nil {
		return err
	}
	common := fmt.Sprintf("_busy_timeout=%d&_foreign_keys=1&_synchronous=NORMAL", busy.Milliseconds())
	w, err := sql.Open("sqlite", path+"?"+common+"&_journal_mode=WAL&_txlock=immediate")
	if err != nil {
		return fmt.Errorf("opening sqlite database %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	// The writer's first connection switches the file to WAL before any reader opens it.
	if err := pingSQLite(ctx, w, busy); err != nil {
		w.Close()
		return fmt.Errorf("opening sqlite database %s: %w", path, err)
	}
	r, err := sql.Open("sqlite", path+"?"+common+"&_query_only=1")
	if err != nil {
		w.Close()
		return fmt.Errorf("opening sqlite database %s: %w", path, err)
	}
	r.SetMaxOpenConns(4)
	r.SetMaxIdleConns(4)
	s.d, s.w, s.r = dialect{backend: backendSQLite}, w, r
	s.group = newGroupCommitter(w, s.prepared)
	return nil
}

// pingSQLite opens the writer's first connection, trying again while the database is busy, up to the busy
// timeout. Switching a file to WAL takes an exclusive lock, and SQLite answers SQLITE_BUSY at once, without
// waiting on the busy handler, when another connection (a replica opening the same new database) holds the write
// lock of its migration: waiting there could deadlock, so the wait is here, on a fresh connection.
func pingSQLite(ctx context.Context, w *sql.DB, busy time.Duration) error {
	deadline := time.Now().Add(busy)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		err := w.PingContext(ctx)
		var coded interface{ Code() int }
		if err == nil || !errors.As(err, &coded) || coded.Code()&0xff != 5 || time.Now().After(deadline) { // 5: SQLITE_BUSY
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

func (s *Store) openPostgres(ctx context.Context, dsn, redacted string) error {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return fmt.Errorf("opening postgres %s: %w", redacted, err)
	}
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(4)
	db.SetConnMaxIdleTime(5 * time.Minute)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return fmt.Errorf("connecting to postgres %s: %w", redacted, err)
	}
	s.d, s.w, s.r = dialect{backend: backendPostgres}, db, db
	return nil
}

// Backend is "sqlite" or "postgres".
func (s *Store) Backend() string { return string(s.d.backend) }

// Ping checks that the database answers (for a readiness probe).
func (s *Store) Ping(ctx context.Context) error {
	if err := s.w.PingContext(ctx); err != nil {
		return fmt.Errorf("pinging the %s store: %w", s.d.backend, err)
	}
	return nil
}

// writeRow runs a single-row write (e.g. UPDATE ... RETURNING) on the writer and scans its row. On SQLite it
// joins the group commit, through a statement prepared once per query text.
func (s *Store) writeRow(ctx context.Context, query string, args []any, scan func(*sql.Row) error) error {
	if s.group == nil {
		return scan(s.w.QueryRowContext(ctx, query, args...))
	}
	return s.group.write(ctx, query, args, scan)
}

// prepared returns the writer's statement for query, prepared once.
func (s *Store) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := s.stmts.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := s.w.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if prev, loaded := s.stmts.LoadOrStore(query, st); loaded {
		st.Close()
		st = prev.(*sql.Stmt)
	}
	return st, nil
}

// Close closes the database. Outstanding calls fail.
func (s *Store) Close() error {
	if s.group != nil {
		s.group.close()
	}
	s.stmts.Range(func(_, st any) bool {
		st.(*sql.Stmt).Close()
		return true
	})
	err := s.w.Close()
	if s.r != s.w {
		err = errors.Join(err, s.r.Close())
	}
	return err
}

// now is the store's time, at the database's precision (microseconds), in UTC.
func (s *Store) now() time.Time { return s.clock.Now().UTC().Truncate(time.Microsecond) }

// leaseNowArg is the argument of the {now} placeholder of lease queries: nil lets PostgreSQL use now().
func (s *Store) leaseNowArg() any {
	if s.leaseClockFromDB {
		return nil
	}
	return s.d.timeArg(s.now())
}
