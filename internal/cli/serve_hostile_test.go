package cli

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/github/fakegithub"
	"github.com/fleetwave/fleetwave/internal/render/isolate"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
	"github.com/fleetwave/fleetwave/internal/testkit/logtest"
)

// TestServeKeepsWorkingDuringABomb is the proof under `serve` itself: the real command, its webhook edge
// and its render workers (this test binary re-executed, see TestMain), with a fake GitHub checked against
// GitHub's API description. Installation 1 opens a pull request whose head adds apps that are CPU and memory
// bombs; while they render, /healthz answers promptly and installation 2's pull request gets its preview, on
// the worker installation 1 may not take (FLEETWAVE_RENDER_SHARE defaults to all workers but one), and
// installation 1's pull request of another repository gets its preview after at most one bomb's time cap, ahead
// of the bombs' queue (pull requests take turns within an installation). Installation 1's bomb preview then
// completes with one refusal line per bomb and its benign app diffed; once serve has stopped,
// no goroutine is left beyond those running before it started. With -v it prints its timings and counts.
func TestServeKeepsWorkingDuringABomb(t *testing.T) {
	const (
		repoA, repoB, repoC = "Codertocat/Hello-World", "octo-org/fleet-b", "Codertocat/second"
		numA, numB, numC    = 2, 7, 5
		// A benign preview that did not wait for a bomb ends within one cap; at 2 s, a machine loaded by other
		// test processes took 2.0 s for it once, with the bombs still rendering: 3 s keeps the claim, with room.
		timeCap = 3 * time.Second
	)
	rig := newServeRig(t, map[string]string{"FLEETWAVE_RENDER_WORKERS": "2", "FLEETWAVE_RENDER_TIMEOUT": timeCap.String(),
		"FLEETWAVE_RENDER_MEMORY": "512MiB", "FLEETWAVE_RENDER_BUDGET": "30s"}, map[string]int64{repoA: 1, repoB: 2, repoC: 1})
	if !strings.Contains(rig.stderr.String(), `2 worker processes, 512 MiB of memory each, at most 1 per installation`) {
		t.Fatalf("serve does not log its render pool:\n%s", rig.stderr.String())
	}
	if line := lineWith(rig.stderr.String(), `"msg":"use cases wired"`, "kernel limits: "); line == "" {
		t.Errorf("serve does not log the kernel limits of its workers:\n%s", rig.stderr.String())
	} else {
		_, limits, _ := strings.Cut(line, "kernel limits: ")
		limits, _, _ = strings.Cut(limits, `"`)
		t.Logf("render workers' kernel limits: %s", limits)
	}

	// Installation 1's repository: one benign app; the pull request changes it and adds five CPU bombs (a
	// nested until, 10^12 iterations) and a memory bomb (a 1 GB string).
	headA := map[string]string{"manifests/web/cm.yaml": configMap("web", "green"),
		"apps/mem-bomb.yaml": appYAML("mem-bomb", repoA, "charts/mem-bomb"), "charts/mem-bomb/Chart.yaml": chartYAML,
		"charts/mem-bomb/templates/c.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: m}\ndata:\n  x: {{ repeat 100000000 \"xxxxxxxxxx\" }}\n"}
	addCPUBombs(headA, repoA, 5)
	prA := rig.pullRequest(repoA, numA, map[string]string{"apps/web.yaml": appYAML("web", repoA, "manifests/web"),
		"manifests/web/cm.yaml": configMap("web", "blue")}, headA)
	// Installation 2's repository: one benign app, changed.
	prB := rig.pullRequest(repoB, numB, map[string]string{"apps/api.yaml": appYAML("api", repoB, "manifests/api"),
		"manifests/api/cm.yaml": configMap("api", "red")}, map[string]string{"manifests/api/cm.yaml": configMap("api", "orange")})
	// Another repository of installation 1: one benign app, changed.
	prC := rig.pullRequest(repoC, numC, map[string]string{"apps/docs.yaml": appYAML("docs", repoC, "manifests/docs"),
		"manifests/docs/cm.yaml": configMap("docs", "white")}, map[string]string{"manifests/docs/cm.yaml": configMap("docs", "black")})

	// /healthz is probed every 50 ms from the first delivery until both previews are done.
	probe := rig.probeHealth()
	t0 := time.Now()
	rig.deliver(prA)
	// Installation 2's pull request arrives once installation 1's preview is under way.
	for !rig.inProgress(prA) {
		if time.Since(t0) > 30*time.Second {
			t.Fatalf("installation 1's preview did not start:\n%s", rig.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // its checkout is made and its bombs are rendering
	tB := time.Now()
	rig.deliver(prB)
	rig.deliver(prC)
	crB := rig.completed(prB, 60*time.Second)
	elapsedB := time.Since(tB)
	aStillRendering := rig.inProgress(prA)
	crC := rig.completed(prC, 60*time.Second)
	elapsedC := time.Since(tB)
	aStillRenderingC := rig.inProgress(prA)
	crA := rig.completed(prA, 90*time.Second)
	elapsedA := time.Since(t0)
	pr := probe()

	t.Logf("installation 2's preview: %.1f s after its delivery (installation 1's still rendering: %v); installation 1's: %.1f s",
		elapsedB.Seconds(), aStillRendering, elapsedA.Seconds())
	t.Logf("installation 1's other pull request: %.1f s after its delivery (the bombs' still rendering: %v)", elapsedC.Seconds(), aStillRenderingC)
	t.Logf("/healthz: %d probes while the bombs rendered, slowest %s", pr.n, pr.worst.Round(time.Millisecond))
	// It did not wait for a bomb's worker: it took less than one time cap.
	if !aStillRendering || elapsedB >= timeCap {
		t.Errorf("installation 2's preview took %.1f s (installation 1's still rendering: %v): it waited for installation 1's bombs",
			elapsedB.Seconds(), aStillRendering)
	}
	// Installation 1's other pull request waits for its installation's worker, at most a bomb's time cap for
	// each of its two renders (base, then head), not for the bombs' queue (five of them, then the benign app).
	if !aStillRenderingC || elapsedC >= 3*timeCap {
		t.Errorf("installation 1's other pull request took %.1f s (the bombs' still rendering: %v): it waited behind the bombs' queue",
			elapsedC.Seconds(), aStillRenderingC)
	}
	for _, c := range []struct {
		cr           fakegithub.CheckRun
		pr           rigPR
		app, changed string
	}{{crB, prB, "api", "orange"}, {crC, prC, "docs", "black"}} {
		if c.cr.Conclusion == "failure" || c.cr.Conclusion == "" {
			t.Errorf("%s: diff check %q", c.pr.repo, c.cr.Conclusion)
		}
		if body := rig.comments(c.pr); !strings.Contains(body, c.app) || !strings.Contains(body, c.changed) {
			t.Errorf("%s: the comment does not show its app's change:\n%s", c.pr.repo, body)
		}
	}
	if pr.err != nil || pr.n < 10 || pr.worst > 2*time.Second {
		t.Errorf("/healthz during the bombs: %d probes, slowest %s, error %v", pr.n, pr.worst, pr.err)
	}

	// Installation 1: each bomb is refused in one line naming it and its rule; the benign app is diffed.
	textA := crA.Summary + "\n" + crA.Text + "\n" + rig.comments(prA)
	rules := refusals(t, textA, "cpu-bomb-1", "cpu-bomb-2", "cpu-bomb-3", "cpu-bomb-4", "cpu-bomb-5", "mem-bomb")
	t.Logf("installation 1's refusals by rule: %v", rules)
	if rules["time-limit"]+rules["cpu-limit"] != 5 || rules["memory-limit"] != 1 {
		t.Errorf("refusals %v: want the CPU bombs at their time (or CPU) cap, the memory bomb at its memory cap", rules)
	}
	if !strings.Contains(textA, "green") || strings.Contains(textA, `app "web"`) {
		t.Errorf("installation 1's benign app is not diffed:\n%s", textA)
	}
	rig.stop()
}

// TestServeRenderBudget: FLEETWAVE_RENDER_BUDGET bounds the time of all the renders of one change under serve:
// two CPU bombs, each under a 6 s time cap, are both refused by the change's 1.5 s budget, and the preview
// completes soon after the budget, well before the bombs' caps (the cap is far from the budget so that a loaded
// machine's overhead, 1–2 s here, cannot be mistaken for a cap that bit).
func TestServeRenderBudget(t *testing.T) {
	const repo = "Codertocat/Hello-World"
	rig := newServeRig(t, map[string]string{"FLEETWAVE_RENDER_WORKERS": "2", "FLEETWAVE_RENDER_TIMEOUT": "6s",
		"FLEETWAVE_RENDER_SHARE": "2", "FLEETWAVE_RENDER_BUDGET": "1.5s"}, map[string]int64{repo: 1})
	if !strings.Contains(rig.stderr.String(), `2 worker processes, 1 GiB of memory each, at most 2 per installation`) {
		t.Fatalf("serve does not log its render pool:\n%s", rig.stderr.String())
	}
	head := map[string]string{"manifests/web/cm.yaml": configMap("web", "green")}
	addCPUBombs(head, repo, 2)
	pr := rig.pullRequest(repo, 2, map[string]string{"apps/web.yaml": appYAML("web", repo, "manifests/web"),
		"manifests/web/cm.yaml": configMap("web", "blue")}, head)
	rig.deliver(pr)
	for !rig.inProgress(pr) {
		time.Sleep(10 * time.Millisecond)
	}
	t0 := time.Now()
	cr := rig.completed(pr, 60*time.Second)
	elapsed := time.Since(t0)
	text := cr.Summary + "\n" + cr.Text + "\n" + rig.comments(pr)
	rules := refusals(t, text, "cpu-bomb-1", "cpu-bomb-2")
	t.Logf("refusals by rule: %v; the preview took %.1f s after its check run started", rules, elapsed.Seconds())
	if rules["pr-budget"] != 2 || !strings.Contains(text, "exceeded their 1.5s budget") {
		t.Errorf("refusals %v: want both bombs refused by the change's 1.5 s budget:\n%s", rules, text)
	}
	if elapsed > 5*time.Second {
		t.Errorf("the preview took %s, as long as a bomb's time cap: the budget did not end it", elapsed)
	}
	rig.stop()
}

// serveRig runs `serve` with a fake GitHub, for tests that deliver pull requests to it.
type serveRig struct {
	t        *testing.T
	fake     *fakegithub.Server
	front    *httptest.Server
	client   *http.Client
	base     string
	stderr   *logtest.Buffer
	dir      string
	cancel   context.CancelFunc
	done     chan error
	baseline int
	installs map[string]int64
}

// newServeRig starts serve with env over the rig's own settings; installs names the App's installation of each
// repository.
func newServeRig(t *testing.T, env map[string]string, installs map[string]int64) *serveRig {
	t.Helper()
	if !isolate.Available() {
		t.Fatal("the test binary cannot start render workers: TestMain must call isolate.WorkerMain")
	}
	dir := t.TempDir()
	k, keyPEM := fakegithub.AppKey()
	opts := []fakegithub.Option{fakegithub.WithApp(12345, &k.PublicKey)}
	for repo, id := range installs {
		opts = append(opts, fakegithub.WithInstallation(repo, id))
	}
	r := &serveRig{t: t, fake: fakegithub.New(t, opts...), stderr: &logtest.Buffer{}, dir: dir, done: make(chan error, 1),
		installs: installs, client: &http.Client{Transport: &http.Transport{}}}
	// The fake behind a server of the test's own, so that serve's keep-alive connections to it can be closed
	// before goroutines are counted.
	r.front = httptest.NewServer(r.fake)
	t.Cleanup(r.front.Close)
	keyFile := filepath.Join(dir, "app.pem")
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	all := map[string]string{
		"FLEETWAVE_ADDR": "127.0.0.1:0", "FLEETWAVE_GITHUB_APP_ID": "12345", "FLEETWAVE_GITHUB_PRIVATE_KEY_FILE": keyFile,
		"FLEETWAVE_WEBHOOK_SECRET": serveTestSecret, "FLEETWAVE_STORE": "sqlite://" + filepath.Join(dir, "fleetwave.db"),
		"FLEETWAVE_GITHUB_API_URL": r.front.URL + "/", "FLEETWAVE_CACHE_DIR": filepath.Join(dir, "cache"),
	}
	for k, v := range env {
		all[k] = v
	}
	r.baseline = runtime.NumGoroutine()
	deps := &Deps{Stdout: &bytes.Buffer{}, Stderr: r.stderr, Getenv: func(k string) string { return all[k] }}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	t.Cleanup(cancel)
	cmd := newServeCmd(deps)
	cmd.SetArgs([]string{"--drain-timeout", "20s"})
	cmd.SetOut(deps.Stdout)
	cmd.SetErr(deps.Stderr)
	go func() { r.done <- cmd.ExecuteContext(ctx) }()
	r.base = "http://" + listening(t, r.stderr, r.done)
	return r
}

// rigPR is a pull request of the rig: its repository, number and commits, and its opened delivery.
type rigPR struct {
	repo       string
	number     int
	base, head string
	payload    []byte
}

// pullRequest makes the repository's git history (base files, then head's over them), registers the pull
// request on the fake GitHub and returns it with its opened payload.
func (r *serveRig) pullRequest(repo string, number int, files, head map[string]string) rigPR {
	t := r.t
	t.Helper()
	dir, base, sha := gitRepo(t, filepath.Join(r.dir, "repos", repo), files, head)
	r.fake.AddPullRequest(repo, fakegithub.PullRequest{Number: number, HeadSHA: sha, BaseSHA: base, BaseRef: "master", HeadRef: "change"})
	_, name, _ := strings.Cut(repo, "/")
	fixture := filepath.Join("..", "..", "testdata", "fixtures", "webhooks", "pull_request", "opened.json")
	payload := fakegithub.Payload(t, fixture, map[string]any{
		"number": number, "pull_request.number": number, "installation.id": r.installs[repo],
		"repository.full_name": repo, "repository.name": name, "repository.html_url": "https://github.com/" + repo,
		"repository.clone_url": "file://" + dir, "pull_request.head.sha": sha, "pull_request.base.sha": base,
		"pull_request.head.repo.full_name": repo, "pull_request.base.repo.full_name": repo})
	return rigPR{repo: repo, number: number, base: base, head: sha, payload: payload}
}

// deliver posts the pull request's opened delivery, signed, to serve.
func (r *serveRig) deliver(pr rigPR) {
	t := r.t
	t.Helper()
	mac := hmac.New(sha256.New, []byte(serveTestSecret))
	mac.Write(pr.payload)
	req, _ := http.NewRequest("POST", r.base+"/webhooks/github", bytes.NewReader(pr.payload))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "pull_request")
	req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("%s#%d@%s", pr.repo, pr.number, pr.head))
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("delivery of %s#%d: %d", pr.repo, pr.number, resp.StatusCode)
	}
}

