package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/spf13/cobra"

	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
	"github.com/fleetwave/fleetwave/internal/testkit/golden"
)

const (
	rolloutOld = "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a"
	rolloutNew = "1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b"
)

// runArgo runs the rollout / argocd-sim commands in-process under the root command, mapping errors to exit
// codes as Main does.
func runArgo(t *testing.T, ctx context.Context, env map[string]string, stdout io.Writer, args ...string) (code int, stderr string) {
	return runArgoSignals(t, ctx, env, stdout, nil, args...)
}

// runArgoSignals is runArgo with the interrupts sent on sigs instead of the process's.
func runArgoSignals(t *testing.T, ctx context.Context, env map[string]string, stdout io.Writer, sigs <-chan os.Signal, args ...string) (code int, stderr string) {
	t.Helper()
	var errOut outBuffer
	deps := &Deps{Stdout: stdout, Stderr: &errOut, Getenv: func(k string) string { return env[k] }, Signals: sigs}
	if sigs == nil {
		deps.Signals = make(chan os.Signal) // never: the test process's own signals are not the command's
	}
	root := NewRootCmd(deps)
	for _, c := range []*cobra.Command{newRolloutCmd(deps), newArgocdSimCmd(deps)} {
		if found, _, err := root.Find([]string{c.Name()}); err != nil || found == root {
			root.AddCommand(c)
		}
	}
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0, errOut.String()
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code, errOut.String() + err.Error()
	}
	return 2, errOut.String() + err.Error()
}

// outBuffer is a bytes.Buffer safe to read while a command writes to it (and waited on).
type outBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *outBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *outBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until the buffer contains s.
func (b *outBuffer) waitFor(t *testing.T, s string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !strings.Contains(b.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q within %s in:\n%s", s, within, b.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type simApp struct {
	name, cluster string
	labels        map[string]string
	live          string
	b             argocdsim.Behavior
}

// newRolloutSim serves a simulator over HTTP (token t0ken) with apps and their clusters; HEAD resolves to
// rolloutNew.
func newRolloutSim(t *testing.T, cfg argocdsim.Config, clusters []v1alpha1.Cluster, apps []simApp) (*argocdsim.Server, string) {
	t.Helper()
	if cfg.Token == "" {
		cfg.Token = "t0ken"
	}
	sim := argocdsim.New(cfg)
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(func() { srv.Close(); sim.Close() })
	sim.SetRef("HEAD", rolloutNew)
	for _, c := range clusters {
		sim.AddCluster(c)
	}
	for _, a := range apps {
		app := &v1alpha1.Application{}
		app.Name = a.name
		app.Labels = a.labels
		app.Spec.Project = "default"
		app.Spec.Source = &v1alpha1.ApplicationSource{RepoURL: "https://git.example.com/gitops.git", Path: a.name, TargetRevision: "HEAD"}
		app.Spec.Destination = v1alpha1.ApplicationDestination{Name: a.cluster, Namespace: a.name}
		live := a.live
		if live == "" {
			live = rolloutOld
		}
		if err := sim.AddApp(app, argocdsim.AppOptions{LiveRevisions: []string{live}, Behavior: a.b}); err != nil {
			t.Fatal(err)
		}
	}
	return sim, srv.URL
}

// rolloutSim serves a simulator with three apps: out of sync, at the revision, failing.
func rolloutSim(t *testing.T) (*argocdsim.Server, string) {
	t.Helper()
	prd := map[string]string{"env": "prd"}
	return newRolloutSim(t, argocdsim.Config{SyncDuration: 100 * time.Millisecond, ReconcileDelay: 10 * time.Millisecond}, nil, []simApp{
		{name: "api", cluster: "in-cluster", labels: prd},
		{name: "web", cluster: "in-cluster", labels: prd, live: rolloutNew},
		{name: "worker", cluster: "in-cluster", labels: prd, b: argocdsim.Behavior{Fail: true, FailMessage: "quota exceeded"}},
	})
}

// forbidding answers every request 403 PermissionDenied, as Argo CD does for a token without the permission.
func forbidding() string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"error":"permission denied","code":7,"message":"permission denied"}`)
	}))
	return srv.URL
}

func TestRolloutUsageErrors(t *testing.T) {
	sim, url := rolloutSim(t)
	forbidden := forbidding()
	db := filepath.Join(t.TempDir(), "r.db")
	env := map[string]string{"FLEETWAVE_ARGOCD_TOKEN": "t0ken"}
	sel := []string{"--selector", "env=prd", "--revision", rolloutNew, "--store", db}
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"no server", env, append([]string{"rollout"}, sel...), "needs --argocd"},
		{"no scheme", env, append([]string{"rollout", "--argocd", "argocd.example.com"}, sel...), `--argocd "argocd.example.com" has no scheme: write https://argocd.example.com`},
		{"no token", nil, append([]string{"rollout", "--argocd", url}, sel...), "needs an Argo CD token: set FLEETWAVE_ARGOCD_TOKEN"},
		{"bad token", map[string]string{"FLEETWAVE_ARGOCD_TOKEN": "wrong"}, append([]string{"rollout", "--argocd", url}, sel...), "token was rejected by Argo CD at " + url + " (401 Unauthenticated)"},
		{"forbidden", env, append([]string{"rollout", "--argocd", forbidden}, sel...), "token was refused by Argo CD at " + forbidden + " (403 PermissionDenied)"},
		{"nothing to roll out", env, []string{"rollout", "--argocd", url}, "needs what to roll out"},
		{"two modes", env, []string{"rollout", "--argocd", url, "--base", "main", "--selector", "env=prd", "--revision", rolloutNew}, "give one of"},
		{"no selector", env, []string{"rollout", "--argocd", url, "--revision", rolloutNew}, "needs --selector"},
		{"no revision", env, []string{"rollout", "--argocd", url, "--selector", "env=prd"}, "needs --revision"},
		{"bad selector", env, []string{"rollout", "--argocd", url, "--selector", "env in prd", "--revision", rolloutNew}, `--selector "env in prd" is not a label selector Argo CD accepts`},
		{"short sha", env, []string{"rollout", "--argocd", url, "--selector", "env=prd", "--revision", "1b1b1b1"}, "abbreviated commit SHA"},
		{"bad output", env, append([]string{"rollout", "--argocd", url, "--output", "yaml"}, sel...), "--output"},
		{"nothing matches", env, []string{"rollout", "--argocd", url, "--selector", "env=nowhere", "--revision", rolloutNew, "--store", db}, `no application matches selector "env=nowhere"`},
		{"not a plan", env, []string{"rollout", "--argocd", url, "--plan", writeTemp(t, `{"base":"x","apps":[]}`), "--store", db}, "has no waves"},
		{"no rollout to resume", env, []string{"rollout", "resume", "--store", filepath.Join(t.TempDir(), "empty.db")}, "the store holds no rollout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stderr := runArgo(t, context.Background(), tt.env, io.Discard, tt.args...)
			if code != 2 || !strings.Contains(stderr, tt.want) || strings.Contains(stderr, "t0ken") || strings.Contains(stderr, "wrong") {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, stderr, tt.want)
			}
		})
	}
	for _, n := range []string{"api", "web", "worker"} {
		if c := sim.Counts(n); c.Syncs != 0 {
			t.Fatalf("an input error synced %s", n)
		}
	}
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRolloutSelector: the selector mode is a one-wave plan through the executor: the failing app is reported
// with Argo CD's message, the one already at the revision is skipped, and the rollout fails (exit 1).
func TestRolloutSelector(t *testing.T) {
	sim, url := rolloutSim(t)
	db := filepath.Join(t.TempDir(), "r.db")
	var out outBuffer
	code, stderr := runArgo(t, context.Background(), map[string]string{"FLEETWAVE_ARGOCD_URL": url, "FLEETWAVE_ARGOCD_TOKEN": "t0ken"}, &out,
		"rollout", "--selector", "env=prd", "--revision", rolloutNew, "--concurrency", "3", "--store", db)
	text := out.String()
	if code != 1 || !strings.Contains(stderr, "a wave failed; the rollout is paused") {
		t.Fatalf("exit %d, stderr %q\n%s", code, stderr, text)
	}
	for _, want := range []string{
		"rollout-submitted: selector/env=prd at 1b1b1b1b1b: 3 apps in 1 wave",
		"wave selector: started: 3 apps in 1 batch",
		"  api (in-cluster): synced 1b1b1b1b1b, Healthy",
		"  web (in-cluster): skipped",
		"  worker (in-cluster): failed",
		"quota exceeded",
		"wave selector: failed",
		"rollout #1: paused",
		"rollout #1 paused: 1 synced, 1 skipped (already synced and healthy), 1 failed, 0 in flight, 0 not started",
		"  failed: worker (in-cluster): ",
		"fleetwave rollout resume --store " + db + " retries its failed apps",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text+stderr, "t0ken") {
		t.Error("the token was printed")
	}
	if sim.Counts("web").Syncs != 0 || sim.Counts("api").SyncsAccepted != 1 {
		t.Errorf("syncs: web %d, api %d", sim.Counts("web").Syncs, sim.Counts("api").SyncsAccepted)
	}
	// status reads the same rollout back.
	var st bytes.Buffer
	if code, stderr := runArgo(t, context.Background(), nil, &st, "rollout", "status", "--store", db, "-o", "json"); code != 0 ||
		!strings.Contains(st.String(), `"failed":[{"app":"worker","cluster":"in-cluster","message":"`) {
		t.Fatalf("status: exit %d %s\n%s", code, stderr, st.String())
	}
}

