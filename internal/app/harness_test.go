package app_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/app"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch/chartserver"
	"github.com/fleetwave/fleetwave/internal/edge/gitcache"
	"github.com/fleetwave/fleetwave/internal/edge/github"
	"github.com/fleetwave/fleetwave/internal/edge/github/fakegithub"
	"github.com/fleetwave/fleetwave/internal/preview"
	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
	"github.com/fleetwave/fleetwave/internal/testkit/logtest"
	"github.com/fleetwave/fleetwave/webhooks"
	"github.com/fleetwave/fleetwave/webhooks/webhooktest"
)

const (
	appID         = 4242
	webhookSecret = "It's a Secret to Everybody"
	// payloadDir holds the webhook payloads written for the tests, in GitHub's shape (see its README.md).
	payloadDir = "../../testdata/fixtures/webhooks"
	// The payload fixtures are about this repository; the fixture's Applications name it.
	repoFullName = "Codertocat/Hello-World"
	repoHTMLURL  = "https://github.com/Codertocat/Hello-World"
	prNumber     = 2
)

// The renderer caches charts: one for all tests, as the bot has one per process. It fetches the example fleet's
// vendor charts from the chart repository and registry hack/chartserve serves for the demo (started once), through
// the repositories file it writes, as the bot would with FLEETWAVE_REPOSITORIES_FILE.
var sharedRenderer = sync.OnceValue(func() *render.Renderer {
	srv, err := chartserver.Start("../../examples/vendor-charts")
	if err != nil {
		panic("serving the example's vendor charts: " + err.Error())
	}
	charts, err := srv.Fetcher("")
	if err != nil {
		panic(err)
	}
	return render.New(render.Options{Charts: charts})
})

// harness is the App behind the real webhooks server, talking to a fake GitHub.
type harness struct {
	t      testing.TB
	fake   *fakegithub.Server
	hooks  *webhooks.Server
	srv    *httptest.Server
	app    *app.App
	logs   *logtest.Buffer
	merges *recordedMerges
	// What restart builds the next App from.
	cfg      harnessConfig
	cacheDir string
	log      *slog.Logger
}

// harnessConfig is what a harness is made of besides the fake GitHub.
type harnessConfig struct {
	renderer preview.Renderer // nil: sharedRenderer
	opts     []app.Option
	budget   github.WriteBudget // nil: none
}

// recordedMerges is a Merges and Commands fake: it records what it is handed. Its rollout awaits approval for
// wave awaiting ("" none), which ApprovalWave resolves as the executor does.
type recordedMerges struct {
	mu       sync.Mutex
	merges   []app.Merge
	commands []app.CommandRequest
	awaiting string
}

func (r *recordedMerges) ApprovalWave(_ context.Context, req app.CommandRequest) (string, string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.awaiting == "":
		return "", fmt.Sprintf("@%s: no wave of rollout #7 is awaiting approval", req.Actor), nil
	case req.Target == "" || strings.EqualFold(req.Target, r.awaiting):
		return r.awaiting, "", nil
	}
	return "", fmt.Sprintf("@%s: wave %s is not awaiting approval", req.Actor, req.Target), nil
}

// approvals are the approve commands handed over.
func (r *recordedMerges) approvals() []app.CommandRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []app.CommandRequest
	for _, c := range r.commands {
		if c.Command == "approve" {
			out = append(out, c)
		}
	}
	return out
}

func (r *recordedMerges) OnMerge(_ context.Context, m app.Merge) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.merges = append(r.merges, m)
	return nil
}

func (r *recordedMerges) OnCommand(_ context.Context, req app.CommandRequest) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.commands = append(r.commands, req)
	return fmt.Sprintf("did /%s", req.Command), nil
}

func newHarness(t testing.TB, renderer preview.Renderer, opts ...app.Option) *harness {
	t.Helper()
	return newHarnessWith(t, harnessConfig{renderer: renderer, opts: opts})
}

