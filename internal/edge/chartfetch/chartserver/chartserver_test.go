package chartserver_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/edge/chartfetch/chartserver"
)

// The example's vendor charts are reachable under the example's host names through the proxy, from the Helm
// repository and from the registry, with the repositories file the server writes; nothing else is tunnelled.
func TestServesTheExampleCharts(t *testing.T) {
	s, err := chartserver.Start("../../../../examples/vendor-charts")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f, err := s.Fetcher(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct{ repoURL, chart, revision, want string }{
		{"https://" + chartserver.HelmHost, "ingress-nginx", "4.10.0", "4.10.0"},
		{"https://" + chartserver.HelmHost, "ingress-nginx", "4.11.0", "4.11.0"},
		{chartserver.RegistryHost + "/charts", "cert-manager", "~1.14.0", "1.14.5"},
	} {
		ch, err := f.Chart(ctx, tc.repoURL, tc.chart, tc.revision)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.chart, tc.revision, err)
		}
		if ch.Version != tc.want {
			t.Errorf("%s %s: version %s, want %s", tc.chart, tc.revision, ch.Version, tc.want)
		}
	}
	if got := s.Downloads(); got != 3 {
		t.Errorf("%d downloads, want 3", got)
	}
	// The proxy is no open proxy.
	c := &http.Client{Transport: s.Transport()}
	if resp, err := c.Get("https://github.com/"); err == nil {
		resp.Body.Close()
		t.Error("the proxy tunnelled to another host")
	} else if !strings.Contains(err.Error(), "Forbidden") {
		t.Errorf("another host: %v", err)
	}
}
