package audit

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/fleetwave/fleetwave/internal/config"
	"github.com/fleetwave/fleetwave/internal/edge/store"
)

// Pages of the endpoint: DefaultPage records unless the request asks for another limit, at most MaxPage.
const (
	DefaultPage = 1000
	MaxPage     = 10000
)

// Path is where serve mounts Handler, inside the fleet view (which signs the request in).
const Path = "/fleet/api/history"

// Handler serves the audit trail as JSON lines (application/x-ndjson), streamed:
//
//	GET /fleet/api/history?since=…&repo=owner/name&id=N&after=EVENT_ID&limit=N
//
// since is an RFC 3339 time, a date (2026-03-14) or an age (24h, 90d); after is the id of the last record read
// (the cursor); limit is the page size (default DefaultPage, at most MaxPage). A page with fewer records than the
// limit is the last one. A failure after the first record aborts the response, so a consumer never mistakes a
// cut stream for the end. The caller authenticates the request (serve mounts it behind the fleet view's token).
func Handler(st Store, opts Options, now func() time.Time) http.Handler {
	if now == nil {
		now = time.Now
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := filterOf(r, now())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		flusher, _ := w.(http.Flusher)
		write := JSONLines(w)
		n := 0
		_, err = Export(r.Context(), st, f, opts, func(rec Record) error {
			if err := write(rec); err != nil {
				return err
			}
			if n++; n%100 == 0 && flusher != nil {
				flusher.Flush()
			}
			return nil
		})
		if err != nil {
			if n == 0 && r.Context().Err() == nil {
				w.Header().Del("Content-Type")
				http.Error(w, "reading the rollout history failed", http.StatusInternalServerError)
				return
			}
			panic(http.ErrAbortHandler)
		}
	})
}

func filterOf(r *http.Request, now time.Time) (store.HistoryFilter, error) {
	q := r.URL.Query()
	f := store.HistoryFilter{Repo: strings.TrimSpace(q.Get("repo")), Limit: DefaultPage}
	if s := q.Get("since"); s != "" {
		t, err := ParseSince(s, now)
		if err != nil {
			return f, err
		}
		f.Since = t
	}
	for _, p := range []struct {
		name string
		into *int64
	}{{"id", &f.RolloutID}, {"after", &f.AfterID}} {
		if s := q.Get(p.name); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 0 {
				return f, fmt.Errorf("%s=%q: want a positive number", p.name, s)
			}
			*p.into = n
		}
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxPage {
			return f, fmt.Errorf("limit=%q: want 1 to %d", s, MaxPage)
		}
		f.Limit = n
	}
	return f, nil
}

// ParseSince reads a --since or since= value: an RFC 3339 time, a date (midnight UTC), or an age before now
// (config.ParseAge: 24h, 90d).
func ParseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	d, err := config.ParseAge(s)
	if err != nil || d <= 0 {
		return time.Time{}, fmt.Errorf("since %q: want a time (2026-03-14T15:00:00Z), a date (2026-03-14) or an age (24h, 90d)", s)
	}
	return now.Add(-d), nil
}