// inProgress reports whether the pull request's fleetwave/diff check run on its head is in progress.
func (r *serveRig) inProgress(pr rigPR) bool {
	for _, cr := range r.fake.CheckRuns(pr.repo) {
		if cr.Name == "fleetwave/diff" && cr.HeadSHA == pr.head && cr.Status == "in_progress" {
			return true
		}
	}
	return false
}

// completed waits for the pull request's fleetwave/diff check run on its head to complete.
func (r *serveRig) completed(pr rigPR, within time.Duration) fakegithub.CheckRun {
	t := r.t
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		for _, cr := range r.fake.CheckRuns(pr.repo) {
			if cr.Name == "fleetwave/diff" && cr.HeadSHA == pr.head && cr.Status == "completed" {
				return cr
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s#%d: no completed fleetwave/diff within %s: %+v\n%s", pr.repo, pr.number, within, r.fake.CheckRuns(pr.repo), r.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// comments is the text of the pull request's comments.
func (r *serveRig) comments(pr rigPR) string {
	var b strings.Builder
	for _, c := range r.fake.Comments(pr.repo, pr.number) {
		b.WriteString(c.Body)
		b.WriteString("\n")
	}
	return b.String()
}

type healthProbe struct {
	n     int
	worst time.Duration
	err   error
}

// probeHealth probes /healthz every 50 ms until the returned function is called, which returns the count, the
// slowest answer and the first failure.
func (r *serveRig) probeHealth() func() healthProbe {
	stop, res := make(chan struct{}), make(chan healthProbe, 1)
	go func() {
		var p healthProbe
		defer func() { res <- p }()
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			t0 := time.Now()
			resp, err := r.client.Get(r.base + "/healthz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("GET /healthz: %d", resp.StatusCode)
				}
			}
			if err != nil && p.err == nil {
				p.err = err
			}
			p.n++
			p.worst = max(p.worst, time.Since(t0))
		}
	}()
	return func() healthProbe {
		close(stop)
		return <-res
	}
}

// stop stops serve (SIGTERM) and checks that it drains and that no goroutine is left beyond those running
// before it started, once the HTTP connections kept alive by both ends are closed.
func (r *serveRig) stop() {
	t := r.t
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not drain")
	}
	r.client.CloseIdleConnections()
	r.front.CloseClientConnections()
	deadline := time.Now().Add(10 * time.Second)
	n := runtime.NumGoroutine()
	for n > r.baseline && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	t.Logf("goroutines: %d before serve started, %d after it stopped", r.baseline, n)
	if n > r.baseline {
		var b strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
		t.Errorf("%d goroutines left after serve stopped (%d before it started):\n%s", n-r.baseline, r.baseline, b.String())
	}
}

