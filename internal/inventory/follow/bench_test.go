package follow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/edge/store/storetest"
	"github.com/fleetwave/fleetwave/internal/inventory"
	"github.com/fleetwave/fleetwave/internal/inventory/follow"
)

// TestBenchmarkInventory10000Apps measures the inventory at 10,000 apps on the simulator (#37; docs/figures.md):
// the time to a consistent view from a cold start and after a restart (since times read back from the store),
// the memory the inventory holds, the CPU used at rest (no change: nothing to do), and a change to every app:
// how long until the inventory shows it, the bytes streamed and what the follower's fields filter saved. Run with
// FLEETWAVE_SLOW_TESTS=1 (make bench); in real time, the simulator in the same process over its in-process
// transport.
func TestBenchmarkInventory10000Apps(t *testing.T) {
	if os.Getenv("FLEETWAVE_SLOW_TESTS") == "" {
		t.Skip("FLEETWAVE_SLOW_TESTS=1 to measure the inventory at 10,000 apps")
	}
	const n = 10000
	ctx := context.Background()
	sim := argocdsim.New(argocdsim.Config{})
	defer sim.Close()
	sim.SetRef("HEAD", revA)
	for i := range 20 {
		sim.AddCluster(v1alpha1.Cluster{Server: fmt.Sprintf("https://c%02d.example.com", i), Name: fmt.Sprintf("c%02d", i),
			Labels: map[string]string{"region": fmt.Sprint("r", i%4)}})
	}
	for i := range n {
		a := appSpec(fmt.Sprintf("app-%05d", i), fmt.Sprintf("https://c%02d.example.com", i%20))
		a.Labels = map[string]string{"team": fmt.Sprint("t", i%10)}
		if err := sim.AddApp(a, argocdsim.AppOptions{LiveRevisions: []string{revA}}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := argocd.New(argocd.Options{BaseURL: "http://argocd.sim", HTTPClient: sim.HTTPClient(), MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, storetest.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	// run follows until the inventory is consistent (its list in), and returns how long that took.
	run := func() (*inventory.Inventory, func(), time.Duration) {
		inv := inventory.New(time.Now)
		rctx, cancel := context.WithCancel(ctx)
		f := follow.New(follow.Config{Instance: "", Source: c, Inventory: inv, Store: st})
		done := make(chan struct{})
		began := time.Now()
		go func() { defer close(done); _ = f.Run(rctx) }()
		// Polled: a reader woken at every change would copy the inventory 10,000 times.
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			if is := inv.Instances(); len(is) == 1 && is[0].Synced {
				return inv, func() { cancel(); <-done }, time.Since(began)
			}
			if time.Now().After(deadline) {
				t.Fatal("no consistent view after a minute")
			}
		}
	}

	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	inv, stop, cold := run()
	time.Sleep(3 * time.Second) // the since times of the first list written
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	rows, err := st.ListAppSince(ctx, "")
	if err != nil || len(rows) != n {
		t.Fatalf("%d since rows, %v; want %d", len(rows), err, n)
	}

	// At rest: nothing changes for 10 s.
	cpu0 := cpuTime()
	time.Sleep(10 * time.Second)
	rest := cpuTime() - cpu0

	// A push reaching every app: each goes OutOfSync through the stream.
	bytes0 := sim.Totals().StreamBytes
	began := time.Now()
	sim.SetRef("HEAD", revB)
	sim.RefreshAll()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		out := 0
		for i := range n {
			if a, _ := inv.Get(inventory.Key{Name: fmt.Sprintf("app-%05d", i), Namespace: "argocd"}); a.Sync == "OutOfSync" {
				out++
			}
		}
		if out == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d apps OutOfSync after a minute", out, n)
		}
	}
	changed := time.Since(began)
	streamed := sim.Totals().StreamBytes - bytes0
	time.Sleep(3 * time.Second) // the changed since times written
	stop()

	// What the fields filter saves: one app's event with and without it.
	app, _ := sim.App("app-00000")
	whole, filtered := eventSizes(t, c, app.Name)

	// The part of a start that is the list itself (the simulator encoding it in this process, the client decoding).
	listBegan := time.Now()
	if _, err := c.ListApplications(ctx, argocd.ListQuery{}); err != nil {
		t.Fatal(err)
	}
	listed := time.Since(listBegan)

	// fleetwave restarts: a new inventory, the since times read back.
	_, stop, restart := run()
	stop()

	t.Logf("inventory of %d apps on the simulator:", n)
	t.Logf("  consistent view: %.2f s from a cold start, %.2f s after a restart (since times read back from the store)", cold.Seconds(), restart.Seconds())
	t.Logf("  of which one list of the %d apps alone: %.2f s", n, listed.Seconds())
	t.Logf("  held in memory: %.1f MiB (%.0f bytes per app)", float64(held)/(1<<20), float64(held)/n)
	t.Logf("  CPU at rest: %.3f s over 10 s", rest.Seconds())
	t.Logf("  a change to every app: %.2f s until the inventory shows all %d OutOfSync; %.1f MB streamed (%.0f bytes per event)", changed.Seconds(), n, float64(streamed)/1e6, float64(streamed)/n)
	t.Logf("  one event with the follower's fields filter: %d bytes, without: %d bytes", filtered, whole)
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// eventSizes is the size of one app's stream event (the snapshot a name filter always gets), without and with
// follow.OmitFields.
func eventSizes(t *testing.T, c *argocd.Client, name string) (whole, filtered int) {
	t.Helper()
	size := func(omit []string) int {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		got := 0
		_ = c.Watch(ctx, argocd.WatchQuery{Name: name, OmitFields: omit}, argocd.WatchHandler{OnRawEvent: func(ev *argocd.Event) {
			a, err := ev.Application()
			if err == nil {
				b, _ := json.Marshal(a)
				got = len(b)
			}
			cancel()
		}})
		return got
	}
	return size(nil), size(follow.OmitFields)
}
