package autosync_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/health"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/jonboulle/clockwork"

	"github.com/fleetwave/fleetwave/internal/autosync"
	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/edge/store"
)

const rev = "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a"

// fixture is a simulated Argo CD (frozen clock: nothing reconciles by itself) with apps a, b, c (automated sync
// with self-heal on) and d (off), and a SQLite store.
type fixture struct {
	sim  *argocdsim.Server
	argo *argocd.Client
	st   *store.Store
	h    *autosync.Holder
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	sim := argocdsim.New(argocdsim.Config{Clock: clockwork.NewFakeClock()})
	t.Cleanup(sim.Close)
	sim.SetRef("HEAD", rev)
	for _, n := range []string{"a", "b", "c", "d"} {
		app := &v1alpha1.Application{}
		app.Name = n
		app.Spec.Source = &v1alpha1.ApplicationSource{RepoURL: "https://git.example.com/fleet.git", Path: n, TargetRevision: "HEAD"}
		app.Spec.Destination = v1alpha1.ApplicationDestination{Name: "c1", Namespace: n}
		if n != "d" {
			app.Spec.SyncPolicy = &v1alpha1.SyncPolicy{Automated: &v1alpha1.SyncPolicyAutomated{SelfHeal: new(true)}}
		}
		if err := sim.AddApp(app, argocdsim.AppOptions{LiveRevisions: []string{rev}, Health: health.HealthStatusHealthy}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := argocd.New(argocd.Options{BaseURL: "http://argocd.sim", HTTPClient: sim.HTTPClient()})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "fw.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &fixture{sim: sim, argo: c, st: st, h: &autosync.Holder{Argo: c, Store: st}}
}

func key(n string) store.AppKey { return store.AppKey{Namespace: "argocd", Name: n} }

func keys(ns ...string) []store.AppKey {
	var out []store.AppKey
	for _, n := range ns {
		out = append(out, key(n))
	}
	return out
}

// on lists, in order, the apps of the fixture whose automated sync is on, and checks that every app off carries
// the annotation and label (or neither, for d, which was never on).
func (f *fixture) on(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, n := range []string{"a", "b", "c", "d"} {
		app, ok := f.sim.App(n)
		if !ok {
			t.Fatalf("app %s gone", n)
		}
		switch {
		case autosync.On(&app):
			out = append(out, n)
			if autosync.Switched(&app) || app.Labels[autosync.Label] != "" {
				t.Errorf("app %s is on but still marked switched off: %v %v", n, app.Annotations, app.Labels)
			}
			if app.Spec.SyncPolicy.Automated.SelfHeal == nil || !*app.Spec.SyncPolicy.Automated.SelfHeal {
				t.Errorf("app %s restored without its self-heal: %+v", n, app.Spec.SyncPolicy.Automated)
			}
		case n != "d" && (!autosync.Switched(&app) || app.Labels[autosync.Label] != "true"):
			t.Errorf("app %s is off without fleetwave's annotation and label: %v %v", n, app.Annotations, app.Labels)
		}
	}
	return out
}

func TestHoldAndReleaseAcrossPullRequests(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	pr1 := autosync.Owner{Repo: "octo/fleet", PR: 1, Head: "h1"}
	res, err := f.h.Hold(ctx, pr1, keys("a", "b", "d"))
	if err != nil || len(res.Failed) > 0 {
		t.Fatalf("Hold: %+v, %v", res, err)
	}
	if !slices.Equal(res.Held, keys("a", "b", "d")) || !slices.Equal(res.Switched, keys("a", "b")) {
		t.Errorf("held %v switched %v; want a b d, a b", res.Held, res.Switched)
	}
	if got := f.on(t); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("after PR 1's hold, on: %v; want c", got)
	}
	// PR 2 holds b too.
	if _, err := f.h.Hold(ctx, autosync.Owner{Repo: "octo/fleet", PR: 2, Head: "h2"}, keys("b")); err != nil {
		t.Fatal(err)
	}
	// PR 1's new head plans only a: b is released, but PR 2 still holds it.
	res, err = f.h.Hold(ctx, autosync.Owner{Repo: "octo/fleet", PR: 1, Head: "h1b"}, keys("a"))
	if err != nil || len(res.Switched) != 0 || len(res.Restored) != 0 || !slices.Equal(res.Kept, keys("b")) {
		t.Fatalf("head change: %+v, %v; want b kept off (PR 2 holds it), nothing switched or restored", res, err)
	}
	if got := f.on(t); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("after the head change, on: %v; want c", got)
	}
	// PR 2 closes unmerged: b is restored.
	res, err = f.h.Release(ctx, "octo/fleet", 2, "")
	if err != nil || !slices.Equal(res.Restored, keys("b")) {
		t.Fatalf("Release(PR 2) = %+v, %v; want b restored", res, err)
	}
	if got := f.on(t); !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("after PR 2 closed, on: %v; want b c", got)
	}
	// PR 1 closes unmerged: a is restored; nothing is left recorded.
	if res, err = f.h.Release(ctx, "octo/fleet", 1, ""); err != nil || !slices.Equal(res.Restored, keys("a")) {
		t.Fatalf("Release(PR 1) = %+v, %v; want a restored", res, err)
	}
	if got := f.on(t); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("after PR 1 closed, on: %v; want a b c", got)
	}
	if hs, err := f.st.ListHolds(ctx, store.HoldFilter{}); err != nil || len(hs) != 0 {
		t.Fatalf("holds left: %v, %v", hs, err)
	}
}

