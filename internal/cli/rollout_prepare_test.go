package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/autosync"
	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
)

// automatedRepo is wavesRepo with automated sync (self-heal) on every Application and automatedSync:
// disable-during-rollout in the policy.
func automatedRepo(t *testing.T) (dir, head string) {
	t.Helper()
	dir, _ = wavesRepo(t)
	gitRun(t, dir, "checkout", "-q", "main")
	filetest.Write(t, dir, ".fleetwave.yaml", "automatedSync: disable-during-rollout\n"+wavesPolicy)
	_, apps := wavesFleet()
	for _, a := range apps {
		filetest.Write(t, dir, "apps/"+a.name+".yaml", "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: "+a.name+", namespace: argocd}\nspec:\n  project: default\n"+
			"  source: {repoURL: https://git.example.com/gitops.git, path: manifests/"+a.name+"}\n  destination: {name: "+a.cluster+", namespace: web}\n"+
			"  syncPolicy: {automated: {selfHeal: true}}\n")
	}
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "automated sync")
	gitRun(t, dir, "checkout", "-q", "change")
	gitRun(t, dir, "rebase", "-q", "main")
	return dir, gitOut(t, dir, "rev-parse", "change")
}

// automatedOn lists the sim's apps whose automated sync is on.
func automatedOn(sim *argocdsim.Server) []string {
	var on []string
	for _, n := range sim.AppNames() {
		a, _ := sim.App(n)
		if autosync.On(&a) {
			on = append(on, n)
		}
	}
	return on
}

func TestRolloutPrepareAndRelease(t *testing.T) {
	dir, head := automatedRepo(t)
	cs, apps := wavesFleet()
	for i := range apps {
		apps[i].live = head // in sync: Argo CD's automated sync has nothing to do
	}
	sim, url := newRolloutSim(t, argocdsim.Config{SyncDuration: 100 * time.Millisecond, ReconcileDelay: 10 * time.Millisecond}, cs, apps)
	sim.SetRef("HEAD", head)
	c, err := argocd.New(argocd.Options{BaseURL: url, Token: "t0ken"})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range apps {
		if _, err := c.Patch(context.Background(), "argocd/"+a.name, `{"spec":{"syncPolicy":{"automated":{"selfHeal":true}}}}`, argocd.PatchMerge); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(t.TempDir(), "r.db")
	env := map[string]string{"FLEETWAVE_ARGOCD_TOKEN": "t0ken"}
	var out outBuffer
	code, stderr := runArgo(t, context.Background(), env, &out, "rollout", "prepare", "--argocd", url, "--repo", dir, "--base", "main",
		"--head", "change", "--repo-url", "https://git.example.com/gitops.git", "--store", db)
	if code != 0 {
		t.Fatalf("prepare: exit %d: %s\n%s", code, stderr, out.String())
	}
	if on := automatedOn(sim); len(on) != 0 {
		t.Fatalf("after prepare, automated sync on for %v", on)
	}
	text := out.String()
	if n := strings.Count(text, "(automated sync switched off)"); n != 7 || !strings.Contains(text, "held: argocd/web-prd-1 (automated sync switched off)") {
		t.Errorf("prepare lists %d apps held:\n%s", n, text)
	}
	_, undo, ok := strings.Cut(text, "to undo: ")
	if !ok || !strings.Contains(text, "automated sync held off for 7 apps until the rollout of ") {
		t.Fatalf("prepare does not print how to undo it:\n%s", text)
	}
	undo = strings.TrimSpace(undo)
	want := "fleetwave rollout release --argocd " + url + " --store " + db + " --repo-name local/" + filepath.Base(dir) + " --head " + head
	if undo != want {
		t.Fatalf("undo command:\n%s\nwant\n%s", undo, want)
	}
	// The exact command printed undoes it.
	out = outBuffer{}
	code, stderr = runArgo(t, context.Background(), env, &out, strings.Fields(undo)[1:]...)
	if code != 0 || !strings.Contains(out.String(), "automated sync restored for 7 apps, 0 apps kept off") {
		t.Fatalf("release: exit %d: %s\n%s", code, stderr, out.String())
	}
	if on := automatedOn(sim); len(on) != 7 {
		t.Fatalf("after release, automated sync on for %v; want all 7", on)
	}
	a, _ := sim.App("web-prd-1")
	if !a.Spec.SyncPolicy.Automated.GetSelfHeal() || autosync.Switched(&a) || a.Labels[autosync.Label] != "" {
		t.Errorf("web-prd-1 not restored as it was: %+v %v %v", a.Spec.SyncPolicy.Automated, a.Annotations, a.Labels)
	}

	// Without prepare, the rollout still switches automated sync off at its start, and says it was late.
	out = outBuffer{}
	code, stderr = runArgo(t, context.Background(), env, &out, "rollout", "--argocd", url, "--repo", dir, "--base", "main",
		"--head", "change", "--repo-url", "https://git.example.com/gitops.git", "--store", db)
	if code != 0 {
		t.Fatalf("rollout: exit %d: %s\n%s", code, stderr, out.String())
	}
	if !strings.Contains(out.String(), "automated sync was still on for 7 apps: Argo CD may already have synced them; run `fleetwave rollout prepare` before merging") {
		t.Errorf("no late warning:\n%s", out.String())
	}
	if on := automatedOn(sim); len(on) != 7 {
		t.Errorf("after the rollout succeeded, automated sync on for %v; want all 7", on)
	}
}

func TestRolloutReleaseUsage(t *testing.T) {
	env := map[string]string{"FLEETWAVE_ARGOCD_TOKEN": "t0ken"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"rollout", "release", "--argocd", "http://127.0.0.1:1"}, "rollout release needs --head <sha> (what 'rollout prepare' held) or --id <rollout>"},
		{[]string{"rollout", "release", "--argocd", "http://127.0.0.1:1", "--id", "3", "--head", "abc"}, "give --id (a finished rollout) or --head (a prepare), not both"},
		{[]string{"rollout", "prepare", "--argocd", "http://127.0.0.1:1", "--selector", "env=prd", "--revision", rolloutNew}, "unknown flag: --selector"},
	} {
		var out outBuffer
		code, stderr := runArgo(t, context.Background(), env, &out, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}
