package app

import (
	"context"
	"fmt"
	"net/url"

	"github.com/fleetwave/fleetwave/internal/preview"
	"github.com/fleetwave/fleetwave/internal/report"
)

// InstanceSource lists the Argo CD instances of a fleet run by several, as the previews use them: each one's
// ports (internal/edge/argocd/livediff's Comparer.Ports of its client), its render settings (its /api/version's
// release, its argocd-cm facts) and its clusters (its cluster list). It is asked once per preview, as a
// ClusterSource is, so that a cluster list can follow the instance; an error fails the preview with it.
type InstanceSource func(ctx context.Context) (map[string]preview.Instance, error)

// Instances is the fleet's instances for WithInstances: which instance holds each app, the instances, and each
// one's UI URL for the comment's links (name → URL; an instance without one gets no links).
type Instances struct {
	Of   preview.InstanceOf
	List InstanceSource
	URLs map[string]string
}

// WithInstances spreads the previews and the merges' plans over several Argo CD instances: every app is held by
// the instance in.Of names, and its live diff, Argo CD render, generators, sync windows, render settings and
// clusters are that instance's (preview.Input.InstanceOf). WithArgoCD, WithSettings and WithClusters stay the
// instance "" (a fleet configured the old way). An app that maps to no instance or to several is an error line of
// the comment and an unplaced app of the plan.
func WithInstances(in Instances) Option { return func(a *App) { a.instances = &in } }

// withInstances fills in's instances for a preview (nothing without WithInstances).
func (a *App) withInstances(ctx context.Context, in *preview.Input) error {
	if a.instances == nil || a.instances.Of == nil {
		return nil
	}
	in.InstanceOf = a.instances.Of
	if a.instances.List == nil {
		return nil
	}
	list, err := a.instances.List(ctx)
	if err != nil {
		return fmt.Errorf("listing Argo CD instances: %w", err)
	}
	in.Instances = list
	return nil
}

// asksArgoCD reports whether a preview of in asks any Argo CD anything.
func asksArgoCD(in preview.Input) bool {
	if !in.ArgoCD.None() {
		return true
	}
	for _, i := range in.Instances {
		if !i.ArgoCD.None() {
			return true
		}
	}
	return false
}

// withoutArgoCD is in with no Argo CD port of any instance: the preview made again when one cannot be read.
// Each instance keeps its render settings and clusters.
func withoutArgoCD(in preview.Input) preview.Input {
	in.ArgoCD = preview.ArgoCD{}
	if in.Instances != nil {
		insts := make(map[string]preview.Instance, len(in.Instances))
		for name, i := range in.Instances {
			i.ArgoCD = preview.ArgoCD{}
			insts[name] = i
		}
		in.Instances = insts
	}
	return in
}

// appURL is an app's page in the Argo CD that holds it (/applications/<app namespace>/<name>), "" when that
// instance's URL is not known.
func (a *App) appURL(ra *report.App) string {
	base := a.argoURL
	if ra.Instance != "" {
		base = ""
		if a.instances != nil {
			base = a.instances.URLs[ra.Instance]
		}
	}
	if base == "" {
		return ""
	}
	return base + "/applications/" + url.PathEscape(ra.Namespace) + "/" + url.PathEscape(ra.Name)
}