func newHarnessWith(t testing.TB, cfg harnessConfig) *harness {
	t.Helper()
	key, _ := fakegithub.AppKey()
	fake := fakegithub.New(t, fakegithub.WithApp(appID, &key.PublicKey))
	if cfg.renderer == nil {
		cfg.renderer = sharedRenderer()
	}
	logs := &logtest.Buffer{}
	h := &harness{t: t, fake: fake, logs: logs, merges: &recordedMerges{}, cfg: cfg, cacheDir: t.TempDir(),
		log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	h.start()
	t.Cleanup(func() {
		h.stop()
		if t.Failed() {
			t.Logf("logs:\n%s", logs.String())
		}
	})
	return h
}

// start builds the App, with its own GitHub App client, behind a new webhooks server.
func (h *harness) start() {
	t := h.t
	t.Helper()
	_, keyPEM := fakegithub.AppKey()
	ghApp, err := github.NewApp(github.AppConfig{
		AppID: appID, PrivateKey: keyPEM, APIURL: h.fake.URL(), Transport: h.fake.Client().Transport,
		Retry:         github.RetryPolicy{MaxAttempts: 2, BaseDelay: time.Millisecond},
		ClientOptions: []github.ClientOption{github.WithBotLogin(h.fake.BotLogin())},
		WriteBudget:   h.cfg.budget,
	})
	if err != nil {
		t.Fatal(err)
	}
	cache, err := gitcache.New(h.cacheDir, gitcache.WithCredentials(ghApp.GitCredentials))
	if err != nil {
		t.Fatal(err)
	}
	opts := append([]app.Option{app.WithLogger(h.log), app.WithBotLogin(h.fake.BotLogin()), app.WithMerges(h.merges), app.WithCommands(h.merges), app.WithAppID(appID),
		app.WithClock(func() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) })}, h.cfg.opts...)
	a, err := app.New(func(id int64) (app.GitHub, error) { return ghApp.Client(id) }, cache, h.cfg.renderer, opts...)
	if err != nil {
		t.Fatal(err)
	}
	hooks, err := webhooks.New([]byte(webhookSecret), a, webhooks.NewMemoryDeliveries(0),
		webhooks.WithLogger(h.log), webhooks.WithWorkers(4))
	if err != nil {
		t.Fatal(err)
	}
	h.app, h.hooks, h.srv = a, hooks, httptest.NewServer(hooks)
}

// stop closes the webhooks server after the deliveries in flight.
func (h *harness) stop() {
	h.srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = h.hooks.Shutdown(ctx)
}

// restart stops the App and starts another on the same fake GitHub and clone cache, as a new process (or
// another replica) would: nothing is kept in memory, and the webhooks server's delivery ids start afresh.
func (h *harness) restart() {
	h.t.Helper()
	h.stop()
	h.start()
}

var deliveries atomic.Int64

// send posts a signed delivery (with the given delivery id, or a fresh one) and returns the status.
func (h *harness) send(event, delivery string, body []byte) int {
	h.t.Helper()
	return h.sendSigned(event, delivery, body, webhooktest.Sign(webhookSecret, body))
}