const chartYAML = "apiVersion: v2\nname: c\nversion: 1.0.0\n"

func appYAML(name, repo, path string) string {
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s, namespace: argocd}
spec:
  project: default
  source: {repoURL: 'https://github.com/%s.git', targetRevision: HEAD, path: %s}
  destination: {server: 'https://kubernetes.default.svc', namespace: %s}
`, name, repo, path, name)
}

func configMap(name, color string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\ndata: {color: " + color + "}\n"
}

// addCPUBombs adds n apps cpu-bomb-1… to files, each a chart of a nested until (10^12 iterations).
func addCPUBombs(files map[string]string, repo string, n int) {
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("cpu-bomb-%d", i)
		files["apps/"+name+".yaml"] = appYAML(name, repo, "charts/"+name)
		files["charts/"+name+"/Chart.yaml"] = chartYAML
		files["charts/"+name+"/templates/c.yaml"] = "{{ range $i := until 1000000 }}{{ range $j := until 1000000 }}{{ end }}{{ end }}"
	}
}

// refusals finds each app's refusal line in text, naming the app, its chart's path and the rule, and counts them
// by rule; an app without one fails the test.
func refusals(t *testing.T, text string, apps ...string) map[string]int {
	t.Helper()
	rules := map[string]int{}
	for _, a := range apps {
		line := lineWith(text, `app "`+a+`" (charts/`+a, `): refused (`)
		if line == "" {
			t.Errorf("no refusal line for %s in:\n%s", a, text)
			continue
		}
		_, rest, _ := strings.Cut(line, "refused (")
		rule, _, _ := strings.Cut(rest, ")")
		rules[rule]++
	}
	return rules
}

// gitRepo makes a repository at dir with a base commit of files and a head commit that writes head's files over
// it; it returns dir and both commits.
func gitRepo(t *testing.T, dir string, files, head map[string]string) (string, string, string) {
	t.Helper()
	write := func(files map[string]string) {
		for rel, content := range files {
			p := filepath.Join(dir, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string { return gittest.Run(t, dir, args...) }
	write(files)
	git("init", "-q", "-b", "master")
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base := git("rev-parse", "HEAD")
	write(head)
	git("add", "-A")
	git("commit", "-q", "-m", "head")
	return dir, base, git("rev-parse", "HEAD")
}

// listening waits for serve's "listening" log line and returns its address.
func listening(t *testing.T, stderr *logtest.Buffer, done <-chan error) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, line := range strings.Split(stderr.String(), "\n") {
			var rec struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "listening" {
				return rec.Addr
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not listening:\n%s", stderr.String())
		}
		select {
		case err := <-done:
			t.Fatalf("serve exited: %v\n%s", err, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// lineWith is the first line of text holding all of parts ("" if none).
func lineWith(text string, parts ...string) string {
	for _, line := range strings.Split(text, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return line
		}
	}
	return ""
}
