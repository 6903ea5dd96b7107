package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/testkit/logtest"
)

// TestServeShowsWhatRunsWhere (#37): serve with an Argo CD and the fleet view on follows the Argo CD's apps
// into its inventory and shows them at /fleet/apps (behind the view's token), with their sync status, and
// counts them on /metrics; the Argo CD token appears in neither.
func TestServeShowsWhatRunsWhere(t *testing.T) {
	_, url := newRolloutSim(t, argocdsim.Config{SyncDuration: 100 * time.Millisecond, ReconcileDelay: 10 * time.Millisecond},
		[]v1alpha1.Cluster{{Name: "prd-eu", Server: "https://prd-eu.example.com", Labels: map[string]string{"env": "prd"}}},
		[]simApp{{name: "web-prd-eu", cluster: "prd-eu"}, {name: "api-prd-eu", cluster: "prd-eu", live: rolloutNew}})
	env := serveEnv(t)
	env["FLEETWAVE_FLEET_VIEW_TOKEN"] = "fleet-view-token-for-the-serve-test"
	env["FLEETWAVE_ARGOCD_URL"] = url
	env["FLEETWAVE_ARGOCD_TOKEN"] = "t0ken"
	var stderr logtest.Buffer
	deps := &Deps{Stdout: &bytes.Buffer{}, Stderr: &stderr, Getenv: func(k string) string { return env[k] }}
	ctx, stop := context.WithCancel(context.Background())
	cmd := newServeCmd(deps)
	cmd.SetArgs([]string{"--drain-timeout", "5s"})
	cmd.SetOut(deps.Stdout)
	cmd.SetErr(deps.Stderr)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	defer func() {
		stop()
		<-done
	}()
	base := "http://" + listening(t, &stderr, done)
	get := func(path, auth string) (int, string) {
		req, _ := http.NewRequest("GET", base+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/fleet/apps", ""); code != http.StatusSeeOther {
		t.Errorf("/fleet/apps without the token: %d, want the sign-in (303)", code)
	}
	var page string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, body := get("/fleet/apps", "fleet-view-token-for-the-serve-test")
		page = body
		if code == http.StatusOK && strings.Contains(body, "web-prd-eu") && strings.Contains(body, "api-prd-eu") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/fleet/apps: %d, never listed both apps:\n%s\nlogs:\n%s", code, body, stderr.String())
		}
	}
	if !strings.Contains(page, "OutOfSync") || !strings.Contains(page, "Synced") {
		t.Errorf("/fleet/apps does not show web-prd-eu OutOfSync and api-prd-eu Synced:\n%s", page)
	}
	_, metrics := get("/metrics", "")
	if !strings.Contains(metrics, `fleetwave_inventory_apps{health=`) {
		t.Errorf("/metrics counts no inventory apps")
	}
	if strings.Contains(page+metrics+stderr.String(), "t0ken") {
		t.Error("the Argo CD token reached the page, /metrics or the logs")
	}
}
