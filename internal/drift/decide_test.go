package drift

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetwave/fleetwave/internal/inventory"
)

var t0 = time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)

func app(name, sync string, syncFor time.Duration, health string, healthFor time.Duration) inventory.App {
	a := inventory.App{Key: inventory.Key{Namespace: "argocd", Name: name}, Project: "default", Sync: sync, Health: health}
	if syncFor >= 0 {
		a.SyncSince = t0.Add(-syncFor)
	}
	if healthFor >= 0 {
		a.HealthSince = t0.Add(-healthFor)
	}
	return a
}

// TestDecide: which apps are in lasting drift, in which states and since when, and when the next one will be.
func TestDecide(t *testing.T) {
	const after = 30 * time.Minute
	type want struct {
		name   string
		states []string
		since  time.Duration // before t0
	}
	for _, tc := range []struct {
		name  string
		apps  []inventory.App
		about []string
		after map[string]time.Duration // by app name; default after
		want  []want
		next  time.Duration // after t0; 0: none
	}{
		{name: "synced and healthy", apps: []inventory.App{app("a", "Synced", time.Hour, "Healthy", time.Hour)}},
		{name: "out of sync past the threshold", apps: []inventory.App{app("a", "OutOfSync", 31*time.Minute, "Healthy", time.Hour)},
			want: []want{{"a", []string{OutOfSync}, 31 * time.Minute}}},
		{name: "exactly at the threshold", apps: []inventory.App{app("a", "OutOfSync", after, "Healthy", time.Hour)},
			want: []want{{"a", []string{OutOfSync}, after}}},
		{name: "out of sync, not long enough", apps: []inventory.App{app("a", "OutOfSync", 10*time.Minute, "Healthy", time.Hour)},
			next: 20 * time.Minute},
		{name: "degraded past the threshold", apps: []inventory.App{app("a", "Synced", time.Hour, "Degraded", 45*time.Minute)},
			want: []want{{"a", []string{Degraded}, 45 * time.Minute}}},
		{name: "both, since the earlier", apps: []inventory.App{app("a", "OutOfSync", 40*time.Minute, "Degraded", 2*time.Hour)},
			want: []want{{"a", []string{OutOfSync, Degraded}, 2 * time.Hour}}},
		{name: "one lasting, the other not yet", apps: []inventory.App{app("a", "OutOfSync", 40*time.Minute, "Degraded", 5*time.Minute)},
			want: []want{{"a", []string{OutOfSync}, 40 * time.Minute}}, next: 25 * time.Minute},
		{name: "progressing and unknown are not drift", apps: []inventory.App{app("a", "Unknown", time.Hour, "Progressing", time.Hour), app("b", "Synced", time.Hour, "Missing", time.Hour)}},
		{name: "a rollout is about to sync it", apps: []inventory.App{app("a", "OutOfSync", time.Hour, "Degraded", time.Hour)}, about: []string{"a"}},
		{name: "no since time: how long is not known", apps: []inventory.App{app("a", "OutOfSync", -1, "Degraded", -1)}},
		{name: "threshold off for the app", apps: []inventory.App{app("a", "OutOfSync", time.Hour, "Healthy", time.Hour)},
			after: map[string]time.Duration{"a": 0}},
		{name: "thresholds per app, the earliest next", after: map[string]time.Duration{"a": 2 * time.Hour, "b": 10 * time.Minute, "c": time.Hour},
			apps: []inventory.App{app("a", "OutOfSync", time.Hour, "Healthy", time.Hour), app("b", "OutOfSync", time.Hour, "Healthy", time.Hour),
				app("c", "Synced", time.Hour, "Degraded", 15*time.Minute)},
			want: []want{{"b", []string{OutOfSync}, time.Hour}}, next: 45 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			about := map[inventory.Key]bool{}
			for _, n := range tc.about {
				about[inventory.Key{Namespace: "argocd", Name: n}] = true
			}
			alerts, next := Decide(Input{Apps: tc.apps, Now: t0, AboutToSync: about, After: func(a inventory.App) time.Duration {
				if d, ok := tc.after[a.Name]; ok {
					return d
				}
				return after
			}})
			var got []want
			for _, al := range alerts {
				got = append(got, want{al.App.Name, al.States, t0.Sub(al.Since)})
			}
			if d := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); d != "" {
				t.Errorf("alerts (-want +got):\n%s", d)
			}
			var gotNext time.Duration
			if !next.IsZero() {
				gotNext = next.Sub(t0)
			}
			if gotNext != tc.next {
				t.Errorf("next = t0+%v, want t0+%v", gotNext, tc.next)
			}
		})
	}
}
