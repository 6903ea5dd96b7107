package metrics

import (
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetwave/fleetwave/internal/drift"
)

// MaxDriftProjects caps the project label of fleetwave_drift_apps: the first projects seen keep their name,
// the others are counted as "other", so a fleet of many projects cannot grow the series without bound.
const MaxDriftProjects = 20

var driftDesc = prometheus.NewDesc(namespace+"_drift_apps",
	"Apps in lasting drift (OutOfSync or Degraded past the threshold, outside a rollout about to sync them), by Argo CD instance, project and state; an app in both states counts in each.",
	[]string{"instance", "project", "state"}, nil)

// Drift exposes the apps in lasting drift (alerts, read at each scrape: the drift watcher's last decision) by
// instance, project and state, never by app. instances are the configured Argo CD instances ("" for the one of
// FLEETWAVE_ARGOCD_URL); an app of any other counts as instance "other". A series once shown stays, at 0 when
// its apps converge.
func (m *Metrics) Drift(alerts func() []drift.Alert, instances []string) {
	c := &driftCollector{alerts: alerts, instances: map[string]bool{}, projects: map[string]bool{}, seen: map[driftLabels]bool{}}
	for _, in := range instances {
		c.instances[in] = true
	}
	m.reg.MustRegister(c)
}

type driftLabels struct{ instance, project, state string }

type driftCollector struct {
	alerts    func() []drift.Alert
	instances map[string]bool

	mu       sync.Mutex
	projects map[string]bool      // the projects admitted to the label, at most MaxDriftProjects
	seen     map[driftLabels]bool // every series shown so far
}

func (c *driftCollector) Describe(ch chan<- *prometheus.Desc) { ch <- driftDesc }

func (c *driftCollector) Collect(ch chan<- prometheus.Metric) {
	alerts := c.alerts()
	// Projects in a stable order, so that which ones are admitted does not depend on the order of the alerts.
	sort.SliceStable(alerts, func(i, j int) bool { return alerts[i].App.Project < alerts[j].App.Project })
	c.mu.Lock()
	defer c.mu.Unlock()
	counts := map[driftLabels]int{}
	for _, al := range alerts {
		l := driftLabels{instance: al.App.Instance, project: al.App.Project}
		if !c.instances[l.instance] {
			l.instance = "other"
		}
		if !c.projects[l.project] {
			if len(c.projects) < MaxDriftProjects {
				c.projects[l.project] = true
			} else {
				l.project = "other"
			}
		}
		for _, st := range al.States {
			l.state = st
			counts[l]++
			c.seen[l] = true
		}
	}
	for l := range c.seen {
		ch <- prometheus.MustNewConstMetric(driftDesc, prometheus.GaugeValue, float64(counts[l]), l.instance, l.project, l.state)
	}
}
