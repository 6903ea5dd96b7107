package preview

import (
	"fmt"

	"github.com/fleetwave/fleetwave/internal/discover"
	"github.com/fleetwave/fleetwave/internal/render"
)

// InstanceOf says which Argo CD instance holds an app of a fleet run by several (Input.InstanceOf): its name, or a
// one-line error when the app maps to no instance or to several. Asked once per app as discovery finds it (an app
// an ApplicationSet generates is held by the set's instance, a child of an app-of-apps by its parent's).
type InstanceOf func(discover.App) (string, error)

// Instance is one Argo CD instance of a fleet run by several, as the preview uses it (Input.Instances).
type Instance struct {
	// ArgoCD are its ports: the live diff, remote renders, ApplicationSet generators and sync windows of its
	// apps go to them, never to another instance's.
	ArgoCD ArgoCD
	// Settings are its render settings (its Argo CD version as its /api/version says, installation ID, tracking
	// method and instance label key, Kustomize build options); nil: Input.Settings. Revision is set per side.
	Settings *render.Settings
	// Clusters are its destination clusters (its Argo CD's cluster list, with each cluster's Kubernetes version
	// and API list); nil: Input.Clusters.
	Clusters []discover.Cluster
}

// instance is what the pipeline uses of one instance: its ports and its render settings (defaults filled).
type instance struct {
	argocd   ArgoCD
	settings render.Settings
	clusters bool // it lists its own clusters (Instance.Clusters): its apps' destinations resolve there
}

// instances are the fleet's instances by name, "" (Input.ArgoCD, Input.Settings) always among them.
type instances map[string]*instance

func newInstances(in Input) instances {
	out := instances{"": {argocd: in.ArgoCD, settings: in.Settings.WithDefaults()}}
	for name, i := range in.Instances {
		s := in.Settings
		if i.Settings != nil {
			s = *i.Settings
		}
		out[name] = &instance{argocd: i.ArgoCD, settings: s.WithDefaults(), clusters: i.Clusters != nil}
	}
	return out
}

// of is the instance an app is held by: "" when it has none (an app with discover.App.InstanceErr is never
// rendered, compared or generated).
func (is instances) of(a *discover.App) *instance {
	if i, ok := is[a.Instance]; ok {
		return i
	}
	return is[""]
}

// live reports whether any instance compares live state.
func (is instances) live() bool {
	for _, i := range is {
		if i.argocd.Live != nil {
			return true
		}
	}
	return false
}

// windows reports whether any instance reads sync windows.
func (is instances) windows() bool {
	for _, i := range is {
		if i.argocd.Windows != nil {
			return true
		}
	}
	return false
}

// windowReader is the sync-window reader of the named instance (nil: none).
func (is instances) windowReader(name string) SyncWindowReader {
	if i, ok := is[name]; ok {
		return i.argocd.Windows
	}
	return nil
}

// resolver is discovery's instance function for in: in.InstanceOf, refusing an instance that is not configured;
// nil without one (a fleet of one Argo CD: every app's instance is "").
func resolver(in Input) discover.InstanceFunc {
	if in.InstanceOf == nil {
		return nil
	}
	return func(a discover.App) (string, error) {
		name, err := in.InstanceOf(a)
		if err != nil {
			return "", err
		}
		if _, ok := in.Instances[name]; !ok && name != "" {
			return "", fmt.Errorf("instance %q is not configured", name)
		}
		return name, nil
	}
}

// instanceClusters are the instances' own cluster lists, for discovery (discover.Options.InstanceClusters).
func instanceClusters(in Input) map[string][]discover.Cluster {
	var out map[string][]discover.Cluster
	for name, i := range in.Instances {
		if i.Clusters == nil {
			continue
		}
		if out == nil {
			out = map[string][]discover.Cluster{}
		}
		out[name] = i.Clusters
	}
	return out
}
