package rollout

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/fleetwave/fleetwave/internal/argocd"
	"github.com/fleetwave/fleetwave/internal/store"
)

// TestAppCacheAwait: a wait for an app ends when that app arrives (or the wait's context ends), not when
// another one does; apps outside the rollout are not kept.
func TestAppCacheAwait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := store.AppKey{Namespace: "argocd", Name: "a"}, store.AppKey{Namespace: "argocd", Name: "b"}
		c := newAppCache("argocd", []store.AppKey{a, b})
		event := func(name, rv string) *argocd.Event {
			app := &v1alpha1.Application{}
			app.Name, app.ResourceVersion = name, rv
			return argocd.NewEvent(watch.Added, app)
		}
		got := make(chan bool, 2)
		go func() { got <- c.await(context.Background(), a) }()
		go func() { got <- c.await(context.Background(), a) }() // two waiters for one app
		synctest.Wait()
		c.observe(event("b", "1"))
		c.observe(event("other", "2")) // not one of the rollout's apps
		synctest.Wait()
		if len(got) != 0 {
			t.Fatal("the wait for a ended when b arrived")
		}
		if c.get(store.AppKey{Namespace: "argocd", Name: "other"}) != nil {
			t.Fatal("an app outside the rollout was kept")
		}
		c.observe(event("a", "3"))
		synctest.Wait()
		if len(got) != 2 || !<-got || !<-got {
			t.Fatal("the waits for a did not end when it arrived")
		}
		if !c.await(context.Background(), a) {
			t.Fatal("a wait for an app already there does not return at once")
		}

		ctx, cancel := context.WithCancel(context.Background())
		c.reset()
		go func() { got <- c.await(ctx, b) }()
		synctest.Wait()
		cancel()
		synctest.Wait()
		if len(got) != 1 || <-got {
			t.Fatal("a wait whose context ended reported the app present")
		}
		c.observe(event("b", "4")) // the abandoned waiter's channel is closed without anyone left to wake
		if !c.await(context.Background(), b) {
			t.Fatal("b not present after it arrived")
		}
	})
}
