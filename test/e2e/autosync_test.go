// Issue #32's trials against the real Argo CD: automated sync held before the merge, proven at merge time.

package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/gitfetch/gitfetchtest"
	"github.com/fleetwave/fleetwave/internal/edge/github/fakegithub"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

// Issue #32 against the real Argo CD: six Applications with automated sync and self-heal track main of a git
// repository this test serves over HTTPS (so that GitHub's push payload names it: Argo CD's util/webhook matches
// the payload's repository.html_url against the apps' repoURL); a test wave of 2 apps with a soak, a prd wave of
// 4 apps with an approval before it. The merge is pushed and Argo CD's /api/webhook called at the same moment
// the rollout starts. Who synced what is counted from Argo CD's own record (operation and history initiatedBy),
// not from fleetwave's.

// asApps are the fleet: two apps on the staging cluster, four on the two production clusters.
var asApps = []struct{ name, cluster string }{
	{"as-test-1", "staging-eu-1"}, {"as-test-2", "staging-eu-1"},
	{"as-prd-1", "prod-eu-1"}, {"as-prd-2", "prod-eu-1"}, {"as-prd-3", "prod-us-1"}, {"as-prd-4", "prod-us-1"},
}

const asPolicy = `apiVersion: fleetwave/v1
automatedSync: disable-during-rollout
waves:
  - name: test
    selector: {matchLabels: {env: staging}}
    soak: 3s
  - name: prd
    selector: {matchLabels: {env: prod}}
    approval: {}
`

// asTrials is how many times the terminal flow runs (issue #32: 10 of 10).
const asTrials = 10

type asFleet struct {
	t       *testing.T
	e       env
	c       *argocd.Client
	bot     string
	repoURL string // https://127.0.0.1:port/autosync.git, the apps' repoURL
	bare    string // the served bare repository (the App clones it as file://)
	webURL  string // the repository's "web" URL, as GitHub's payload names it
	work    string // the working clone fleetwave reads (--repo); origin is the served bare repository
	store   string
	logFile string // argocd-server's log: its webhook handler logs every refresh it requests
}

func TestAutomatedSyncAgainstRealArgoCD(t *testing.T) {
	e := loadEnv(t)
	bot := os.Getenv("FLEETWAVE_E2E_BOT")
	if bot == "" {
		t.Skip("FLEETWAVE_E2E_BOT (the fleetwave binary) is not set; make e2e builds it")
	}
	if out, err := exec.Command(bot, "rollout", "prepare", "--help").CombinedOutput(); err != nil || !strings.Contains(string(out), "rollout prepare") {
		t.Fatalf("this fleetwave has no 'rollout prepare' (the hold of issue #32, switching automated sync off before the merge): %v\n%s", err, out)
	}
	f := newASFleet(t, e, bot)

	t.Run("terminal trials", func(t *testing.T) {
		var ok, prodEarly, testByFleet, refreshes int
		for i := 1; i <= asTrials; i++ {
			res := f.terminalTrial(t, i)
			prodEarly += res.prodEarly
			testByFleet += res.testByFleetwave
			refreshes += res.refreshes
			if res.prodEarly == 0 && res.testByFleetwave == 2 && res.refreshes >= len(asApps) && res.restored {
				ok++
			}
		}
		t.Logf("terminal flow: %d of %d trials with 0 production apps synced before the approval and the test wave synced by fleetwave; "+
			"production apps synced early: %d; test apps synced by fleetwave: %d of %d; refreshes Argo CD's webhook requested: %d",
			ok, asTrials, prodEarly, testByFleet, 2*asTrials, refreshes)
		if ok != asTrials {
			t.Errorf("%d of %d trials as required", ok, asTrials)
		}
	})

	t.Run("App flow trials", func(t *testing.T) { f.appTrials(t) })
	t.Run("hand sync outside the plan", func(t *testing.T) { f.handSyncTrial(t) })
}

