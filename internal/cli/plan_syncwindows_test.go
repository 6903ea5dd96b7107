package cli

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
)

// plan --argocd says which waves Argo CD's sync windows hold now and until when; the plan digest ignores it.
func TestPlanArgoCDSyncWindows(t *testing.T) {
	repo := previewRepo(t, nil)
	sim := argocdsim.New(argocdsim.Config{})
	t.Cleanup(sim.Close)
	started := time.Now().UTC().Add(-time.Minute)
	p := v1alpha1.AppProject{}
	p.Name = "default"
	schedule := fmt.Sprintf("%d %d * * *", started.Minute(), started.Hour())
	p.Spec.SyncWindows = v1alpha1.SyncWindows{{Kind: "deny", Schedule: schedule, Duration: "2h", Applications: []string{"*"}}}
	sim.SetProject(p)
	until := started.Truncate(time.Minute).Add(2 * time.Hour)
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	common := []string{"--repo", repo, "--base", "main", "--head", "change", "--repo-url", previewRepoURL, "--clusters", filepath.Join(repo, "clusters.yaml")}

	code, out, stderr := runPreviewCmd(t, append([]string{"plan", "-o", "json", "--argocd", srv.URL}, common...)...)
	var doc struct {
		Waves []struct {
			Name             string
			HeldBySyncWindow *struct {
				Apps   []string
				Reason string
				Until  *time.Time
			}
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Waves) == 0 {
		t.Fatalf("code %d\n%s\n%s", code, out, stderr)
	}
	for _, w := range doc.Waves {
		h := w.HeldBySyncWindow
		if h == nil || len(h.Apps) == 0 || h.Reason != "deny window '"+schedule+"' (2h)" || h.Until == nil || !h.Until.Equal(until) {
			t.Fatalf("wave %s: heldBySyncWindow %+v, want every app held by the deny window until %s", w.Name, h, until)
		}
	}
	_, text, _ := runPreviewCmd(t, append([]string{"plan", "-o", "text", "--argocd", srv.URL}, common...)...)
	if want := "held by deny window '" + schedule + "' (2h) until " + until.Format("2006-01-02 15:04 MST"); !strings.Contains(text, want) {
		t.Errorf("text plan lacks %q:\n%s", want, text)
	}
	_, md, _ := runPreviewCmd(t, append([]string{"plan", "-o", "markdown", "--argocd", srv.URL}, common...)...)
	if !strings.Contains(md, "⏸️ Argo CD sync window: ") {
		t.Errorf("markdown plan lacks the sync window:\n%s", md)
	}
	// Without Argo CD nothing is said about windows.
	_, text, _ = runPreviewCmd(t, append([]string{"plan", "-o", "text"}, common...)...)
	if strings.Contains(text, "sync window") {
		t.Errorf("a plan without --argocd speaks of sync windows:\n%s", text)
	}
}
