package argocd_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
)

func window(kind, schedule, duration string, manual bool) *v1alpha1.InlineSyncWindow {
	return &v1alpha1.InlineSyncWindow{Kind: kind, Schedule: schedule, Duration: duration, ManualSync: manual}
}

// TestEvaluateWindows evaluates windows as Argo CD does at a fixed instant, Friday 2026-11-27 10:30 UTC, and finds
// when a manual sync is next allowed.
func TestEvaluateWindows(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 30, 0, 0, time.UTC)
	at := func(h, m, s int) time.Time { return time.Date(2026, 11, 27, h, m, s, 0, time.UTC) }
	berlin := window("deny", "0 11 * * *", "1h", false)
	berlin.TimeZone = "Europe/Berlin" // 11:00 in Berlin is 10:00 UTC in November
	tests := []struct {
		name    string
		windows v1alpha1.SyncWindows
		now     time.Time
		blocked bool
		reason  string
		until   time.Time
		err     bool
	}{
		{name: "no window allows", now: now},
		{name: "active deny window blocks until it ends", now: now,
			windows: v1alpha1.SyncWindows{window("deny", "0 10 * * *", "1h", false)},
			blocked: true, reason: "deny window '0 10 * * *' (1h)", until: at(11, 0, 0)},
		{name: "active deny window with manualSync lets a manual sync through", now: now,
			windows: v1alpha1.SyncWindows{window("deny", "0 10 * * *", "1h", true)}},
		{name: "one active deny window without manualSync is enough to block", now: now,
			windows: v1alpha1.SyncWindows{window("deny", "0 10 * * *", "1h", true), window("deny", "15 10 * * *", "30m", false)},
			blocked: true, reason: "deny window '15 10 * * *' (30m)", until: at(10, 45, 0)},
		{name: "inactive deny window allows", now: now,
			windows: v1alpha1.SyncWindows{window("deny", "0 22 * * *", "1h", false)}},
		{name: "missing allow window blocks until the next one opens", now: now,
			windows: v1alpha1.SyncWindows{window("allow", "0 22 * * *", "2h", false)},
			blocked: true, reason: "outside allow window '0 22 * * *' (2h)", until: at(22, 0, 1)},
		{name: "inactive allow window with manualSync lets a manual sync through", now: now,
			windows: v1alpha1.SyncWindows{window("allow", "0 22 * * *", "2h", true)}},
		{name: "active allow window allows whatever inactive deny windows say", now: now,
			windows: v1alpha1.SyncWindows{window("allow", "0 10 * * *", "1h", false), window("deny", "0 22 * * *", "1h", false)}},
		{name: "active deny wins over an active allow, open when the deny ends inside the allow", now: now,
			windows: v1alpha1.SyncWindows{window("allow", "0 10 * * *", "2h", false), window("deny", "0 10 * * *", "1h", false)},
			blocked: true, reason: "deny window '0 10 * * *' (1h)", until: at(11, 0, 0)},
		{name: "a deny window covering every allow window never opens", now: now,
			windows: v1alpha1.SyncWindows{window("allow", "0 10 * * *", "1h", false), window("deny", "0 10 * * *", "1h", false)},
			blocked: true, reason: "deny window '0 10 * * *' (1h)"},
		{name: "time zone shifts the schedule", now: now, windows: v1alpha1.SyncWindows{berlin},
			blocked: true, reason: "deny window '0 11 * * *' (1h Europe/Berlin)", until: at(11, 0, 0)},
		{name: "a window is not active at its first second (Argo CD's open interval)", now: at(10, 0, 0),
			windows: v1alpha1.SyncWindows{window("deny", "0 10 * * *", "1h", false)}},
		{name: "nor at its end", now: at(11, 0, 0),
			windows: v1alpha1.SyncWindows{window("deny", "0 10 * * *", "1h", false)}},
		{name: "weekday schedule: Friday's deny holds until Monday's allow", now: now,
			windows: v1alpha1.SyncWindows{window("deny", "0 0 * * 5", "24h", false), window("allow", "0 8 * * 1-4", "10h", false)},
			blocked: true, reason: "deny window '0 0 * * 5' (24h)", until: time.Date(2026, 11, 30, 8, 0, 1, 0, time.UTC)},
		{name: "an unknown time zone counts as UTC", now: now,
			windows: v1alpha1.SyncWindows{{Kind: "deny", Schedule: "0 10 * * *", Duration: "1h", TimeZone: "Not/AZone"}},
			blocked: true, reason: "deny window '0 10 * * *' (1h Not/AZone)", until: at(11, 0, 0)},
		{name: "unparsable schedule blocks every sync", now: now,
			windows: v1alpha1.SyncWindows{window("deny", "every day", "1h", false)}, blocked: true, err: true},
		{name: "unparsable duration blocks every sync", now: now,
			windows: v1alpha1.SyncWindows{window("allow", "0 10 * * *", "an hour", false)}, blocked: true, err: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := argocd.EvaluateWindows(tc.windows, tc.now)
			if h.Blocked != tc.blocked || (h.Err != nil) != tc.err {
				t.Fatalf("blocked %v, err %v; want blocked %v, err %v", h.Blocked, h.Err, tc.blocked, tc.err)
			}
			if tc.err {
				return
			}
			if h.Reason != tc.reason {
				t.Errorf("reason %q, want %q", h.Reason, tc.reason)
			}
			if !h.Until.Equal(tc.until) {
				t.Errorf("until %v, want %v", h.Until, tc.until)
			}
			if !h.Until.IsZero() {
				if ok, _ := argocd.CanSyncAt(tc.windows, h.Until, true); !ok {
					t.Errorf("a sync is not allowed at until %v", h.Until)
				}
				if ok, _ := argocd.CanSyncAt(tc.windows, h.Until.Add(-time.Second), true); ok {
					t.Errorf("a sync is already allowed a second before until %v", h.Until)
				}
			}
		})
	}
}

