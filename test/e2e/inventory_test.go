package e2e_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/inventory"
	"github.com/fleetwave/fleetwave/internal/inventory/follow"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

const (
	invApp       = "inv-main"
	invNamespace = "e2e-inventory"
)

// TestInventoryFollowsRealArgoCD (#37): the inventory follows a real Argo CD's application stream. An app synced
// at base is Synced in it; a live change to one of its objects (kubectl, as a person would) makes it OutOfSync
// within seconds, with the time it went so; after a sync it is Synced again. serve (the binary) shows the same on
// /fleet/apps and /metrics, and fleetwave status prints it.
func TestInventoryFollowsRealArgoCD(t *testing.T) {
	e := loadEnv(t)
	kubectl, kubeconfig := findKubectl(t)
	ctx := context.Background()
	c, err := argocd.New(argocd.Options{BaseURL: e.ArgoCDURL, Token: e.Token, UserAgent: "fleetwave-e2e"})
	if err != nil {
		t.Fatal(err)
	}

	// A file:// repository with one ConfigMap.
	work := t.TempDir()
	checkout, bare := filepath.Join(work, "src"), filepath.Join(work, "inventory.git")
	if err := os.MkdirAll(filepath.Join(checkout, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: color}\ndata: {color: blue}\n"
	if err := os.WriteFile(filepath.Join(checkout, "app", "cm.yaml"), []byte(cm), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, checkout, "init", "-q", "-b", "main")
	gittest.Run(t, checkout, "add", "-A")
	gittest.Run(t, checkout, "commit", "-q", "-m", "base")
	sha := gittest.Run(t, checkout, "rev-parse", "HEAD")
	gittest.Run(t, work, "clone", "-q", "--bare", checkout, bare)

	app := &v1alpha1.Application{}
	app.Name, app.Namespace = invApp, "argocd"
	app.Labels = map[string]string{"suite": "inventory"}
	app.Spec = v1alpha1.ApplicationSpec{
		Project:     "default",
		Source:      &v1alpha1.ApplicationSource{RepoURL: "file://" + bare, Path: "app", TargetRevision: sha},
		Destination: v1alpha1.ApplicationDestination{Server: v1alpha1.KubernetesInternalAPIServerAddr, Namespace: invNamespace},
		SyncPolicy:  &v1alpha1.SyncPolicy{SyncOptions: v1alpha1.SyncOptions{"CreateNamespace=true"}},
	}
	body, err := json.Marshal(app)
	if err != nil {
		t.Fatal(err)
	}
	if err := call(ctx, e, http.MethodPost, "/api/v1/applications?upsert=true&validate=false", body, nil); err != nil {
		t.Fatalf("creating %s: %v", invApp, err)
	}
	t.Cleanup(func() {
		if os.Getenv("FLEETWAVE_E2E_KEEP") == "1" {
			return
		}
		_ = call(context.Background(), e, http.MethodDelete, "/api/v1/applications/"+invApp+"?cascade=true&appNamespace=argocd", nil, nil)
	})
	syncAndWait(t, c, "argocd/"+invApp, sha)

	// serve, following the same Argo CD, with its fleet view on.
	bot := startInventoryBot(t, e)

	// The inventory of this Argo CD, as serve keeps it (instance "": FLEETWAVE_ARGOCD_URL's).
	inv := inventory.New(time.Now)
	fctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- follow.New(follow.Config{Source: c, Inventory: inv}).Run(fctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("follower: %v", err)
		}
	})
	key := inventory.Key{Namespace: "argocd", Name: invApp}
	// await waits up to limit for the app to be in sync state want, and says how long it took.
	await := func(want string, limit time.Duration) (inventory.App, time.Duration) {
		t.Helper()
		began := time.Now()
		for {
			s := inv.Snapshot()
			if a, ok := inv.Get(key); ok && a.Sync == want {
				return a, time.Since(began)
			}
			if time.Since(began) > limit {
				a, _ := inv.Get(key)
				t.Fatalf("after %v the inventory has %s %s/%s (instances %+v); want %s", limit, invApp, a.Sync, a.Health, s.Instances, want)
			}
			select {
			case <-inv.Changed(s.Version):
			case <-time.After(time.Second):
			}
		}
	}
	a, took := await("Synced", 30*time.Second)
	if a.Revision != sha || a.Cluster != v1alpha1.KubernetesInternalAPIServerAddr || a.Project != "default" {
		t.Errorf("inventory app %+v; want revision %s, the in-cluster destination, project default", a, sha)
	}
	t.Logf("listed Synced after %v", took)

	// A live change: Argo CD's controller sees it through its cluster cache and compares again.
	changed := time.Now()
	args := []string{"--kubeconfig", kubeconfig, "-n", invNamespace, "patch", "configmap", "color", "--type=merge",
		"-p", `{"data":{"color":"red"}}`, "--field-manager=e2e-editor"}
	if out, err := exec.Command(kubectl, args...).CombinedOutput(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args[2:], " "), err, out)
	}
	a, took = await("OutOfSync", 30*time.Second)
	t.Logf("OutOfSync in the inventory %v after the live change", took)
	if a.SyncSince.Before(changed.Add(-time.Second)) {
		t.Errorf("OutOfSync since %v, before the change at %v", a.SyncSince, changed)
	}
	shown := bot.await(t, "OutOfSync", 30*time.Second)
	t.Logf("OutOfSync on serve's /fleet/apps, /metrics and in fleetwave status %v after the live change", shown)

	// A sync puts the object back: Synced again.
	syncAndWait(t, c, "argocd/"+invApp, sha)
	_, took = await("Synced", 30*time.Second)
	t.Logf("Synced in the inventory %v after the sync ended", took)
	shown = bot.await(t, "Synced", 30*time.Second)
	t.Logf("Synced on serve's /fleet/apps, /metrics and in fleetwave status %v after the sync ended", shown)
}

