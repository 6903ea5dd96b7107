package follow_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/edge/store/storetest"
	"github.com/fleetwave/fleetwave/internal/inventory"
	"github.com/fleetwave/fleetwave/internal/inventory/follow"
)

const (
	revA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	revB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	eu   = "https://eu.example.com"
	us   = "https://us.example.com"
)

func appSpec(name, server string) *v1alpha1.Application {
	a := &v1alpha1.Application{}
	a.Name = name
	a.Spec.Source = &v1alpha1.ApplicationSource{RepoURL: "https://git.example.com/fleet.git", Path: "apps/web", TargetRevision: "HEAD"}
	a.Spec.Destination = v1alpha1.ApplicationDestination{Server: server, Namespace: "web"}
	return a
}

// newSim is a simulator (in virtual time: call inside synctest.Test) holding apps synced to revA, with the
// cluster eu registered (labelled) and us not, and a client over its in-process transport.
func newSim(t *testing.T, names ...string) (*argocdsim.Server, *argocd.Client) {
	t.Helper()
	sim := argocdsim.New(argocdsim.Config{})
	t.Cleanup(sim.Close)
	sim.SetRef("HEAD", revA)
	sim.AddCluster(v1alpha1.Cluster{Server: eu, Name: "eu-1", Labels: map[string]string{"region": "eu"}})
	for _, n := range names {
		server := eu
		if strings.HasSuffix(n, "-us") {
			server = us
		}
		if err := sim.AddApp(appSpec(n, server), argocdsim.AppOptions{LiveRevisions: []string{revA}}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := argocd.New(argocd.Options{BaseURL: "http://argocd.sim", HTTPClient: sim.HTTPClient(), MaxRetries: -1,
		StreamFormat: argocd.StreamNDJSON})
	if err != nil {
		t.Fatal(err)
	}
	return sim, c
}

// start runs a follower of instance "eu" until the test ends (or stop is called); it returns when stopped.
func start(t *testing.T, inv *inventory.Inventory, src follow.Source, st follow.SinceStore) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f := follow.New(follow.Config{Instance: "eu", Source: src, Inventory: inv, Store: st})
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// settle lets virtual time pass and every goroutine block.
func settle(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

// view is the inventory in one line per app: name, cluster name and labels, revision, sync and since (as the
// minutes since t0), health.
func view(inv *inventory.Inventory, t0 time.Time) string {
	var b strings.Builder
	for _, a := range inv.Snapshot().Apps {
		fmt.Fprintf(&b, "%s/%s cluster=%s%v rev=%.1s %s@%v %s\n", a.Instance, a.Name, a.ClusterName, a.ClusterLabels,
			a.Revision, a.Sync, a.SyncSince.Sub(t0), a.Health)
	}
	return b.String()
}

func instance(inv *inventory.Inventory) inventory.Instance {
	for _, i := range inv.Snapshot().Instances {
		if i.Name == "eu" {
			return i
		}
	}
	return inventory.Instance{}
}

func want(t *testing.T, got, want string) {
	t.Helper()
	if strings.TrimSpace(got) != strings.TrimSpace(want) {
		t.Fatalf("inventory:\n%s\nwant:\n%s", got, want)
	}
}

func TestFollowListsThenAppliesChangesAndDeletions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim, c := newSim(t, "web-eu", "web-us", "api-eu")
		t0 := time.Now()
		inv := inventory.New(time.Now)
		start(t, inv, c, nil)
		settle(time.Second)
		if i := instance(inv); !i.Synced || i.Error != "" {
			t.Fatalf("instance %+v; want synced", i)
		}
		want(t, view(inv, t0), `
eu/api-eu cluster=eu-1map[region:eu] rev=a Synced@0s Healthy
eu/web-eu cluster=eu-1map[region:eu] rev=a Synced@0s Healthy
eu/web-us cluster=map[] rev=a Synced@0s Healthy`)

		// A push: the apps go OutOfSync, seen through the stream at its time.
		settle(time.Minute)
		sim.SetRef("HEAD", revB)
		sim.RefreshAll()
		settle(time.Second)
		want(t, view(inv, t0), `
eu/api-eu cluster=eu-1map[region:eu] rev=a OutOfSync@1m1s Healthy
eu/web-eu cluster=eu-1map[region:eu] rev=a OutOfSync@1m1s Healthy
eu/web-us cluster=map[] rev=a OutOfSync@1m1s Healthy`)

		// A deletion and a cluster registered: the app goes, the cluster's name and labels arrive without a list.
		lists := sim.Totals().Lists
		if err := sim.DeleteApp("api-eu"); err != nil {
			t.Fatal(err)
		}
		sim.AddCluster(v1alpha1.Cluster{Server: us, Name: "us-1", Labels: map[string]string{"region": "us"}})
		settle(5 * time.Minute) // the clusters' refresh
		want(t, view(inv, t0), `
eu/web-eu cluster=eu-1map[region:eu] rev=a OutOfSync@1m1s Healthy
eu/web-us cluster=us-1map[region:us] rev=a OutOfSync@1m1s Healthy`)
		if n := sim.Totals().Lists - lists; n != 0 {
			t.Errorf("%d lists while the stream was up; want none (the stream carries the changes)", n)
		}
	})
}