// TestCanSyncAtMatchesArgoCD compares CanSyncAt with Argo CD's own v1alpha1.SyncWindows.CanSync, which reads the
// real clock, over random windows placed around the current time (in several time zones), manual and automated.
func TestCanSyncAtMatchesArgoCD(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	zones := []string{"", "UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata"}
	kinds := []string{"allow", "deny"}
	durations := []string{"1m", "10m", "45m", "1h", "3h", "25h"}
	blockedSeen, allowedSeen := 0, 0
	for i := 0; i < 400; i++ {
		for attempt := 0; ; attempt++ {
			before := time.Now()
			var ws v1alpha1.SyncWindows
			for range 1 + rng.IntN(3) {
				tz := zones[rng.IntN(len(zones))]
				loc, err := time.LoadLocation(tz)
				if err != nil {
					loc = time.UTC
				}
				start := before.In(loc).Add(time.Duration(rng.IntN(181)-120) * time.Minute)
				w := window(kinds[rng.IntN(2)], fmt.Sprintf("%d %d * * *", start.Minute(), start.Hour()),
					durations[rng.IntN(len(durations))], rng.IntN(2) == 0)
				w.TimeZone = tz
				ws = append(ws, w)
			}
			for _, manual := range []bool{true, false} {
				want, werr := ws.CanSync(manual, nil) // nil: a new sync, as the API server and the automated-sync check ask
				got, gerr := argocd.CanSyncAt(ws, time.Now(), manual)
				if time.Now().Truncate(time.Minute) != before.Truncate(time.Minute) {
					break // a minute boundary passed between the evaluations: draw again
				}
				if got != want || (gerr != nil) != (werr != nil) {
					t.Fatalf("windows %s, manual %v: CanSyncAt %v (%v), Argo CD %v (%v)", describe(ws), manual, got, gerr, want, werr)
				}
				if got {
					allowedSeen++
				} else {
					blockedSeen++
				}
			}
			if time.Now().Truncate(time.Minute) == before.Truncate(time.Minute) || attempt > 3 {
				break
			}
		}
	}
	if blockedSeen < 50 || allowedSeen < 50 {
		t.Fatalf("the random windows do not exercise both answers: %d blocked, %d allowed", blockedSeen, allowedSeen)
	}
}

func describe(ws v1alpha1.SyncWindows) string {
	s := ""
	for _, w := range ws {
		s += fmt.Sprintf("[%s %q %s manual=%v tz=%q] ", w.Kind, w.Schedule, w.Duration, w.ManualSync, w.TimeZone)
	}
	return s
}

// TestAppWindows: which windows apply to an app is Argo CD's Matches (applications, clusters, namespaces, globs).
func TestAppWindows(t *testing.T) {
	app := &v1alpha1.Application{}
	app.Name = "web-prd-eu-1"
	app.Spec.Destination = v1alpha1.ApplicationDestination{Name: "prd-eu-1", Namespace: "web"}
	byApp := window("deny", "0 10 * * *", "1h", false)
	byApp.Applications = []string{"web-*"}
	byCluster := window("deny", "0 11 * * *", "1h", false)
	byCluster.Clusters = []string{"stg-*"}
	byNS := window("allow", "0 12 * * *", "1h", false)
	byNS.Namespaces = []string{"web"}
	got := argocd.AppWindows(v1alpha1.SyncWindows{byApp, byCluster, byNS}, app)
	if len(got) != 2 || got[0] != byApp || got[1] != byNS {
		t.Fatalf("matched %s, want the application and namespace windows", describe(got))
	}
}
