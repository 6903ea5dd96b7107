package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/plan"
)

// Tests of the terminal rollout's silences (issue #33, items 11–14): what the command says and does when the
// process, Argo CD or the signals do not behave.

// rolloutProcess is the CLI run as its own process (TestRolloutHelperProcess) with args.
type rolloutProcess struct {
	cmd    *exec.Cmd
	out    *outBuffer
	exited chan struct{}
	err    error
}

func startRolloutProcess(t *testing.T, args ...string) *rolloutProcess {
	t.Helper()
	b, _ := json.Marshal(args)
	p := &rolloutProcess{out: &outBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], "-test.run=^TestRolloutHelperProcess$")
	p.cmd.Env = append(os.Environ(), "FLEETWAVE_ROLLOUT_HELPER=1", "FLEETWAVE_ROLLOUT_ARGS="+string(b), "FLEETWAVE_ARGOCD_TOKEN=t0ken", "USER=alice")
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// wait returns the process's exit code, failing the test when it runs longer than within.
func (p *rolloutProcess) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(within):
		t.Fatalf("still running after %s:\n%s", within, p.out.String())
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatalf("%v\n%s", p.err, p.out.String())
	}
	return 0
}

// TestRolloutInterruptTwiceAtOnce: `timeout -s INT` signals the process and then its group in the same instant:
// two SIGINTs back to back are one Ctrl-C — the built CLI pauses (exit 3), it does not stop (130).
func TestRolloutInterruptTwiceAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the CLI as its own process; skipped with -short")
	}
	_, url := newRolloutSim(t, argocdsim.Config{SyncDuration: 1500 * time.Millisecond, ReconcileDelay: 10 * time.Millisecond}, nil, sixApps())
	db := filepath.Join(t.TempDir(), "r.db")
	p := startRolloutProcess(t, "rollout", "--argocd", url, "--selector", "team=x", "--revision", rolloutNew,
		"--concurrency", "2", "--store", db)
	p.out.waitFor(t, ": syncing", 30*time.Second)
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(t, 30*time.Second); code != exitPaused {
		t.Fatalf("exit %d after two SIGINTs at once, want %d (paused)\n%s", code, exitPaused, p.out.String())
	}
}

// waitGone runs `rollout status` until it says the rollout's process is gone (its lease expired), and returns
// its output.
func waitGone(t *testing.T, db string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var out outBuffer
		code, stderr := runArgo(t, context.Background(), nil, &out, "rollout", "status", "--store", db)
		if code == 0 && strings.Contains(out.String(), "its process is gone since") {
			return out.String()
		}
		if time.Now().After(deadline) {
			t.Fatalf("rollout status never said the process is gone: exit %d %s\n%s", code, stderr, out.String())
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// TestRolloutKilledStatusAndResume: after kill -9 mid-rollout, `rollout status` says the rollout's process is
// gone (not "running" forever), `rollout resume` without --argocd says how to take it over, and with --argocd it
// takes it over and runs it to the end — in trials killed at different moments, each app synced exactly once.
func TestRolloutKilledStatusAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("kills CLI processes; skipped with -short")
	}
	for trial, delay := range []time.Duration{0, 700 * time.Millisecond, 1600 * time.Millisecond} {
		apps := sixApps()
		sim, url := newRolloutSim(t, argocdsim.Config{SyncDuration: 800 * time.Millisecond, ReconcileDelay: 10 * time.Millisecond}, nil, apps)
		db := filepath.Join(t.TempDir(), "r.db")
		env := map[string]string{"FLEETWAVE_ARGOCD_TOKEN": "t0ken"}
		p := startRolloutProcess(t, "rollout", "--argocd", url, "--selector", "team=x", "--revision", rolloutNew,
			"--concurrency", "2", "--store", db, "--lease-ttl", "2s", "--intent-grace", "1s")
		p.out.waitFor(t, ": syncing", 30*time.Second)
		time.Sleep(delay)
		_ = p.cmd.Process.Kill()
		p.wait(t, 10*time.Second)

		status := waitGone(t, db)
		if !regexp.MustCompile(`rollout #1 running \(its process is gone since \d\d:\d\d:\d\d\)`).MatchString(status) ||
			!strings.Contains(status, "rerun the rollout command, or run fleetwave rollout resume --argocd <url> --store "+db) {
			t.Fatalf("trial %d: status after kill -9:\n%s", trial, status)
		}
		code, stderr := runArgo(t, context.Background(), env, io.Discard, "rollout", "resume", "--store", db)
		if code != 1 || !strings.Contains(stderr, "rollout #1 is running but its process is gone since") || !strings.Contains(stderr, "to take it over") {
			t.Fatalf("trial %d: resume without --argocd: exit %d %s", trial, code, stderr)
		}
		var out outBuffer
		code, stderr = runArgo(t, context.Background(), env, &out, "rollout", "resume", "--argocd", url, "--store", db, "--lease-ttl", "2s", "--intent-grace", "1s")
		if code != 0 || !strings.Contains(out.String(), "Taking over rollout #1") || !strings.Contains(out.String(), "rollout #1 succeeded: 6 synced") {
			t.Fatalf("trial %d: resume --argocd: exit %d %s\n%s\nkilled run:\n%s", trial, code, stderr, out.String(), p.out.String())
		}
		for _, a := range apps {
			if c := sim.Counts(a.name); c.SyncsAccepted != 1 || c.Syncs != 1 {
				t.Errorf("trial %d: %s: %d sync requests (%d accepted), want exactly 1", trial, a.name, c.Syncs, c.SyncsAccepted)
			}
		}
	}
}

