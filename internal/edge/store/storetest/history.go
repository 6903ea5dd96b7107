package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetwave/fleetwave/internal/edge/store"
)

var historyTests = []test{
	{"a rollout's first events are written with it, once", func(t *testing.T, e *env) {
		n := sample("org/fleet", "m1")
		n.Events = []store.Event{{Actor: "alice", Action: "merged", Target: "m1", Result: "ok"}, {Actor: "fleetwave", Action: "created", Result: "ok", At: Epoch.Add(time.Second)}}
		r, _ := mustCreate(t, e, n)
		n.Events = []store.Event{{Actor: "mallory", Action: "merged"}}
		if _, created, err := e.s.CreateRollout(e.ctx, n); err != nil || created {
			t.Fatalf("second CreateRollout: %v %v", created, err)
		}
		evs, err := e.s.ListEvents(e.ctx, r.ID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := []store.Event{
			{ID: evs[0].ID, RolloutID: r.ID, At: e.now(), Actor: "alice", Action: "merged", Target: "m1", Result: "ok"},
			{ID: evs[0].ID + 1, RolloutID: r.ID, At: Epoch.Add(time.Second).Truncate(time.Microsecond), Actor: "fleetwave", Action: "created", Result: "ok"},
		}
		if d := cmp.Diff(want, evs); d != "" {
			t.Errorf("events (-want +got):\n%s", d)
		}
		n = sample("org/fleet", "m2")
		n.Events = []store.Event{{Action: "merged"}}
		if _, _, err := e.s.CreateRollout(e.ctx, n); err == nil {
			t.Error("an event without an actor was accepted")
		}
	}},
	{"history across rollouts, filtered and paged", func(t *testing.T, e *env) {
		a, _ := mustCreate(t, e, sample("org/fleet", "m1"))
		b, _ := mustCreate(t, e, sample("org/other", "m2"))
		var all []store.Event
		for i, ev := range []store.Event{
			{RolloutID: a.ID, Actor: "alice", Action: "merged", Target: "m1", Result: "ok"},
			{RolloutID: b.ID, Actor: "fleetwave", Action: "created", Result: "ok"},
			{RolloutID: a.ID, Actor: "fleetwave", Action: "app-sync", Target: "argocd/web-test", Result: "synced"},
			{RolloutID: b.ID, Actor: "bob", Action: "approve", Target: "production", Result: "ok", DeliveryID: "d-1"},
		} {
			ev.At = Epoch.Add(time.Duration(i) * time.Hour)
			got, err := e.s.AppendEvent(e.ctx, ev)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, got)
		}
		for _, tc := range []struct {
			name string
			f    store.HistoryFilter
			want []store.Event
		}{
			{"all", store.HistoryFilter{}, all},
			{"repo", store.HistoryFilter{Repo: "org/other"}, []store.Event{all[1], all[3]}},
			{"rollout", store.HistoryFilter{RolloutID: a.ID}, []store.Event{all[0], all[2]}},
			{"since", store.HistoryFilter{Since: Epoch.Add(90 * time.Minute)}, all[2:]},
			{"page", store.HistoryFilter{AfterID: all[0].ID, Limit: 2}, all[1:3]},
			{"page after the last", store.HistoryFilter{AfterID: all[3].ID}, nil},
			{"repo and since", store.HistoryFilter{Repo: "org/fleet", Since: Epoch.Add(time.Hour)}, all[2:3]},
		} {
			got, err := e.s.ListHistory(e.ctx, tc.f)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("ListHistory %s (-want +got):\n%s", tc.name, d)
			}
		}
	}},
	{"retention deletes old finished rollouts only, with everything of them", func(t *testing.T, e *env) {
		move := func(r store.Rollout, state store.RolloutState) store.Rollout {
			t.Helper()
			r, err := e.s.UpdateRollout(e.ctx, withState(r, state))
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		oldDone, _ := mustCreate(t, e, sample("org/fleet", "done"))
		oldDone = move(move(oldDone, store.RolloutRunning), store.RolloutSucceeded)
		running, _ := mustCreate(t, e, sample("org/fleet", "running"))
		move(running, store.RolloutRunning)
		paused, _ := mustCreate(t, e, sample("org/fleet", "paused"))
		move(paused, store.RolloutPaused)
		// A superseded rollout names the one that replaced it: that one goes only with it.
		older, _ := mustCreate(t, e, sample("org/other", "older"))
		newer, _ := mustCreate(t, e, sample("org/other", "newer"))
		newer = move(newer, store.RolloutSucceeded)
		older.State, older.SupersededBy = store.RolloutSuperseded, newer.ID
		if _, err := e.s.UpdateRollout(e.ctx, older); err != nil {
			t.Fatal(err)
		}
		for _, r := range []store.Rollout{oldDone, running, paused} {
			if _, err := e.s.AppendEvent(e.ctx, store.Event{RolloutID: r.ID, Actor: "alice", Action: "pause"}); err != nil {
				t.Fatal(err)
			}
		}
		if ok, err := e.s.AcquireLease(e.ctx, oldDone.ID, "bot-1", time.Minute); err != nil || !ok {
			t.Fatalf("AcquireLease: %v %v", ok, err)
		}
		e.clock.Advance(48 * time.Hour)
		recent, _ := mustCreate(t, e, sample("org/fleet", "recent"))
		recent = move(recent, store.RolloutSucceeded)

		cutoff := e.now().Add(-24 * time.Hour)
		n, err := e.s.DeleteFinishedRollouts(e.ctx, cutoff)
		if err != nil {
			t.Fatal(err)
		}
		if n != 3 { // oldDone, older, then newer
			t.Errorf("deleted %d rollouts, want 3", n)
		}
		for _, r := range []store.Rollout{oldDone, older, newer} {
			if _, err := e.s.GetRollout(e.ctx, r.ID); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("rollout %s after retention: %v, want not found", r.MergeSHA, err)
			}
			if evs, err := e.s.ListEvents(e.ctx, r.ID, 0, 0); err != nil || len(evs) != 0 {
				t.Errorf("events of deleted rollout %s: %v %v", r.MergeSHA, evs, err)
			}
			if sts, err := e.s.ListSteps(e.ctx, r.ID, store.StepFilter{}); err != nil || len(sts) != 0 {
				t.Errorf("steps of deleted rollout %s: %d %v", r.MergeSHA, len(sts), err)
			}
			if ws, err := e.s.ListWaves(e.ctx, r.ID); err != nil || len(ws) != 0 {
				t.Errorf("waves of deleted rollout %s: %d %v", r.MergeSHA, len(ws), err)
			}
		}
		for _, r := range []store.Rollout{running, paused, recent} {
			if _, err := e.s.GetRollout(e.ctx, r.ID); err != nil {
				t.Errorf("rollout %s was deleted: %v", r.MergeSHA, err)
			}
		}
		if evs, err := e.s.ListEvents(e.ctx, running.ID, 0, 0); err != nil || len(evs) != 1 {
			t.Errorf("events of the running rollout: %v %v", evs, err)
		}
		if n, err := e.s.DeleteFinishedRollouts(e.ctx, cutoff); err != nil || n != 0 {
			t.Errorf("second pass: %d %v, want 0", n, err)
		}
	}},
}
