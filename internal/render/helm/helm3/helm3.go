// Package helm3 holds what the released helm v3.19.4 binary has baked in that the Helm v3 SDK linked into
// fleetwave computes differently: its default API versions.
//
// Helm's DefaultVersionSet (pkg/chartutil/capabilities.go allKnownVersions) is the group/versions of the
// k8s.io/client-go scheme the program is built with, plus apiextensions v1beta1 and v1. helm v3.19.4 was released
// with client-go v0.34; fleetwave links the v0.37 libraries argo-cd v3.6.1 pins (go.mod), whose scheme drops
// autoscaling/v2beta1 and v2beta2, scheduling.k8s.io/v1alpha1, storagemigration.k8s.io/v1alpha1 and adds others,
// so `.Capabilities.APIVersions` would not be the list Argo CD 3.2-3.4's `helm template` prints.
package helm3

import (
	"slices"

	"helm.sh/helm/v3/pkg/chartutil"
)

// DefaultAPIVersions is helm v3.19.4's DefaultVersionSet, in its order: the list Argo CD 3.4's `helm template`
// printed for the render-fidelity corpus's helm-api-versions case (expected-helm3.yaml), without the case's
// --api-versions.
var DefaultAPIVersions = []string{
	"v1", "admissionregistration.k8s.io/v1", "admissionregistration.k8s.io/v1alpha1",
	"admissionregistration.k8s.io/v1beta1", "internal.apiserver.k8s.io/v1alpha1", "apps/v1", "apps/v1beta1",
	"apps/v1beta2", "authentication.k8s.io/v1", "authentication.k8s.io/v1alpha1", "authentication.k8s.io/v1beta1",
	"authorization.k8s.io/v1", "authorization.k8s.io/v1beta1", "autoscaling/v1", "autoscaling/v2",
	"autoscaling/v2beta1", "autoscaling/v2beta2", "batch/v1", "batch/v1beta1", "certificates.k8s.io/v1",
	"certificates.k8s.io/v1beta1", "certificates.k8s.io/v1alpha1", "coordination.k8s.io/v1alpha2",
	"coordination.k8s.io/v1beta1", "coordination.k8s.io/v1", "discovery.k8s.io/v1", "discovery.k8s.io/v1beta1",
	"events.k8s.io/v1", "events.k8s.io/v1beta1", "extensions/v1beta1", "flowcontrol.apiserver.k8s.io/v1",
	"flowcontrol.apiserver.k8s.io/v1beta1", "flowcontrol.apiserver.k8s.io/v1beta2",
	"flowcontrol.apiserver.k8s.io/v1beta3", "networking.k8s.io/v1", "networking.k8s.io/v1beta1", "node.k8s.io/v1",
	"node.k8s.io/v1alpha1", "node.k8s.io/v1beta1", "policy/v1", "policy/v1beta1", "rbac.authorization.k8s.io/v1",
	"rbac.authorization.k8s.io/v1beta1", "rbac.authorization.k8s.io/v1alpha1", "resource.k8s.io/v1",
	"resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1", "resource.k8s.io/v1alpha3",
	"scheduling.k8s.io/v1alpha1", "scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1", "storage.k8s.io/v1beta1",
	"storage.k8s.io/v1", "storage.k8s.io/v1alpha1", "storagemigration.k8s.io/v1alpha1",
	"apiextensions.k8s.io/v1beta1", "apiextensions.k8s.io/v1",
}

// The SDK's pkg/action/install.go RunWithContext starts every client-only render (`helm template`) from
// chartutil.DefaultCapabilities, so its API versions are set once, here, to the released binary's: every user of
// the Helm v3 SDK in fleetwave (internal/render/helm, the Kustomize helmCharts of internal/render/kustomize)
// imports this package. Clipped, so helm's append of --api-versions never writes into the shared array.
func init() {
	chartutil.DefaultCapabilities.APIVersions = slices.Clip(chartutil.VersionSet(slices.Clone(DefaultAPIVersions)))
}
