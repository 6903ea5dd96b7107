package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// InventoryCounts is what /metrics shows of the inventory (#37): apps per instance, sync and health, and the state
// of each instance's application stream. The caller counts (internal/cli adapts internal/inventory); the
// instances are those configured, a bounded set.
type InventoryCounts struct {
	Apps    map[InventoryGroup]int
	Streams []InventoryStream
}

// InventoryGroup is one series of fleetwave_inventory_apps. Sync and Health are Argo CD's codes; any other value
// is counted as "Unknown", so that the series stay bounded whatever a server sends.
type InventoryGroup struct {
	Instance, Sync, Health string
}

// InventoryStream is the state of one instance's stream: Synced once its apps are listed and followed, false
// while it cannot be read (its apps are then kept, stale).
type InventoryStream struct {
	Instance string
	Synced   bool
}

var (
	inventoryAppsDesc = prometheus.NewDesc(namespace+"_inventory_apps",
		"Apps in the inventory, by Argo CD instance, sync and health status.", []string{"instance", "sync", "health"}, nil)
	inventoryStreamDesc = prometheus.NewDesc(namespace+"_inventory_stream_synced",
		"1 while the inventory follows the instance's applications, 0 while it cannot read them (apps kept, stale).",
		[]string{"instance"}, nil)
	syncCodes   = map[string]bool{"Synced": true, "OutOfSync": true, "Unknown": true}
	healthCodes = map[string]bool{"Healthy": true, "Progressing": true, "Degraded": true, "Suspended": true, "Missing": true, "Unknown": true}
)

// Inventory exposes the inventory's counts, read at every scrape.
func (m *Metrics) Inventory(counts func() InventoryCounts) {
	m.reg.MustRegister(&inventoryCollector{counts: counts})
}

type inventoryCollector struct {
	counts func() InventoryCounts
}

func (c *inventoryCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- inventoryAppsDesc
	ch <- inventoryStreamDesc
}

func (c *inventoryCollector) Collect(ch chan<- prometheus.Metric) {
	counts := c.counts()
	bounded := map[InventoryGroup]int{}
	for g, n := range counts.Apps {
		if !syncCodes[g.Sync] {
			g.Sync = "Unknown"
		}
		if !healthCodes[g.Health] {
			g.Health = "Unknown"
		}
		bounded[g] += n
	}
	for g, n := range bounded {
		ch <- prometheus.MustNewConstMetric(inventoryAppsDesc, prometheus.GaugeValue, float64(n), g.Instance, g.Sync, g.Health)
	}
	for _, s := range counts.Streams {
		v := 0.0
		if s.Synced {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(inventoryStreamDesc, prometheus.GaugeValue, v, s.Instance)
	}
}
