package follow

import (
	"context"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/inventory"
)

// restore reads the since times the store holds for the instance: the first list takes an app's since time
// from them when its status is still the one recorded.
func (f *Follower) restore(ctx context.Context) {
	if f.cfg.Store == nil {
		return
	}
	rows, err := f.cfg.Store.ListAppSince(ctx, f.cfg.Instance)
	if err != nil {
		f.cfg.Log.Warn("inventory: reading since times", "instance", f.cfg.Instance, "err", err)
		return
	}
	f.sinceMu.Lock()
	defer f.sinceMu.Unlock()
	f.restored = make(map[inventory.Key]store.AppSince, len(rows))
	for _, r := range rows {
		k := inventory.Key{Instance: r.App.Instance, Namespace: r.App.Namespace, Name: r.App.Name}
		f.restored[k] = r
		f.written[k] = r
	}
}

func (f *Follower) markDirty(k inventory.Key) {
	if f.cfg.Store == nil {
		return
	}
	f.sinceMu.Lock()
	f.dirty[k] = struct{}{}
	f.sinceMu.Unlock()
}

// replaced marks dirty every app of a list, and every app the store holds that the list does not.
func (f *Follower) replaced(apps []inventory.App) {
	if f.cfg.Store == nil {
		return
	}
	f.sinceMu.Lock()
	defer f.sinceMu.Unlock()
	listed := make(map[inventory.Key]struct{}, len(apps))
	for _, a := range apps {
		a.Instance = f.cfg.Instance
		listed[a.Key] = struct{}{}
		f.dirty[a.Key] = struct{}{}
	}
	for k := range f.written {
		if _, ok := listed[k]; !ok {
			f.dirty[k] = struct{}{}
		}
	}
}

func (f *Follower) flushLoop(ctx context.Context) {
	if f.cfg.Store == nil {
		return
	}
	t := f.cfg.Clock.NewTicker(f.cfg.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.Chan():
			f.flush(ctx)
		}
	}
}

// flush writes the since times of the apps changed since the last flush whose status or since time differs
// from what the store holds, and deletes the rows of apps gone, each in one batch. A failed batch is retried
// at the next flush.
func (f *Follower) flush(ctx context.Context) {
	if f.cfg.Store == nil {
		return
	}
	f.sinceMu.Lock()
	dirty := f.dirty
	f.dirty = map[inventory.Key]struct{}{}
	var puts []store.AppSince
	var dels []store.AppKey
	for k := range dirty {
		a, ok := f.cfg.Inventory.Get(k)
		w, had := f.written[k]
		if !ok {
			if had {
				dels = append(dels, store.AppKey{Instance: k.Instance, Namespace: k.Namespace, Name: k.Name})
			}
			continue
		}
		r := store.AppSince{App: store.AppKey{Instance: k.Instance, Namespace: k.Namespace, Name: k.Name},
			Sync: a.Sync, SyncSince: a.SyncSince.UTC(), Health: a.Health, HealthSince: a.HealthSince.UTC()}
		if had && sameSince(w, r) {
			continue
		}
		puts = append(puts, r)
	}
	f.sinceMu.Unlock()
	if len(puts) == 0 && len(dels) == 0 {
		return
	}
	putErr := f.cfg.Store.PutAppSince(ctx, puts)
	delErr := f.cfg.Store.DeleteAppSince(ctx, dels)
	f.sinceMu.Lock()
	defer f.sinceMu.Unlock()
	if putErr != nil {
		f.cfg.Log.Warn("inventory: writing since times", "instance", f.cfg.Instance, "apps", len(puts), "err", putErr)
		for _, r := range puts {
			f.dirty[inventory.Key{Instance: r.App.Instance, Namespace: r.App.Namespace, Name: r.App.Name}] = struct{}{}
		}
	} else {
		for _, r := range puts {
			f.written[inventory.Key{Instance: r.App.Instance, Namespace: r.App.Namespace, Name: r.App.Name}] = r
		}
	}
	if delErr != nil {
		f.cfg.Log.Warn("inventory: deleting since times", "instance", f.cfg.Instance, "apps", len(dels), "err", delErr)
		for _, k := range dels {
			f.dirty[inventory.Key{Instance: k.Instance, Namespace: k.Namespace, Name: k.Name}] = struct{}{}
		}
	} else {
		for _, k := range dels {
			delete(f.written, inventory.Key{Instance: k.Instance, Namespace: k.Namespace, Name: k.Name})
		}
	}
}

// sameSince compares what the store needs: the statuses and their since times (at the store's microsecond).
func sameSince(a, b store.AppSince) bool {
	return a.Sync == b.Sync && a.Health == b.Health && a.SyncSince.Truncate(time.Microsecond).Equal(b.SyncSince.Truncate(time.Microsecond)) &&
		a.HealthSince.Truncate(time.Microsecond).Equal(b.HealthSince.Truncate(time.Microsecond))
}
