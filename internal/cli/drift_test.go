package cli

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fleetwave/fleetwave/internal/config"
	"github.com/fleetwave/fleetwave/internal/edge/github"
	"github.com/fleetwave/fleetwave/internal/edge/github/fakegithub"
	"github.com/fleetwave/fleetwave/internal/edge/metrics"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/inventory"
	"github.com/fleetwave/fleetwave/internal/testkit/logtest"
)

// TestStartDrift: with FLEETWAVE_DRIFT_AFTER and an inventory, serve's hook runs the watcher, registers the
// gauge and reports to FLEETWAVE_DRIFT_REPORT_REPO through the App's installation there; without either, the
// alerts are off.
func TestStartDrift(t *testing.T) {
	ctx := context.Background()
	k, keyPEM := fakegithub.AppKey()
	fake := fakegithub.New(t, fakegithub.WithApp(12345, &k.PublicKey), fakegithub.WithInstallation("acme/ops", 77))
	app, err := github.NewApp(github.AppConfig{AppID: 12345, PrivateKey: keyPEM, APIURL: fake.URL(), Transport: fake.Client().Transport})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "fw.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	clock := clockwork.NewFakeClock()
	inv := inventory.New(clock.Now)
	inv.Apply(inventory.App{Key: inventory.Key{Namespace: "argocd", Name: "web"}, Project: "payments", Sync: "OutOfSync", Health: "Healthy"})
	clock.Advance(time.Hour)
	log := &logtest.Buffer{}
	cfg := &config.Serve{DriftAfter: 30 * time.Minute, DriftReportRepo: "acme/ops", ArgoCDURL: "https://argocd.example.com"}

	for _, off := range []driftDeps{
		{Log: slog.New(slog.NewTextHandler(log, nil)), Config: &config.Serve{}, Inventory: inv, Store: st, GitHub: app},
		{Log: slog.New(slog.NewTextHandler(log, nil)), Config: cfg, Store: st, GitHub: app},
	} {
		if w, stop := startDrift(ctx, off); w != nil {
			stop()
			t.Errorf("drift alerts on with %+v", off)
		}
	}
	if !strings.Contains(log.String(), "serve keeps no fleet inventory") {
		t.Errorf("no warning that FLEETWAVE_DRIFT_AFTER is set without an inventory:\n%s", log)
	}

	mets := metrics.New()
	w, stop := startDrift(ctx, driftDeps{Log: slog.New(slog.NewTextHandler(log, nil)), Config: cfg, Inventory: inv, Store: st, GitHub: app, Metrics: mets, Clock: clock})
	defer stop()
	if w == nil {
		t.Fatal("drift alerts off")
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(fake.Issues("acme/ops")) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	issues := fake.Issues("acme/ops")
	if len(issues) != 1 || !strings.Contains(issues[0].Body, "https://argocd.example.com/applications/argocd/web") {
		t.Fatalf("issues: %+v", issues)
	}
	want := `
# HELP fleetwave_drift_apps Apps in lasting drift (OutOfSync or Degraded past the threshold, outside a rollout about to sync them), by Argo CD instance, project and state; an app in both states counts in each.
# TYPE fleetwave_drift_apps gauge
fleetwave_drift_apps{instance="",project="payments",state="OutOfSync"} 1
`
	if err := testutil.GatherAndCompare(mets.Registry(), strings.NewReader(want), "fleetwave_drift_apps"); err != nil {
		t.Error(err)
	}
}
