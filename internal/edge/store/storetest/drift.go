package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetwave/fleetwave/internal/edge/store"
)

var driftTests = []test{
	{"drift reports: put, replace, list, survive a restart, delete", func(t *testing.T, e *env) {
		other := store.AppKey{Instance: "eu", Namespace: "argocd", Name: "web-eu"}
		opened := e.now()
		if err := e.s.PutDriftReport(e.ctx, store.DriftReport{App: app("web-us"), Repo: "octo/ops", Number: 12, Digest: "OutOfSync"}); err != nil {
			t.Fatalf("PutDriftReport: %v", err)
		}
		e.clock.Advance(time.Minute)
		if err := e.s.PutDriftReport(e.ctx, store.DriftReport{App: other, Repo: "octo/ops", Number: 13, Digest: "Degraded",
			OpenedAt: opened}); err != nil {
			t.Fatalf("PutDriftReport: %v", err)
		}
		e.clock.Advance(time.Minute)
		// The same app again: its row is replaced, not doubled.
		if err := e.s.PutDriftReport(e.ctx, store.DriftReport{App: app("web-us"), Repo: "octo/ops", Number: 12, Digest: "OutOfSync Degraded",
			OpenedAt: opened}); err != nil {
			t.Fatalf("PutDriftReport again: %v", err)
		}
		want := []store.DriftReport{
			{App: app("web-us"), Repo: "octo/ops", Number: 12, Digest: "OutOfSync Degraded", OpenedAt: opened, ReportedAt: e.now()},
			{App: other, Repo: "octo/ops", Number: 13, Digest: "Degraded", OpenedAt: opened, ReportedAt: e.now().Add(-time.Minute)},
		}
		e.s.Close()
		s := e.open()
		got, err := s.ListDriftReports(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("drift reports after a restart (-want +got):\n%s", d)
		}
		if err := s.DeleteDriftReport(e.ctx, app("web-us")); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteDriftReport(e.ctx, app("never-reported")); err != nil {
			t.Fatalf("deleting an absent report: %v", err)
		}
		got, err = s.ListDriftReports(e.ctx)
		if err != nil || len(got) != 1 || got[0].App != other {
			t.Fatalf("after delete: %+v, %v", got, err)
		}
		if err := s.PutDriftReport(e.ctx, store.DriftReport{App: app("x"), Repo: "octo/ops"}); err == nil {
			t.Error("a report without an issue number was recorded")
		}
	}},
	{"apps about to sync: steps not done of unfinished rollouts", func(t *testing.T, e *env) {
		r1, steps := mustCreate(t, e, sample("org/fleet", "m1")) // web-test, web-eu, web-us, web-ap, all pending
		eu := steps["web-eu"]
		eu, err := e.s.RecordIntent(e.ctx, store.Intent{StepID: eu.ID, Version: eu.Version})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.s.RecordOutcome(e.ctx, store.Outcome{StepID: eu.ID, Version: eu.Version, State: store.StepSynced}); err != nil {
			t.Fatal(err)
		}
		us := steps["web-us"]
		if _, err := e.s.RecordIntent(e.ctx, store.Intent{StepID: us.ID, Version: us.Version}); err != nil {
			t.Fatal(err)
		}
		finished := store.NewRollout{Repo: "org/fleet", MergeSHA: "m0", Plan: []byte("{}"), Waves: []store.NewWave{{Name: "all",
			Steps: []store.NewStep{{App: app("old-app"), Cluster: "c"}}}}}
		r0, _ := mustCreate(t, e, finished)
		if _, err := e.s.UpdateRollout(e.ctx, withState(r0, store.RolloutAborted)); err != nil {
			t.Fatal(err)
		}
		eu2 := store.AppKey{Instance: "eu", Namespace: "argocd", Name: "web-eu"}
		paused := store.NewRollout{Repo: "org/other", MergeSHA: "m2", Plan: []byte("{}"), Waves: []store.NewWave{{Name: "all",
			Steps: []store.NewStep{{App: eu2, Cluster: "c"}, {App: app("web-test"), Cluster: "c"}}}}}
		r2, _ := mustCreate(t, e, paused)
		if _, err := e.s.UpdateRollout(e.ctx, withState(r2, store.RolloutPaused)); err != nil {
			t.Fatal(err)
		}
		got, err := e.s.AppsAboutToSync(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		// web-eu's step in r1 is done (synced), old-app's rollout is aborted; web-test is in two rollouts, once.
		want := []store.AppKey{app("web-ap"), app("web-test"), app("web-us"), eu2}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("apps about to sync (-want +got):\n%s", d)
		}
		if _, err := e.s.UpdateRollout(e.ctx, withState(r1, store.RolloutSucceeded)); err != nil {
			t.Fatal(err)
		}
		got, err = e.s.AppsAboutToSync(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]store.AppKey{app("web-test"), eu2}, got); d != "" {
			t.Fatalf("after r1 succeeded (-want +got):\n%s", d)
		}
	}},
}
