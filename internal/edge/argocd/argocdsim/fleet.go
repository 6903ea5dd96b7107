package argocdsim

import (
	"fmt"
	"strings"
	"time"

	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/health"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Fleet is a YAML description of a simulated Argo CD: refs, clusters, apps (listed or generated) and the
// simulation's timings and fault rates.
//
//	refs: {HEAD: 4f1c…}
//	clusters:
//	  - {name: prd-eu-1, server: https://prd-eu-1.example.com, labels: {env: prd, region: eu-1}}
//	apps:
//	  - {name: web-prd-eu-1, labels: {env: prd}, repoURL: https://git.example/gitops.git, path: apps/web,
//	     targetRevision: HEAD, destination: {name: prd-eu-1, namespace: web}, liveRevision: "0a1b…"}
//	generate:
//	  - {count: 1000, namePrefix: app-, labels: {fleet: bench}, liveRevision: "0a1b…"}
//	simulation: {syncDuration: 2s, reconcileDelay: 50ms, failureRate: 0.01}
type Fleet struct {
	Refs       map[string]string `json:"refs,omitempty"`
	Clusters   []FleetCluster    `json:"clusters,omitempty"`
	Apps       []FleetApp        `json:"apps,omitempty"`
	Generate   []FleetGenerate   `json:"generate,omitempty"`
	Simulation FleetSimulation   `json:"simulation,omitempty"`
}

// FleetCluster is a cluster of the fleet.
type FleetCluster struct {
	Name          string            `json:"name"`
	Server        string            `json:"server"`
	Labels        map[string]string `json:"labels,omitempty"`
	Annotations   map[string]string `json:"annotations,omitempty"`
	ServerVersion string            `json:"serverVersion,omitempty"`
	APIVersions   []string          `json:"apiVersions,omitempty"`
}

// FleetApp is one Application with its seeded live state and behaviour.
type FleetApp struct {
	Name           string                          `json:"name"`
	Namespace      string                          `json:"namespace,omitempty"`
	Project        string                          `json:"project,omitempty"`
	Labels         map[string]string               `json:"labels,omitempty"`
	Annotations    map[string]string               `json:"annotations,omitempty"`
	RepoURL        string                          `json:"repoURL,omitempty"`
	Path           string                          `json:"path,omitempty"`
	TargetRevision string                          `json:"targetRevision,omitempty"`
	Sources        []v1alpha1.ApplicationSource    `json:"sources,omitempty"`
	Destination    v1alpha1.ApplicationDestination `json:"destination,omitempty"`
	Automated      bool                            `json:"automated,omitempty"`
	LiveRevision   string                          `json:"liveRevision,omitempty"`
	LiveRevisions  []string                        `json:"liveRevisions,omitempty"`
	Health         health.HealthStatusCode         `json:"health,omitempty"`
	SyncDuration   metav1.Duration                 `json:"syncDuration,omitempty"`
	Fail           bool                            `json:"fail,omitempty"`
	FailMessage    string                          `json:"failMessage,omitempty"`
	Degrade        bool                            `json:"degrade,omitempty"`
	SyncPolicy     *v1alpha1.SyncPolicy            `json:"syncPolicy,omitempty"`
}

// FleetGenerate makes Count apps named NamePrefix0001…, spread round-robin over the clusters.
type FleetGenerate struct {
	Count          int               `json:"count"`
	NamePrefix     string            `json:"namePrefix,omitempty"`
	Labels         map[string]string `json:"labels,omitempty"`
	Project        string            `json:"project,omitempty"`
	RepoURL        string            `json:"repoURL,omitempty"`
	Path           string            `json:"path,omitempty"`
	TargetRevision string            `json:"targetRevision,omitempty"`
	Namespace      string            `json:"namespace,omitempty"`
	LiveRevision   string            `json:"liveRevision,omitempty"`
	Automated      bool              `json:"automated,omitempty"`
}

// FleetSimulation holds Config's timings and rates.
type FleetSimulation struct {
	Seed                uint64          `json:"seed,omitempty"`
	Token               string          `json:"token,omitempty"`
	SyncDuration        metav1.Duration `json:"syncDuration,omitempty"`
	OperationStartDelay metav1.Duration `json:"operationStartDelay,omitempty"`
	ReconcileDelay      metav1.Duration `json:"reconcileDelay,omitempty"`
	ProgressingFor      metav1.Duration `json:"progressingFor,omitempty"`
	ResyncPeriod        metav1.Duration `json:"resyncPeriod,omitempty"`
	FailureRate         float64         `json:"failureRate,omitempty"`
	DegradationRate     float64         `json:"degradationRate,omitempty"`
	APILatency          metav1.Duration `json:"apiLatency,omitempty"`
	LatencySpikeRate    float64         `json:"latencySpikeRate,omitempty"`
	LatencySpike        metav1.Duration `json:"latencySpike,omitempty"`
	ErrorRate           float64         `json:"errorRate,omitempty"`
	LostResponseRate    float64         `json:"lostResponseRate,omitempty"`
	StreamDropMean      metav1.Duration `json:"streamDropMean,omitempty"`
	StaleStatusFor      metav1.Duration `json:"staleStatusFor,omitempty"`
}

// ParseFleet reads a fleet file strictly (unknown keys are errors).
func ParseFleet(data []byte) (*Fleet, error) {
	var f Fleet
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, fmt.Errorf("parsing fleet: %w", err)
	}
	return &f, nil
}

