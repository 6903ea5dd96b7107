package cli

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
)

// rollout --ui serves the fleet view of the running rollout: the address and a fresh token are printed once, the
// page answers with that token (and not without), and the server ends with the command.
func TestRolloutUI(t *testing.T) {
	dir, head := wavesRepo(t)
	cs, apps := wavesFleet()
	sim, url := newRolloutSim(t, argocdsim.Config{SyncDuration: 400 * time.Millisecond, ReconcileDelay: 10 * time.Millisecond}, cs, apps)
	sim.SetRef("HEAD", head)
	db := filepath.Join(t.TempDir(), "r.db")
	var out, errOut outBuffer
	env := map[string]string{"FLEETWAVE_ARGOCD_TOKEN": "t0ken"}
	deps := &Deps{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return env[k] }, Signals: make(chan os.Signal)}
	root := NewRootCmd(deps)
	root.SetArgs([]string{"rollout", "--argocd", url, "--repo", dir, "--base", "main", "--head", "change", "--repo-url", "https://git.example.com/gitops.git",
		"--store", db, "-o", "json", "--ui", "127.0.0.1:0"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(context.Background()) }()

	errOut.waitFor(t, "fleet view at http://", 30*time.Second)
	m := regexp.MustCompile(`fleet view at (http://\S+) \(sign in with ([0-9a-f]{32})\)`).FindStringSubmatch(errOut.String())
	if m == nil {
		t.Fatalf("no address and token printed:\n%s", errOut.String())
	}
	page, token := m[1], m[2]
	get := func(auth string) (int, string) {
		req, _ := http.NewRequest("GET", page, nil)
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
	if code, body := get(token); code != 200 || !strings.Contains(body, "Wave 1: canary") {
		t.Errorf("with the token: %d\n%s", code, body)
	}
	if code, _ := get(""); code != http.StatusSeeOther {
		t.Errorf("without the token: %d, want the login redirect", code)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("rollout: %v\n%s", err, errOut.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the rollout did not end")
	}
	if _, err := http.Get(page); err == nil {
		t.Error("the fleet view still answers after the command ended")
	}
}