func TestFollowKeepsAppsStaleWhileDownAndListsAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim, c := newSim(t, "web-eu", "api-eu", "db-eu")
		inv := inventory.New(time.Now)
		start(t, inv, c, nil)
		settle(time.Second)

		// The server goes away: apps kept, the instance stale with why.
		sim.SetOutage(argocdsim.Unreachable)
		settle(time.Second)
		if i := instance(inv); i.Synced || i.Error == "" {
			t.Fatalf("instance %+v; want not synced, with why", i)
		}
		if n := len(inv.Snapshot().Apps); n != 3 {
			t.Fatalf("%d apps while the instance is down; want the 3 kept", n)
		}
		// Meanwhile (the server restarted) an app is deleted and another changes: no stream tells.
		if err := sim.DeleteApp("db-eu"); err != nil {
			t.Fatal(err)
		}
		sim.SetRef("HEAD", revB)
		sim.RefreshAll()
		settle(time.Minute)
		sim.SetOutage(argocdsim.Up)
		settle(time.Minute) // the follower's backoff
		i := instance(inv)
		if !i.Synced || i.Error != "" {
			t.Fatalf("instance %+v; want synced again", i)
		}
		up := i.Since
		// Argo CD dates no sync status: a change unseen while down is dated when the list shows it.
		want(t, view(inv, up), `
eu/api-eu cluster=eu-1map[region:eu] rev=a OutOfSync@0s Healthy
eu/web-eu cluster=eu-1map[region:eu] rev=a OutOfSync@0s Healthy`)
	})
}

func TestFollowRestartKeepsSinceTimes(t *testing.T) {
	dsn := storetest.SQLite(t)
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st, err := store.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		sim, c := newSim(t, "web-eu", "api-eu", "db-eu")
		t0 := time.Now()
		inv := inventory.New(time.Now)
		stop := start(t, inv, c, st)
		settle(time.Minute)
		sim.SetRef("HEAD", revB)
		if _, err := c.GetApplication(ctx, "web-eu", v1alpha1.RefreshTypeNormal); err != nil {
			t.Fatal(err)
		}
		settle(time.Minute)
		want(t, view(inv, t0), `
eu/api-eu cluster=eu-1map[region:eu] rev=a Synced@0s Healthy
eu/db-eu cluster=eu-1map[region:eu] rev=a Synced@0s Healthy
eu/web-eu cluster=eu-1map[region:eu] rev=a OutOfSync@1m0.1s Healthy`)
		stop()

		// fleetwave restarts an hour later; meanwhile db-eu was deleted and api-eu went OutOfSync.
		settle(time.Hour)
		if err := sim.DeleteApp("db-eu"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.GetApplication(ctx, "api-eu", v1alpha1.RefreshTypeNormal); err != nil {
			t.Fatal(err)
		}
		restarted := time.Now()
		inv = inventory.New(time.Now)
		stop = start(t, inv, c, st)
		settle(time.Second)
		want(t, view(inv, t0), fmt.Sprintf(`
eu/api-eu cluster=eu-1map[region:eu] rev=a OutOfSync@%v Healthy
eu/web-eu cluster=eu-1map[region:eu] rev=a OutOfSync@1m0.1s Healthy`, restarted.Sub(t0)))
		stop()
		rows, err := st.ListAppSince(ctx, "eu")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rows {
			got = append(got, fmt.Sprintf("%s %s@%v", r.App.Name, r.Sync, r.SyncSince.Sub(t0)))
		}
		if w := fmt.Sprintf("[api-eu OutOfSync@%v web-eu OutOfSync@1m0.1s]", restarted.Sub(t0)); fmt.Sprint(got) != w {
			t.Fatalf("store rows %v; want %s (db-eu deleted)", got, w)
		}
	})
}

// heldSource answers the list only once the stream has delivered a change the list already holds and one it
// does not, as when the stream opens before the list is read.
type heldSource struct {
	list  *v1alpha1.ApplicationList
	ready chan struct{}
}