func TestRolloutDryRun(t *testing.T) {
	sim, url := rolloutSim(t)
	db := filepath.Join(t.TempDir(), "r.db")
	var out bytes.Buffer
	code, stderr := runArgo(t, context.Background(), map[string]string{"FLEETWAVE_ARGOCD_TOKEN": "t0ken"}, &out,
		"rollout", "--argocd", url, "--selector", "env=prd", "--revision", rolloutNew, "--dry-run", "--store", db)
	if code != 0 || !strings.Contains(out.String(), "selector") || !strings.Contains(out.String(), "worker") {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out.String())
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("a dry run created the store")
	}
	for _, n := range []string{"api", "web", "worker"} {
		if sim.Counts(n).Syncs != 0 {
			t.Fatalf("a dry run synced %s", n)
		}
	}
}

// wavesFleet: canary (test-1), staging (stg-1, stg-2), production (4 clusters in 2 regions), cluster labels in
// Argo CD only.
func wavesFleet() ([]v1alpha1.Cluster, []simApp) {
	var cs []v1alpha1.Cluster
	var apps []simApp
	for _, c := range []struct{ name, env, region string }{
		{"test-1", "test", "eu"}, {"stg-1", "stg", "eu"}, {"stg-2", "stg", "us"},
		{"prd-1", "prd", "eu"}, {"prd-2", "prd", "us"}, {"prd-3", "prd", "eu"}, {"prd-4", "prd", "us"},
	} {
		cs = append(cs, v1alpha1.Cluster{Name: c.name, Server: "https://" + c.name + ".example.com", Labels: map[string]string{"env": c.env, "region": c.region}})
		apps = append(apps, simApp{name: "web-" + c.name, cluster: c.name})
	}
	return cs, apps
}

const wavesPolicy = `apiVersion: fleetwave/v1
waves:
  - name: canary
    selector: {matchLabels: {env: test}}
  - name: staging
    selector: {matchLabels: {env: stg}}
  - name: production
    selector: {matchLabels: {env: prd}}
    maxParallel: 2
    maxPerLabel: {region: 1}
`

