package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/fleetwave/fleetwave/internal/app"
	"github.com/fleetwave/fleetwave/internal/autosync"
	"github.com/fleetwave/fleetwave/internal/discover"
	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/instances"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/livediff"
	"github.com/fleetwave/fleetwave/internal/preview"
	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/report"
	"github.com/fleetwave/fleetwave/internal/rollout"
)

// This file wires a fleet of several Argo CD instances (an instances file, docs/instances.md) into the commands
// and serve: one client per instance, each instance's preview ports, render settings and clusters, the resolver
// of which instance holds an app, and the executor's instances and budgets.

// fleet is the instances of an instances file with one Argo CD client each.
type fleet struct {
	set     *instances.Set
	clients map[string]*argocd.Client

	mu         sync.Mutex
	unresolved map[string]bool // "<namespace>/<name>" of the apps instanceOf found no single instance for
}

// newFleet builds one client per instance of set; wrap, when not nil, wraps each client's transport (metrics,
// labelled by the instance's name).
func newFleet(set *instances.Set, wrap func(instance string, rt http.RoundTripper) http.RoundTripper) (*fleet, error) {
	clients, err := set.Clients(wrap)
	if err != nil {
		return nil, err
	}
	return &fleet{set: set, clients: clients}, nil
}

// instanceOf adapts the Set's rules (instances.Set.Resolve) to the preview: an app is matched by the path of the
// file that declares it (or its ApplicationSet) in the repository, its labels, project and destination. The
// children of an app-of-apps and an ApplicationSet's apps take their parent's instance (internal/discover).
func (f *fleet) instanceOf() preview.InstanceOf {
	return func(a discover.App) (string, error) {
		name, err := f.set.Resolve(resolveApp(a))
		if err != nil {
			f.mu.Lock()
			if f.unresolved == nil {
				f.unresolved = map[string]bool{}
			}
			f.unresolved[a.Key] = true
			f.mu.Unlock()
		}
		return name, err
	}
}

// onlyUnplaced reports whether the preview's only errors are apps that map to no instance or to several: the
// plan is then incomplete (exit 1, as plan's other incomplete plans), not a render failure.
func (f *fleet) onlyUnplaced(rep *report.Report) bool {
	if rep.NoSourceInRepo || len(rep.Problems) > 0 || rep.UnevaluatedChanged() > 0 || rep.Plan == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, a := range rep.Apps {
		if a.Status != report.StatusError {
			continue
		}
		if !f.unresolved[a.Key()] {
			return false
		}
		n++
	}
	return n > 0
}

// resolveApp is what the instances file's rules look at of a discovered app.
func resolveApp(a discover.App) instances.App {
	out := instances.App{Path: a.File}
	if app := a.App; app != nil {
		out.Namespace, out.Name, out.Project, out.Labels = app.Namespace, app.Name, app.Spec.Project, app.Labels
		out.DestinationName, out.DestinationServer = app.Spec.Destination.Name, app.Spec.Destination.Server
	}
	return out
}

// previewOptions say how previewInstances builds each instance's settings and clusters.
type previewOptions struct {
	// over are the settings given here (a settings file, --argocd-version): they win over what each instance
	// reports, as FLEETWAVE_RENDER_SETTINGS does over the one Argo CD's.
	over render.Settings
	// listClusters: each instance's clusters come from its Argo CD (no --clusters file).
	listClusters bool
	log          *slog.Logger
}

