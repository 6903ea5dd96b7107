package app_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/fleetwave/fleetwave/internal/app"
	"github.com/fleetwave/fleetwave/internal/preview"
	"github.com/fleetwave/fleetwave/internal/render"
)

// tenantRenderers records which tenant and group each preview rendered as, rendering with the shared renderer.
type tenantRenderers struct {
	mu    sync.Mutex
	asked []string
}

func (tr *tenantRenderers) For(tenant, group string) preview.Renderer {
	tr.mu.Lock()
	tr.asked = append(tr.asked, tenant+" "+group)
	tr.mu.Unlock()
	return renderFunc(func(ctx context.Context, req render.Request) (*render.Result, error) {
		return sharedRenderer().Render(ctx, req)
	})
}

// TestPreviewsRenderAsTheirTenant: with a shared renderer (the TenantRenderers port, internal/render/isolate's
// Pool.For under serve), a pull request's preview renders as its installation and within it as its pull request,
// never with New's renderer. Before the port, the App found the pool by asserting its renderer to
// *isolate.Tenant's provider, which no test could hand in.
func TestPreviewsRenderAsTheirTenant(t *testing.T) {
	f := newFixture(t, edit(t, "manifests/payments/deployment.yaml", func(s string) string { return strings.Replace(s, "replicas: 2", "replicas: 3", 1) }))
	tr := &tenantRenderers{}
	refuse := renderFunc(func(context.Context, render.Request) (*render.Result, error) {
		t.Error("rendered with New's renderer, not the tenant's")
		return &render.Result{}, nil
	})
	h := newHarness(t, refuse, app.WithTenantRenderers(tr.For))
	h.open(f)
	if d := h.runsOn(f.head())[app.CheckDiff]; len(d) == 0 || d[0].Conclusion != "success" {
		t.Fatalf("diff check %+v, want success", d)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.asked) == 0 {
		t.Fatal("no renderer was asked for")
	}
	for _, a := range tr.asked {
		tenant, group, _ := strings.Cut(a, " ")
		if tenant == "" || tenant == "0" || !strings.Contains(group, "#") {
			t.Errorf("rendered as tenant %q, group %q: want the installation and the pull request", tenant, group)
		}
	}
}