// Apply copies the fleet's simulation settings into cfg (settings left zero in the file keep cfg's value).
func (f *Fleet) Apply(cfg Config) Config {
	sim := f.Simulation
	if sim.Token != "" {
		cfg.Token = sim.Token
	}
	if sim.Seed != 0 {
		cfg.Seed = sim.Seed
	}
	for _, d := range []struct {
		dst *time.Duration
		v   metav1.Duration
	}{
		{&cfg.SyncDuration, sim.SyncDuration}, {&cfg.OperationStartDelay, sim.OperationStartDelay},
		{&cfg.ReconcileDelay, sim.ReconcileDelay}, {&cfg.ProgressingFor, sim.ProgressingFor},
		{&cfg.ResyncPeriod, sim.ResyncPeriod}, {&cfg.APILatency, sim.APILatency},
		{&cfg.LatencySpike, sim.LatencySpike}, {&cfg.StreamDropMean, sim.StreamDropMean},
		{&cfg.StaleStatusFor, sim.StaleStatusFor},
	} {
		if d.v.Duration != 0 {
			*d.dst = d.v.Duration
		}
	}
	for _, r := range []struct {
		dst *float64
		v   float64
	}{
		{&cfg.FailureRate, sim.FailureRate}, {&cfg.DegradationRate, sim.DegradationRate},
		{&cfg.LatencySpikeRate, sim.LatencySpikeRate}, {&cfg.ErrorRate, sim.ErrorRate},
		{&cfg.LostResponseRate, sim.LostResponseRate},
	} {
		if r.v != 0 {
			*r.dst = r.v
		}
	}
	return cfg
}

// Seed loads the fleet's refs, clusters and apps into the server.
func (s *Server) Seed(f *Fleet) error {
	for ref, sha := range f.Refs {
		s.SetRef(ref, sha)
	}
	for _, c := range f.Clusters {
		if c.Name == "" || c.Server == "" {
			return fmt.Errorf("seeding fleet: a cluster needs a name and a server")
		}
		s.AddCluster(v1alpha1.Cluster{
			Name: c.Name, Server: c.Server, Labels: c.Labels, Annotations: c.Annotations,
			Info: v1alpha1.ClusterInfo{ServerVersion: c.ServerVersion, APIVersions: c.APIVersions},
		})
	}
	for _, a := range f.Apps {
		if err := s.seedApp(a); err != nil {
			return err
		}
	}
	for gi, g := range f.Generate {
		if g.Count <= 0 {
			return fmt.Errorf("seeding fleet: generate[%d]: count must be positive", gi)
		}
		prefix := g.NamePrefix
		if prefix == "" {
			prefix = "app-"
		}
		for i := 1; i <= g.Count; i++ {
			a := FleetApp{
				Name: fmt.Sprintf("%s%04d", prefix, i), Project: g.Project, Labels: g.Labels,
				RepoURL: g.RepoURL, Path: g.Path, TargetRevision: g.TargetRevision, LiveRevision: g.LiveRevision,
				Automated: g.Automated,
				Destination: v1alpha1.ApplicationDestination{
					Server: v1alpha1.KubernetesInternalAPIServerAddr, Namespace: firstNonEmpty(g.Namespace, "default"),
				},
			}
			if len(f.Clusters) > 0 {
				c := f.Clusters[(i-1)%len(f.Clusters)]
				a.Destination = v1alpha1.ApplicationDestination{Name: c.Name, Namespace: a.Destination.Namespace}
			}
			if err := s.seedApp(a); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Server) seedApp(fa FleetApp) error {
	if fa.Name == "" {
		return fmt.Errorf("seeding fleet: an app needs a name")
	}
	app := &v1alpha1.Application{}
	app.Name, app.Namespace = fa.Name, fa.Namespace
	app.Labels, app.Annotations = fa.Labels, fa.Annotations
	app.Spec.Project = fa.Project
	app.Spec.Destination = fa.Destination
	if len(fa.Sources) > 0 {
		app.Spec.Sources = fa.Sources
	} else {
		app.Spec.Source = &v1alpha1.ApplicationSource{
			RepoURL: firstNonEmpty(fa.RepoURL, "https://git.example.com/fleet/gitops.git"),
			Path:    firstNonEmpty(fa.Path, "apps/"+strings.TrimSuffix(fa.Name, "-")), TargetRevision: fa.TargetRevision,
		}
	}
	app.Spec.SyncPolicy = fa.SyncPolicy
	if fa.Automated {
		if app.Spec.SyncPolicy == nil {
			app.Spec.SyncPolicy = &v1alpha1.SyncPolicy{}
		}
		app.Spec.SyncPolicy.Automated = &v1alpha1.SyncPolicyAutomated{}
	}
	live := fa.LiveRevisions
	if len(live) == 0 && fa.LiveRevision != "" {
		live = []string{fa.LiveRevision}
	}
	return s.AddApp(app, AppOptions{
		LiveRevisions: live, Health: fa.Health,
		Behavior: Behavior{SyncDuration: fa.SyncDuration.Duration, Fail: fa.Fail, FailMessage: fa.FailMessage, Degrade: fa.Degrade},
	})
}
