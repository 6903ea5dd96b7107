package helm3_test

import (
	"slices"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/fleetwave/fleetwave/internal/render/helm/helm3"
)

// The SDK's defaults are the released binary's, whatever client-go is linked, and a render's --api-versions
// appended to them (as pkg/action/install.go does) leave them as they are.
func TestDefaultCapabilities(t *testing.T) {
	caps := chartutil.DefaultCapabilities.Copy()
	if !slices.Equal([]string(caps.APIVersions), helm3.DefaultAPIVersions) {
		t.Fatalf("DefaultCapabilities.APIVersions = %v, want helm v3.19.4's", caps.APIVersions)
	}
	for _, v := range []string{"autoscaling/v2beta1", "scheduling.k8s.io/v1alpha1"} { // gone from client-go v0.37
		if !caps.APIVersions.Has(v) {
			t.Errorf("%s missing", v)
		}
	}
	a := append(caps.APIVersions, "example.com/v1")
	b := append(chartutil.DefaultCapabilities.Copy().APIVersions, "example.com/v2")
	if a[len(a)-1] != "example.com/v1" || b[len(b)-1] != "example.com/v2" || len(chartutil.DefaultCapabilities.APIVersions) != len(helm3.DefaultAPIVersions) {
		t.Fatal("appending to the defaults wrote into the shared set")
	}
}
