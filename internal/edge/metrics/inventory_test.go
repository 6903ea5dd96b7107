package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestInventoryCountsBoundedLabels(t *testing.T) {
	m := New()
	m.Inventory(func() InventoryCounts {
		return InventoryCounts{
			Apps: map[InventoryGroup]int{
				{Instance: "eu", Sync: "Synced", Health: "Healthy"}:         3,
				{Instance: "eu", Sync: "OutOfSync", Health: "Degraded"}:     1,
				{Instance: "eu", Sync: "", Health: ""}:                      1, // not reconciled yet
				{Instance: "eu", Sync: "an app's name?", Health: "Unknown"}: 1, // never a label value
			},
			Streams: []InventoryStream{{Instance: "eu", Synced: true}, {Instance: "us"}},
		}
	})
	want := `
# HELP fleetwave_inventory_apps Apps in the inventory, by Argo CD instance, sync and health status.
# TYPE fleetwave_inventory_apps gauge
fleetwave_inventory_apps{health="Degraded",instance="eu",sync="OutOfSync"} 1
fleetwave_inventory_apps{health="Healthy",instance="eu",sync="Synced"} 3
fleetwave_inventory_apps{health="Unknown",instance="eu",sync="Unknown"} 2
# HELP fleetwave_inventory_stream_synced 1 while the inventory follows the instance's applications, 0 while it cannot read them (apps kept, stale).
# TYPE fleetwave_inventory_stream_synced gauge
fleetwave_inventory_stream_synced{instance="eu"} 1
fleetwave_inventory_stream_synced{instance="us"} 0
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "fleetwave_inventory_apps", "fleetwave_inventory_stream_synced"); err != nil {
		t.Fatal(err)
	}
}
