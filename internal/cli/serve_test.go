package cli

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	dto "github.com/prometheus/client_model/go"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	gogithub "github.com/google/go-github/v60/github"

	"github.com/fleetwave/fleetwave/internal/checkrun"
	"github.com/fleetwave/fleetwave/internal/config"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/edge/github"
	"github.com/fleetwave/fleetwave/internal/edge/github/fakegithub"
	"github.com/fleetwave/fleetwave/internal/edge/metrics"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
	"github.com/fleetwave/fleetwave/internal/testkit/logtest"
	"github.com/fleetwave/fleetwave/webhooks"
)

const serveTestSecret = "serve-test-webhook-secret"

func serveEnv(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	k, keyPEM := fakegithub.AppKey()
	keyFile := filepath.Join(dir, "app.pem")
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"FLEETWAVE_ADDR": "127.0.0.1:0", "FLEETWAVE_GITHUB_APP_ID": "12345", "FLEETWAVE_GITHUB_PRIVATE_KEY_FILE": keyFile,
		"FLEETWAVE_WEBHOOK_SECRET": serveTestSecret, "FLEETWAVE_STORE": "sqlite://" + filepath.Join(dir, "fleetwave.db"),
		"FLEETWAVE_GITHUB_API_URL": fakegithub.New(t, fakegithub.WithApp(12345, &k.PublicKey)).URL(),
		"FLEETWAVE_CACHE_DIR":      filepath.Join(dir, "cache"),
	}
}

func TestServeLifecycle(t *testing.T) {
	env := serveEnv(t)
	env["FLEETWAVE_FLEET_VIEW_TOKEN"] = "fleet-view-token-for-the-serve-test"
	var stderr logtest.Buffer
	deps := &Deps{Stdout: &bytes.Buffer{}, Stderr: &stderr, Getenv: func(k string) string { return env[k] }}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	cmd := newServeCmd(deps)
	cmd.SetArgs([]string{"--drain-timeout", "5s"})
	cmd.SetOut(deps.Stdout)
	cmd.SetErr(deps.Stderr)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()

	var addr string
	deadline := time.Now().Add(15 * time.Second)
	for addr == "" {
		if time.Now().After(deadline) {
			t.Fatalf("not listening:\n%s", stderr.String())
		}
		select {
		case err := <-done:
			t.Fatalf("serve exited: %v\n%s", err, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		for _, line := range strings.Split(stderr.String(), "\n") {
			var rec struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "listening" {
				addr = rec.Addr
			}
		}
	}
	base := "http://" + addr
	// The fleet view is on (its token is set): signed in with the token, the index answers; without, the login form.
	// The audit trail's endpoint is behind it too (docs/audit.md): 401 without the token.
	for _, tc := range []struct {
		path, auth string
		want       int
	}{{"/fleet/", "Bearer fleet-view-token-for-the-serve-test", 200}, {"/fleet/", "", 303},
		{"/fleet/api/history?since=1d", "Bearer fleet-view-token-for-the-serve-test", 200}, {"/fleet/api/history", "", 401}} {
		req, _ := http.NewRequest("GET", base+tc.path, nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("GET %s (auth %q): %d, want %d", tc.path, tc.auth, resp.StatusCode, tc.want)
		}
	}
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/nope": 404} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}

	body, err := os.ReadFile(filepath.Join("..", "..", "testdata", "fixtures", "webhooks", "pull_request", "opened.json"))
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, []byte(serveTestSecret))
	mac.Write(body)
	sig := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	post := func(method, sig string) int {
		req, _ := http.NewRequest(method, base+"/webhooks/github", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "pull_request")
		req.Header.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
		if sig != "" {
			req.Header.Set("X-Hub-Signature-256", sig)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for i, tt := range []struct {
		method, sig string
		want        int
	}{
		{"POST", sig, 202}, {"POST", sig, 200}, {"POST", "", 401}, {"POST", "sha256=00", 401}, {"GET", sig, 405},
	} {
		if got := post(tt.method, tt.sig); got != tt.want {
			t.Errorf("delivery %d: %d, want %d", i, got, tt.want)
		}
	}

	// /metrics: the deliveries by outcome, the handled one timed by event, the GitHub calls it made, the store's
	// (empty) rollouts; no label names the repository, the PR or the delivery.
	var fams map[string]*dto.MetricFamily
	waitFor(t, "the delivery to be handled", func() bool {
		fams = scrape(t, base)
		return value(fams, "fleetwave_webhook_handle_duration_seconds", map[string]string{"event": "pull_request"}) == 1
	})
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"fleetwave_webhooks_received_total", map[string]string{"outcome": "accepted"}, 1},
		{"fleetwave_webhooks_received_total", map[string]string{"outcome": "duplicate"}, 1},
		{"fleetwave_webhooks_received_total", map[string]string{"outcome": "unauthorized"}, 2},
		{"fleetwave_webhook_queue_depth", nil, 0},
		{"fleetwave_rollouts", map[string]string{"state": "running"}, 0},
		{"fleetwave_store_up", nil, 1},
		// The delivery names a pull request the fake GitHub does not know: the preview ends with an error.
		{"fleetwave_preview_duration_seconds", map[string]string{"trigger": "pull_request", "result": "error"}, 1},
	} {
		if got := value(fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if n := value(fams, "fleetwave_upstream_requests_total", map[string]string{"service": "github"}); n < 1 {
		t.Errorf("no GitHub request counted (%v)", n)
	}
	checkBounded(t, fams, "Codertocat", "Hello-World", "72d3162e", "/")

	stop() // SIGTERM
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not drain")
	}
	logs := stderr.String()
	// The delivery is for a pull request the fake GitHub does not know: the use case gives up after
	// one lookup, and the server still accounts for the delivery and drains.
	for _, want := range []string{`"delivery":"72d3162e-cc78-11e3-81ab-4c9367dc0958"`,
		`"repo":"Codertocat/Hello-World","pr":2`, `"msg":"draining"`, `"msg":"stopped","accepted":1`} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %s\n%s", want, logs)
		}
	}
	for _, secret := range []string{serveTestSecret, "BEGIN RSA", "fleet-view-token-for-the-serve-test"} {
		if strings.Contains(logs, secret) {
			t.Errorf("logs reveal %q", secret)
		}
	}
}