// wavesRepo is a GitOps repository with one directory app per cluster of wavesFleet; the change edits all of
// them. It returns the repository and its head commit.
func wavesRepo(t *testing.T) (dir, head string) {
	t.Helper()
	dir = t.TempDir()
	_, apps := wavesFleet()
	files := map[string]string{".fleetwave.yaml": wavesPolicy}
	for _, a := range apps {
		files["apps/"+a.name+".yaml"] = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: " + a.name + ", namespace: argocd}\nspec:\n  project: default\n" +
			"  source: {repoURL: https://git.example.com/gitops.git, path: manifests/" + a.name + "}\n  destination: {name: " + a.cluster + ", namespace: web}\n"
		files["manifests/"+a.name+"/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {color: blue}\n"
	}
	changed := map[string]string{}
	for _, a := range apps {
		changed["manifests/"+a.name+"/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {color: green}\n"
	}
	return dir, commitChange(t, dir, files, changed)
}

// commitChange makes dir a git repository of files on main, then a branch change that writes changed over them,
// and returns the change's commit.
func commitChange(t *testing.T, dir string, files, changed map[string]string) (head string) {
	t.Helper()
	for rel, c := range files {
		filetest.Write(t, dir, rel, c)
	}
	gitRun(t, dir, "init", "-q", "-b", "main")
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "base")
	gitRun(t, dir, "checkout", "-q", "-b", "change")
	for rel, c := range changed {
		filetest.Write(t, dir, rel, c)
	}
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "change")
	return gitOut(t, dir, "rev-parse", "change")
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// jsonEvents parses the JSON lines of a run.
func jsonEvents(t *testing.T, s string) []rolloutEvent {
	t.Helper()
	var evs []rolloutEvent
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev rolloutEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("not a JSON line: %q: %v", sc.Text(), err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// TestRolloutWavesFromRepo computes the plan from the repository as `plan` does, with the cluster labels from
// Argo CD, and runs it: every wave's apps are done before the next wave starts, production's batches hold at
// most two clusters, one per region, and every app is synced exactly once.
func TestRolloutWavesFromRepo(t *testing.T) {
	dir, head := wavesRepo(t)
	cs, apps := wavesFleet()
	sim, url := newRolloutSim(t, argocdsim.Config{SyncDuration: 150 * time.Millisecond, ReconcileDelay: 10 * time.Millisecond}, cs, apps)
	sim.SetRef("HEAD", head)
	db := filepath.Join(t.TempDir(), "r.db")
	var out outBuffer
	code, stderr := runArgo(t, context.Background(), map[string]string{"FLEETWAVE_ARGOCD_TOKEN": "t0ken"}, &out,
		"rollout", "--argocd", url, "--repo", dir, "--base", "main", "--head", "change", "--repo-url", "https://git.example.com/gitops.git",
		"--store", db, "-o", "json", "--concurrency", "10")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out.String())
	}
	evs := jsonEvents(t, out.String())
	waveOf := map[string]string{}
	var order []string // wave-started / wave-succeeded in order
	var syncing []rolloutEvent
	for _, ev := range evs {
		switch ev.Event {
		case "wave-started", "wave-succeeded":
			order = append(order, ev.Event+" "+ev.Wave)
		case "app-syncing":
			syncing = append(syncing, ev)
		case "app-synced":
			waveOf[ev.App] = ev.Wave
			if !strings.Contains(strings.Join(order, ","), "wave-started "+ev.Wave) || strings.Contains(strings.Join(order, ","), "wave-succeeded "+ev.Wave) {
				t.Errorf("%s synced outside its wave: %v", ev.App, order)
			}
		}
	}
	want := "wave-started canary,wave-succeeded canary,wave-started staging,wave-succeeded staging,wave-started production,wave-succeeded production"
	if got := strings.Join(order, ","); got != want {
		t.Fatalf("waves: %s\nwant %s", got, want)
	}
	last := evs[len(evs)-1]
	if last.Event != "summary" || last.Summary == nil || len(last.Summary.Synced) != 7 || last.Summary.State != "succeeded" {
		t.Fatalf("summary %+v", last)
	}
	// Production: batches of at most 2 clusters, one per region (eu: prd-1, prd-3; us: prd-2, prd-4).
	batches := map[int][]string{}
	for _, ev := range syncing {
		if ev.Wave == "production" {
			batches[*ev.Batch] = append(batches[*ev.Batch], ev.Cluster)
		}
	}
	if len(batches) != 2 {
		t.Fatalf("production batches %v", batches)
	}
	for b, clusters := range batches {
		region := map[string]int{}
		for _, c := range clusters {
			for _, cl := range cs {
				if cl.Name == c {
					region[cl.Labels["region"]]++
				}
			}
		}
		if len(clusters) > 2 || region["eu"] > 1 || region["us"] > 1 {
			t.Errorf("batch %d: %v", b, clusters)
		}
	}
	// The simulator's clock: no app of a batch was synced before every operation of the batch before it ended
	// (waves and batches in order, never overlapping).
	type group struct {
		key  string
		apps []string
	}
	var groups []group
	for _, ev := range syncing {
		key := ev.Wave + "/" + strconv.Itoa(*ev.Batch)
		if len(groups) == 0 || groups[len(groups)-1].key != key {
			groups = append(groups, group{key: key})
		}
		groups[len(groups)-1].apps = append(groups[len(groups)-1].apps, ev.App)
	}
	if len(groups) != 4 { // canary, staging, production ×2
		t.Fatalf("batches in order: %+v", groups)
	}
	for i := 1; i < len(groups); i++ {
		var prevEnd time.Time
		for _, a := range groups[i-1].apps {
			if f := sim.Counts(a).LastOpFinished; f.After(prevEnd) {
				prevEnd = f
			}
		}
		for _, a := range groups[i].apps {
			if acc := sim.Counts(a).LastSyncAccepted; acc.Before(prevEnd) {
				t.Errorf("%s (%s) was synced at %s, before %s ended at %s", a, groups[i].key, acc, groups[i-1].key, prevEnd)
			}
		}
	}
	for _, a := range apps {
		if c := sim.Counts(a.name); c.SyncsAccepted != 1 {
			t.Errorf("%s: %d syncs accepted", a.name, c.SyncsAccepted)
		}
	}
	// The same command again: the same rollout, finished; nothing synced again.
	out = outBuffer{}
	code, stderr = runArgo(t, context.Background(), map[string]string{"FLEETWAVE_ARGOCD_TOKEN": "t0ken"}, &out,
		"rollout", "--argocd", url, "--repo", dir, "--base", "main", "--head", "change", "--repo-url", "https://git.example.com/gitops.git", "--store", db)
	if code != 0 || !strings.Contains(out.String(), "rollout #1 succeeded: 7 synced") {
		t.Fatalf("rerun: exit %d %s\n%s", code, stderr, out.String())
	}
	for _, a := range apps {
		if c := sim.Counts(a.name); c.SyncsAccepted != 1 {
			t.Errorf("after the rerun, %s: %d syncs accepted", a.name, c.SyncsAccepted)
		}
	}
}

