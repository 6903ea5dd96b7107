package store

import (
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// dialect isolates what differs between SQLite and PostgreSQL in the queries: placeholders, time values and
// the clock of leases. Queries are written once with ? placeholders and two macros:
//
//	{now}  the current time; one argument (Store.leaseNowArg): with PostgreSQL a NULL means the server's now()
//	{ttl}  "+ a duration"; one argument, the duration in microseconds
//
// Timestamps are INTEGER microseconds since the Unix epoch in SQLite (so they compare and index as numbers)
// and TIMESTAMPTZ in PostgreSQL.
type dialect struct {
	backend backend
}

func (d dialect) pg() bool { return d.backend == backendPostgres }

// q expands the macros and, for PostgreSQL, numbers the placeholders ($1, $2…).
func (d dialect) q(query string) string {
	if d.pg() {
		query = strings.ReplaceAll(query, "{now}", "COALESCE(CAST(? AS timestamptz), now())")
		query = strings.ReplaceAll(query, "{ttl}", "+ CAST(? AS bigint) * interval '1 microsecond'")
	} else {
		query = strings.ReplaceAll(query, "{now}", "?")
		query = strings.ReplaceAll(query, "{ttl}", "+ ?")
	}
	if !d.pg() {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	inQuote := false
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case c == '\'':
			inQuote = !inQuote
			b.WriteByte(c)
		case c == '?' && !inQuote:
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// timeArg encodes t for the database; the zero time is NULL.
func (d dialect) timeArg(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	if d.pg() {
		return t.UTC()
	}
	return t.UnixMicro()
}

// timeCol scans a timestamp of either encoding into *t; NULL is the zero time.
type timeCol struct{ t *time.Time }

func (c timeCol) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*c.t = time.Time{}
	case int64:
		*c.t = time.UnixMicro(v).UTC()
	case time.Time:
		*c.t = v.UTC()
	default:
		return fmt.Errorf("scanning a timestamp: unexpected %T", src)
	}
	return nil
}

var _ sql.Scanner = timeCol{}

// placeholders returns "?, ?, …" with n marks.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}
