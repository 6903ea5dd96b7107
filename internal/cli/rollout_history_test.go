package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/audit"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/fleetview"
)

// historyStore is a store with a rollout of two repositories each: merged, an approval, an app's result.
func historyStore(t *testing.T) (*store.Store, string) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "fleetwave.db")
	st, err := store.Open(ctx, "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for i, repo := range []string{"octo/fleet", "octo/other"} {
		r, _, err := st.CreateRollout(ctx, store.NewRollout{Repo: repo, PRNumber: 7 + i, MergeSHA: rolloutNew, BaseSHA: rolloutOld, Plan: []byte(`{"waves":[]}`),
			Waves: []store.NewWave{{Name: "production", Steps: []store.NewStep{{App: store.AppKey{Instance: "eu", Namespace: "argocd", Name: "web"}, Cluster: "prd-eu-1"}}}}})
		if err != nil {
			t.Fatal(err)
		}
		at := time.Date(2026, 3, 14, 15, i, 0, 0, time.UTC)
		for _, ev := range []store.Event{
			{Actor: "alice", Action: "merged", Target: rolloutNew[:10], Result: "ok", Message: "pull request #7"},
			{Actor: "bob", Action: "approve", Target: "production", Result: "ok", DeliveryID: "d-1"},
			{Actor: "fleetwave", Action: "app-sync", Target: "eu:argocd/web", Result: "synced", Message: "applied"},
		} {
			ev.RolloutID, ev.At = r.ID, at
			if _, err := st.AppendEvent(ctx, ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	return st, "sqlite://" + path
}

// TestRolloutHistoryFromTheStore: rollout history reads $FLEETWAVE_STORE (or --store), as text by default and
// as the audit records with --output json, filtered by repository, rollout and time.
func TestRolloutHistoryFromTheStore(t *testing.T) {
	_, dsn := historyStore(t)
	env := map[string]string{"FLEETWAVE_STORE": dsn}
	var out bytes.Buffer
	code, stderr := runArgo(t, context.Background(), env, &out, "rollout", "history", "--repo", "octo/fleet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := "2026-03-14T15:00:00Z  #1 octo/fleet#7 1b1b1b1b1b  alice  merged  1b1b1b1b1b  ok: pull request #7\n" +
		"2026-03-14T15:00:00Z  #1 octo/fleet#7 1b1b1b1b1b  bob  approve  wave production  ok\n" +
		"2026-03-14T15:00:00Z  #1 octo/fleet#7 1b1b1b1b1b  fleetwave  app-sync  eu:argocd/web (prd-eu-1) @1b1b1b1b1b in production  synced: applied\n"
	if out.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", out.String(), want)
	}
	out.Reset()
	code, stderr = runArgo(t, context.Background(), nil, &out, "rollout", "history", "--store", dsn, "-o", "json", "--id", "2", "--since", "2026-03-14T15:01:00Z")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines:\n%s", len(lines), out.String())
	}
	var rec audit.Record
	if err := json.Unmarshal([]byte(lines[2]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Schema != audit.Schema || rec.Rollout.ID != 2 || rec.Rollout.MergedBy != "alice" || rec.Rollout.PRURL != "https://github.com/octo/other/pull/8" ||
		rec.App == nil || rec.App.Instance != "eu" || rec.App.Cluster != "prd-eu-1" || rec.Wave != "production" {
		t.Errorf("record %+v", rec)
	}
	for _, bad := range [][]string{{"-o", "yaml"}, {"--since", "soon"}, {"--server", "https://x.example", "--store", dsn}} {
		if code, _ := runArgo(t, context.Background(), env, &bytes.Buffer{}, append([]string{"rollout", "history"}, bad...)...); code != 2 {
			t.Errorf("%v: exit %d, want 2", bad, code)
		}
	}
}

// TestRolloutHistoryFromServe: --server reads serve's endpoint with the fleet view's token from the environment;
// a wrong token is refused and never printed.
func TestRolloutHistoryFromServe(t *testing.T) {
	st, _ := historyStore(t)
	const token = "history-token-0123456789"
	view, err := fleetview.New(st, fleetview.Options{Token: token, History: audit.Handler(st, audit.Options{}, nil)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(view)
	t.Cleanup(srv.Close)
	var out bytes.Buffer
	code, stderr := runArgo(t, context.Background(), map[string]string{"FLEETWAVE_FLEET_VIEW_TOKEN": token}, &out,
		"rollout", "history", "--server", srv.URL, "--repo", "octo/other", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if n := strings.Count(out.String(), `"schema":"fleetwave.audit/v1"`); n != 3 || !strings.Contains(out.String(), `"repo":"octo/other"`) {
		t.Errorf("%d records:\n%s", n, out.String())
	}
	const wrong = "wrong-token-0123456789-abc"
	code, stderr = runArgo(t, context.Background(), map[string]string{"FLEETWAVE_FLEET_VIEW_TOKEN": wrong}, &bytes.Buffer{},
		"rollout", "history", "--server", srv.URL)
	if code == 0 || !strings.Contains(stderr, "401 Unauthorized") || strings.Contains(stderr, wrong) {
		t.Errorf("wrong token: exit %d: %s", code, stderr)
	}
	if code, stderr = runArgo(t, context.Background(), nil, &bytes.Buffer{}, "rollout", "history", "--server", srv.URL); code != 2 || !strings.Contains(stderr, "FLEETWAVE_FLEET_VIEW_TOKEN") {
		t.Errorf("no token: exit %d: %s", code, stderr)
	}
}
