package argocdsim_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/health"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
)

// TestInstancesServeTheirOwnApps: two instances under one listener, each its own URL and apps; an outage of
// one leaves the other answering; SetOutage(Up) ends it.
func TestInstancesServeTheirOwnApps(t *testing.T) {
	in, err := argocdsim.NewInstances(argocdsim.Config{}, "", "eu")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	for _, c := range []struct{ inst, app string }{{"", "web"}, {"eu", "web-eu"}} {
		if err := in.Get(c.inst).AddApp(appSpec(c.app), argocdsim.AppOptions{LiveRevisions: []string{oldRev}, Health: health.HealthStatusHealthy}); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(in.Handler())
	defer srv.Close()
	ctx := context.Background()
	client := func(inst string) *argocd.Client {
		c, err := argocd.New(argocd.Options{BaseURL: in.URL(srv.URL, inst), MaxRetries: -1})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	def, eu := client(""), client("eu")
	if _, err := eu.GetApplication(ctx, "web-eu", ""); err != nil {
		t.Fatalf("eu's app through eu's URL: %v", err)
	}
	if _, err := eu.GetApplication(ctx, "web", ""); !argocd.IsMissingApp(err) {
		t.Fatalf("the default instance's app through eu's URL: %v; want it missing", err)
	}
	if _, err := def.GetApplication(ctx, "web", ""); err != nil {
		t.Fatalf("the default instance's app at the root: %v", err)
	}
	if got := in.Names(); strings.Join(got, ",") != ",eu" {
		t.Errorf("Names() = %q", got)
	}

	for _, c := range []struct {
		outage argocdsim.Outage
		want   error
	}{{argocdsim.Unreachable, argocd.ErrUnavailable}, {argocdsim.Unauthorized, argocd.ErrUnauthenticated}} {
		in.Get("eu").SetOutage(c.outage)
		if _, err := eu.GetApplication(ctx, "web-eu", ""); !errors.Is(err, c.want) {
			t.Errorf("outage %d: GET on eu = %v; want %v", c.outage, err, c.want)
		}
		if _, err := def.GetApplication(ctx, "web", ""); err != nil {
			t.Errorf("outage %d of eu: the default instance: %v", c.outage, err)
		}
	}
	in.Get("eu").SetOutage(argocdsim.Up)
	if _, err := eu.GetApplication(ctx, "web-eu", ""); err != nil {
		t.Fatalf("after the outage: %v", err)
	}

	// In-process, an unreachable instance refuses connections, and its open stream ends.
	s := in.Get("eu")
	c, err := argocd.New(argocd.Options{BaseURL: "http://eu.sim", HTTPClient: s.HTTPClient(), MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	connected := make(chan bool, 4)
	go func() {
		_ = c.Watch(wctx, argocd.WatchQuery{}, argocd.WatchHandler{OnConnect: func(re bool) { connected <- re }})
	}()
	if re := <-connected; re {
		t.Fatal("first connect reported as a reconnect")
	}
	s.SetOutage(argocdsim.Unreachable)
	if _, err := c.GetApplication(ctx, "web-eu", ""); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("in-process GET while unreachable: %v; want a refused connection", err)
	}
	s.SetOutage(argocdsim.Up)
	select {
	case re := <-connected:
		if !re {
			t.Error("the stream came back as a first connect")
		}
	case <-wctx.Done():
		t.Fatal("the stream did not end with the outage and come back after it")
	}
}
