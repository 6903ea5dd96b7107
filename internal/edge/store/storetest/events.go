package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetwave/fleetwave/internal/edge/store"
)

var eventTests = []test{
	{"append and page", func(t *testing.T, e *env) {
		r, _ := mustCreate(t, e, sample("org/fleet", "m1"))
		in := []store.Event{
			{RolloutID: r.ID, Actor: "fleetwave", Action: "wave-started", Target: "canary", Result: "ok"},
			{RolloutID: r.ID, Actor: "alice", Action: "pause", Result: "refused", Message: "alice lacks write permission", DeliveryID: "d-1"},
			{RolloutID: r.ID, Actor: "bob", Action: "approve", Target: "production", Result: "ok", At: Epoch.Add(time.Hour)},
		}
		var want []store.Event
		for _, ev := range in {
			got, err := e.s.AppendEvent(e.ctx, ev)
			if err != nil {
				t.Fatal(err)
			}
			if got.ID == 0 {
				t.Fatal("AppendEvent returned no ID")
			}
			if ev.At.IsZero() {
				ev.At = e.now()
			}
			ev.ID, ev.At = got.ID, ev.At.Truncate(time.Microsecond)
			want = append(want, ev)
			e.clock.Advance(time.Second)
		}
		all, err := e.s.ListEvents(e.ctx, r.ID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, all); d != "" {
			t.Fatalf("ListEvents (-want +got):\n%s", d)
		}
		page, err := e.s.ListEvents(e.ctx, r.ID, want[0].ID, 1)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want[1:2], page); d != "" {
			t.Fatalf("ListEvents after the first, limit 1 (-want +got):\n%s", d)
		}
		if _, err := e.s.AppendEvent(e.ctx, store.Event{RolloutID: r.ID, Action: "x"}); err == nil {
			t.Fatal("AppendEvent without actor succeeded")
		}
		if _, err := e.s.AppendEvent(e.ctx, store.Event{RolloutID: 999, Actor: "a", Action: "x"}); err == nil {
			t.Fatal("AppendEvent to a missing rollout succeeded")
		}
	}},
}
