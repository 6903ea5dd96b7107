package rollout

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/plan"
)

// cacheEvent is a stream event of the app name at version rv.
func cacheEvent(name, rv string) *argocd.Event {
	app := &v1alpha1.Application{}
	app.Name, app.ResourceVersion = name, rv
	return argocd.NewEvent(watch.Modified, app)
}

// TestAppCacheAwait: a wait for an app ends when that app arrives (or the wait's context ends), not when
// another one does; apps outside the rollout are not kept.
func TestAppCacheAwait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := store.AppKey{Namespace: "argocd", Name: "a"}, store.AppKey{Namespace: "argocd", Name: "b"}
		c := newAppCache("argocd", []store.AppKey{a, b})
		got := make(chan bool, 2)
		go func() { got <- c.await(context.Background(), a) }()
		go func() { got <- c.await(context.Background(), a) }() // two waiters for one app
		synctest.Wait()
		c.observe("", cacheEvent("b", "1"))
		c.observe("", cacheEvent("other", "2")) // not one of the rollout's apps
		synctest.Wait()
		if len(got) != 0 {
			t.Fatal("the wait for a ended when b arrived")
		}
		if c.get(store.AppKey{Namespace: "argocd", Name: "other"}) != nil {
			t.Fatal("an app outside the rollout was kept")
		}
		c.observe("", cacheEvent("a", "3"))
		synctest.Wait()
		if len(got) != 2 || !<-got || !<-got {
			t.Fatal("the waits for a did not end when it arrived")
		}
		if !c.await(context.Background(), a) {
			t.Fatal("a wait for an app already there does not return at once")
		}

		ctx, cancel := context.WithCancel(context.Background())
		c.reset("")
		go func() { got <- c.await(ctx, b) }()
		synctest.Wait()
		cancel()
		synctest.Wait()
		if len(got) != 1 || <-got {
			t.Fatal("a wait whose context ended reported the app present")
		}
		c.observe("", cacheEvent("b", "4")) // the abandoned waiter's channel is closed without anyone left to wake
		if !c.await(context.Background(), b) {
			t.Fatal("b not present after it arrived")
		}
	})
}

// TestAppCachePrepare: prepare decodes and copies an app's newest state ahead of time; get hands that copy out
// once, and never one decoded from an event a newer one has replaced since.
func TestAppCachePrepare(t *testing.T) {
	a, b := store.AppKey{Namespace: "argocd", Name: "a"}, store.AppKey{Namespace: "argocd", Name: "b"}
	c := newAppCache("argocd", []store.AppKey{a, b})
	ev := cacheEvent("a", "1")
	c.observe("", ev)
	c.prepare(context.Background(), []store.AppKey{a, b}) // b has not arrived: skipped
	p, ok := c.ready[a]
	if !ok || len(c.ready) != 1 {
		t.Fatalf("prepared %v, want a only", c.ready)
	}
	shared, _ := ev.Application()
	if p.app == shared {
		t.Fatal("the prepared state is the event's own object, not a copy")
	}
	if got := c.get(a); got != p.app {
		t.Fatal("get did not hand out the prepared copy")
	}
	if got := c.get(a); got == p.app || got == nil || got.ResourceVersion != "1" {
		t.Fatal("the prepared copy was handed out twice (or the second read failed)")
	}

	c.prepare(context.Background(), []store.AppKey{a})
	c.observe("", cacheEvent("a", "2")) // newer than what was prepared
	if got := c.get(a); got == nil || got.ResourceVersion != "2" {
		t.Fatalf("get after a newer event: %v, want version 2", got)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c.prepare(ctx, []store.AppKey{a})
	if len(c.ready) != 0 {
		t.Fatal("prepare went on after its context ended")
	}
	c.prepare(context.Background(), []store.AppKey{a})
	c.reset("")
	if len(c.ready) != 0 {
		t.Fatal("reset kept prepared states")
	}
}

func TestNextBatchKeys(t *testing.T) {
	app := func(name string) plan.PlannedApp { return plan.PlannedApp{Name: name} }
	sp := &storedPlan{Plan: plan.Plan{Waves: []plan.Wave{
		{Name: "canary", Batches: []plan.Batch{{Apps: []plan.PlannedApp{app("c1")}}}},
		{Name: "eu", Batches: []plan.Batch{{Apps: []plan.PlannedApp{app("e1"), app("e2")}}, {Apps: []plan.PlannedApp{app("e3")}}}},
	}}}
	d := &driver{e: &Executor{o: options{namespace: "argocd"}}}
	for _, tc := range []struct {
		wave, batch int
		want        []string
	}{
		{0, 0, []string{"e1", "e2"}}, // the next wave's first batch
		{1, 0, []string{"e3"}},       // the wave's next batch
		{1, 1, nil},                  // after the last
		{5, 0, nil},                  // out of range
	} {
		var got []string
		for _, k := range d.nextBatchKeys(sp, tc.wave, tc.batch) {
			if k.Namespace != "argocd" {
				t.Errorf("key %v: namespace not defaulted", k)
			}
			got = append(got, k.Name)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("after wave %d batch %d: %v, want %v", tc.wave, tc.batch, got, tc.want)
		}
	}
}
