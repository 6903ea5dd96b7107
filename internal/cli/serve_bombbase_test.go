package cli

import (
	"strings"
	"testing"
	"time"
)

// TestServeBombAtBaseCostsOneCap is the hostile suite's figure for a bomb already on the default branch: a pull
// request that only annotates the bomb's Application costs one time cap for it, not two (its base rendered to
// the cap, then its head again), and says so on the bomb's line. Workers capped at 2 s.
func TestServeBombAtBaseCostsOneCap(t *testing.T) {
	const repo = "Codertocat/Hello-World"
	rig := newServeRig(t, map[string]string{"FLEETWAVE_RENDER_WORKERS": "2", "FLEETWAVE_RENDER_TIMEOUT": "2s",
		"FLEETWAVE_RENDER_SHARE": "2"}, map[string]int64{repo: 1})
	base := map[string]string{"apps/web.yaml": appYAML("web", repo, "manifests/web"), "manifests/web/cm.yaml": configMap("web", "blue")}
	addCPUBombs(base, repo, 1)
	annotated := strings.Replace(appYAML("cpu-bomb-1", repo, "charts/cpu-bomb-1"), "namespace: argocd}", "namespace: argocd, annotations: {team: sre}}", 1)
	pr := rig.pullRequest(repo, 2, base, map[string]string{"apps/cpu-bomb-1.yaml": annotated, "manifests/web/cm.yaml": configMap("web", "green")})
	rig.deliver(pr)
	for !rig.inProgress(pr) {
		time.Sleep(10 * time.Millisecond)
	}
	t0 := time.Now()
	cr := rig.completed(pr, 60*time.Second)
	elapsed := time.Since(t0)
	text := cr.Summary + "\n" + cr.Text + "\n" + rig.comments(pr)
	rules := refusals(t, text, "cpu-bomb-1")
	t.Logf("a bomb at base, its Application annotated: refusals %v; the preview took %.1f s after its check run started (time cap 2 s)", rules, elapsed.Seconds())
	if rules["time-limit"]+rules["cpu-limit"] != 1 || !strings.Contains(text, "so it was not rendered again") {
		t.Errorf("refusals %v: want the bomb refused at its cap once, its head not rendered again:\n%s", rules, text)
	}
	if elapsed > 3900*time.Millisecond {
		t.Errorf("the preview took %s: the bomb cost two time caps (base, then head)", elapsed)
	}
	rig.stop()
}
