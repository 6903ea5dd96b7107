package inventory

import (
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestSinceFollowsTheState(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)}
	inv := New(c.now)
	k := Key{Instance: "eu", Namespace: "argocd", Name: "web"}
	t0 := c.t
	if !inv.Apply(App{Key: k, Sync: "Synced", Health: "Healthy"}) {
		t.Fatal("a new app is no change")
	}
	c.t = c.t.Add(time.Minute)
	if inv.Apply(App{Key: k, Sync: "Synced", Health: "Healthy"}) {
		t.Fatal("the same state is a change")
	}
	c.t = c.t.Add(time.Minute)
	inv.Apply(App{Key: k, Sync: "OutOfSync", Health: "Healthy"})
	s := inv.Snapshot()
	if got := s.Apps[0]; !got.SyncSince.Equal(t0.Add(2*time.Minute)) || !got.HealthSince.Equal(t0) {
		t.Fatalf("sync since %v health since %v, want %v and %v", got.SyncSince, got.HealthSince, t0.Add(2*time.Minute), t0)
	}
	given := t0.Add(-time.Hour)
	inv.Apply(App{Key: k, Sync: "OutOfSync", Health: "Degraded", HealthSince: given})
	if got := inv.Snapshot().Apps[0]; !got.HealthSince.Equal(given) || !got.SyncSince.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("health since %v (want the app's own %v), sync since %v", got.HealthSince, given, got.SyncSince)
	}
}

// TestOutOfSyncKeepsWhatItRan: an app seen Synced at a revision that goes OutOfSync with no deployment in its
// history still runs that revision; a new deployment (a revision of its own) replaces it.
func TestOutOfSyncKeepsWhatItRan(t *testing.T) {
	inv := New(time.Now)
	k := Key{Name: "web"}
	inv.Apply(App{Key: k, Sync: "Synced", Revision: "a"})
	inv.Apply(App{Key: k, Sync: "OutOfSync"})
	if got := inv.Snapshot().Apps[0].Revision; got != "a" {
		t.Fatalf("OutOfSync app runs %q, want a (what it ran when Synced)", got)
	}
	inv.Apply(App{Key: k, Sync: "OutOfSync", Revision: "c"})
	if got := inv.Snapshot().Apps[0].Revision; got != "c" {
		t.Fatalf("after a deployment of c, runs %q", got)
	}
	inv.Apply(App{Key: Key{Name: "new"}, Sync: "OutOfSync"})
	if got := inv.Snapshot().Apps[0].Revision; got != "" {
		t.Fatalf("a new app never synced runs %q, want unknown", got)
	}
}

func TestReplaceForgetsWhatTheListNoLongerHolds(t *testing.T) {
	inv := New(time.Now)
	inv.Apply(App{Key: Key{Instance: "a", Name: "x"}, Sync: "Synced"})
	inv.Apply(App{Key: Key{Instance: "a", Name: "gone"}, Sync: "Synced"})
	inv.Apply(App{Key: Key{Instance: "b", Name: "y"}, Sync: "Synced"})
	inv.Replace("a", []App{{Key: Key{Name: "x"}, Sync: "Synced"}, {Key: Key{Name: "new"}, Sync: "OutOfSync"}})
	s := inv.Snapshot()
	var names []string
	for _, a := range s.Apps {
		names = append(names, a.Instance+"/"+a.Name)
	}
	if want := "a/new a/x b/y"; strings.Join(names, " ") != want {
		t.Fatalf("apps %v, want %s", names, want)
	}
	if len(s.Instances) != 1 || !s.Instances[0].Synced || s.Instances[0].Name != "a" {
		t.Fatalf("instances %+v", s.Instances)
	}
}

