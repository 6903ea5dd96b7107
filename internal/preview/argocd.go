package preview

import (
	"context"
	"errors"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetwave/fleetwave/internal/report"
)

// ArgoCD is what the preview asks of Argo CD, one port per role; a nil port is a role Argo CD does not serve
// here. internal/edge/argocd/livediff's Comparer serves all four (Comparer.Ports).
type ArgoCD struct {
	// Live compares the affected apps' renders with their live state; each compared app gets report.App.Live.
	// Not asked with Input.PlanOnly.
	Live LiveComparer
	// Remote renders the apps only Argo CD can render (a config-management plugin, a source fleetwave does not
	// fetch); nil: they are reported as not rendered.
	Remote RemoteRenderer
	// AppSets generates the ApplicationSets whose generators need a live service; nil: they are reported
	// unevaluated.
	AppSets AppSetGenerator
	// Windows reads the AppProjects' sync windows: the plan says which of its waves they would hold now.
	Windows SyncWindowReader
}

// None reports that no role is served: the preview asks Argo CD nothing.
func (a ArgoCD) None() bool {
	return a.Live == nil && a.Remote == nil && a.AppSets == nil && a.Windows == nil
}

// RemoteRenderer renders an app through Argo CD's repo-server, at one revision per source (revisions[i] for
// source i; one for a single-source app): the apps only Argo CD can render — a config-management plugin, a
// repository or registry fleetwave may not or cannot fetch (ArgoCD.Remote).
//
// repoURLs are the URLs naming this repository: the Argo CD app is rendered only when one of its live sources is
// one of them and its project is app's (ErrNotManagedHere otherwise): a pull request here must not render, nor
// choose the revisions of, another repository's app.
type RemoteRenderer interface {
	RenderRemote(ctx context.Context, app *v1alpha1.Application, revisions []string, repoURLs []string) (*RemoteRender, error)
}

// RemoteRender is an app rendered by Argo CD.
type RemoteRender struct {
	Objects []*unstructured.Unstructured
	// Warning says how the render may differ from the change (Argo CD renders with the Application spec it
	// holds, not the one in the change).
	Warning string
}

// AppSetGenerator generates an ApplicationSet's apps through Argo CD (the generators that need a live service:
// scmProvider, pullRequest, plugin, clusterDecisionResource): ArgoCD.AppSets, which discovery uses
// (discover.Options.Generate says which sets a change may have generated).
type AppSetGenerator interface {
	GenerateApplicationSet(ctx context.Context, set *v1alpha1.ApplicationSet) ([]v1alpha1.Application, error)
}

// ErrNotInArgoCD is returned by a RemoteRenderer for an app Argo CD does not know (yet).
var ErrNotInArgoCD = errors.New("the app is not in Argo CD")

// ErrNotManagedHere is returned by a RemoteRenderer for an app Argo CD holds with no source in this repository,
// or in another project: another repository's app.
var ErrNotManagedHere = errors.New("exists in Argo CD, not managed from this repository")

// LiveApp is one affected app handed to a LiveComparer: its Application at head and its renders (Base nil when
// the app is added or its base render failed).
type LiveApp struct {
	App                          *v1alpha1.Application
	Base, Head                   []*unstructured.Unstructured
	BaseNamespace, HeadNamespace string // destination namespaces of each side
	// RepoURLs are the URLs naming this repository: an Argo CD app of the same namespace and name is compared
	// only when one of its live sources is one of them (and its project is App's); otherwise it is another
	// repository's app, which a pull request here must not read. None: no app is compared.
	RepoURLs []string
}

// LiveComparer compares affected apps with their live state: one result per app, in order. An error means the
// live state could not be read at all (Argo CD unreachable); Run returns it.
type LiveComparer interface {
	CompareLive(ctx context.Context, apps []LiveApp) ([]*report.Live, error)
}
