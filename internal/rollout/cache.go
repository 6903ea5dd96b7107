package rollout

import (
	"context"
	"maps"
	"sync"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/store"
)

// appCache keeps the newest state of a rollout's apps seen on the application stream its argosync sessions
// already hold open, so starting an app costs no request. After a reconnect (Argo CD does not replay what the
// stream missed) it forgets everything; a miss is a GET.
type appCache struct {
	mu      sync.Mutex
	want    map[store.AppKey]bool
	apps    map[store.AppKey]*argocd.Event // decoded when read (get)
	ns      string
	arrived map[store.AppKey]chan struct{} // closed when the app waited for (await) arrives
	// ready holds copies decoded ahead of a batch (prepare), each for the event it was decoded from and handed
	// out once.
	ready map[store.AppKey]preparedApp
	// scanned holds, per app, the event scanChanged last looked at.
	scanned map[store.AppKey]*argocd.Event
}

type preparedApp struct {
	ev  *argocd.Event
	app *v1alpha1.Application
}

func newAppCache(ns string, keys []store.AppKey) *appCache {
	c := &appCache{want: make(map[store.AppKey]bool, len(keys)), apps: map[store.AppKey]*argocd.Event{}, ns: ns,
		arrived: map[store.AppKey]chan struct{}{}, ready: map[store.AppKey]preparedApp{},
		scanned: map[store.AppKey]*argocd.Event{}}
	for _, k := range keys {
		c.want[k] = true
	}
	return c
}

// observe takes an event of the stream of instance inst.
func (c *appCache) observe(inst string, ev *argocd.Event) {
	ns := ev.Namespace
	if ns == "" {
		ns = c.ns
	}
	k := store.AppKey{Instance: inst, Namespace: ns, Name: ev.Name}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.want[k] {
		return
	}
	if ev.Type == watch.Deleted {
		delete(c.apps, k)
		return
	}
	if cur := c.apps[k]; cur != nil && !argocd.NewerResourceVersion(ev.ResourceVersion, cur.ResourceVersion) {
		return
	}
	c.apps[k] = ev
	delete(c.ready, k)
	if ch, ok := c.arrived[k]; ok {
		close(ch) // wakes only who waits for this app: a snapshot of N apps is N wake-ups, not N × waiters
		delete(c.arrived, k)
	}
}

// await waits until the cache holds the app k (the stream's initial snapshot brought it), at most until ctx
// ends; it reports whether it does.
func (c *appCache) await(ctx context.Context, k store.AppKey) bool {
	for {
		c.mu.Lock()
		present := c.apps[k] != nil
		ch, ok := c.arrived[k]
		if !present && !ok {
			ch = make(chan struct{})
			c.arrived[k] = ch
		}
		c.mu.Unlock()
		if present {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// reset forgets the apps of instance inst (its stream reconnected).
func (c *appCache) reset(inst string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range []map[store.AppKey]*argocd.Event{c.apps, c.scanned} {
		maps.DeleteFunc(m, func(k store.AppKey, _ *argocd.Event) bool { return k.Instance == inst })
	}
	maps.DeleteFunc(c.ready, func(k store.AppKey, _ preparedApp) bool { return k.Instance == inst })
}

// scanChanged calls fn with the newest state of each of keys the cache holds whose state changed since the
// last scanChanged saw it (out-of-plan detection at every step costs a decode per changed app, not per app).
func (c *appCache) scanChanged(keys []store.AppKey, fn func(store.AppKey, *v1alpha1.Application)) {
	for _, k := range keys {
		c.mu.Lock()
		ev := c.apps[k]
		seen := ev == nil || c.scanned[k] == ev
		if !seen {
			c.scanned[k] = ev
		}
		c.mu.Unlock()
		if seen {
			continue
		}
		app, err := ev.Application()
		if err != nil {
			continue
		}
		fn(k, app)
	}
}

// get returns a copy of the newest state of the app seen (nil: none, or it cannot be decoded).
func (c *appCache) get(k store.AppKey) *v1alpha1.Application {
	c.mu.Lock()
	ev := c.apps[k]
	p, ok := c.ready[k]
	delete(c.ready, k)
	c.mu.Unlock()
	if ev == nil {
		return nil
	}
	if ok && p.ev == ev {
		return p.app
	}
	app, err := ev.Application()
	if err != nil {
		return nil
	}
	return app.DeepCopy()
}

// prepare decodes and copies, ahead of time, the newest state of apps a later batch will read (get), so that
// the work is not done when that batch starts: then 200 apps decoding at once stand between a wave's start and
// its last sync request. A state that changes meanwhile is decoded again when read. It stops when ctx ends.
func (c *appCache) prepare(ctx context.Context, keys []store.AppKey) {
	for _, k := range keys {
		if ctx.Err() != nil {
			return
		}
		c.mu.Lock()
		ev := c.apps[k]
		_, done := c.ready[k]
		c.mu.Unlock()
		if ev == nil || done {
			continue
		}
		app, err := ev.Application()
		if err != nil {
			continue
		}
		cp := app.DeepCopy()
		c.mu.Lock()
		if c.apps[k] == ev {
			c.ready[k] = preparedApp{ev: ev, app: cp}
		}
		c.mu.Unlock()
	}
}

// Watch feeds the driver's cache from the stream argosync opens (one stream serves both).
func (t trackingAPI) Watch(ctx context.Context, q argocd.WatchQuery, h argocd.WatchHandler) error {
	c := t.d.appCache()
	if c == nil {
		return t.watch(ctx, q, h)
	}
	inner := h
	inner.OnRawEvent = func(ev *argocd.Event) {
		c.observe(t.inst, ev)
		if h.OnRawEvent != nil {
			h.OnRawEvent(ev)
		}
	}
	inner.OnConnect = func(reconnect bool) {
		if reconnect {
			c.reset(t.inst)
		}
		if h.OnConnect != nil {
			h.OnConnect(reconnect)
		}
	}
	return t.watch(ctx, q, inner)
}

// watch is the instance's stream. In a fleet of instances, an instance refusing the token (which ends Watch) is
// asked again with back-off, its apps held meanwhile, so the stream comes back with the instance.
func (t trackingAPI) watch(ctx context.Context, q argocd.WatchQuery, h argocd.WatchHandler) error {
	wait := unreachableFirstWait
	for {
		err := t.ArgoCD.Watch(ctx, q, h)
		if ctx.Err() != nil || !t.d.e.inst.multi || !unreachableErr(err) {
			return err
		}
		t.d.noteInstance(ctx, t.inst, err)
		if c := t.d.appCache(); c != nil {
			c.reset(t.inst)
		}
		if !t.d.pause(ctx, wait) {
			return ctx.Err()
		}
		wait = min(2*wait, unreachableMaxWait)
	}
}

func (d *driver) appCache() *appCache {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cache
}
