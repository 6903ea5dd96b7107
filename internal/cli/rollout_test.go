package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/spf13/cobra"

	"github.com/fleetwave/fleetwave/internal/argocd/argocdsim"
)

const (
	rolloutOld = "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a"
	rolloutNew = "1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b"
)

// runArgo runs the rollout / argocd-sim commands in-process under the root command, mapping errors to exit
// codes as Main does.
func runArgo(t *testing.T, ctx context.Context, env map[string]string, stdout io.Writer, args ...string) (code int, stderr string) {
	t.Helper()
	var errOut bytes.Buffer
	deps := &Deps{Stdout: stdout, Stderr: &errOut, Getenv: func(k string) string { return env[k] }}
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

// rolloutSim serves a simulator over HTTP with three apps: out of sync, at the revision, failing.
func rolloutSim(t *testing.T) (*argocdsim.Server, string) {
	t.Helper()
	sim := argocdsim.New(argocdsim.Config{Token: "t0ken", SyncDuration: 100 * time.Millisecond, ReconcileDelay: 10 * time.Millisecond})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(func() { srv.Close(); sim.Close() })
	sim.SetRef("HEAD", rolloutNew)
	for _, a := range []struct {
		name string
		live string
		b    argocdsim.Behavior
	}{{"api", rolloutOld, argocdsim.Behavior{}}, {"web", rolloutNew, argocdsim.Behavior{}}, {"worker", rolloutOld, argocdsim.Behavior{Fail: true, FailMessage: "quota exceeded"}}} {
		app := &v1alpha1.Application{}
		app.Name = a.name
		app.Labels = map[string]string{"env": "prd"}
		app.Spec.Source = &v1alpha1.ApplicationSource{RepoURL: "https://git.example.com/gitops.git", Path: a.name, TargetRevision: "HEAD"}
		if err := sim.AddApp(app, argocdsim.AppOptions{LiveRevisions: []string{a.live}, Behavior: a.b}); err != nil {
			t.Fatal(err)
		}
	}
	return sim, srv.URL
}

func TestRolloutUsageErrors(t *testing.T) {
	_, url := rolloutSim(t)
	env := map[string]string{"FLEETWAVE_ARGOCD_TOKEN": "t0ken"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no server", []string{"rollout", "--selector", "env=prd", "--revision", rolloutNew}, "needs --argocd"},
		{"no selector", []string{"rollout", "--argocd", url, "--revision", rolloutNew}, "needs --selector"},
		{"no revision", []string{"rollout", "--argocd", url, "--selector", "env=prd"}, "needs --revision"},
		{"short sha", []string{"rollout", "--argocd", url, "--selector", "env=prd", "--revision", "1b1b1b1"}, "abbreviated commit SHA"},
		{"bad output", []string{"rollout", "--argocd", url, "--selector", "env=prd", "--revision", rolloutNew, "--output", "yaml"}, "--output"},
		{"nothing matches", []string{"rollout", "--argocd", url, "--selector", "env=nowhere", "--revision", rolloutNew}, `no application matches selector "env=nowhere"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stderr := runArgo(t, context.Background(), env, io.Discard, tt.args...)
			if code != 2 || !strings.Contains(stderr, tt.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, stderr, tt.want)
			}
		})
	}
}

func TestRolloutCommand(t *testing.T) {
	sim, url := rolloutSim(t)
	var out bytes.Buffer
	code, stderr := runArgo(t, context.Background(), map[string]string{"FLEETWAVE_ARGOCD_URL": url, "FLEETWAVE_ARGOCD_TOKEN": "t0ken"}, &out,
		"rollout", "--selector", "env=prd", "--revision", rolloutNew, "--concurrency", "3")
	if code != 1 || !strings.Contains(stderr, "rollout of "+rolloutNew+": 1 of 3 apps failed") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	text := out.String()
	for _, want := range []string{
		"APP     OUTCOME  SYNC       HEALTH   DURATION  CALLS  MESSAGE",
		"api     synced   Synced     Healthy",
		"web     skipped  Synced     Healthy",
		"worker  failed   OutOfSync  Healthy",
		"sync Failed: quota exceeded",
		"3 apps: 1 synced, 1 skipped, 1 failed (wall ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if strings.Count(stderr, "[") != 3 || strings.Contains(text+stderr, "t0ken") {
		t.Errorf("progress / secrets in stderr %q", stderr)
	}
	if sim.Counts("web").Syncs != 0 || sim.Counts("api").SyncsAccepted != 1 {
		t.Errorf("syncs: web %d, api %d", sim.Counts("web").Syncs, sim.Counts("api").SyncsAccepted)
	}
}

func TestRolloutDryRunJSON(t *testing.T) {
	sim, url := rolloutSim(t)
	var out bytes.Buffer
	code, stderr := runArgo(t, context.Background(), map[string]string{"FLEETWAVE_ARGOCD_TOKEN": "t0ken"}, &out,
		"rollout", "--argocd", url, "--selector", "env=prd", "--revision", rolloutNew, "--dry-run", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct {
		Revision string         `json:"revision"`
		DryRun   bool           `json:"dryRun"`
		Summary  map[string]int `json:"summary"`
		Apps     []struct {
			Name, Outcome, Message string
		} `json:"apps"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !got.DryRun || got.Summary["dry-run"] != 2 || got.Summary["skipped"] != 1 || got.Apps[0].Name != "api" ||
		!strings.Contains(got.Apps[0].Message, "would sync to 1b1b1b1b1b") {
		t.Fatalf("report %+v", got)
	}
	for _, n := range []string{"api", "web", "worker"} {
		if sim.Counts(n).Syncs != 0 {
			t.Fatalf("a dry run synced %s", n)
		}
	}
}

func TestRolloutBadToken(t *testing.T) {
	_, url := rolloutSim(t)
	code, stderr := runArgo(t, context.Background(), map[string]string{"FLEETWAVE_ARGOCD_TOKEN": "wrong"}, io.Discard,
		"rollout", "--argocd", url, "--selector", "env=prd", "--revision", rolloutNew)
	if code != 2 || !strings.Contains(stderr, "Unauthenticated") || strings.Contains(stderr, "wrong") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
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
		"rollout", "--argocd", url, "--selector", "fleet=demo", "--revision", rolloutNew, "--concurrency", "10")
	if code != 0 || !strings.Contains(out.String(), "25 apps: 25 synced") {
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
	if code, stderr := runArgo(t, context.Background(), nil, io.Discard, "argocd-sim"); code != 2 || !strings.Contains(stderr, "needs --fleet") {
		t.Fatalf("without --fleet: exit %d %q", code, stderr)
	}
}