func newASFleet(t *testing.T, e env, bot string) *asFleet {
	ctx := context.Background()
	c, err := argocd.New(argocd.Options{BaseURL: e.ArgoCDURL, Token: e.Token, UserAgent: "fleetwave-e2e"})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	bare := filepath.Join(root, "autosync.git")
	gittest.Run(t, root, "init", "-q", "--bare", "-b", "main", bare)
	srv := gitfetchtest.Start(t, root, "", "")
	f := &asFleet{t: t, e: e, c: c, bot: bot, repoURL: srv.URL + "/autosync.git", webURL: srv.URL + "/autosync", bare: bare,
		work: filepath.Join(t.TempDir(), "work"), store: filepath.Join(t.TempDir(), "rollout.db"),
		logFile: filepath.Join(filepath.Dir(e.Repo), "logs", "argocd-server.log")}

	gittest.Run(t, root, "clone", "-q", bare, f.work)
	gittest.Run(t, f.work, "checkout", "-q", "-B", "main")
	f.write(".fleetwave.yaml", asPolicy)
	for _, a := range asApps {
		f.write("apps/"+a.name+".yaml", fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s, namespace: argocd, labels: {suite: autosync}}
spec:
  project: default
  source: {repoURL: '%s', path: manifests/web, targetRevision: main}
  destination: {name: %s, namespace: %s}
  syncPolicy:
    automated: {selfHeal: true}
    syncOptions: [CreateNamespace=true]
`, a.name, f.repoURL, a.cluster, "e2e-"+a.name))
	}
	f.write("manifests/web/configmap.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {trial: '0'}\n")
	gittest.Run(t, f.work, "add", "-A")
	gittest.Run(t, f.work, "commit", "-q", "-m", "fleet")
	gittest.Run(t, f.work, "push", "-q", "origin", "main")
	base := gittest.Run(t, f.work, "rev-parse", "HEAD")
	// Argo CD tests the repository with ls-remote when it is registered: it must hold a commit by then.
	registerRepositories(ctx, t, e, []map[string]any{{"repo": f.repoURL, "type": "git", "name": "autosync", "insecure": true}})

	names := make([]string, 0, len(asApps))
	for _, a := range asApps {
		names = append(names, a.name)
	}
	createApps(t, e, filepath.Join(f.work, "apps"), names)
	f.converge(base, 2*time.Minute) // automated sync brings them to base by itself
	return f
}

func (f *asFleet) write(rel, content string) {
	f.t.Helper()
	p := filepath.Join(f.work, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// converge waits until every app ran rev (its last operation applied it) and is Synced and Healthy.
func (f *asFleet) converge(rev string, d time.Duration) {
	f.t.Helper()
	deadline := time.Now().Add(d)
	for {
		var lag []string
		for _, a := range asApps {
			app, err := f.c.GetApplication(context.Background(), a.name, "")
			if err != nil || applied(app) != rev || app.Status.Sync.Status != v1alpha1.SyncStatusCodeSynced ||
				app.Status.Health.Status != "Healthy" || app.Operation != nil {
				lag = append(lag, a.name)
			}
		}
		if len(lag) == 0 {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("apps %v not Synced and Healthy at %s after %s", lag, rev[:10], d)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// fleetwave runs the CLI against the environment's Argo CD and waits for it.
func (f *asFleet) fleetwave(args ...string) (string, int) {
	cmd := exec.Command(f.bot, args...)
	cmd.Env = append(os.Environ(), "FLEETWAVE_ARGOCD_TOKEN="+f.e.Token, "FLEETWAVE_ARGOCD_URL="+f.e.ArgoCDURL)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		f.t.Fatalf("fleetwave %v: %v", args, err)
	}
	return string(out), code
}

func (f *asFleet) storeArgs() []string {
	return []string{"--argocd", f.e.ArgoCDURL, "--store", f.store}
}

func (f *asFleet) planArgs(base, head string) []string {
	return append(f.storeArgs(), "--repo", f.work, "--repo-url", f.repoURL, "--base", base, "--head", head)
}

// rolloutProc is `fleetwave rollout … --output json` running; its events are collected as they come.
type rolloutProc struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	events []map[string]any
	lines  []string
	done   chan struct{}
	code   int
}

func (f *asFleet) startRollout(base, head string) *rolloutProc {
	f.t.Helper()
	return startFleetwave(f.t, f.bot, append(append([]string{"rollout"}, f.planArgs(base, head)...), "--output", "json"),
		"FLEETWAVE_ARGOCD_TOKEN="+f.e.Token)
}

// startFleetwave starts bin with args and env (beside the process's), collecting its output's JSON events.
func startFleetwave(t *testing.T, bin string, args []string, env ...string) *rolloutProc {
	t.Helper()
	p := &rolloutProc{done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(), env...)
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = p.cmd.Stdout
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var ev map[string]any
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				p.events = append(p.events, ev)
			}
			p.mu.Unlock()
		}
		err := p.cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			p.code = ee.ExitCode()
		}
		close(p.done)
	}()
	return p
}

// waitEvent waits for an event matching match; false when the process ended first or d passed.
func (p *rolloutProc) waitEvent(d time.Duration, match func(map[string]any) bool) (map[string]any, bool) {
	deadline := time.Now().Add(d)
	seen := 0
	for {
		p.mu.Lock()
		evs := p.events[seen:]
		p.mu.Unlock()
		for _, ev := range evs {
			seen++
			if match(ev) {
				return ev, true
			}
		}
		select {
		case <-p.done:
			p.mu.Lock()
			n := len(p.events)
			p.mu.Unlock()
			if seen == n {
				return nil, false
			}
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, false
		}
	}
}

func (p *rolloutProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := strings.Join(p.lines, "\n")
	if len(s) > 8000 {
		s = s[len(s)-8000:]
	}
	return s
}

func (p *rolloutProc) wait(d time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		_ = p.cmd.Process.Kill()
		<-p.done
		return false
	}
}

// pushAndWebhook pushes main to the served repository and delivers GitHub's push event for it to Argo CD's
// /api/webhook (no secret configured: Argo CD accepts it unsigned).
func (f *asFleet) pushAndWebhook(before, after string) error {
	if out, err := exec.Command("git", "-C", f.work, "push", "-q", "origin", "main").CombinedOutput(); err != nil {
		return fmt.Errorf("git push: %v: %s", err, out)
	}
	return f.argoWebhook(before, after)
}

// argoWebhook delivers GitHub's push event for before..after on main to Argo CD's /api/webhook.
func (f *asFleet) argoWebhook(before, after string) error {
	payload, _ := json.Marshal(map[string]any{
		"ref": "refs/heads/main", "before": before, "after": after,
		"repository": map[string]any{"html_url": f.webURL, "clone_url": f.repoURL, "default_branch": "main",
			"name": "autosync", "full_name": "fleet/autosync"},
		"commits": []map[string]any{{"id": after, "modified": []string{"manifests/web/configmap.yaml"}}},
	})
	req, err := http.NewRequest(http.MethodPost, strings.TrimSuffix(f.e.ArgoCDURL, "/")+"/api/webhook", strings.NewReader(string(payload)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("e2e-%d", time.Now().UnixNano()))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/api/webhook answered %s", resp.Status)
	}
	return nil
}

// refreshesRequested counts the lines of argocd-server's log in which its webhook handler requested a refresh of
// one of the fleet's apps ("Requested app '<name>' refresh", util/webhook processAppRefresh).
func (f *asFleet) refreshesRequested() int {
	data, err := os.ReadFile(f.logFile)
	if err != nil {
		f.t.Fatalf("reading argocd-server's log: %v", err)
	}
	n := 0
	for _, a := range asApps {
		n += strings.Count(string(data), "Requested app '"+a.name+"' refresh")
	}
	return n
}

// initiators says, per app, who started the operation that applied rev ("automated", a username, or "" when
// none did), from Argo CD: the app's operation, operation state and history.
func (f *asFleet) initiators(rev string) map[string]string {
	f.t.Helper()
	out := map[string]string{}
	who := func(i v1alpha1.OperationInitiator) string {
		if i.Automated {
			return "automated"
		}
		return i.Username
	}
	for _, a := range asApps {
		app, err := f.c.GetApplication(context.Background(), a.name, "")
		if err != nil {
			f.t.Fatal(err)
		}
		switch {
		case app.Operation != nil && app.Operation.Sync != nil && app.Operation.Sync.Revision == rev:
			out[a.name] = who(app.Operation.InitiatedBy)
		case app.Status.OperationState != nil && app.Status.OperationState.SyncResult != nil && app.Status.OperationState.SyncResult.Revision == rev:
			out[a.name] = who(app.Status.OperationState.Operation.InitiatedBy)
		default:
			for _, h := range app.Status.History {
				if h.Revision == rev {
					out[a.name] = who(h.InitiatedBy)
				}
			}
		}
	}
	return out
}

// automatedOnSoon is automatedOn once every app has it again, or after 15 s: argocd-server answers a GET from its
// informer's cache, which may lag the patch that restored an app by a moment (trial 9 of a run saw two apps
// without automated sync right after the abort's check-run completed, and Argo CD syncing them a second later).
func (f *asFleet) automatedOnSoon() map[string]bool {
	deadline := time.Now().Add(15 * time.Second)
	for {
		on := f.automatedOn()
		all := true
		for _, v := range on {
			all = all && v
		}
		if all || time.Now().After(deadline) {
			return on
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// automatedOn lists the apps whose automated sync is on.
func (f *asFleet) automatedOn() map[string]bool {
	f.t.Helper()
	out := map[string]bool{}
	for _, a := range asApps {
		app, err := f.c.GetApplication(context.Background(), a.name, "")
		if err != nil {
			f.t.Fatal(err)
		}
		out[a.name] = app.Spec.SyncPolicy != nil && app.Spec.SyncPolicy.IsAutomatedSyncEnabled()
	}
	return out
}

type trialResult struct {
	prodEarly, testByFleetwave, refreshes int
	restored                              bool
}

// commitChange commits the next change of the configmap (not pushed) and returns base and head.
func (f *asFleet) commitChange(label string) (string, string) {
	base := gittest.Run(f.t, f.work, "rev-parse", "HEAD")
	f.write("manifests/web/configmap.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {trial: '"+label+"'}\n")
	gittest.Run(f.t, f.work, "commit", "-q", "-am", "trial "+label)
	return base, gittest.Run(f.t, f.work, "rev-parse", "HEAD")
}

// startMerge holds the apps (rollout prepare), then pushes the merge, calls the webhook and starts the rollout
// at the same moment.
func (f *asFleet) startMerge(t *testing.T, base, head string) (*rolloutProc, int) {
	t.Helper()
	if out, code := f.fleetwave(append([]string{"rollout", "prepare"}, f.planArgs(base, head)...)...); code != 0 {
		t.Fatalf("fleetwave rollout prepare: exit %d\n%s", code, out)
	}
	for name, on := range f.automatedOn() {
		if on {
			t.Errorf("after rollout prepare, %s still has automated sync", name)
		}
	}
	refreshed := f.refreshesRequested()
	var wg sync.WaitGroup
	var pushErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		pushErr = f.pushAndWebhook(base, head)
	}()
	p := f.startRollout(base, head)
	wg.Wait()
	if pushErr != nil {
		t.Fatal(pushErr)
	}
	return p, refreshed
}

func isEvent(name, wave string) func(map[string]any) bool {
	return func(ev map[string]any) bool { return ev["event"] == name && (wave == "" || ev["wave"] == wave) }
}

func (f *asFleet) terminalTrial(t *testing.T, i int) trialResult {
	t.Helper()
	start := time.Now()
	base, head := f.commitChange(fmt.Sprint(i))
	p, refreshedBefore := f.startMerge(t, base, head)
	var res trialResult
	if _, ok := p.waitEvent(2*time.Minute, isEvent("wave-awaiting-approval", "prd")); !ok {
		p.wait(time.Second)
		t.Fatalf("trial %d: the prd wave never awaited its approval\n%s", i, p.output())
	}
	who := f.initiators(head)
	for _, a := range asApps {
		switch {
		case strings.HasPrefix(a.name, "as-prd-") && who[a.name] != "":
			res.prodEarly++
		case strings.HasPrefix(a.name, "as-test-") && who[a.name] == "fleetwave":
			res.testByFleetwave++
		}
	}
	res.refreshes = f.refreshesRequested() - refreshedBefore
	if out, code := f.fleetwave(append([]string{"rollout", "abort"}, f.storeArgs()...)...); code != 0 {
		t.Fatalf("trial %d: rollout abort: exit %d\n%s", i, code, out)
	}
	if !p.wait(time.Minute) {
		t.Fatalf("trial %d: the rollout did not end after the abort\n%s", i, p.output())
	}
	// Abort restores automated sync (then Argo CD syncs the rest of the fleet to the merge by itself).
	res.restored = true
	for name, on := range f.automatedOnSoon() {
		if !on {
			res.restored = false
			t.Errorf("trial %d: %s has no automated sync after the abort", i, name)
		}
	}
	f.converge(head, 2*time.Minute)
	t.Logf("trial %d: production apps synced before the approval %d/4, test apps synced by fleetwave %d/2, webhook refreshes %d, automated sync restored %v (%s); initiators %v",
		i, res.prodEarly, res.testByFleetwave, res.refreshes, res.restored, time.Since(start).Round(100*time.Millisecond), who)
	return res
}

// handSyncTrial: an app synced by hand (the admin account) while its wave waits for its approval is reported as
// synced outside the plan, and the rollout pauses; a rollback then takes every app it touched back.
func (f *asFleet) handSyncTrial(t *testing.T) {
	ctx := context.Background()
	base, head := f.commitChange("hand")
	p, _ := f.startMerge(t, base, head)
	if _, ok := p.waitEvent(2*time.Minute, isEvent("wave-awaiting-approval", "prd")); !ok {
		p.wait(time.Second)
		t.Fatalf("the prd wave never awaited its approval\n%s", p.output())
	}
	var sess struct {
		Token string `json:"token"`
	}
	body, _ := json.Marshal(map[string]string{"username": "admin", "password": f.e.AdminPassword})
	if err := call(ctx, f.e, http.MethodPost, "/api/v1/session", body, &sess); err != nil {
		t.Fatal(err)
	}
	admin, err := argocd.New(argocd.Options{BaseURL: f.e.ArgoCDURL, Token: sess.Token, UserAgent: "fleetwave-e2e-admin"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Sync(ctx, "as-prd-2", argocd.SyncRequest{Revision: head}); err != nil {
		t.Fatalf("syncing as-prd-2 by hand: %v", err)
	}
	ev, ok := p.waitEvent(time.Minute, func(ev map[string]any) bool { return ev["event"] == "app-out-of-plan" && ev["app"] == "as-prd-2" })
	if !ok {
		p.wait(time.Second)
		t.Fatalf("the hand sync was not reported\n%s", p.output())
	}
	if msg, _ := ev["message"].(string); !strings.Contains(msg, "synced outside the plan by user admin") {
		t.Errorf("reported as %q", msg)
	}
	if !p.wait(time.Minute) {
		t.Fatalf("the rollout did not stop after the hand sync\n%s", p.output())
	}
	if p.code != 3 {
		t.Errorf("rollout exited %d, want 3 (paused)\n%s", p.code, p.output())
	}
	if who := f.initiators(head); who["as-prd-2"] != "admin" {
		t.Errorf("Argo CD says as-prd-2 was synced by %q", who["as-prd-2"])
	}
	out, _ := f.fleetwave(append([]string{"rollout", "status", "--output", "json"}, f.storeArgs()...)...)
	if !strings.Contains(out, `"outOfPlan":[{"app":"as-prd-2"`) {
		t.Errorf("rollout status does not list as-prd-2 as synced outside the plan:\n%s", out)
	}
	// Rollback: the test apps and the app synced by hand go back to base.
	// A rollout that ends rolled back exits 1 (docs/cli.md), and says which apps keep automated sync off.
	if out, code := f.fleetwave(append([]string{"rollout", "rollback"}, f.storeArgs()...)...); code != 1 ||
		!strings.Contains(out, "rolled-back") || !strings.Contains(out, "automated sync stays off for 6 apps") {
		t.Fatalf("rollout rollback: exit %d, want 1 and the apps left off\n%s", code, out)
	}
	for _, name := range []string{"as-test-1", "as-test-2", "as-prd-2"} {
		app, err := f.c.GetApplication(ctx, name, "")
		if err != nil {
			t.Fatal(err)
		}
		if got := applied(app); got != base {
			t.Errorf("%s runs %s after the rollback, want %s", name, got, base)
		}
	}
	t.Logf("after the rollback, automated sync: %v", f.automatedOn())
}

// appTrials is issue #32's App flow, asTrials times: the pull request opened (the plan check holds the apps: their
// automated sync switched off before it is green), then merged — the push and Argo CD's webhook at the moment the
// App gets the merge — rolled out until the prd wave awaits its approval, and aborted with /abort (automated sync
// restored, and Argo CD then syncs the rest by itself). The App is `fleetwave serve` in its own process; GitHub is
// the fake.
func (f *asFleet) appTrials(t *testing.T) {
	fake, b := startBot(t, f.e, f.bot, t.TempDir(), "e2e-autosync-0")
	// The App clones the bare repository; its html_url is the served one, which the apps' repoURL and Argo CD's
	// webhook handler match.
	repoFields := func(number int, head, base, branch string) map[string]any {
		return map[string]any{"repository.clone_url": "file://" + f.bare, "repository.html_url": f.webURL,
			"repository.default_branch": "main", "number": number, "pull_request.number": number,
			"pull_request.head.sha": head, "pull_request.base.sha": base, "pull_request.base.ref": "main",
			"pull_request.head.ref": branch}
	}
	ok, prodEarly, testByFleet := 0, 0, 0
	for i := 1; i <= asTrials; i++ {
		start := time.Now()
		number := 100 + i
		branch := fmt.Sprintf("pr-%d", number)
		gittest.Run(t, f.work, "checkout", "-q", "-B", branch, "main")
		base, head := f.commitChange(fmt.Sprintf("app-%d", i))
		gittest.Run(t, f.work, "push", "-q", "-f", "origin", branch, fmt.Sprintf("HEAD:refs/pull/%d/head", number))
		fake.AddPullRequest(flowRepo, fakegithub.PullRequest{Number: number, HeadSHA: head, BaseSHA: base, BaseRef: "main",
			HeadRef: branch, Author: "Codertocat"})
		b.send("pull_request", withFields(t, "pull_request/opened.json", repoFields(number, head, base, branch)))
		waitFor(t, 3*time.Minute, "fleetwave/plan success", func() (string, bool) {
			cr, ok := lastRun(fake, head, "fleetwave/plan")
			return cr.Conclusion, ok && cr.Conclusion == "success"
		}, b)
		for name, on := range f.automatedOn() {
			if on {
				t.Errorf("trial %d: fleetwave/plan is green while %s still has automated sync", i, name)
			}
		}

		gittest.Run(t, f.work, "checkout", "-q", "main")
		gittest.Run(t, f.work, "merge", "-q", "--no-ff", "-m", fmt.Sprintf("Merge pull request #%d", number), branch)
		merge := gittest.Run(t, f.work, "rev-parse", "HEAD")
		refreshed := f.refreshesRequested()
		fields := repoFields(number, head, base, branch)
		fields["pull_request.merged"], fields["pull_request.merge_commit_sha"] = true, merge
		// GitHub announces the merge once the commit is on main: the push, then Argo CD's webhook and the App's
		// pull_request event at the same moment.
		gittest.Run(t, f.work, "push", "-q", "origin", "main")
		var wg sync.WaitGroup
		var pushErr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			pushErr = f.argoWebhook(base, merge)
		}()
		b.send("pull_request", withFields(t, "pull_request/closed-merged.json", fields))
		wg.Wait()
		if pushErr != nil {
			t.Fatal(pushErr)
		}
		waitFor(t, 3*time.Minute, "the rollout awaiting the approval of prd", func() (string, bool) {
			cr, ok := lastRun(fake, merge, "fleetwave/rollout")
			return cr.Title, ok && strings.Contains(cr.Title, "Awaiting approval to start wave prd")
		}, b)
		who := f.initiators(merge)
		early, byFleet := 0, 0
		for _, a := range asApps {
			switch {
			case strings.HasPrefix(a.name, "as-prd-") && who[a.name] != "":
				early++
			case strings.HasPrefix(a.name, "as-test-") && who[a.name] == "fleetwave":
				byFleet++
			}
		}
		refreshes := f.refreshesRequested() - refreshed
		b.send("issue_comment", withFields(t, "issue_comment/created-on-pull-request.json", map[string]any{
			"repository.clone_url": "file://" + f.bare, "repository.html_url": f.webURL, "repository.default_branch": "main", "issue.number": number,
			// Each trial's command is a new comment (a comment already acted on is refused as a replay).
			"comment.id": 3011000000 + number, "comment.body": "/abort", "comment.created_at": time.Now().UTC().Format(time.RFC3339),
		}))
		waitFor(t, 2*time.Minute, "the rollout aborted", func() (string, bool) {
			cr, ok := lastRun(fake, merge, "fleetwave/rollout")
			return cr.Conclusion, ok && cr.Status == "completed"
		}, b)
		restored := true
		for name, on := range f.automatedOnSoon() {
			if !on {
				restored = false
				t.Errorf("trial %d: %s has no automated sync after /abort", i, name)
			}
		}
		f.converge(merge, 2*time.Minute)
		prodEarly += early
		testByFleet += byFleet
		if early == 0 && byFleet == 2 && refreshes >= len(asApps) && restored {
			ok++
		}
		t.Logf("App trial %d: production apps synced before the approval %d/4, test apps synced by fleetwave %d/2, webhook refreshes %d, automated sync restored %v (%s); initiators %v",
			i, early, byFleet, refreshes, restored, time.Since(start).Round(100*time.Millisecond), who)
	}
	t.Logf("App flow: %d of %d trials with 0 production apps synced before the approval and the test wave synced by fleetwave; "+
		"production apps synced early: %d; test apps synced by fleetwave: %d of %d", ok, asTrials, prodEarly, testByFleet, 2*asTrials)
	if ok != asTrials {
		t.Errorf("%d of %d App trials as required", ok, asTrials)
	}
}
