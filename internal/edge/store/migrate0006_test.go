package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSchema0005StoreKeepsWorking writes rows with the schema before instances (0005), as a fleetwave of that
// version would, then opens the database with this code: migration 0006 attributes every app to instance "" and
// everything keyed by app keeps working, now with the instance in the key.
func TestSchema0005StoreKeepsWorking(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		testSchema0005(t, "sqlite://"+filepath.Join(t.TempDir(), "fw.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := os.Getenv("FLEETWAVE_TEST_POSTGRES_DSN")
		if dsn == "" {
			t.Skip("FLEETWAVE_TEST_POSTGRES_DSN is not set (testdata/start-postgres.sh starts a throwaway server)")
		}
		testSchema0005(t, postgresSchemaDSN(t, dsn))
	})
}

func testSchema0005(t *testing.T, dsn string) {
	ctx := context.Background()
	old, err := Open(ctx, dsn, func(o *options) { o.schemaUpTo = 5 })
	if err != nil {
		t.Fatal(err)
	}
	if v, err := old.SchemaVersion(ctx); err != nil || v != 5 {
		t.Fatalf("SchemaVersion() = %d, %v; want 5", v, err)
	}
	// The rows a 0005 fleetwave writes, in its own column lists (no instance).
	now := old.d.timeArg(old.now())
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO rollouts (repo, pr_number, merge_sha, plan, plan_digest, state, created_at, updated_at)
VALUES ('octo/fleet', 7, 'm1', ?, 'sha256:x', 'running', ?, ?)`, []any{[]byte(`{}`), now, now}},
		{`INSERT INTO waves (rollout_id, idx, name, state, updated_at) VALUES (1, 0, 'canary', 'running', ?)`, []any{now}},
		{`INSERT INTO app_steps (rollout_id, wave_idx, batch_idx, app_namespace, app_name, cluster, target_revision, state, updated_at)
VALUES (1, 0, 0, 'argocd', 'web-eu', 'prd-eu-1', 'm1', 'pending', ?), (1, 0, 0, 'argocd', 'web-us', 'prd-us-1', 'm1', 'synced', ?)`,
			[]any{now, now}},
		{`INSERT INTO automated_sync_holds (repo, pr_number, head_sha, app_namespace, app_name, held_at)
VALUES ('octo/fleet', 8, 'head-b', 'argocd', 'web-eu', ?)`, []any{now}},
	} {
		if _, err := old.w.ExecContext(ctx, old.d.q(q.sql), q.args...); err != nil {
			t.Fatalf("writing 0005 rows: %v\n%s", err, q.sql)
		}
	}
	old.Close()

	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatalf("opening a 0005 store with this code: %v", err)
	}
	defer s.Close()
	if v, err := s.SchemaVersion(ctx); err != nil || v != LatestSchemaVersion() {
		t.Fatalf("SchemaVersion() = %d, %v; want %d", v, err, LatestSchemaVersion())
	}
	steps, err := s.ListSteps(ctx, 1, StepFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []AppKey
	for _, st := range steps {
		keys = append(keys, st.App)
	}
	want := []AppKey{{Namespace: "argocd", Name: "web-eu"}, {Namespace: "argocd", Name: "web-us"}}
	if d := cmp.Diff(want, keys); d != "" {
		t.Fatalf("steps of the old rollout (-want +got):\n%s", d)
	}
	if steps[0].App.String() != "argocd/web-eu" {
		t.Errorf("an instance-\"\" app prints as %q; want argocd/web-eu (as before instances)", steps[0].App)
	}
	// The old steps still move through the intent/outcome protocol.
	if _, err := s.RecordIntent(ctx, Intent{StepID: steps[0].ID, Version: steps[0].Version}); err != nil {
		t.Fatalf("RecordIntent on an old step: %v", err)
	}
	// The old rollout is found by its apps at instance "", not by the same names at another instance.
	rs, err := s.ActiveRolloutsTouching(ctx, "", []AppKey{{Namespace: "argocd", Name: "web-us"}})
	if err != nil || len(rs) != 1 || rs[0].ID != 1 {
		t.Fatalf("ActiveRolloutsTouching(argocd/web-us) = %v, %v; want rollout 1", rs, err)
	}
	rs, err = s.ActiveRolloutsTouching(ctx, "", []AppKey{{Instance: "eu", Namespace: "argocd", Name: "web-us"}})
	if err != nil || len(rs) != 0 {
		t.Fatalf("ActiveRolloutsTouching(eu:argocd/web-us) = %v, %v; want none", rs, err)
	}
	hs, err := s.ListHolds(ctx, HoldFilter{Apps: []AppKey{{Namespace: "argocd", Name: "web-eu"}}})
	if err != nil || len(hs) != 1 || hs[0].App != (AppKey{Namespace: "argocd", Name: "web-eu"}) {
		t.Fatalf("ListHolds(argocd/web-eu) = %v, %v; want the old hold at instance \"\"", hs, err)
	}
	// The same app name in two instances: two holds, two steps of one rollout.
	eu := AppKey{Instance: "eu", Namespace: "argocd", Name: "web-eu"}
	if err := s.PutHolds(ctx, []Hold{{Repo: "octo/fleet", PR: 8, Head: "head-b", App: eu}}); err != nil {
		t.Fatal(err)
	}
	if hs, err := s.ListHolds(ctx, HoldFilter{PRs: []int{8}}); err != nil || len(hs) != 2 {
		t.Fatalf("ListHolds(#8) = %v, %v; want the old hold and eu's", hs, err)
	}
	if err := s.DeleteHolds(ctx, []Hold{{Repo: "octo/fleet", PR: 8, Head: "head-b", App: eu}}); err != nil {
		t.Fatal(err)
	}
	if hs, err := s.ListHolds(ctx, HoldFilter{PRs: []int{8}}); err != nil || len(hs) != 1 || hs[0].App.Instance != "" {
		t.Fatalf("after deleting eu's hold, ListHolds(#8) = %v, %v; want the old one only", hs, err)
	}
	r, _, err := s.CreateRollout(ctx, NewRollout{Repo: "octo/fleet", MergeSHA: "m2", Waves: []NewWave{{Name: "all", Steps: []NewStep{
		{App: AppKey{Namespace: "argocd", Name: "web"}}, {App: AppKey{Instance: "eu", Namespace: "argocd", Name: "web"}},
	}}}})
	if err != nil {
		t.Fatalf("a rollout of one app name in two instances: %v", err)
	}
	steps, err = s.ListSteps(ctx, r.ID, StepFilter{})
	if err != nil || len(steps) != 2 || steps[0].App.Instance != "" || steps[1].App.String() != "eu:argocd/web" {
		t.Fatalf("ListSteps = %+v, %v; want argocd/web then eu:argocd/web", steps, err)
	}
	rs, err = s.ActiveRolloutsTouching(ctx, "", []AppKey{{Instance: "eu", Namespace: "argocd", Name: "web"}})
	if err != nil || len(rs) != 1 || rs[0].ID != r.ID {
		t.Fatalf("ActiveRolloutsTouching(eu:argocd/web) = %v, %v; want rollout %d", rs, err, r.ID)
	}
}
