package storetest

import (
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