func TestServeRefusesBadConfiguration(t *testing.T) {
	env := serveEnv(t)
	delete(env, "FLEETWAVE_WEBHOOK_SECRET")
	env["FLEETWAVE_ADDR"] = "nope"
	var stderr bytes.Buffer
	deps := &Deps{Stdout: &bytes.Buffer{}, Stderr: &stderr, Getenv: func(k string) string { return env[k] }}
	cmd := newServeCmd(deps)
	cmd.SetArgs(nil)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.ExecuteContext(context.Background())
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 2 || err.Error() != "invalid serve configuration: 2 problems" {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"fleetwave: config: FLEETWAVE_ADDR: listen address \"nope\"", "fleetwave: config: FLEETWAVE_WEBHOOK_SECRET: required"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

// TestServeWiresTheRolloutExecutor: with Argo CD configured, a push to the default branch is handed to the
// rollout executor — the rollout is recorded in the store — and the executor publishes its check-run on the
// merge commit with the token of the push's installation.
func TestServeWiresTheRolloutExecutor(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	key, keyPEM := fakegithub.AppKey()
	fake := fakegithub.New(t, fakegithub.WithApp(12345, &key.PublicKey))
	gh, err := github.NewApp(github.AppConfig{AppID: 12345, APIURL: fake.URL(), Transport: fake.Client().Transport,
		PrivateKey: keyPEM})
	if err != nil {
		t.Fatal(err)
	}
	sim := argocdsim.New(argocdsim.Config{})
	t.Cleanup(sim.Close)
	sim.AddCluster(v1alpha1.Cluster{Name: "in-cluster", Server: "https://kubernetes.default.svc"})
	argo := httptest.NewServer(sim.Handler())
	t.Cleanup(argo.Close)
	st, err := store.Open(ctx, "sqlite://"+filepath.Join(dir, "fleetwave.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })

	// The GitOps repository: one Application and its manifests; the push changes them.
	repoDir := filepath.Join(dir, "Hello-World")
	write := func(rel, content string) {
		p := filepath.Join(repoDir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string { return gittest.Run(t, repoDir, args...) }
	write("apps/demo.yaml", `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: demo, namespace: argocd}
spec:
  project: default
  source: {repoURL: 'https://github.com/Codertocat/Hello-World.git', targetRevision: master, path: manifests/demo}
  destination: {server: 'https://kubernetes.default.svc', namespace: demo}
`)
	write("manifests/demo/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: demo}\ndata: {color: blue}\n")
	git("init", "-q", "-b", "master")
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	before := git("rev-parse", "HEAD")
	write("manifests/demo/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: demo}\ndata: {color: green}\n")
	git("commit", "-q", "-am", "green")
	after := git("rev-parse", "HEAD")

	var logs logtest.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	mets := metrics.New()
	mets.Store(st.Counts)
	w, err := wireServe(ctx, serveDeps{Log: log, GitHub: gh, Store: st, Metrics: mets,
		Config: &config.Serve{ArgoCDURL: argo.URL, Store: config.NewSecret("sqlite://" + filepath.Join(dir, "fleetwave.db")),
			CacheDir: filepath.Join(dir, "cache"), ReplicaName: "fleetwave-0"}})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			w.close()
		}
	}()
	if !strings.Contains(logs.String(), `"executor":"rollout (owner fleetwave-0)"`) {
		t.Fatalf("executor not wired:\n%s", logs.String())
	}

	payload, err := os.ReadFile(filepath.Join("..", "..", "testdata", "fixtures", "webhooks", "push", "to-default-branch.json"))
	if err != nil {
		t.Fatal(err)
	}
	var push map[string]any
	if err := json.Unmarshal(payload, &push); err != nil {
		t.Fatal(err)
	}
	push["ref"], push["before"], push["after"], push["deleted"] = "refs/heads/master", before, after, false
	push["repository"].(map[string]any)["clone_url"] = "file://" + repoDir
	raw, err := json.Marshal(push)
	if err != nil {
		t.Fatal(err)
	}
	var ev gogithub.PushEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	if err := w.handler.Handle(ctx, webhooks.Event{Type: "push", Payload: &ev, Raw: raw, InstallationID: 1,
		Repo: "Codertocat/Hello-World", Sender: "Codertocat"}); err != nil {
		t.Fatalf("push: %v\n%s", err, logs.String())
	}
	rs, err := st.ListRollouts(ctx, store.RolloutFilter{Repo: "Codertocat/Hello-World"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].MergeSHA != after || rs[0].BaseSHA != before {
		t.Fatalf("rollouts %+v, want one for the push %s\n%s", rs, after, logs.String())
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		var found bool
		for _, cr := range fake.CheckRuns("Codertocat/Hello-World") {
			found = found || cr.Name == checkrun.CheckRollout && cr.HeadSHA == after
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s check run on %s: %+v\n%s", checkrun.CheckRollout, after, fake.CheckRuns("Codertocat/Hello-World"), logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The rollout shows in the metrics: Argo CD calls counted, the rollout and its app step by state.
	gathered, err := mets.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	fams := map[string]*dto.MetricFamily{}
	for _, f := range gathered {
		fams[f.GetName()] = f
	}
	if n := value(fams, "fleetwave_upstream_requests_total", map[string]string{"service": "argocd"}); n < 1 {
		t.Errorf("no Argo CD request counted (%v)", n)
	}
	if n := value(fams, "fleetwave_rollouts", nil); n != 1 {
		t.Errorf("fleetwave_rollouts sums to %v, want 1", n)
	}
	if n := value(fams, "fleetwave_app_steps", nil); n != 1 {
		t.Errorf("fleetwave_app_steps sums to %v, want 1", n)
	}
	checkBounded(t, fams, "Codertocat", "Hello-World", "demo", "/")

	done := make(chan struct{})
	go func() { w.close(); close(done) }()
	closed = true
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the executor did not drain")
	}
}
