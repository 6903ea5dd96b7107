package inventory

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
)

// Filter selects apps: the fleet page's query (/fleet/apps?project=…) and `fleetwave status`'s flags are both
// read into one, so that a filter means the same in both. Every field given must hold; a field left "" holds
// for every app. Instance, Project, Sync and Health take several values separated by commas (any of them);
// Sync and Health ignore case.
type Filter struct {
	// Selector is a label selector over the Application's own labels, as Argo CD's --selector
	// ("env=prd,region in (eu-1,eu-2)").
	Selector string
	// Instance names the Argo CD instances. The one instance of a fleet configured with FLEETWAVE_ARGOCD_URL is
	// named "", which is also "every instance": it is the only one of such a fleet.
	Instance string
	Project  string
	// ClusterLabel is a label selector over the labels of the app's destination cluster ("env=prd").
	ClusterLabel string
	Sync         string
	Health       string
	// Revision is the start of the revision the app runs (a short SHA, a tag), ignoring case.
	Revision string
}

// IsZero reports whether the filter holds for every app.
func (f Filter) IsZero() bool { return f == Filter{} }

// Matcher is a compiled Filter.
type Matcher struct {
	selector, clusters      labels.Selector
	instance, project       []string
	sync, health            []string
	revision                string
	anySelector, anyCluster bool
}

// Compile checks the filter and returns its matcher. The error names the field and what is wrong with it.
func (f Filter) Compile() (*Matcher, error) {
	m := &Matcher{instance: list(f.Instance, false), project: list(f.Project, false), sync: list(f.Sync, true),
		health: list(f.Health, true), revision: strings.ToLower(strings.TrimSpace(f.Revision))}
	var err error
	if m.selector, err = selector("selector", f.Selector); err != nil {
		return nil, err
	}
	if m.clusters, err = selector("cluster label", f.ClusterLabel); err != nil {
		return nil, err
	}
	m.anySelector, m.anyCluster = m.selector.Empty(), m.clusters.Empty()
	return m, nil
}

func selector(what, s string) (labels.Selector, error) {
	if strings.TrimSpace(s) == "" {
		return labels.Everything(), nil
	}
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%s %q is not a label selector (key=value, key!=value, key in (a,b), key, !key): %v", what, s, err)
	}
	return sel, nil
}

func list(s string, fold bool) []string {
	var out []string
	for v := range strings.SplitSeq(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			if fold {
				v = strings.ToLower(v)
			}
			out = append(out, v)
		}
	}
	return out
}

func oneOf(vs []string, v string, fold bool) bool {
	if len(vs) == 0 {
		return true
	}
	if fold {
		v = strings.ToLower(v)
	}
	return slices.Contains(vs, v)
}

// Match reports whether a holds every condition of the filter.
func (m *Matcher) Match(a App) bool {
	return oneOf(m.instance, a.Instance, false) && oneOf(m.project, a.Project, false) && oneOf(m.sync, a.Sync, true) &&
		oneOf(m.health, a.Health, true) &&
		(m.revision == "" || strings.HasPrefix(strings.ToLower(a.Revision), m.revision)) &&
		(m.anySelector || m.selector.Matches(labels.Set(a.Labels))) &&
		(m.anyCluster || m.clusters.Matches(labels.Set(a.ClusterLabels)))
}

// Select returns the apps m matches, in their order.
func (m *Matcher) Select(apps []App) []App {
	out := make([]App, 0, len(apps))
	for _, a := range apps {
		if m.Match(a) {
			out = append(out, a)
		}
	}
	return out
}

// ClusterShown is how the app's cluster is shown: its name in Argo CD where known, else its server URL.
func (a App) ClusterShown() string { return cmp.Or(a.ClusterName, a.Cluster) }

// DriftSince is since when the app has been OutOfSync or Degraded (the earlier of the two when both), zero
// when it is neither or the time is unknown.
func (a App) DriftSince() time.Time {
	var t time.Time
	if a.Sync == "OutOfSync" && !a.SyncSince.IsZero() {
		t = a.SyncSince
	}
	if a.Health == "Degraded" && !a.HealthSince.IsZero() && (t.IsZero() || a.HealthSince.Before(t)) {
		t = a.HealthSince
	}
	return t
}

// Drifting reports whether the app has been OutOfSync or Degraded for after or longer at now (lasting drift);
// after <= 0 never holds.
func (a App) Drifting(now time.Time, after time.Duration) bool {
	s := a.DriftSince()
	return after > 0 && !s.IsZero() && now.Sub(s) >= after
}

// GroupKey is what groups the apps that deploy the same thing to several clusters: the app's source (its
// repository and path or chart), else its name.
func (a App) GroupKey() string { return cmp.Or(a.Source, a.Name) }

// Group is the apps of one GroupKey.
type Group struct {
	Key  string
	Apps []App
}

// Groups groups apps by GroupKey: groups sorted by key, each group's apps by cluster, instance, namespace and
// name.
func Groups(apps []App) []Group {
	sorted := slices.Clone(apps)
	slices.SortFunc(sorted, func(a, b App) int {
		return cmp.Or(cmp.Compare(a.GroupKey(), b.GroupKey()), cmp.Compare(a.ClusterShown(), b.ClusterShown()), a.compare(b.Key))
	})
	var out []Group
	for _, a := range sorted {
		if k := a.GroupKey(); len(out) == 0 || out[len(out)-1].Key != k {
			out = append(out, Group{Key: k})
		}
		g := &out[len(out)-1]
		g.Apps = append(g.Apps, a)
	}
	return out
}