// teamsPlanFile is a plan file of two apps in one wave, production, whose approval names org/sre.
func teamsPlanFile(t *testing.T, apps []simApp) string {
	t.Helper()
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
	return writeTemp(t, `{"base":"`+rolloutOld+`","head":"`+rolloutNew+`",`+string(b[1:]))
}

// TestRolloutApproveWithoutProcess: the awaiting-approval hint of a team-gated wave is the command that works
// (with --member-of); a wrong wave name gets the unknown-wave error with or without --member-of, and the name is
// matched as the executor matches it (case-insensitively: PRODUCTION is still team-gated); approving without
// --argocd while no process runs the rollout says so instead of "it starts now", and resume --argocd then takes
// the rollout over and runs it.
func TestRolloutApproveWithoutProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a CLI process; skipped with -short")
	}
	apps := []simApp{{name: "web-1", cluster: "in-cluster"}, {name: "web-2", cluster: "in-cluster"}}
	sim, url := newRolloutSim(t, argocdsim.Config{SyncDuration: 100 * time.Millisecond, ReconcileDelay: 10 * time.Millisecond}, nil, apps)
	planFile := teamsPlanFile(t, apps)
	db := filepath.Join(t.TempDir(), "r.db")
	env := map[string]string{"FLEETWAVE_ARGOCD_TOKEN": "t0ken", "USER": "alice"}
	p := startRolloutProcess(t, "rollout", "--argocd", url, "--plan", planFile, "--store", db, "-o", "json", "--lease-ttl", "2s")
	p.out.waitFor(t, `"event":"wave-awaiting-approval"`, 30*time.Second)
	for _, ev := range jsonEvents(t, p.out.String()) {
		if ev.Event == "wave-awaiting-approval" && ev.Command != "fleetwave rollout approve production --member-of org/sre --store "+db {
			t.Errorf("the hint is %q, which the terminal refuses for a team-gated wave", ev.Command)
		}
	}
	_ = p.cmd.Process.Kill()
	p.wait(t, 10*time.Second)
	waitGone(t, db)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"nosuch"}, `rollout #1 has no wave "nosuch" (waves: production)`},
		{[]string{"nosuch", "--member-of", "org/sre"}, `rollout #1 has no wave "nosuch" (waves: production)`},
		{[]string{"PRODUCTION"}, "wave production may only be approved by members of org/sre"},
	} {
		code, stderr := runArgo(t, context.Background(), env, io.Discard, append([]string{"rollout", "approve", "--store", db}, tc.args...)...)
		if code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("approve %v: exit %d, stderr %q; want exit 1 and %q", tc.args, code, stderr, tc.want)
		}
	}
	var reply outBuffer
	code, stderr := runArgo(t, context.Background(), env, &reply, "rollout", "approve", "production", "--member-of", "org/sre", "--store", db)
	if code != 0 || strings.Contains(reply.String(), "starts now") || !strings.Contains(reply.String(), "recorded, but no process runs the rollout") ||
		!strings.Contains(stderr, "no process runs rollout #1: nothing carries the command out until you rerun the rollout command or run fleetwave rollout resume --argocd <url>") {
		t.Fatalf("approve without --argocd and no process: exit %d\nstdout %s\nstderr %s", code, reply.String(), stderr)
	}
	var out outBuffer
	code, stderr = runArgo(t, context.Background(), env, &out, "rollout", "resume", "--argocd", url, "--store", db)
	if code != 0 || !strings.Contains(out.String(), "rollout #1 succeeded: 2 synced") {
		t.Fatalf("resume --argocd after the approval: exit %d %s\n%s", code, stderr, out.String())
	}
	for _, a := range apps {
		if c := sim.Counts(a.name); c.SyncsAccepted != 1 {
			t.Errorf("%s: %d syncs, want 1", a.name, c.SyncsAccepted)
		}
	}
}

// stoppableProxy forwards TCP connections to target on a fixed address it can stop listening on (every
// connection cut, new ones refused: Argo CD gone, a port-forward died) and start again.
type stoppableProxy struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        map[net.Conn]bool
}

func newStoppableProxy(t *testing.T, target string) *stoppableProxy {
	t.Helper()
	p := &stoppableProxy{target: target, conns: map[net.Conn]bool{}}
	p.start(t, "127.0.0.1:0")
	t.Cleanup(p.stop)
	return p
}

