package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

// TestRolloutLiveViewOnTerminal runs `fleetwave rollout` as its own process on a pseudo-terminal (util-linux
// script) and reads the screen a person sees: event lines scroll above a status line redrawn in place (the wave,
// its apps done of all, the apps syncing, the soak's countdown), which is gone once the summary is printed.
// With FLEETWAVE_UPDATE_DOCS=1 it writes a screen captured during the soak to docs/pictures/rollout-live-view.txt.
func TestRolloutLiveViewOnTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the CLI on a pseudo-terminal; skipped with -short")
	}
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("pseudo-terminal test skipped: no util-linux script on PATH")
	}
	dir, _ := wavesRepo(t)
	cs, apps := wavesFleet()
	sim, url := newRolloutSim(t, argocdsim.Config{SyncDuration: 300 * time.Millisecond, ReconcileDelay: 10 * time.Millisecond}, cs, apps)
	_ = sim
	policy := strings.Replace(wavesPolicy, "    selector: {matchLabels: {env: test}}\n", "    selector: {matchLabels: {env: test}}\n    soak: 3s\n", 1)
	if err := os.WriteFile(filepath.Join(dir, ".fleetwave.yaml"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, dir, "commit", "-q", "-am", "soak after canary")
	head := strings.TrimSpace(gittest.Run(t, dir, "rev-parse", "HEAD"))
	sim.SetRef("HEAD", head)
	args, _ := json.Marshal([]string{"rollout", "--argocd", url, "--repo", dir, "--base", "main", "--head", "change",
		"--repo-url", "https://git.example.com/gitops.git", "--store", filepath.Join(t.TempDir(), "r.db"), "--concurrency", "10"})
	self, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// script gives the command a pseudo-terminal as stdin/stdout and copies what it writes (-e: its exit code).
	cmd := exec.CommandContext(ctx, scriptBin, "-qefc", self+" -test.run=^TestRolloutHelperProcess$", "/dev/null")
	cmd.Env = append(os.Environ(), "FLEETWAVE_ROLLOUT_HELPER=1", "FLEETWAVE_ROLLOUT_ARGS="+string(args), "FLEETWAVE_ARGOCD_TOKEN=t0ken", "TERM=xterm")
	var out outBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "left", 30*time.Second) // the soak's countdown on the status line
	during := screen(out.String())
	if err := cmd.Wait(); err != nil {
		t.Fatalf("rollout on a terminal: %v\n%s", err, out.String())
	}
	raw := out.String()
	if !strings.Contains(raw, clearLine) {
		t.Fatalf("no status line redrawn in place:\n%q", raw)
	}
	status := during[len(during)-1]
	for _, want := range []string{"▶ rollout #1 running · wave 1/3 canary", "1/1 done", "soak"} {
		if !strings.Contains(status, want) {
			t.Errorf("status line during the soak %q lacks %q", status, want)
		}
	}
	final := screen(raw)
	last := final[len(final)-1]
	if !strings.Contains(last, "rollout #1 succeeded: 7 synced") && !strings.Contains(final[len(final)-2], "rollout #1 succeeded: 7 synced") {
		t.Errorf("the screen does not end with the summary:\n%s", strings.Join(final, "\n"))
	}
	for _, l := range final {
		if strings.HasPrefix(l, "▶") {
			t.Errorf("a status line is left on the final screen: %q", l)
		}
	}
	if os.Getenv("FLEETWAVE_UPDATE_DOCS") == "1" {
		doc := "# fleetwave rollout on a terminal, during the canary wave's soak (TestRolloutLiveViewOnTerminal)\n" + strings.Join(during, "\n") + "\n"
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "pictures", "rollout-live-view.txt"), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// screen is what a terminal shows after receiving out: lines, with "\r" returning to the line's start and
// ESC [ K clearing to its end (the only controls the live view uses).
func screen(out string) []string {
	out = strings.ReplaceAll(out, "\r\n", "\n")
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		var cur []rune
		col := 0
		for i := 0; i < len(l); {
			switch {
			case l[i] == '\r':
				col = 0
				i++
			case strings.HasPrefix(l[i:], "\033[K"):
				cur = cur[:col]
				i += 3
			default:
				r := []rune(l[i:])[0]
				if col < len(cur) {
					cur[col] = r
				} else {
					cur = append(cur, r)
				}
				col++
				i += len(string(r))
			}
		}
		lines = append(lines, string(cur))
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}
