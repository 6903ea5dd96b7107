package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// A --revision Argo CD cannot resolve for the apps' repository is one line before anything is synced.
func TestRolloutRevisionCheckedBeforeAnySync(t *testing.T) {
	sim, url := rolloutSim(t)
	var out outBuffer
	code, stderr := runArgo(t, context.Background(), map[string]string{"FLEETWAVE_ARGOCD_URL": url, "FLEETWAVE_ARGOCD_TOKEN": "t0ken"}, &out,
		"rollout", "--selector", "env=prd", "--revision", "no-such-branch", "--store", filepath.Join(t.TempDir(), "r.db"))
	if code != 2 || !strings.Contains(stderr, `--revision "no-such-branch": Argo CD cannot render`) || !strings.Contains(stderr, "nothing was synced") ||
		!strings.Contains(stderr, "unable to resolve 'no-such-branch'") {
		t.Fatalf("exit %d, stderr %q\n%s", code, stderr, out.String())
	}
	if strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("more than one line: %q", stderr)
	}
	for _, app := range []string{"web", "api", "worker"} {
		if n := sim.Counts(app).Syncs; n != 0 {
			t.Errorf("%s: %d syncs, want none", app, n)
		}
	}
}
