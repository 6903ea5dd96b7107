package cli

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/metrics"
	"github.com/fleetwave/fleetwave/internal/inventory"
	"github.com/fleetwave/fleetwave/internal/inventory/follow"
)

// This file wires the inventory (#37, docs/inventory.md): one *inventory.Inventory per process, kept live by a
// follower per Argo CD instance, counted on /metrics. serve hands it to the pages and alerts that read it through
// serveWiring.inv; `rollout --ui` builds its own.

// inventoryStore is what the followers keep in the store and read from it (*store.Store): since times, and
// which rollout last planned each app.
type inventoryStore interface {
	follow.SinceStore
	follow.MarkStore
}

// startInventory builds the inventory of the instances in clients ("" for a fleet configured with
// FLEETWAVE_ARGOCD_URL) and follows each until ctx ends. st keeps since times across restarts and gives the
// rollout marks (nil: since times in memory only, no marks); mets, when set, counts the inventory. wait returns once every follower stopped, its last since times
// written.
func startInventory(ctx context.Context, clients map[string]*argocd.Client, st inventoryStore, mets *metrics.Metrics,
	log *slog.Logger) (inv *inventory.Inventory, wait func()) {
	inv = inventory.New(time.Now)
	names := make([]string, 0, len(clients))
	for name := range clients {
		names = append(names, name)
		// Every instance is shown from the start: not synced until its first list arrives.
		inv.SetInstance(inventory.Instance{Name: name, Since: time.Now().UTC()})
	}
	sort.Strings(names)
	if mets != nil {
		mets.Inventory(func() metrics.InventoryCounts { return inventoryCounts(inv.Snapshot()) })
	}
	var wg sync.WaitGroup
	for _, name := range names {
		cfg := follow.Config{Instance: name, Source: clients[name], Inventory: inv, Log: log}
		if st != nil {
			cfg.Store, cfg.Marks = st, st
		}
		f := follow.New(cfg)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				log.Error("inventory: stopped following an Argo CD instance", slog.String("instance", name), slog.Any("error", err))
			}
		}()
	}
	return inv, wg.Wait
}

// inventoryCounts is what /metrics shows of a snapshot.
func inventoryCounts(s inventory.Snapshot) metrics.InventoryCounts {
	out := metrics.InventoryCounts{Apps: map[metrics.InventoryGroup]int{}}
	for _, a := range s.Apps {
		out.Apps[metrics.InventoryGroup{Instance: a.Instance, Sync: a.Sync, Health: a.Health}]++
	}
	for _, i := range s.Instances {
		out.Streams = append(out.Streams, metrics.InventoryStream{Instance: i.Name, Synced: i.Synced})
	}
	return out
}