// previewInstances asks each instance for what the preview needs of it: the ports of its live diff and remote
// renders, its render settings (its release from /api/version, installation ID, tracking and Kustomize build
// options from /api/v1/settings; an instance that does not say keeps the defaults, with a warning) and, with
// listClusters, its clusters (an error: the command cannot place its apps).
func (f *fleet) previewInstances(ctx context.Context, o previewOptions) (map[string]preview.Instance, error) {
	out := make(map[string]preview.Instance, len(f.clients))
	for _, in := range f.set.Instances() {
		c := f.clients[in.Name]
		log := o.log
		if log != nil {
			log = log.With(slog.String("instance", in.Name))
		}
		s := instanceSettings(ctx, c, log)
		if in.Agent { // what the agents' Argo CD computes tracking ids from: the file's, not the principal's settings
			s.AgentNamespace, s.AgentDestinationMapping = in.AgentNamespace, in.AgentDestinationMapping
		}
		s = overlaySettings(s, o.over)
		pi := preview.Instance{ArgoCD: livediff.New(c, livediff.Options{Server: in.URL}).Ports(), Settings: &s}
		if o.listClusters {
			cs, err := argoClusters(c)(ctx)
			if err != nil {
				return nil, fmt.Errorf("argo cd instance %s: %w", in.Name, err)
			}
			if cs == nil {
				cs = []discover.Cluster{}
			}
			pi.Clusters = cs
		}
		out[in.Name] = pi
	}
	return out, nil
}

// instanceSettings are the render settings an Argo CD reports of itself: its release and its settings.
func instanceSettings(ctx context.Context, c *argocd.Client, log *slog.Logger) render.Settings {
	s := render.Settings{ArgoCDVersion: detectArgoCDVersion(ctx, c, log)}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := c.Settings(sctx)
	if err != nil {
		if log != nil {
			log.Warn("rendering with the default tracking and installation settings: Argo CD's settings are unknown", slog.Any("error", err))
		}
		return s
	}
	s.AppLabelKey, s.TrackingMethod, s.InstallationID = st.AppLabelKey, st.TrackingMethod, st.InstallationID
	s.ControlPlaneNamespace = st.ControllerNamespace
	if st.KustomizeOptions != nil {
		s.KustomizeBuildOptions = st.KustomizeOptions.BuildOptions
	}
	return s
}

// executorOptions are the rollout executor's instances (each app synced through its own), their budgets
// (maxSyncs), and for an argocd-agent principal (agent: true) the re-request of a sync the principal accepted and
// dropped before the agent started it (rollout.DefaultLostSyncRetries; docs/instances.md).
func (f *fleet) executorOptions(wrap func(name string, c *argocd.Client) rollout.ArgoCD) []rollout.Option {
	argos := make(map[string]rollout.ArgoCD, len(f.clients))
	budgets := make(map[string]int, len(f.clients))
	var agents []rollout.Option
	for _, in := range f.set.Instances() {
		var a rollout.ArgoCD = f.clients[in.Name]
		if wrap != nil {
			a = wrap(in.Name, f.clients[in.Name])
		}
		argos[in.Name] = a
		budgets[in.Name] = in.MaxSyncs
		if in.Agent {
			agents = append(agents, rollout.WithLostSyncRetries(in.Name, rollout.DefaultLostSyncRetries))
		}
	}
	return append([]rollout.Option{rollout.WithInstances(argos), rollout.WithInstanceBudgets(budgets)}, agents...)
}

// holder holds automated sync off on each app's own instance.
func (f *fleet) holder(st autosync.Store) *autosync.Holder {
	m := make(map[string]autosync.ArgoCD, len(f.clients))
	for name, c := range f.clients {
		m[name] = c
	}
	return &autosync.Holder{Store: st, Instances: m}
}

// appInstances are the instances as the App's previews use them: which instance holds each app, each one's
// ports, settings and clusters (asked again for every preview, as the one Argo CD's clusters are) and its URL
// for the comment's links.
func (f *fleet) appInstances(over render.Settings, log *slog.Logger) app.Instances {
	urls := make(map[string]string, len(f.clients))
	for _, in := range f.set.Instances() {
		urls[in.Name] = in.URL
	}
	return app.Instances{
		Of: f.instanceOf(),
		List: func(ctx context.Context) (map[string]preview.Instance, error) {
			return f.previewInstances(ctx, previewOptions{over: over, listClusters: true, log: log})
		},
		URLs: urls,
	}
}
