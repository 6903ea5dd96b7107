package inventory

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func filterApps() []App {
	prd := map[string]string{"env": "prd", "region": "eu"}
	stg := map[string]string{"env": "stg", "region": "eu"}
	return []App{
		{Key: Key{Namespace: "argocd", Name: "web-prd"}, Project: "web", ClusterName: "prd-eu", ClusterLabels: prd,
			Labels: map[string]string{"team": "web"}, Revision: "0123abcd", Sync: "Synced", Health: "Healthy"},
		{Key: Key{Instance: "eu", Namespace: "argocd", Name: "web-stg"}, Project: "web", ClusterName: "stg-eu", ClusterLabels: stg,
			Labels: map[string]string{"team": "web"}, Revision: "4567ef01", Sync: "OutOfSync", Health: "Healthy"},
		{Key: Key{Instance: "us", Namespace: "argocd", Name: "db-prd"}, Project: "data", ClusterName: "prd-us",
			ClusterLabels: map[string]string{"env": "prd", "region": "us"}, Revision: "0123abcd", Sync: "Synced", Health: "Degraded"},
	}
}

// TestFilter: each field of a filter, alone and together, as the fleet page's query and status's flags give it.
func TestFilter(t *testing.T) {
	tests := []struct {
		name string
		f    Filter
		want string // names of the apps kept
	}{
		{"nothing: every app", Filter{}, "web-prd web-stg db-prd"},
		{"instance", Filter{Instance: "eu"}, "web-stg"},
		{"instances", Filter{Instance: "eu, us"}, "web-stg db-prd"},
		{"project", Filter{Project: "data"}, "db-prd"},
		{"cluster label", Filter{ClusterLabel: "env=prd"}, "web-prd db-prd"},
		{"cluster labels, set-based", Filter{ClusterLabel: "env=prd,region in (us)"}, "db-prd"},
		{"cluster label absent on the app", Filter{ClusterLabel: "tier=gold"}, ""},
		{"sync, any case", Filter{Sync: "outofsync"}, "web-stg"},
		{"health", Filter{Health: "Degraded,Missing"}, "db-prd"},
		{"revision prefix, any case", Filter{Revision: "0123AB"}, "web-prd db-prd"},
		{"app label selector", Filter{Selector: "team=web"}, "web-prd web-stg"},
		{"app label selector, negated", Filter{Selector: "team!=web"}, "db-prd"},
		{"together", Filter{ClusterLabel: "env=prd", Revision: "0123", Health: "Healthy"}, "web-prd"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := tc.f.Compile()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range m.Select(filterApps()) {
				got = append(got, a.Name)
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("kept %q, want %q", strings.Join(got, " "), tc.want)
			}
		})
	}
}

func TestFilterRefusesABadSelector(t *testing.T) {
	for _, f := range []Filter{{Selector: "env in prd"}, {ClusterLabel: "=prd"}} {
		if _, err := f.Compile(); err == nil || !strings.Contains(err.Error(), "is not a label selector") {
			t.Errorf("%+v: %v", f, err)
		}
	}
}

func TestDrifting(t *testing.T) {
	now := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		a    App
		want bool
	}{
		{"synced and healthy", App{Sync: "Synced", Health: "Healthy", SyncSince: now.Add(-time.Hour)}, false},
		{"out of sync long enough", App{Sync: "OutOfSync", SyncSince: now.Add(-30 * time.Minute)}, true},
		{"out of sync, not yet", App{Sync: "OutOfSync", SyncSince: now.Add(-29 * time.Minute)}, false},
		{"degraded long enough", App{Sync: "Synced", Health: "Degraded", HealthSince: now.Add(-time.Hour)}, true},
		{"out of sync lately, degraded for long", App{Sync: "OutOfSync", SyncSince: now.Add(-time.Minute), Health: "Degraded", HealthSince: now.Add(-time.Hour)}, true},
		{"since unknown", App{Sync: "OutOfSync"}, false},
	}
	for _, tc := range tests {
		if got := tc.a.Drifting(now, 30*time.Minute); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if (App{Sync: "OutOfSync", SyncSince: now.Add(-time.Hour)}).Drifting(now, 0) {
		t.Error("a threshold of 0 marks drift")
	}
}

func TestGroupsBySourceAcrossClusters(t *testing.T) {
	apps := []App{
		{Key: Key{Name: "web-us"}, Source: "https://git/x.git web", ClusterName: "prd-us"},
		{Key: Key{Name: "db"}, ClusterName: "prd-eu"},
		{Key: Key{Name: "web-eu"}, Source: "https://git/x.git web", ClusterName: "prd-eu"},
	}
	var got []string
	for _, g := range Groups(apps) {
		var names []string
		for _, a := range g.Apps {
			names = append(names, a.Name+"@"+a.ClusterShown())
		}
		got = append(got, g.Key+": "+strings.Join(names, ","))
	}
	want := []string{"db: db@prd-eu", "https://git/x.git web: web-eu@prd-eu,web-us@prd-us"}
	if !slices.Equal(got, want) {
		t.Errorf("groups %q, want %q", got, want)
	}
}