// TestRolloutInterruptAndResume: the first interrupt pauses (the apps in flight are named and finish, none
// starts, exit 3); the same command again resumes the same rollout, and every app is synced exactly once.
func TestRolloutInterruptAndResume(t *testing.T) {
	var apps []simApp
	for _, n := range []string{"a1", "a2", "a3", "a4", "a5", "a6"} {
		apps = append(apps, simApp{name: n, cluster: "in-cluster", labels: map[string]string{"team": "x"}})
	}
	sim, url := newRolloutSim(t, argocdsim.Config{SyncDuration: 400 * time.Millisecond, ReconcileDelay: 10 * time.Millisecond}, nil, apps)
	db := filepath.Join(t.TempDir(), "r.db")
	env := map[string]string{"FLEETWAVE_ARGOCD_TOKEN": "t0ken"}
	args := []string{"rollout", "--argocd", url, "--selector", "team=x", "--revision", rolloutNew, "--concurrency", "2", "--store", db}
	sigs := make(chan os.Signal, 1)
	var out outBuffer
	done := make(chan int, 1)
	var stderr string
	go func() {
		var code int
		code, stderr = runArgoSignals(t, context.Background(), env, &out, sigs, args...)
		done <- code
	}()
	out.waitFor(t, ": syncing", 20*time.Second)
	sigs <- os.Interrupt
	var code int
	select {
	case code = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("no exit after the interrupt:\n%s", out.String())
	}
	text := out.String()
	if code != exitPaused || !strings.Contains(stderr, "paused") {
		t.Fatalf("exit %d, stderr %q\n%s", code, stderr, text)
	}
	for _, want := range []string{"rollout #1: interrupted: pausing: the syncs in flight finish, none starts; interrupt again to exit now (in flight: a1", "rollout #1: paused: paused by @interrupt",
		"paused: rerun the command or run fleetwave rollout resume --store " + db} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	synced := 0
	for _, a := range apps {
		synced += sim.Counts(a.name).SyncsAccepted
	}
	if synced == 0 || synced == len(apps) || !strings.Contains(text, "not started") {
		t.Fatalf("%d apps synced before the pause took effect\n%s", synced, text)
	}

	out = outBuffer{}
	code, stderr = runArgo(t, context.Background(), env, &out, args...)
	if code != 0 || !strings.Contains(out.String(), "rollout #1 succeeded: ") {
		t.Fatalf("resume: exit %d %s\n%s", code, stderr, out.String())
	}
	if !strings.Contains(out.String(), "rollout #1: running: resumed") || strings.Contains(out.String(), "a1 (in-cluster): synced") {
		t.Errorf("the rerun did not say it resumed:\n%s", out.String())
	}
	for _, a := range apps {
		if c := sim.Counts(a.name); c.SyncsAccepted != 1 {
			t.Errorf("%s: %d syncs accepted, want exactly 1", a.name, c.SyncsAccepted)
		}
	}
}

// TestRolloutEventsGolden: the JSON event stream of a plan file with a soak, an approval given from a second
// command, a skipped app and a failing one, against testdata/rollout/events.jsonl (go test -update).
func TestRolloutEventsGolden(t *testing.T) {
	cs := []v1alpha1.Cluster{
		{Name: "test-1", Labels: map[string]string{"env": "test"}}, {Name: "test-2", Labels: map[string]string{"env": "test"}},
		{Name: "prd-1", Labels: map[string]string{"env": "prd"}}, {Name: "prd-2", Labels: map[string]string{"env": "prd"}},
	}
	apps := []simApp{
		{name: "web-test-1", cluster: "test-1"},
		{name: "web-test-2", cluster: "test-2", live: rolloutNew},
		{name: "web-prd-1", cluster: "prd-1"},
		{name: "web-prd-2", cluster: "prd-2", b: argocdsim.Behavior{Fail: true, FailMessage: "quota exceeded"}},
	}
	_, url := newRolloutSim(t, argocdsim.Config{SyncDuration: 100 * time.Millisecond, ReconcileDelay: 10 * time.Millisecond}, cs, apps)
	policy, err := plan.ParsePolicy(".fleetwave.yaml", []byte(`apiVersion: fleetwave/v1
waves:
  - name: canary
    selector: {matchLabels: {env: test}}
    maxParallel: 1
    soak: 1s
  - name: production
    selector: {matchLabels: {env: prd}}
    maxParallel: 1
    approval: {}
`))
	if err != nil {
		t.Fatal(err)
	}
	var in []plan.App
	for i, a := range apps {
		in = append(in, plan.App{Name: a.name, Namespace: "argocd", Project: "default", Cluster: a.cluster, ClusterLabels: cs[i].Labels, Labels: map[string]string{}})
	}
	pl := plan.Build(policy, in)
	b, _ := json.Marshal(pl)
	doc := `{"base":"` + rolloutOld + `","head":"` + rolloutNew + `",` + string(b[1:])
	planFile := writeTemp(t, doc)
	db := filepath.Join(t.TempDir(), "r.db")
	env := map[string]string{"FLEETWAVE_ARGOCD_TOKEN": "t0ken"}

	var out outBuffer
	done := make(chan int, 1)
	go func() {
		code, _ := runArgo(t, context.Background(), env, &out, "rollout", "--argocd", url, "--plan", planFile, "--store", db, "-o", "json")
		done <- code
	}()
	out.waitFor(t, `"event":"wave-awaiting-approval"`, 30*time.Second)
	var reply bytes.Buffer
	if code, stderr := runArgo(t, context.Background(), nil, &reply, "rollout", "approve", "production", "--store", db); code != 0 ||
		!strings.Contains(reply.String(), "production") {
		t.Fatalf("approve: exit %d %s\n%s", code, stderr, reply.String())
	}
	var code int
	select {
	case code = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("no end:\n%s", out.String())
	}
	if code != 1 {
		t.Fatalf("exit %d, want 1 (a wave failed)\n%s", code, out.String())
	}
	golden.Assert(t, "rollout/events.jsonl", strings.ReplaceAll(normalizeEvents(t, out.String()), db, "<store>"))
}

