package audit_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/fleetwave/fleetwave/internal/audit"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/testkit/logtest"
)

var t0 = time.Date(2026, 3, 14, 15, 0, 0, 0, time.UTC)

// seeded is a store with two rollouts of two repositories and n events each, alternating, an hour apart, on a
// fake clock at t0.
func seeded(t *testing.T, n int) (*store.Store, *clockwork.FakeClock, []store.Rollout) {
	t.Helper()
	clock := clockwork.NewFakeClockAt(t0)
	st, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "fleetwave.db"), store.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var rs []store.Rollout
	for _, repo := range []string{"org/a", "org/b"} {
		r, _, err := st.CreateRollout(context.Background(), store.NewRollout{Repo: repo, PRNumber: 3, MergeSHA: "m-" + repo, Plan: []byte(`{}`),
			Waves: []store.NewWave{{Name: "canary", Steps: []store.NewStep{{App: store.AppKey{Instance: "eu", Namespace: "argocd", Name: "web"}, Cluster: "c1"}}}}})
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	for i := 0; i < n; i++ {
		for _, r := range rs {
			if _, err := st.AppendEvent(context.Background(), store.Event{RolloutID: r.ID, Actor: "fleetwave", Action: "app-sync", Target: "eu:argocd/web", Result: "synced"}); err != nil {
				t.Fatal(err)
			}
		}
		clock.Advance(time.Hour)
	}
	return st, clock, rs
}

func lines(t *testing.T, body string) []audit.Record {
	t.Helper()
	var out []audit.Record
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

// TestHandlerPagesByEventID: the endpoint streams JSON lines filtered by repository, rollout and time, a page at
// a time; a consumer resumes after the last id it read and ends at a short page. A bad parameter is a 400.
func TestHandlerPagesByEventID(t *testing.T) {
	st, clock, rs := seeded(t, 5)
	h := audit.Handler(st, audit.Options{PageSize: 2}, clock.Now)
	get := func(q string) (int, string, http.Header) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", audit.Path+"?"+q, nil))
		return rec.Code, rec.Body.String(), rec.Header()
	}
	var all []audit.Record
	after := int64(0)
	for pages := 0; ; pages++ {
		code, body, hdr := get("repo=org/b&limit=2&after=" + itoa(after))
		if code != 200 || hdr.Get("Content-Type") != "application/x-ndjson" {
			t.Fatalf("status %d %q: %s", code, hdr.Get("Content-Type"), body)
		}
		page := lines(t, body)
		all = append(all, page...)
		if len(page) < 2 {
			break
		}
		after = page[len(page)-1].ID
		if pages > 10 {
			t.Fatal("no end")
		}
	}
	if len(all) != 5 {
		t.Fatalf("%d records of org/b, want 5", len(all))
	}
	for i, r := range all {
		if r.Rollout.ID != rs[1].ID || (i > 0 && r.ID <= all[i-1].ID) || r.App == nil || r.App.Instance != "eu" || r.Wave != "canary" {
			t.Errorf("record %d: %+v", i, r)
		}
	}
	_, body, _ := get("since=3h")
	if got := lines(t, body); len(got) != 6 { // the events of the last three hours, both rollouts
		t.Errorf("since=3h: %d records, want 6", len(got))
	}
	_, body, _ = get("id=" + itoa(rs[0].ID) + "&since=2026-03-14T16:00:00Z")
	if got := lines(t, body); len(got) != 4 {
		t.Errorf("id and since: %d records, want 4", len(got))
	}
	for _, q := range []string{"since=soon", "limit=0", "limit=10001", "after=-1", "id=x"} {
		if code, body, _ := get(q); code != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", q, code, body)
		}
	}
}

type failing struct {
	audit.Store
	after int
	calls int
}

func (f *failing) ListHistory(ctx context.Context, hf store.HistoryFilter) ([]store.Event, error) {
	if f.calls++; f.calls > f.after {
		return nil, errors.New("database gone")
	}
	return f.Store.ListHistory(ctx, hf)
}

// TestHandlerStoreFailure: a failure before any record is a 500 without detail; after the first records the
// response is aborted, never ended cleanly as if it were complete.
func TestHandlerStoreFailure(t *testing.T) {
	st, clock, _ := seeded(t, 3)
	rec := httptest.NewRecorder()
	audit.Handler(&failing{Store: st}, audit.Options{}, clock.Now).ServeHTTP(rec, httptest.NewRequest("GET", audit.Path, nil))
	if rec.Code != http.StatusInternalServerError || strings.Contains(rec.Body.String(), "database gone") {
		t.Errorf("failure before the first record: %d %q", rec.Code, rec.Body.String())
	}
	defer func() {
		if p := recover(); p != http.ErrAbortHandler {
			t.Errorf("failure after a page: recovered %v, want http.ErrAbortHandler", p)
		}
	}()
	audit.Handler(&failing{Store: st, after: 1}, audit.Options{PageSize: 2}, clock.Now).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", audit.Path, nil))
}

// TestPruneKeepsUnfinishedRollouts: retention deletes an old finished rollout and keeps a running one, however
// old, and a recent finished one; it says how many in a log line; 0 keeps everything.
func TestPruneKeepsUnfinishedRollouts(t *testing.T) {
	st, clock, rs := seeded(t, 1)
	ctx := context.Background()
	done := rs[0]
	done.State = store.RolloutSucceeded
	if _, err := st.UpdateRollout(ctx, done); err != nil {
		t.Fatal(err)
	}
	running := rs[1]
	running.State = store.RolloutRunning
	if _, err := st.UpdateRollout(ctx, running); err != nil {
		t.Fatal(err)
	}
	clock.Advance(100 * 24 * time.Hour)
	var buf logtest.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	if n, err := audit.Prune(ctx, st, 0, clock.Now(), log); n != 0 || err != nil {
		t.Errorf("keep 0: %d %v", n, err)
	}
	n, err := audit.Prune(ctx, st, 90*24*time.Hour, clock.Now(), log)
	if err != nil || n != 1 {
		t.Fatalf("Prune: %d %v, want 1", n, err)
	}
	if _, err := st.GetRollout(ctx, done.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("finished rollout kept: %v", err)
	}
	if _, err := st.GetRollout(ctx, running.ID); err != nil {
		t.Errorf("running rollout deleted: %v", err)
	}
	if !strings.Contains(buf.String(), `msg="history retention: finished rollouts deleted" deleted=1 older_than=2160h0m0s`) {
		t.Errorf("log: %s", buf.String())
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
