package helm4

// defaultAPIVersions0361 is helm's DefaultVersionSet (pkg/chart/common/capabilities.go allKnownVersions: the
// group/versions of k8s.io/client-go's scheme plus apiextensions v1beta1 and v1) in a helm built with client-go
// v0.36.1, helm v4.2.x: the list Argo CD 3.5's `helm template` printed for the render-fidelity corpus's
// helm-api-versions case, in its order.
var defaultAPIVersions0361 = []string{
	"v1", "admissionregistration.k8s.io/v1", "admissionregistration.k8s.io/v1alpha1",
	"admissionregistration.k8s.io/v1beta1", "internal.apiserver.k8s.io/v1alpha1", "apps/v1", "apps/v1beta1",
	"apps/v1beta2", "authentication.k8s.io/v1", "authentication.k8s.io/v1alpha1", "authentication.k8s.io/v1beta1",
	"authorization.k8s.io/v1", "authorization.k8s.io/v1beta1", "autoscaling/v1", "autoscaling/v2", "batch/v1",
	"batch/v1beta1", "certificates.k8s.io/v1", "certificates.k8s.io/v1beta1", "certificates.k8s.io/v1alpha1",
	"coordination.k8s.io/v1alpha2", "coordination.k8s.io/v1beta1", "coordination.k8s.io/v1", "discovery.k8s.io/v1",
	"discovery.k8s.io/v1beta1", "events.k8s.io/v1", "events.k8s.io/v1beta1", "extensions/v1beta1",
	"flowcontrol.apiserver.k8s.io/v1", "flowcontrol.apiserver.k8s.io/v1beta1", "flowcontrol.apiserver.k8s.io/v1beta2",
	"flowcontrol.apiserver.k8s.io/v1beta3", "networking.k8s.io/v1", "networking.k8s.io/v1beta1", "node.k8s.io/v1",
	"node.k8s.io/v1alpha1", "node.k8s.io/v1beta1", "policy/v1", "policy/v1beta1", "rbac.authorization.k8s.io/v1",
	"rbac.authorization.k8s.io/v1beta1", "rbac.authorization.k8s.io/v1alpha1", "resource.k8s.io/v1",
	"resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1", "resource.k8s.io/v1alpha3", "scheduling.k8s.io/v1alpha2",
	"scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1", "storage.k8s.io/v1beta1", "storage.k8s.io/v1",
	"storage.k8s.io/v1alpha1", "storagemigration.k8s.io/v1beta1", "apiextensions.k8s.io/v1beta1",
	"apiextensions.k8s.io/v1",
}

// defaultAPIVersions0370 is the same list in a helm built with client-go v0.37, helm v4.3.1: the one Argo CD
// 3.6.1 ships (hack/tool-versions.sh HELM_VERSION=4.3.1), printed by that helm's `helm template` of a chart
// ranging over .Capabilities.APIVersions without --api-versions, in its order. Against v0.36.1:
// lifecycle.k8s.io/v1alpha1, scheduling.k8s.io/v1alpha3 and storagemigration.k8s.io/v1 added,
// scheduling.k8s.io/v1alpha2 gone.
var defaultAPIVersions0370 = []string{
	"v1", "admissionregistration.k8s.io/v1", "admissionregistration.k8s.io/v1alpha1",
	"admissionregistration.k8s.io/v1beta1", "internal.apiserver.k8s.io/v1alpha1", "apps/v1", "apps/v1beta1",
	"apps/v1beta2", "authentication.k8s.io/v1", "authentication.k8s.io/v1alpha1", "authentication.k8s.io/v1beta1",
	"authorization.k8s.io/v1", "authorization.k8s.io/v1beta1", "autoscaling/v1", "autoscaling/v2", "batch/v1",
	"batch/v1beta1", "certificates.k8s.io/v1", "certificates.k8s.io/v1beta1", "certificates.k8s.io/v1alpha1",
	"coordination.k8s.io/v1alpha2", "coordination.k8s.io/v1beta1", "coordination.k8s.io/v1", "discovery.k8s.io/v1",
	"discovery.k8s.io/v1beta1", "events.k8s.io/v1", "events.k8s.io/v1beta1", "extensions/v1beta1",
	"flowcontrol.apiserver.k8s.io/v1", "flowcontrol.apiserver.k8s.io/v1beta1", "flowcontrol.apiserver.k8s.io/v1beta2",
	"flowcontrol.apiserver.k8s.io/v1beta3", "lifecycle.k8s.io/v1alpha1", "networking.k8s.io/v1",
	"networking.k8s.io/v1beta1", "node.k8s.io/v1", "node.k8s.io/v1alpha1", "node.k8s.io/v1beta1", "policy/v1",
	"policy/v1beta1", "rbac.authorization.k8s.io/v1", "rbac.authorization.k8s.io/v1beta1",
	"rbac.authorization.k8s.io/v1alpha1", "resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1",
	"resource.k8s.io/v1alpha3", "scheduling.k8s.io/v1alpha3", "scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1",
	"storage.k8s.io/v1beta1", "storage.k8s.io/v1", "storage.k8s.io/v1alpha1", "storagemigration.k8s.io/v1",
	"storagemigration.k8s.io/v1beta1", "apiextensions.k8s.io/v1beta1", "apiextensions.k8s.io/v1",
}