func TestChangedWakesReaders(t *testing.T) {
	inv := New(time.Now)
	v := inv.Snapshot().Version
	ch := inv.Changed(v)
	select {
	case <-ch:
		t.Fatal("closed before any change")
	default:
	}
	inv.Apply(App{Key: Key{Name: "x"}, Sync: "Synced"})
	select {
	case <-ch:
	case <-time.After(time.Second):
		t.Fatal("not closed by a change")
	}
	select {
	case <-inv.Changed(v):
	default:
		t.Fatal("a reader behind the version waits")
	}
	inv.Remove(Key{Name: "x"})
	if got := inv.Snapshot(); len(got.Apps) != 0 || got.Version != v+2 {
		t.Fatalf("after remove: %d apps, version %d, want 0 and %d", len(got.Apps), got.Version, v+2)
	}
}

func TestFromApplication(t *testing.T) {
	finished := metav1.NewTime(time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC))
	a := &v1alpha1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "web-eu", Namespace: "argocd", Labels: map[string]string{"env": "prd"}},
		Spec: v1alpha1.ApplicationSpec{
			Project:     "shop",
			Destination: v1alpha1.ApplicationDestination{Name: "eu-1"},
			Sources:     v1alpha1.ApplicationSources{{RepoURL: "https://charts.example.com", Chart: "web"}},
		},
		Status: v1alpha1.ApplicationStatus{
			Sync:    v1alpha1.SyncStatus{Status: v1alpha1.SyncStatusCodeOutOfSync, Revisions: []string{"1.2.3"}},
			History: v1alpha1.RevisionHistories{{ID: 1, Revisions: []string{"1.2.1"}}, {ID: 2, Revisions: []string{"1.2.2"}}},
			Health:  v1alpha1.AppHealthStatus{Status: "Degraded", LastTransitionTime: &finished},
			OperationState: &v1alpha1.OperationState{
				Operation:  v1alpha1.Operation{InitiatedBy: v1alpha1.OperationInitiator{Automated: true}},
				Phase:      "Succeeded",
				FinishedAt: &finished,
				SyncResult: &v1alpha1.SyncOperationResult{Revisions: []string{"1.2.2"}},
			},
		},
	}
	got := FromApplication("eu", a)
	want := App{
		Key: Key{Instance: "eu", Namespace: "argocd", Name: "web-eu"}, Project: "shop", Cluster: "eu-1", ClusterName: "eu-1",
		Labels: a.Labels, Source: "https://charts.example.com web", Revision: "1.2.2", Sync: "OutOfSync", Health: "Degraded",
		HealthSince: finished.Time, Operation: &Operation{By: "automated", Phase: "Succeeded", Revision: "1.2.2", FinishedAt: finished.Time},
	}
	if !equal(got, want) {
		t.Fatalf("got %+v %+v\nwant %+v %+v", got, got.Operation, want, want.Operation)
	}
}

func TestReplaceThatOnlyRemovesIsAChange(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)}
	inv := New(c.now)
	inv.Replace("a", []App{{Key: Key{Name: "x"}, Sync: "Synced"}, {Key: Key{Name: "gone"}, Sync: "Synced"}})
	v := inv.Snapshot().Version
	inv.SetInstance(Instance{Name: "a", Synced: true, Since: c.t}) // as Replace left it
	inv.Replace("a", []App{{Key: Key{Name: "x"}, Sync: "Synced"}})
	select {
	case <-inv.Changed(v):
	default:
		t.Fatal("a Replace that removed an app did not move the version")
	}
	if a, ok := inv.Get(Key{Instance: "a", Name: "x"}); !ok || a.Sync != "Synced" {
		t.Fatalf("Get(a/x) = %+v, %v", a, ok)
	}
	if _, ok := inv.Get(Key{Instance: "a", Name: "gone"}); ok {
		t.Fatal("Get(a/gone) found a removed app")
	}
}

func TestInstancesWithoutTheApps(t *testing.T) {
	inv := New(time.Now)
	inv.SetInstance(Instance{Name: "us", Error: "connection refused"})
	inv.Replace("eu", []App{{Key: Key{Name: "web"}, Sync: "Synced"}})
	is := inv.Instances()
	if len(is) != 2 || is[0].Name != "eu" || !is[0].Synced || is[1].Name != "us" || is[1].Error != "connection refused" {
		t.Fatalf("Instances() = %+v; want eu synced, then us with its error", is)
	}
}