var durationRE = regexp.MustCompile(`\b\d+(\.\d+)?(ms|s|µs)\b`)

// normalizeEvents drops what changes from run to run: times and durations.
func normalizeEvents(t *testing.T, s string) string {
	t.Helper()
	var b strings.Builder
	for _, ev := range jsonEvents(t, s) {
		ev.Time = time.Time{}
		if ev.Until != nil {
			ev.Until = &time.Time{}
		}
		ev.Message = durationRE.ReplaceAllString(ev.Message, "<d>")
		if ev.Summary != nil {
			for i := range ev.Summary.Failed {
				ev.Summary.Failed[i].Message = durationRE.ReplaceAllString(ev.Summary.Failed[i].Message, "<d>")
			}
		}
		line, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// lineWriter hands the first line written to it over a channel.
type lineWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	first chan string
	once  sync.Once
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if line, err := bufio.NewReader(bytes.NewReader(w.buf.Bytes())).ReadString('\n'); err == nil {
		w.once.Do(func() { w.first <- strings.TrimSpace(line) })
	}
	return len(p), nil
}

func TestArgocdSimCommand(t *testing.T) {
	fleet := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(fleet, []byte(`refs: {HEAD: "`+rolloutNew+`"}
clusters: [{name: prd-eu-1, server: https://prd-eu-1.example.com, labels: {region: eu-1}}]
generate: [{count: 25, labels: {fleet: demo}, liveRevision: "`+rolloutOld+`"}]
simulation: {syncDuration: 50ms, reconcileDelay: 5ms}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &lineWriter{first: make(chan string, 1)}
	done := make(chan int, 1)
	go func() {
		code, _ := runArgo(t, ctx, nil, w, "argocd-sim", "--addr", "127.0.0.1:0", "--fleet", fleet, "--token", "demo")
		done <- code
	}()
	var url string
	select {
	case url = <-w.first:
	case <-time.After(10 * time.Second):
		t.Fatal("argocd-sim printed no URL")
	}
	var out bytes.Buffer
	code, stderr := runArgo(t, context.Background(), map[string]string{"FLEETWAVE_ARGOCD_TOKEN": "demo"}, &out,
		"rollout", "--argocd", url, "--selector", "fleet=demo", "--revision", rolloutNew, "--concurrency", "10", "--store", filepath.Join(t.TempDir(), "r.db"))
	if code != 0 || !strings.Contains(out.String(), "succeeded: 25 synced") {
		t.Fatalf("rollout against argocd-sim: exit %d\n%s\n%s", code, out.String(), stderr)
	}
	req, _ := http.NewRequest("GET", url+"/api/v1/clusters", nil)
	req.Header.Set("Authorization", "Bearer demo")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("clusters: %v %v", err, resp)
	}
	_ = resp.Body.Close()
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("argocd-sim exited %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("argocd-sim did not stop")
	}
	if code, stderr := runArgo(t, context.Background(), nil, io.Discard, "argocd-sim"); code != 2 || !strings.Contains(stderr, "needs --fleet or --from-plan") {
		t.Fatalf("without --fleet: exit %d %q", code, stderr)
	}
}

// TestArgocdSimFromPlan: the simulator seeded from a plan file serves its apps on their clusters, live at the
// plan's base, and the same plan rolls out against it wave by wave, every app synced once.
func TestArgocdSimFromPlan(t *testing.T) {
	dir, head := wavesRepo(t)
	cs, _ := wavesFleet()
	var clusters strings.Builder
	clusters.WriteString("clusters:\n")
	for _, c := range cs {
		fmt.Fprintf(&clusters, "  - {name: %s, server: %s, labels: {env: %s, region: %s}}\n", c.Name, c.Server, c.Labels["env"], c.Labels["region"])
	}
	clustersFile := filepath.Join(t.TempDir(), "clusters.yaml")
	if err := os.WriteFile(clustersFile, []byte(clusters.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(t.TempDir(), "plan.json")
	var pj bytes.Buffer
	if code, stderr := runArgo(t, context.Background(), nil, &pj, "plan", "--repo", dir, "--base", "main", "--head", "change",
		"--repo-url", "https://git.example.com/gitops.git", "--clusters", clustersFile, "--output", "json"); code != 0 {
		t.Fatalf("plan: exit %d %s", code, stderr)
	}
	if err := os.WriteFile(plan, pj.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &lineWriter{first: make(chan string, 1)}
	done := make(chan int, 1)
	go func() {
		code, _ := runArgo(t, ctx, nil, w, "argocd-sim", "--from-plan", plan, "--repo-url", "https://git.example.com/gitops.git",
			"--token", "t0ken", "--sync-duration", "50ms", "--reconcile-delay", "5ms")
		done <- code
	}()
	var url string
	select {
	case url = <-w.first:
	case <-time.After(10 * time.Second):
		t.Fatal("argocd-sim printed no URL")
	}
	var out outBuffer
	code, stderr := runArgo(t, context.Background(), map[string]string{"FLEETWAVE_ARGOCD_TOKEN": "t0ken"}, &out,
		"rollout", "--argocd", url, "--plan", plan, "--store", filepath.Join(t.TempDir(), "r.db"), "--concurrency", "10")
	if code != 0 || !strings.Contains(out.String(), "succeeded: 7 synced") || !strings.Contains(out.String(), text.ShortRev(head)) {
		t.Fatalf("rollout of the plan against its simulator: exit %d\n%s\n%s", code, out.String(), stderr)
	}
	cancel()
	<-done
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"apps": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, stderr := runArgo(t, context.Background(), nil, io.Discard, "argocd-sim", "--from-plan", bad); code != 2 || !strings.Contains(stderr, "not a plan with waves") {
		t.Fatalf("a file that is no plan: exit %d %q", code, stderr)
	}
}

// sixApps is a fleet of six apps selected by team=x, none at the revision.
func sixApps() []simApp {
	var apps []simApp
	for _, n := range []string{"a1", "a2", "a3", "a4", "a5", "a6"} {
		apps = append(apps, simApp{name: n, cluster: "in-cluster", labels: map[string]string{"team": "x"}})
	}
	return apps
}

// TestRolloutSecondInterrupt: a second interrupt exits at once (130) with the store consistent; the rerun
// resumes and every app is synced exactly once.
func TestRolloutSecondInterrupt(t *testing.T) {
	apps := sixApps()
	sim, url := newRolloutSim(t, argocdsim.Config{SyncDuration: 2 * time.Second, ReconcileDelay: 10 * time.Millisecond}, nil, apps)
	db := filepath.Join(t.TempDir(), "r.db")
	env := map[string]string{"FLEETWAVE_ARGOCD_TOKEN": "t0ken"}
	args := []string{"rollout", "--argocd", url, "--selector", "team=x", "--revision", rolloutNew, "--concurrency", "2", "--store", db, "-o", "json"}
	sigs := make(chan os.Signal, 2)
	var out outBuffer
	done := make(chan int, 1)
	go func() {
		code, _ := runArgoSignals(t, context.Background(), env, &out, sigs, args...)
		done <- code
	}()
	out.waitFor(t, `"event":"app-syncing"`, 20*time.Second)
	sigs <- os.Interrupt
	out.waitFor(t, `"event":"interrupted"`, 10*time.Second)
	time.Sleep(interruptDebounce + 100*time.Millisecond) // sooner, it is the same interrupt seen twice
	sigs <- os.Interrupt
	select {
	case code := <-done:
		if code != exitInterrupted {
			t.Fatalf("exit %d, want %d\n%s", code, exitInterrupted, out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no exit after two interrupts:\n%s", out.String())
	}
	evs := jsonEvents(t, out.String())
	if last := evs[len(evs)-1]; last.Event != "summary" || len(last.Summary.NotStarted) == 0 {
		t.Fatalf("last event %+v", last)
	}
	var rerun outBuffer
	if code, stderr := runArgo(t, context.Background(), env, &rerun, args...); code != 0 {
		t.Fatalf("rerun: exit %d %s\n%s", code, stderr, rerun.String())
	}
	if first := jsonEvents(t, rerun.String())[1]; first.Event != "rollout-found" {
		t.Errorf("the rerun did not say it found the rollout: %+v", first)
	}
	for _, a := range apps {
		if c := sim.Counts(a.name); c.SyncsAccepted != 1 || c.Syncs != 1 {
			t.Errorf("%s: %d sync requests (%d accepted), want exactly 1", a.name, c.Syncs, c.SyncsAccepted)
		}
	}
}

// TestRolloutHelperProcess is the CLI as its own process for TestRolloutKilled (not a test by itself).
func TestRolloutHelperProcess(t *testing.T) {
	if os.Getenv("FLEETWAVE_ROLLOUT_HELPER") != "1" {
		t.Skip("a helper process of TestRolloutKilled")
	}
	var args []string
	if err := json.Unmarshal([]byte(os.Getenv("FLEETWAVE_ROLLOUT_ARGS")), &args); err != nil {
		t.Fatal(err)
	}
	os.Exit(Main(context.Background(), args, DefaultDeps()))
}

// TestRolloutKilled kills the CLI with SIGKILL at random moments of a selector rollout and runs it again until it
// ends, in 20 trials: each app must end synced exactly once (the simulator lives in the test process and counts).
func TestRolloutKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts CLI processes; skipped with -short")
	}
	// 20 trials, as the executor's crash test (FLEETWAVE_CRASH_TRIALS sets both).
	trials := 20
	if n, err := strconv.Atoi(os.Getenv("FLEETWAVE_CRASH_TRIALS")); err == nil && n > 0 {
		trials = n
	}
	began := time.Now()
	defer func() { t.Logf("%d trials in %s", trials, time.Since(began).Round(time.Second)) }()
	for trial := range trials {
		apps := sixApps()
		sim, url := newRolloutSim(t, argocdsim.Config{SyncDuration: 600 * time.Millisecond, ReconcileDelay: 10 * time.Millisecond}, nil, apps)
		db := filepath.Join(t.TempDir(), "r.db")
		args, _ := json.Marshal([]string{"rollout", "--argocd", url, "--selector", "team=x", "--revision", rolloutNew,
			"--concurrency", "2", "--store", db, "--lease-ttl", "2s", "--intent-grace", "1s"})
		start := func() (*exec.Cmd, *outBuffer) {
			var out outBuffer
			cmd := exec.Command(os.Args[0], "-test.run=^TestRolloutHelperProcess$")
			cmd.Env = append(os.Environ(), "FLEETWAVE_ROLLOUT_HELPER=1", "FLEETWAVE_ROLLOUT_ARGS="+string(args), "FLEETWAVE_ARGOCD_TOKEN=t0ken")
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			return cmd, &out
		}
		var logs []string
		kills := 0
		for run := 0; ; run++ {
			if run > 8 {
				t.Fatalf("trial %d: not finished after %d runs:\n%s", trial, run, strings.Join(logs, "\n"))
			}
			cmd, out := start()
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			if kills < 2 {
				// Kill at a moment spread over the run (startup, then about 2s of syncs, or a wait for the lease).
				delay := time.Duration(600+(trial*7+run*11)%9*225) * time.Millisecond
				select {
				case err := <-exited:
					logs = append(logs, fmt.Sprintf("run %d ended before its kill: %v\n%s", run, err, out.String()))
				case <-time.After(delay):
					_ = cmd.Process.Kill()
					<-exited
					kills++
					logs = append(logs, fmt.Sprintf("run %d killed after %s:\n%s", run, delay, out.String()))
					continue
				}
			} else {
				select {
				case err := <-exited:
					logs = append(logs, fmt.Sprintf("run %d: %v\n%s", run, err, out.String()))
				case <-time.After(60 * time.Second):
					_ = cmd.Process.Kill()
					t.Fatalf("trial %d: run %d did not finish:\n%s", trial, run, out.String())
				}
			}
			if strings.Contains(out.String(), "succeeded: 6 synced") {
				break
			}
		}
		killedMidway := 0
		for _, l := range logs {
			if strings.Contains(l, "killed after") && strings.Contains(l, "syncing") {
				killedMidway++
			}
		}
		t.Logf("trial %d: %d runs, %d killed, %d of them with syncs in flight", trial, len(logs), kills, killedMidway)
		if os.Getenv("FLEETWAVE_KILL_LOG") != "" {
			t.Log(strings.Join(logs, "\n"))
		}
		for _, a := range apps {
			if c := sim.Counts(a.name); c.SyncsAccepted != 1 || c.Syncs != 1 {
				t.Errorf("trial %d: %s: %d sync requests (%d accepted), want exactly 1\n%s", trial, a.name, c.Syncs, c.SyncsAccepted, strings.Join(logs, "\n"))
			}
		}
	}
}

// TestRolloutCommands: after a failed wave (paused), rollback run from the CLI syncs the apps back and ends
// rolled back (exit 1); abort on another failed rollout ends it aborted.
func TestRolloutCommands(t *testing.T) {
	sim, url := rolloutSim(t)
	db := filepath.Join(t.TempDir(), "r.db")
	env := map[string]string{"FLEETWAVE_ARGOCD_TOKEN": "t0ken"}
	if code, stderr := runArgo(t, context.Background(), env, io.Discard,
		"rollout", "--argocd", url, "--selector", "env=prd", "--revision", rolloutNew, "--store", db); code != 1 {
		t.Fatalf("exit %d %s", code, stderr)
	}
	var out outBuffer
	code, stderr := runArgo(t, context.Background(), env, &out, "rollout", "rollback", "--argocd", url, "--store", db)
	if code != 1 || !strings.Contains(out.String(), "rollout #1: rolled-back") || !strings.Contains(out.String(), "api (in-cluster): rolled-back "+text.ShortRev(rolloutOld)) {
		t.Fatalf("rollback: exit %d %s\n%s", code, stderr, out.String())
	}
	if c := sim.Counts("api"); c.SyncsAccepted != 2 {
		t.Errorf("api: %d syncs, want 2 (forward, back)", c.SyncsAccepted)
	}
	if code, stderr := runArgo(t, context.Background(), env, io.Discard, "rollout", "abort", "--store", db); code != 1 ||
		!strings.Contains(stderr, "rolled-back") {
		t.Fatalf("abort of a rolled-back rollout: exit %d %s", code, stderr)
	}
	db2 := filepath.Join(t.TempDir(), "r2.db")
	if code, stderr := runArgo(t, context.Background(), env, io.Discard,
		"rollout", "--argocd", url, "--selector", "env=prd", "--revision", rolloutNew, "--store", db2); code != 1 {
		t.Fatalf("exit %d %s", code, stderr)
	}
	out = outBuffer{}
	if code, stderr := runArgo(t, context.Background(), env, &out, "rollout", "abort", "--store", db2); code != 0 || !strings.Contains(out.String(), "Aborted") {
		t.Fatalf("abort: exit %d %s\n%s", code, stderr, out.String())
	}
	out = outBuffer{}
	if code, _ := runArgo(t, context.Background(), env, &out, "rollout", "status", "--store", db2); code != 0 || !strings.Contains(out.String(), "rollout #1 aborted") {
		t.Fatalf("status after abort: exit %d\n%s", code, out.String())
	}
}

// TestRolloutTerminalStatus: on a terminal, event lines scroll above a status line redrawn in place (the wave,
// its counts, the apps in flight, the soak left), cleared before the summary.
func TestRolloutTerminalStatus(t *testing.T) {
	var b bytes.Buffer
	sink := &eventSink{w: &b, tty: true}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	w := newWatcher(nil, 7, sink, (&rolloutOptions{storeDSN: defaultRolloutStore}).command)
	w.now = func() time.Time { return now }
	w.soakUntil["canary"] = now.Add(42 * time.Second)
	s := snapshot{
		r:     store.Rollout{ID: 7, State: store.RolloutRunning},
		waves: []store.Wave{{Index: 0, Name: "canary", State: store.WaveGating}, {Index: 1, Name: "production", State: store.WavePending}},
		steps: []store.AppStep{{Wave: 0, App: store.AppKey{Name: "a"}, State: store.StepSynced}, {Wave: 1, App: store.AppKey{Name: "b"}}},
	}
	if got, want := w.statusLine(s), "▶ rollout #7 running · wave 1/2 canary gating · 1/1 done · soak 42s left"; got != want {
		t.Fatalf("status %q\nwant   %q", got, want)
	}
	s.waves[0].State, s.waves[1].State = store.WaveSucceeded, store.WaveRunning
	s.steps[1].State = store.StepTriggered
	sink.setStatus(w.statusLine(s))
	w.emit(rolloutEvent{Time: now, Event: "app-syncing", App: "b", Wave: "production"})
	w.emit(rolloutEvent{Time: now, Event: "summary", Summary: &rolloutSummary{State: "running"}})
	out := b.String()
	for _, want := range []string{
		clearLine + "▶ rollout #7 running · wave 2/2 production running · 0/1 done · syncing b",
		clearLine + now.Local().Format("15:04:05") + "   b: syncing\n▶ rollout #7",
		clearLine + now.Local().Format("15:04:05") + " rollout #7 running: 0 synced",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%q", want, out)
		}
	}
	if strings.HasSuffix(out, "syncing b") {
		t.Errorf("the status line outlived the summary: %q", out)
	}
}

// TestRolloutHeldBySyncWindow: an Argo CD deny window over the apps holds the wave — a wave-held line naming the
// window and when it ends, a status to match — and no app is synced or counted as failed.
func TestRolloutHeldBySyncWindow(t *testing.T) {
	apps := []simApp{{name: "x1", cluster: "in-cluster", labels: map[string]string{"team": "x"}},
		{name: "x2", cluster: "in-cluster", labels: map[string]string{"team": "x"}}}
	sim, url := newRolloutSim(t, argocdsim.Config{SyncDuration: 100 * time.Millisecond, ReconcileDelay: 10 * time.Millisecond}, nil, apps)
	started := time.Now().UTC().Add(-time.Minute)
	p := v1alpha1.AppProject{}
	p.Name = "default"
	p.Spec.SyncWindows = v1alpha1.SyncWindows{{Kind: "deny", Schedule: fmt.Sprintf("%d %d * * *", started.Minute(), started.Hour()),
		Duration: "1h", Applications: []string{"x*"}}}
	sim.SetProject(p)
	until := started.Truncate(time.Minute).Add(time.Hour)

	db := filepath.Join(t.TempDir(), "r.db")
	env := map[string]string{"FLEETWAVE_ARGOCD_TOKEN": "t0ken"}
	sigs := make(chan os.Signal, 1)
	var out outBuffer
	done := make(chan int, 1)
	go func() {
		code, _ := runArgoSignals(t, context.Background(), env, &out, sigs, "rollout", "--argocd", url, "--selector", "team=x",
			"--revision", rolloutNew, "--store", db, "-o", "json")
		done <- code
	}()
	out.waitFor(t, `"event":"wave-held"`, 30*time.Second)
	sigs <- os.Interrupt
	select {
	case code := <-done:
		if code != exitPaused {
			t.Errorf("exit %d after the interrupt, want %d", code, exitPaused)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no exit after the interrupt:\n%s", out.String())
	}
	var held *rolloutEvent
	for _, ev := range jsonEvents(t, out.String()) {
		if ev.Event == "wave-held" {
			held = &ev
		}
		if ev.Event == "app-failed" {
			t.Errorf("an app failed while held: %+v", ev)
		}
	}
	want := fmt.Sprintf("2 apps (x1, x2) held by deny window '%s' (1h)", p.Spec.SyncWindows[0].Schedule)
	if held == nil || held.Message != want || held.Until == nil || !held.Until.Equal(until) {
		t.Fatalf("wave-held event %+v, want %q until %s\n%s", held, want, until, out.String())
	}
	for _, a := range apps {
		if c := sim.Counts(a.name); c.Syncs != 0 {
			t.Errorf("%s: %d sync requests while the window denies", a.name, c.Syncs)
		}
	}
}

// TestRolloutApproveTeams: a wave whose approval names teams is approved from the terminal only by a user who
// states one of them (--member-of), recorded as stated; the terminal cannot check GitHub team membership and says
// so, where the App checks it.
func TestRolloutApproveTeams(t *testing.T) {
	apps := []simApp{{name: "web-1", cluster: "in-cluster"}, {name: "web-2", cluster: "in-cluster"}}
	_, url := newRolloutSim(t, argocdsim.Config{SyncDuration: 100 * time.Millisecond, ReconcileDelay: 10 * time.Millisecond}, nil, apps)
	policy, err := plan.ParsePolicy(".fleetwave.yaml", []byte(`apiVersion: fleetwave/v1
waves:
  - name: production
    selector: {}
    approval: {teams: [org/sre]}
`))
	if err != nil {
		t.Fatal(err)
	}
	var in []plan.App
	for _, a := range apps {
		in = append(in, plan.App{Name: a.name, Namespace: "argocd", Project: "default", Cluster: a.cluster, ClusterLabels: map[string]string{}, Labels: map[string]string{}})
	}
	b, _ := json.Marshal(plan.Build(policy, in))
	planFile := writeTemp(t, `{"base":"`+rolloutOld+`","head":"`+rolloutNew+`",`+string(b[1:]))
	db := filepath.Join(t.TempDir(), "r.db")
	env := map[string]string{"FLEETWAVE_ARGOCD_TOKEN": "t0ken", "USER": "alice"}

	var out outBuffer
	done := make(chan int, 1)
	go func() {
		code, _ := runArgo(t, context.Background(), env, &out, "rollout", "--argocd", url, "--plan", planFile, "--store", db, "-o", "json")
		done <- code
	}()
	out.waitFor(t, `"event":"wave-awaiting-approval"`, 30*time.Second)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 1, "wave production may only be approved by members of org/sre, and the terminal cannot check GitHub team membership: approve it on the pull request (/approve production) or its check-run, or state your team with --member-of org/sre"},
		{[]string{"--member-of", "org/web"}, 1, "--member-of org/web is not one of the approval teams of wave production (org/sre)"},
		{[]string{"--member-of", "ORG/SRE"}, 0, ""},
	} {
		var reply bytes.Buffer
		code, stderr := runArgo(t, context.Background(), env, &reply, append([]string{"rollout", "approve", "production", "--store", db}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Fatalf("approve %v: exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("rollout exit %d\n%s", code, out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no end after the approval:\n%s", out.String())
	}
	st, err := openRolloutStore(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ws, err := st.ListWaves(context.Background(), 1)
	if err != nil || len(ws) != 1 || ws[0].ApprovedBy != "alice (stated member of org/sre, not checked)" {
		t.Fatalf("wave approved by %q (%v), want the stated membership recorded", ws[0].ApprovedBy, err)
	}
}
