package risk_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetwave/fleetwave/internal/diff/risk"
)

// BenchmarkClassify classifies the changes a fleet-wide preview classifies most: a Deployment's image bump,
// a chart label bump (metadata only), a Service, a Role and a Secret. One op is the five resources.
func BenchmarkClassify(b *testing.B) {
	r := strings.NewReplacer
	pairs := [][2]string{
		{deployment, r("api:1.2.0", "api:1.3.0").Replace(deployment)},
		{deployment, r("web-1.2.0", "web-1.3.0").Replace(deployment)},
		{service, r("ClusterIP", "LoadBalancer").Replace(service)},
		{role, r("[get, list, watch]", "[get, list, watch, delete]").Replace(role)},
		{maskedSecret, r("password: <unchanged>", "password: <changed>").Replace(maskedSecret)},
	}
	objs := make([][2]*unstructured.Unstructured, len(pairs))
	for i, p := range pairs {
		objs[i] = [2]*unstructured.Unstructured{obj(b, p[0]), obj(b, p[1])}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, o := range objs {
			if len(risk.Classify(o[0], o[1])) == 0 {
				b.Fatal("no class")
			}
		}
	}
}