func TestHeadWithNothingToHoldReleasesTheEarlierHeads(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	o := autosync.Owner{Repo: "octo/fleet", PR: 3, Head: "h1"}
	if _, err := f.h.Hold(ctx, o, keys("a", "c")); err != nil {
		t.Fatal(err)
	}
	o.Head = "h2"
	res, err := f.h.Hold(ctx, o, nil)
	if err != nil || !slices.Equal(res.Restored, keys("a", "c")) {
		t.Fatalf("Hold(nothing) = %+v, %v; want a c restored", res, err)
	}
	if got := f.on(t); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("on: %v; want a b c", got)
	}
}

func TestMergeGroupAndPrepareHoldsAddAndAreTakenOver(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	if _, err := f.h.Hold(ctx, autosync.Owner{Repo: "octo/fleet", PR: 4, Head: "h4"}, keys("a")); err != nil {
		t.Fatal(err)
	}
	// The merge group of PR 4 plans a and b: its hold adds, the PR's stays.
	if _, err := f.h.Hold(ctx, autosync.Owner{Repo: "octo/fleet", PR: 4, Head: "group", Group: true}, keys("a", "b")); err != nil {
		t.Fatal(err)
	}
	// A terminal prepare of another head holds c.
	if _, err := f.h.Hold(ctx, autosync.Owner{Repo: "octo/fleet", PR: 0, Head: "local"}, keys("c")); err != nil {
		t.Fatal(err)
	}
	if hs, _ := f.st.ListHolds(ctx, store.HoldFilter{Repo: "octo/fleet", PRs: []int{4}}); len(hs) != 3 {
		t.Fatalf("PR 4's holds: %v; want its head's and its group's (3)", hs)
	}
	// The rollout of the group's head (a push: no PR number) takes the group's holds over.
	taken, err := autosync.TakeOver(ctx, f.st, "octo/fleet", 0, "group")
	if err != nil || len(taken) != 2 {
		t.Fatalf("TakeOver = %v, %v; want the group's 2 holds", taken, err)
	}
	// Releasing the prepare restores c only.
	res, err := f.h.Release(ctx, "octo/fleet", 0, "local")
	if err != nil || !slices.Equal(res.Restored, keys("c")) {
		t.Fatalf("Release(prepare) = %+v, %v; want c restored", res, err)
	}
	if _, err := f.h.Release(ctx, "octo/fleet", 0, ""); err == nil {
		t.Error("Release of a prepare without a head succeeded")
	}
	// b is no longer held by anyone recorded (the rollout would hold it by its steps): PR 4 closing restores a
	// (its own hold), and b is not PR 4's any more.
	res, err = f.h.Release(ctx, "octo/fleet", 4, "")
	if err != nil || !slices.Equal(res.Restored, keys("a")) {
		t.Fatalf("Release(PR 4) = %+v, %v; want a restored", res, err)
	}
	if got := f.on(t); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("on: %v; want a c (b stays off: the rollout took it over)", got)
	}
}

func TestRestoreKeepsAppsAnUnfinishedRolloutTouches(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	if _, err := f.h.Hold(ctx, autosync.Owner{Repo: "octo/fleet", PR: 5, Head: "h5"}, keys("a", "b")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.st.CreateRollout(ctx, store.NewRollout{Repo: "octo/fleet", PRNumber: 6, MergeSHA: "m6", BaseSHA: "b6",
		Plan: []byte(`{}`), Waves: []store.NewWave{{Name: "w", Steps: []store.NewStep{{App: key("b"), Cluster: "c1"}}}}}); err != nil {
		t.Fatal(err)
	}
	res, err := f.h.Release(ctx, "octo/fleet", 5, "")
	if err != nil || !slices.Equal(res.Restored, keys("a")) || !slices.Equal(res.Kept, keys("b")) {
		t.Fatalf("Release = %+v, %v; want a restored, b kept (a rollout touches it)", res, err)
	}
}

func TestOffAndRestoreKeepTheFirstOriginal(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	app, err := f.argo.GetApplication(ctx, "argocd/a", "")
	if err != nil {
		t.Fatal(err)
	}
	off, err := autosync.Off(ctx, f.argo, "argocd/a", app)
	if err != nil || autosync.On(off) || !autosync.Switched(off) {
		t.Fatalf("Off = %v, %v", off, err)
	}
	// Switched off again (a rollback after the rollout): the first original is kept.
	again, err := autosync.Off(ctx, f.argo, "argocd/a", off)
	if err != nil || again.Annotations[autosync.Annotation] != off.Annotations[autosync.Annotation] {
		t.Fatalf("second Off: %v, %v; want the first original kept (%s)", again.Annotations, err, off.Annotations[autosync.Annotation])
	}
	back, err := autosync.Restore(ctx, f.argo, "argocd/a", again)
	if err != nil || !autosync.On(back) || autosync.Switched(back) || back.Spec.SyncPolicy.Automated.SelfHeal == nil || !*back.Spec.SyncPolicy.Automated.SelfHeal {
		t.Fatalf("Restore = %+v, %v; want automated sync with self-heal, unmarked", back, err)
	}
	if upd, err := autosync.Restore(ctx, f.argo, "argocd/a", back); upd != nil || err != nil {
		t.Fatalf("Restore of an app not switched = %v, %v; want nothing done", upd, err)
	}
}
