package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetwave/fleetwave/internal/edge/store"
)

var appSinceTests = []test{
	{"app since: put, list per instance, replace, delete", func(t *testing.T, e *env) {
		at := e.now()
		eu := store.AppKey{Instance: "eu", Namespace: "argocd", Name: "web"}
		rows := []store.AppSince{
			{App: app("web-us"), Sync: "OutOfSync", SyncSince: at, Health: "Healthy", HealthSince: at.Add(-time.Hour)},
			{App: app("web-eu"), Sync: "Synced", SyncSince: at.Add(-time.Minute), Health: "Progressing"},
			{App: eu, Sync: "Synced", SyncSince: at},
		}
		if err := e.s.PutAppSince(e.ctx, rows); err != nil {
			t.Fatalf("PutAppSince: %v", err)
		}
		list := func(instance string) []store.AppSince {
			t.Helper()
			got, err := e.s.ListAppSince(e.ctx, instance)
			if err != nil {
				t.Fatalf("ListAppSince(%q): %v", instance, err)
			}
			return got
		}
		if d := cmp.Diff([]store.AppSince{rows[1], rows[0]}, list("")); d != "" {
			t.Errorf("ListAppSince(\"\") (-want +got):\n%s", d)
		}
		if d := cmp.Diff([]store.AppSince{rows[2]}, list("eu")); d != "" {
			t.Errorf("ListAppSince(eu) (-want +got):\n%s", d)
		}
		changed := store.AppSince{App: app("web-us"), Sync: "Synced", SyncSince: at.Add(time.Minute), Health: "Healthy", HealthSince: at.Add(-time.Hour)}
		if err := e.s.PutAppSince(e.ctx, []store.AppSince{changed}); err != nil {
			t.Fatalf("PutAppSince again: %v", err)
		}
		if err := e.s.DeleteAppSince(e.ctx, []store.AppKey{app("web-eu"), app("absent")}); err != nil {
			t.Fatalf("DeleteAppSince: %v", err)
		}
		if d := cmp.Diff([]store.AppSince{changed}, list("")); d != "" {
			t.Errorf("after replace and delete (-want +got):\n%s", d)
		}
		if err := e.s.PutAppSince(e.ctx, []store.AppSince{{Sync: "Synced"}}); err == nil {
			t.Error("PutAppSince of an app without a name: no error")
		}
	}},
}

var rolloutMarkTests = []test{
	{"rollout marks: the newest rollout that planned each app, per instance", func(t *testing.T, e *env) {
		mustCreate(t, e, sample("octo/fleet", "sha-1"))
		second := sample("octo/fleet", "sha-2")
		second.Waves = second.Waves[1:] // production only: web-test's last rollout stays the first
		second.Waves[0].Steps = append(second.Waves[0].Steps, store.NewStep{Batch: 1,
			App: store.AppKey{Instance: "eu", Namespace: "argocd", Name: "web-eu"}, Cluster: "prd-eu-2"})
		r2, steps2 := mustCreate(t, e, second)
		marks, err := e.s.LastRolloutMarks(e.ctx, "")
		if err != nil {
			t.Fatalf("LastRolloutMarks: %v", err)
		}
		var got []string
		for _, m := range marks {
			got = append(got, fmt.Sprintf("%s r%d %s %s", m.App, m.Rollout-r2.ID, m.Revision, m.State))
		}
		want := []string{
			fmt.Sprintf("argocd/web-ap r0 %s pending", steps2["web-ap"].TargetRevision),
			fmt.Sprintf("argocd/web-eu r0 %s pending", steps2["web-eu"].TargetRevision),
			"argocd/web-test r-1 sha-1 pending",
			fmt.Sprintf("argocd/web-us r0 %s pending", steps2["web-us"].TargetRevision),
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("LastRolloutMarks(\"\") (-want +got):\n%s", d)
		}
		eu, err := e.s.LastRolloutMarks(e.ctx, "eu")
		if err != nil || len(eu) != 1 || eu[0].App.Name != "web-eu" || eu[0].Rollout != r2.ID {
			t.Errorf("LastRolloutMarks(eu) = %+v, %v; want web-eu of rollout %d", eu, err, r2.ID)
		}
	}},
}
