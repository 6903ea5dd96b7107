package store

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

type backend string

const (
	backendSQLite   backend = "sqlite"
	backendPostgres backend = "postgres"
)

// location is a parsed store DSN.
type location struct {
	backend    backend
	sqlitePath string
	pgDSN      string
	redacted   string // safe to print: no password
}

// parseDSN reads FLEETWAVE_STORE. Errors never repeat a password.
func parseDSN(dsn string) (location, error) {
	dsn = strings.TrimSpace(dsn)
	if dsn == "" {
		return location{}, errors.New("store DSN is empty (want sqlite:///path/fleetwave.db or postgres://…)")
	}
	scheme, rest, ok := strings.Cut(dsn, "://")
	if !ok {
		return location{}, errors.New("store DSN has no scheme (want sqlite:///path/fleetwave.db or postgres://…)")
	}
	switch strings.ToLower(scheme) {
	case "sqlite", "sqlite3":
		if i := strings.IndexByte(rest, '?'); i >= 0 {
			return location{}, fmt.Errorf("sqlite store %q: query parameters are not supported (fleetwave sets WAL, busy timeout and foreign keys itself)", dsn)
		}
		if rest == "" || rest == "/" {
			return location{}, fmt.Errorf("sqlite store %q names no file", dsn)
		}
		if strings.Contains(rest, ":memory:") || strings.HasPrefix(rest, "file:") {
			return location{}, fmt.Errorf("sqlite store %q: want a file path (an in-memory database would not survive a restart)", dsn)
		}
		return location{backend: backendSQLite, sqlitePath: rest, redacted: "sqlite://" + rest}, nil
	case "postgres", "postgresql":
		u, err := url.Parse(dsn)
		if err != nil {
			return location{}, errors.New("postgres store DSN is not a valid URL")
		}
		if q := u.Query(); q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return location{backend: backendPostgres, pgDSN: dsn, redacted: u.Redacted()}, nil
	default:
		return location{}, fmt.Errorf("unknown store scheme %q (want sqlite:// or postgres://)", scheme)
	}
}

func checkSQLitePath(path string) error {
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("opening sqlite database %s: directory %s does not exist", path, dir)
	case err != nil:
		return fmt.Errorf("opening sqlite database %s: %w", path, err)
	case !fi.IsDir():
		return fmt.Errorf("opening sqlite database %s: %s is not a directory", path, dir)
	}
	return nil
}