func (h *harness) sendSigned(event, delivery string, body []byte, signature string) int {
	h.t.Helper()
	if delivery == "" {
		delivery = fmt.Sprintf("00000000-0000-0000-0000-%012d", deliveries.Add(1))
	}
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+webhooks.Path, bytes.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", delivery)
	req.Header.Set("X-Hub-Signature-256", signature)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// wait blocks until every accepted delivery was handled, and fails the test if a handler failed.
func (h *harness) wait() {
	h.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		s := h.hooks.Stats()
		if s.Handled+s.Failed >= s.Accepted {
			if s.Failed > 0 {
				h.t.Fatalf("%d deliveries failed", s.Failed)
			}
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("deliveries not handled in time: %+v", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fixture is a git repository standing in for GitHub's copy of the pull request's repository.
type fixture struct {
	dir   string
	base  string
	heads []string // commits of the pull request, oldest first
}

func (f *fixture) head() string     { return f.heads[len(f.heads)-1] }
func (f *fixture) cloneURL() string { return "file://" + f.dir }

// copyTree copies a directory of examples/ over dir, rewriting the repository the Applications name to the
// payload fixtures' (examples name https://github.com/example/fleet.git).
func copyTree(t testing.TB, src, dir string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		dst := filepath.Join(dir, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		data = bytes.ReplaceAll(data, []byte("https://github.com/example/fleet.git"), []byte(repoHTMLURL+".git"))
		// The fixture repository's branch is master, as the payload fixtures' Hello-World's: its apps track it
		// (an app tracking a branch the pull request does not go into is not changed by it, as in Argo CD).
		data = bytes.ReplaceAll(data, []byte("targetRevision: main"), []byte("targetRevision: master"))
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// newFixture commits examples/fleet on master, then one commit per change on branch "changes", and points
// refs/pull/2/head at the last one, as GitHub does.
func newFixture(t testing.TB, changes ...func(dir string)) *fixture {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "Hello-World")
	copyTree(t, "../../examples/fleet", dir)
	gittest.Run(t, dir, "init", "-q", "-b", "master")
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "Example fleet")
	f := &fixture{dir: dir, base: gittest.Run(t, dir, "rev-parse", "HEAD")}
	gittest.Run(t, dir, "checkout", "-q", "-b", "changes")
	for i, change := range changes {
		change(dir)
		gittest.Run(t, dir, "add", "-A")
		gittest.Run(t, dir, "commit", "-q", "--allow-empty", "-m", fmt.Sprintf("change %d", i+1))
		f.heads = append(f.heads, gittest.Run(t, dir, "rev-parse", "HEAD"))
	}
	gittest.Run(t, dir, "update-ref", fmt.Sprintf("refs/pull/%d/head", prNumber), f.head())
	gittest.Run(t, dir, "checkout", "-q", "master")
	return f
}

// fleetChange applies examples/fleet-change (the demo's pull request).
func fleetChange(t testing.TB) func(string) {
	return func(dir string) { copyTree(t, "../../examples/fleet-change", dir) }
}

// edit rewrites one file of the fixture with fn.
func edit(t testing.TB, rel string, fn func(string) string) func(string) {
	return func(dir string) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		data, err := os.ReadFile(p)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(fn(string(data))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// payload reads a webhook payload fixture ("<event>/<name>.json") and sets the given fields (dotted paths),
// keeping everything else as written. Numbers keep their text.
func payload(t testing.TB, rel string, set map[string]any) []byte {
	t.Helper()
	return fakegithub.Payload(t, filepath.Join(payloadDir, rel), set)
}

// prPayload is a pull_request payload fixture pointed at the fixture repository: repository.clone_url, and the
// head and base commits. Everything else (numbers, names, users, installation) is as the payload fixture has it.
func prPayload(t testing.TB, rel string, f *fixture, head string) []byte {
	return payload(t, rel, map[string]any{
		"repository.clone_url":  f.cloneURL(),
		"pull_request.head.sha": head,
		"pull_request.base.sha": f.base,
	})
}

// openPR registers the pull request on the fake GitHub with its current head.
func (h *harness) openPR(f *fixture, head string) {
	h.fake.AddPullRequest(repoFullName, fakegithub.PullRequest{Number: prNumber, HeadSHA: head, BaseSHA: f.base,
		BaseRef: "master", HeadRef: "changes", Author: "Codertocat"})
}

// open opens the pull request at the fixture's head: registers it on the fake GitHub, delivers the "opened"
// webhook and waits until the App has handled it.
func (h *harness) open(f *fixture) {
	h.t.Helper()
	h.openPR(f, f.head())
	if code := h.send("pull_request", "", prPayload(h.t, "pull_request/opened.json", f, f.head())); code != http.StatusAccepted {
		h.t.Fatalf("opened answered %d", code)
	}
	h.wait()
}

// runsOn returns the fake's check runs on head, by name.
func (h *harness) runsOn(head string) map[string][]fakegithub.CheckRun {
	out := map[string][]fakegithub.CheckRun{}
	for _, cr := range h.fake.CheckRuns(repoFullName) {
		if cr.HeadSHA == head {
			out[cr.Name] = append(out[cr.Name], cr)
		}
	}
	return out
}