// inventoryBot is `fleetwave serve` with its fleet view on, against this environment's Argo CD, and the same
// binary's status command: what a team sees of the inventory (nil without FLEETWAVE_E2E_BOT: skipped).
type inventoryBot struct {
	e     env
	bin   string
	addr  string
	token string
	logs  func() string
}

const invViewToken = "fleet-view-token-of-the-e2e-inventory"

func startInventoryBot(t *testing.T, e env) *inventoryBot {
	t.Helper()
	bin := os.Getenv("FLEETWAVE_E2E_BOT")
	if bin == "" {
		t.Skip("FLEETWAVE_E2E_BOT (the fleetwave binary) is not set; make e2e builds it")
	}
	_, b := startBot(t, e, bin, t.TempDir(), "e2e-inventory-0", "FLEETWAVE_FLEET_VIEW_TOKEN="+invViewToken)
	return &inventoryBot{e: e, bin: bin, addr: b.addr, token: invViewToken, logs: b.log}
}

// await waits until serve's /fleet/apps lists the app under the sync filter want, /metrics counts an app of that
// sync status, and fleetwave status --argocd says the app is want; it returns how long that took.
func (b *inventoryBot) await(t *testing.T, want string, limit time.Duration) time.Duration {
	t.Helper()
	began := time.Now()
	get := func(path string) string {
		req, _ := http.NewRequest(http.MethodGet, "http://"+b.addr+path, nil)
		req.Header.Set("Authorization", "Bearer "+b.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return ""
		}
		return string(body)
	}
	var page, metrics, status string
	for {
		page = get("/fleet/apps?selector=suite%3Dinventory&sync=" + want)
		metrics = get("/metrics")
		pageOK := strings.Contains(page, invApp)
		metricsOK := false
		for _, line := range strings.Split(metrics, "\n") {
			if strings.HasPrefix(line, "fleetwave_inventory_apps{") && strings.Contains(line, `sync="`+want+`"}`) && !strings.HasSuffix(line, " 0") {
				metricsOK = true
			}
		}
		statusOK := false
		if pageOK && metricsOK {
			cmd := exec.Command(b.bin, "status", "--argocd", b.e.ArgoCDURL, "--selector", "suite=inventory", "-o", "json")
			cmd.Env = append(os.Environ(), "FLEETWAVE_ARGOCD_TOKEN="+b.e.Token)
			out, _ := cmd.Output()
			status = string(out)
			statusOK = strings.Contains(status, `"name": "`+invApp+`"`) && strings.Contains(status, `"sync": "`+want+`"`)
		}
		if pageOK && metricsOK && statusOK {
			if strings.Contains(page+metrics+status, b.e.Token) {
				t.Error("the Argo CD token reached the page, /metrics or status")
			}
			return time.Since(began)
		}
		if time.Since(began) > limit {
			t.Fatalf("after %v: /fleet/apps lists %s under sync=%s: %v; /metrics counts sync=%s: %v; status: %v\n%s\n--- bot log ---\n%s",
				limit, invApp, want, pageOK, want, metricsOK, statusOK, status, b.logs())
		}
		time.Sleep(500 * time.Millisecond)
	}
}
