package e2e_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	synccommon "github.com/argoproj/argo-cd/gitops-engine/v3/pkg/sync/common"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/github/fakegithub"
	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

const (
	flowRepo      = "Codertocat/Hello-World" // the payload fixtures' repository
	flowPR        = 2
	flowInstall   = 1 // the payload fixtures' installation
	flowAppID     = 4711
	webhookSecret = "e2e-webhook-secret"
)

// flowApps are the fleet of the App flow: one app per cluster hack/e2e registers, each a ConfigMap in its own
// namespace; waves staging (then a 15 s soak) and production one cluster at a time.
var flowApps = []struct{ name, cluster string }{
	{"e2e-web-staging-eu-1", "staging-eu-1"},
	{"e2e-web-prod-eu-1", "prod-eu-1"},
	{"e2e-web-prod-us-1", "prod-us-1"},
}

const flowPolicy = `apiVersion: fleetwave/v1
waves:
  - name: staging
    selector: {matchLabels: {env: staging}}
    soak: 15s
  - name: production
    selector: {matchLabels: {env: prod}}
    maxParallel: 1
`

// TestAppFlowAgainstRealArgoCD is the product end to end: the App (bin/fleetwave serve, its own process) gets the
// pull_request webhook, posts the comment with rendered and live diffs and the plan; gets the merge,
// rolls it out through the real Argo CD wave by wave (killed with SIGKILL in the middle and restarted: every app
// still synced exactly once), publishes a check-run per wave; then /rollback brings every app back to the revision
// it ran before. GitHub is the fake, validated against GitHub's OpenAPI description.
func TestAppFlowAgainstRealArgoCD(t *testing.T) {
	e := loadEnv(t)
	bot := os.Getenv("FLEETWAVE_E2E_BOT")
	if bot == "" {
		t.Skip("FLEETWAVE_E2E_BOT (the fleetwave binary) is not set; make e2e builds it")
	}
	ctx := context.Background()
	c, err := argocd.New(argocd.Options{BaseURL: e.ArgoCDURL, Token: e.Token, UserAgent: "fleetwave-e2e"})
	if err != nil {
		t.Fatal(err)
	}

	// The GitOps repository: a bare repository the App clones and Argo CD's repo-server fetches (file://).
	work := t.TempDir()
	bare := filepath.Join(work, "Hello-World.git")
	wt := filepath.Join(work, "wt")
	repoURL := "file://" + bare
	gittest.Run(t, work, "init", "-q", "--bare", "-b", "master", bare)
	gittest.Run(t, work, "clone", "-q", bare, wt)
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(wt, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".fleetwave.yaml", flowPolicy)
	for _, a := range flowApps {
		write("apps/"+a.name+".yaml", fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s, namespace: argocd, labels: {suite: flow}}
spec:
  project: default
  source: {repoURL: %s, path: manifests/web, targetRevision: master}
  destination: {name: %s, namespace: %s}
  syncPolicy: {syncOptions: [CreateNamespace=true]}
`, a.name, repoURL, a.cluster, a.name))
	}
	write("manifests/web/configmap.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {color: blue}\n")
	gittest.Run(t, wt, "add", "-A")
	gittest.Run(t, wt, "commit", "-q", "-m", "fleet")
	gittest.Run(t, wt, "push", "-q", "origin", "master")
	base := gittest.Run(t, wt, "rev-parse", "HEAD")

	// Argo CD holds the apps, synced at base (what the rollout records as each app's previous revision).
	names := make([]string, 0, len(flowApps))
	for _, a := range flowApps {
		names = append(names, a.name)
	}
	createApps(t, e, filepath.Join(wt, "apps"), names)
	for _, a := range flowApps {
		syncAndWait(t, c, a.name, base)
	}
	historyAtBase := map[string]int{}
	for _, a := range flowApps {
		app, err := c.GetApplication(ctx, a.name, "")
		if err != nil {
			t.Fatal(err)
		}
		historyAtBase[a.name] = len(app.Status.History)
	}

	// The pull request: the ConfigMap turns green.
	gittest.Run(t, wt, "checkout", "-q", "-b", "change")
	write("manifests/web/configmap.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {color: green}\n")
	gittest.Run(t, wt, "commit", "-q", "-am", "green")
	head := gittest.Run(t, wt, "rev-parse", "HEAD")
	gittest.Run(t, wt, "push", "-q", "origin", "change", fmt.Sprintf("HEAD:refs/pull/%d/head", flowPR))

	fake, b := startBot(t, e, bot, work, "e2e-bot-0")
	fake.AddPullRequest(flowRepo, fakegithub.PullRequest{Number: flowPR, HeadSHA: head, BaseSHA: base, BaseRef: "master",
		HeadRef: "change", Author: "Codertocat"})

	// 1. The pull request: comment with the rendered diff, the live diff and the plan; diff and plan pass.
	b.send("pull_request", withFields(t, "pull_request/opened.json", map[string]any{
		"repository.clone_url": repoURL, "pull_request.head.sha": head, "pull_request.base.sha": base,
	}))
	comment := waitFor(t, 3*time.Minute, "the PR comment with the plan", func() (string, bool) {
		for _, cm := range fake.Comments(flowRepo, flowPR) {
			if strings.Contains(cm.Body, "production") && strings.Contains(cm.Body, "e2e-web-prod-us-1") {
				return cm.Body, true
			}
		}
		return "", false
	}, b)
	for _, want := range []string{"+  color: green", "-  color: blue", "staging", "e2e-web-staging-eu-1"} {
		if !strings.Contains(comment, want) {
			t.Errorf("the PR comment lacks %q:\n%s", want, comment)
		}
	}
	for _, name := range []string{"fleetwave/diff", "fleetwave/plan"} {
		waitFor(t, time.Minute, name+" success", func() (string, bool) {
			cr, ok := lastRun(fake, head, name)
			return cr.Conclusion, ok && cr.Conclusion == "success"
		}, b)
	}

	// 2. The merge, rolled out wave by wave; the bot is killed once in the middle and restarted.
	gittest.Run(t, wt, "checkout", "-q", "master")
	gittest.Run(t, wt, "merge", "-q", "--no-ff", "-m", fmt.Sprintf("Merge pull request #%d", flowPR), "change")
	merge := gittest.Run(t, wt, "rev-parse", "HEAD")
	gittest.Run(t, wt, "push", "-q", "origin", "master")
	b.send("pull_request", withFields(t, "pull_request/closed-merged.json", map[string]any{
		"repository.clone_url": repoURL, "pull_request.head.sha": head, "pull_request.base.sha": base,
		"pull_request.merged": true, "pull_request.merge_commit_sha": merge,
	}))
	// Killed during the staging wave's soak: the restarted bot must neither sync staging again nor cut the soak.
	waitFor(t, 3*time.Minute, "the staging app's sync to the merge", func() (string, bool) {
		app, err := c.GetApplication(ctx, flowApps[0].name, "")
		return "", err == nil && applied(app) == merge
	}, b)
	cr, _ := lastRun(fake, merge, "fleetwave/rollout")
	if cr.Status == "completed" {
		t.Fatalf("the rollout was over before the bot could be killed in its middle: %+v", cr)
	}
	b.kill()
	t.Logf("bot killed (SIGKILL) in the staging soak, rollout check-run %s; restarted", cr.Status)
	b.start()
	rolloutRun := waitFor(t, 5*time.Minute, "fleetwave/rollout to complete", func() (string, bool) {
		cr, ok := lastRun(fake, merge, "fleetwave/rollout")
		return cr.Conclusion, ok && cr.Status == "completed"
	}, b)
	if rolloutRun != "success" {
		t.Fatalf("fleetwave/rollout concluded %s\n%s", rolloutRun, b.log())
	}
	for _, w := range []string{"staging", "production"} {
		if cr, ok := lastRun(fake, merge, "fleetwave/wave: "+w); !ok || cr.Conclusion != "success" {
			t.Errorf("check-run of wave %s: %+v (found %v)", w, cr, ok)
		}
	}
	// Observed through Argo CD: every app applied the merge with exactly one sync; staging finished before
	// production started; the production apps one after the other.
	ops := map[string]*v1alpha1.OperationState{}
	for _, a := range flowApps {
		app, err := c.GetApplication(ctx, a.name, "")
		if err != nil {
			t.Fatal(err)
		}
		if got := applied(app); got != merge {
			t.Errorf("%s applied %s, want the merge %s", a.name, got, merge)
		}
		if n := len(app.Status.History) - historyAtBase[a.name]; n != 1 {
			t.Errorf("%s: %d syncs since base, want exactly 1 (the restart must neither repeat nor skip one)", a.name, n)
		}
		ops[a.name] = app.Status.OperationState
		if os := app.Status.OperationState; os != nil && os.FinishedAt != nil {
			t.Logf("%s: synced to %s from %s to %s (%d syncs since base)", a.name, text.Short(applied(app), 10),
				os.StartedAt.Format("15:04:05"), os.FinishedAt.Format("15:04:05"), len(app.Status.History)-historyAtBase[a.name])
		}
	}
	stg, eu, us := ops[flowApps[0].name], ops[flowApps[1].name], ops[flowApps[2].name]
	if stg != nil && eu != nil && us != nil {
		first, second := eu, us
		if us.StartedAt.Before(&eu.StartedAt) {
			first, second = us, eu
		}
		if first.StartedAt.Time.Before(stg.FinishedAt.Add(15 * time.Second)) {
			t.Errorf("production started at %s, before staging finished (%s) and soaked 15s", first.StartedAt, stg.FinishedAt)
		}
		if second.StartedAt.Time.Before(first.FinishedAt.Time) {
			t.Errorf("two production apps synced at once (maxParallel 1): %s started at %s, before %s", second.SyncResult.Revision,
				second.StartedAt, first.FinishedAt)
		}
	}

	t.Logf("rollout of %s: %s; waves: %d check-runs", text.Short(merge, 10), rolloutRun, len(fake.CheckRuns(flowRepo)))

	// 3. /rollback: every app back at base, with its own check-run.
	b.send("issue_comment", withFields(t, "issue_comment/created-on-pull-request.json", map[string]any{
		"repository.clone_url": repoURL, "issue.number": flowPR, "comment.body": "/rollback",
		// A command comment older than a few minutes is refused (a replayed delivery): this one is new.
		"comment.created_at": time.Now().UTC().Format(time.RFC3339),
	}))
	rb := waitFor(t, 5*time.Minute, "fleetwave/rollback to complete", func() (string, bool) {
		cr, ok := lastRun(fake, merge, "fleetwave/rollback")
		return cr.Conclusion, ok && cr.Status == "completed"
	}, b)
	if rb != "success" {
		t.Fatalf("fleetwave/rollback concluded %s\n%s", rb, b.log())
	}
	for _, a := range flowApps {
		app, err := c.GetApplication(ctx, a.name, "")
		if err != nil {
			t.Fatal(err)
		}
		if got := applied(app); got != base {
			t.Errorf("%s runs %s after /rollback, want the base %s", a.name, got, base)
		}
		t.Logf("%s: back at %s after /rollback", a.name, text.Short(applied(app), 10))
	}
	var replies []string
	for _, cm := range fake.Comments(flowRepo, flowPR) {
		replies = append(replies, cm.Body)
	}
	if all := strings.Join(replies, "\n"); !strings.Contains(all, "Rolling back rollout") {
		t.Errorf("no reply to /rollback among the comments:\n%s", all)
	}
}

// createApps creates in Argo CD the Applications <dir>/<name>.yaml, deleted (cascading) when the test ends.
func createApps(t *testing.T, e env, dir string, names []string) {
	t.Helper()
	for _, name := range names {
		var app v1alpha1.Application
		data, _ := os.ReadFile(filepath.Join(dir, name+".yaml"))
		if err := yamlToJSON(data, &app); err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(&app)
		if err := call(context.Background(), e, http.MethodPost, "/api/v1/applications?upsert=true", body, nil); err != nil {
			t.Fatalf("creating %s: %v", name, err)
		}
		t.Cleanup(func() {
			_ = call(context.Background(), e, http.MethodDelete, "/api/v1/applications/"+name+"?cascade=true", nil, nil)
		})
	}
}

// startBot starts the App (bin, `fleetwave serve` in its own process) against the fake GitHub it returns and
// this environment's Argo CD, its store, cache and log under dir; Codertocat is an admin of flowRepo. extra are
// more of serve's settings (NAME=value).
func startBot(t *testing.T, e env, bin, dir, replica string, extra ...string) (*fakegithub.Server, *botProc) {
	t.Helper()
	key, keyPEM := fakegithub.AppKey()
	fake := fakegithub.New(t, fakegithub.WithApp(flowAppID, &key.PublicKey), fakegithub.WithInstallation(flowRepo, flowInstall))
	fake.SetPermission(flowRepo, "Codertocat", "admin")
	keyFile := filepath.Join(dir, "app.pem")
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	b := &botProc{t: t, bin: bin, env: []string{
		"FLEETWAVE_GITHUB_APP_ID=" + fmt.Sprint(flowAppID), "FLEETWAVE_GITHUB_PRIVATE_KEY_FILE=" + keyFile,
		"FLEETWAVE_WEBHOOK_SECRET=" + webhookSecret, "FLEETWAVE_GITHUB_API_URL=" + fake.URL(),
		"FLEETWAVE_ARGOCD_URL=" + e.ArgoCDURL, "FLEETWAVE_ARGOCD_TOKEN=" + e.Token,
		"FLEETWAVE_STORE=sqlite://" + filepath.Join(dir, "fleetwave.db"), "FLEETWAVE_CACHE_DIR=" + filepath.Join(dir, "cache"),
		"FLEETWAVE_REPLICA_NAME=" + replica,
	}, logs: filepath.Join(dir, "bot.log")}
	b.env = append(b.env, extra...)
	b.start()
	t.Cleanup(b.stop)
	return fake, b
}

// applied is the revision the app's last operation applied.
func applied(app *v1alpha1.Application) string {
	if os := app.Status.OperationState; os != nil && os.SyncResult != nil && os.Phase == synccommon.OperationSucceeded {
		return os.SyncResult.Revision
	}
	return ""
}

// syncAndWait syncs an app to rev through the API and waits for the operation to succeed.
func syncAndWait(t *testing.T, c *argocd.Client, name, rev string) {
	t.Helper()
	ctx := context.Background()
	start := time.Now().Add(-2 * time.Second)
	if _, err := c.Sync(ctx, name, argocd.SyncRequest{Revision: rev}); err != nil {
		t.Fatalf("syncing %s: %v", name, err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		app, err := c.GetApplication(ctx, name, "")
		if err == nil && app.Operation == nil && app.Status.OperationState != nil && !app.Status.OperationState.StartedAt.Time.Before(start.Truncate(time.Second)) {
			if os := app.Status.OperationState; os.Phase.Completed() {
				if os.Phase != synccommon.OperationSucceeded || applied(app) != rev {
					t.Fatalf("syncing %s to %s: %s %s", name, rev, os.Phase, os.Message)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("syncing %s to %s: not done after 2m", name, rev)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// lastRun is the newest check-run of that name on sha.
func lastRun(fake *fakegithub.Server, sha, name string) (fakegithub.CheckRun, bool) {
	var out fakegithub.CheckRun
	found := false
	for _, cr := range fake.CheckRuns(flowRepo) {
		if cr.HeadSHA == sha && cr.Name == name {
			out, found = cr, true
		}
	}
	return out, found
}

// waitFor polls cond every half second until it holds or the time is up (then the bot's log is shown).
func waitFor(t *testing.T, d time.Duration, what string, cond func() (string, bool), b *botProc) string {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if v, ok := cond(); ok {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s\n--- bot log ---\n%s", d, what, b.log())
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// withFields is a webhook payload fixture (testdata/fixtures/webhooks) with the given fields (dotted paths)
// replaced.
func withFields(t *testing.T, rel string, set map[string]any) []byte {
	t.Helper()
	return fakegithub.Payload(t, filepath.Join(repoRoot(t), "testdata", "fixtures", "webhooks", filepath.FromSlash(rel)), set)
}

// botProc is `fleetwave serve` in its own process.
type botProc struct {
	t    *testing.T
	bin  string
	env  []string
	logs string
	addr string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	n    int
}

func (b *botProc) start() {
	b.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.t.Fatal(err)
	}
	b.addr = ln.Addr().String()
	ln.Close()
	f, err := os.OpenFile(b.logs, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		b.t.Fatal(err)
	}
	b.mu.Lock()
	b.n++
	fmt.Fprintf(f, "=== start %d\n", b.n)
	cmd := exec.Command(b.bin, "serve")
	cmd.Env = append(append(os.Environ(), b.env...), "FLEETWAVE_ADDR="+b.addr)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		b.mu.Unlock()
		b.t.Fatal(err)
	}
	done := make(chan struct{})
	b.cmd, b.done = cmd, done
	b.mu.Unlock()
	go func() { _ = cmd.Wait(); f.Close(); close(done) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + b.addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("the bot is not ready after 30s\n%s", b.log())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// kill ends the bot with SIGKILL: no drain, nothing released.
func (b *botProc) kill() {
	b.mu.Lock()
	cmd, done := b.cmd, b.done
	b.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Kill()
		<-done
	}
}

// stop ends the bot gracefully (SIGTERM).
func (b *botProc) stop() {
	b.mu.Lock()
	cmd, done := b.cmd, b.done
	b.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
}

func (b *botProc) log() string {
	data, _ := os.ReadFile(b.logs)
	if len(data) > 20000 {
		data = data[len(data)-20000:]
	}
	return string(data)
}

// send posts a signed webhook delivery, as GitHub does.
func (b *botProc) send(event string, body []byte) {
	b.t.Helper()
	mac := hmac.New(sha256.New, []byte(webhookSecret))
	mac.Write(body)
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	req, err := http.NewRequest(http.MethodPost, "http://"+b.addr+"/webhooks/github", bytes.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", hex.EncodeToString(id))
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		b.t.Fatalf("%s delivery answered %s", event, resp.Status)
	}
}

func yamlToJSON(data []byte, out any) error {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return err
	}
	return json.Unmarshal(j, out)
}