func (h *heldSource) ListApplications(ctx context.Context, _ argocd.ListQuery) (*v1alpha1.ApplicationList, error) {
	select {
	case <-h.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return h.list, nil
}

func (h *heldSource) ListClusters(context.Context) ([]v1alpha1.Cluster, error) { return nil, nil }

func (h *heldSource) Watch(ctx context.Context, _ argocd.WatchQuery, wh argocd.WatchHandler) error {
	old := appSpec("web-eu", eu)
	old.ResourceVersion = "9"
	old.Status.Sync.Status = "Unknown"
	wh.OnRawEvent(argocd.NewEvent("MODIFIED", old))
	newer := appSpec("api-eu", eu)
	newer.ResourceVersion = "11"
	newer.Status.Sync.Status = "OutOfSync"
	wh.OnRawEvent(argocd.NewEvent("MODIFIED", newer))
	close(h.ready)
	<-ctx.Done()
	return ctx.Err()
}

func TestFollowAppliesOnlyTheEventsNewerThanTheList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		web, api := appSpec("web-eu", eu), appSpec("api-eu", eu)
		web.ResourceVersion, api.ResourceVersion = "9", "8"
		web.Status.Sync.Status, api.Status.Sync.Status = "Synced", "Synced"
		src := &heldSource{ready: make(chan struct{}), list: &v1alpha1.ApplicationList{Items: []v1alpha1.Application{*api, *web}}}
		src.list.ResourceVersion = "10"
		inv := inventory.New(time.Now)
		start(t, inv, src, nil)
		settle(time.Second)
		var got []string
		for _, a := range inv.Snapshot().Apps {
			got = append(got, a.Name+" "+a.Sync)
		}
		if w := "[api-eu OutOfSync web-eu Synced]"; fmt.Sprint(got) != w {
			t.Fatalf("apps %v; want %s (the held event at 11 applied, the one at 9 dropped)", got, w)
		}
	})
}

// refusing refuses the stream with a 403: the follower stops and says why.
type refusing struct{ heldSource }

func (refusing) Watch(context.Context, argocd.WatchQuery, argocd.WatchHandler) error {
	return &argocd.APIError{HTTPStatus: 403, Message: "permission denied"}
}

func TestFollowStopsWhenTheStreamIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inv := inventory.New(time.Now)
		src := &refusing{heldSource{ready: make(chan struct{})}}
		f := follow.New(follow.Config{Instance: "eu", Source: src, Inventory: inv})
		err := f.Run(context.Background())
		var ae *argocd.APIError
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), `instance "eu"`) {
			t.Fatalf("Run = %v; want the 403, naming the instance", err)
		}
		if i := instance(inv); i.Synced || !strings.Contains(i.Error, "permission denied") {
			t.Fatalf("instance %+v", i)
		}
	})
}

// marks is a MarkStore whose rows the test sets, counting the queries.
type marks struct {
	mu      sync.Mutex
	rows    []store.RolloutMark
	queries int
}

func (m *marks) LastRolloutMarks(_ context.Context, instance string) ([]store.RolloutMark, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.queries++
	return append([]store.RolloutMark(nil), m.rows...), nil
}

func (m *marks) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.queries
}

func (m *marks) set(rows ...store.RolloutMark) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rows = rows
}

func TestFollowMarksTheLastRolloutCheaply(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim, c := newSim(t, "web-eu", "api-eu")
		ms := &marks{}
		step := func(state store.StepState) store.RolloutMark {
			return store.RolloutMark{App: store.AppKey{Instance: "eu", Namespace: "argocd", Name: "web-eu"}, Rollout: 7, Revision: revB, State: state}
		}
		ms.set(step(store.StepTriggered))
		inv := inventory.New(time.Now)
		f := follow.New(follow.Config{Instance: "eu", Source: c, Inventory: inv, Marks: ms})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- f.Run(ctx) }()
		defer func() { cancel(); <-done }()
		settle(time.Second)
		rollout := func(name string) string {
			a, _ := inv.Get(inventory.Key{Instance: "eu", Namespace: "argocd", Name: name})
			if a.Rollout == nil {
				return "none"
			}
			return fmt.Sprintf("%s@%.1s reached=%v", a.Rollout.ID, a.Rollout.Revision, a.Rollout.Reached)
		}
		if got := rollout("web-eu") + ", " + rollout("api-eu"); got != "7@b reached=false, none" {
			t.Fatalf("marks %s; want web-eu's rollout 7 not reached yet, none for api-eu", got)
		}

		// Stream events cost no query of the marks.
		queries := ms.count()
		sim.SetRef("HEAD", revB)
		sim.RefreshAll()
		settle(time.Second)
		if n := ms.count() - queries; n != 0 {
			t.Errorf("%d queries of the marks for stream events; want none", n)
		}
		// The step ends: asked to, the follower reads the marks again.
		ms.set(step(store.StepSynced))
		f.RefreshMarks()
		settle(time.Second)
		if got := rollout("web-eu"); got != "7@b reached=true" {
			t.Fatalf("web-eu's mark %s; want rollout 7 reached", got)
		}
	})
}