func (p *stoppableProxy) start(t *testing.T, addr string) {
	t.Helper()
	if addr == "" {
		addr = p.addr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[up] = true, true
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close(); c.Close() }()
			go func() { _, _ = io.Copy(c, up); up.Close(); c.Close() }()
		}
	}()
}

func (p *stoppableProxy) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// unreachableRun runs a selector rollout of six slow apps through a proxy that stops once the first sync is
// under way; it returns the proxy, the output and the channel of the exit code.
func unreachableRun(t *testing.T, sigs chan os.Signal, extra ...string) (*argocdsim.Server, *stoppableProxy, []string, *outBuffer, chan int) {
	t.Helper()
	sim, url := newRolloutSim(t, argocdsim.Config{SyncDuration: 2 * time.Second, ReconcileDelay: 10 * time.Millisecond}, nil, sixApps())
	proxy := newStoppableProxy(t, strings.TrimPrefix(url, "http://"))
	db := filepath.Join(t.TempDir(), "r.db")
	args := append([]string{"rollout", "--argocd", "http://" + proxy.addr, "--selector", "team=x", "--revision", rolloutNew,
		"--concurrency", "2", "--store", db, "-o", "json", "--intent-grace", "1s"}, extra...)
	var out outBuffer
	done := make(chan int, 1)
	go func() {
		code, stderr := runArgoSignals(t, context.Background(), map[string]string{"FLEETWAVE_ARGOCD_TOKEN": "t0ken"}, &out, sigs, args...)
		out.Write([]byte(stderr))
		done <- code
	}()
	out.waitFor(t, `"event":"app-syncing"`, 30*time.Second)
	proxy.stop()
	return sim, proxy, args, &out, done
}

// TestRolloutArgoCDUnreachable: Argo CD going away mid-rollout is said within seconds ("Argo CD unreachable
// since …, retrying"), and again when it answers; --timeout still fails the apps it cannot finish; one interrupt
// pauses even though the syncs in flight cannot report, and the rerun finishes every app, each synced once.
func TestRolloutArgoCDUnreachable(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out an outage; skipped with -short")
	}
	exitWithin := func(t *testing.T, done chan int, out *outBuffer, d time.Duration) int {
		t.Helper()
		select {
		case code := <-done:
			return code
		case <-time.After(d):
			t.Fatalf("no exit within %s:\n%s", d, out.String())
		}
		return 0
	}
	t.Run("back", func(t *testing.T) {
		sim, proxy, _, out, done := unreachableRun(t, nil)
		out.waitFor(t, `"event":"argocd-unreachable"`, 6*time.Second)
		if !regexp.MustCompile(`"message":"Argo CD at http://[0-9.:]+ unreachable since \d\d:\d\d:\d\d, retrying`).MatchString(out.String()) {
			t.Errorf("the unreachable event does not say since when:\n%s", out.String())
		}
		proxy.start(t, "")
		out.waitFor(t, `"event":"argocd-reachable"`, 6*time.Second)
		if code := exitWithin(t, done, out, 60*time.Second); code != 0 {
			t.Fatalf("exit %d once Argo CD came back:\n%s", code, out.String())
		}
		for _, a := range sixApps() {
			if c := sim.Counts(a.name); c.SyncsAccepted != 1 {
				t.Errorf("%s: %d syncs accepted, want 1", a.name, c.SyncsAccepted)
			}
		}
	})
	t.Run("timeout", func(t *testing.T) {
		_, _, _, out, done := unreachableRun(t, nil, "--timeout", "4s")
		out.waitFor(t, `"event":"argocd-unreachable"`, 6*time.Second)
		if code := exitWithin(t, done, out, 30*time.Second); code != 1 {
			t.Fatalf("exit %d, want 1 (the apps in flight failed at --timeout):\n%s", code, out.String())
		}
		if !strings.Contains(out.String(), `"event":"app-failed"`) {
			t.Errorf("no app failed at --timeout:\n%s", out.String())
		}
	})
	t.Run("interrupt", func(t *testing.T) {
		sigs := make(chan os.Signal, 2)
		sim, proxy, args, out, done := unreachableRun(t, sigs)
		out.waitFor(t, `"event":"argocd-unreachable"`, 6*time.Second)
		sigs <- os.Interrupt
		if code := exitWithin(t, done, out, 15*time.Second); code != exitPaused {
			t.Fatalf("exit %d after one interrupt while Argo CD is away, want %d:\n%s", code, exitPaused, out.String())
		}
		proxy.start(t, "")
		var rerun outBuffer
		if code, stderr := runArgo(t, context.Background(), map[string]string{"FLEETWAVE_ARGOCD_TOKEN": "t0ken"}, &rerun, args...); code != 0 {
			t.Fatalf("rerun: exit %d %s\n%s", code, stderr, rerun.String())
		}
		for _, a := range sixApps() {
			if c := sim.Counts(a.name); c.SyncsAccepted != 1 {
				t.Errorf("%s: %d syncs accepted, want 1", a.name, c.SyncsAccepted)
			}
		}
	})
}
