// Issue #36 against two real Argo CD instances: one plan and one rollout over both.

package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/gitfetch/gitfetchtest"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

// The fleet: the same two app names in each instance (the instance is part of an app's identity), a test app on the
// staging cluster and a production app, each deploying into a namespace of its own.
var instApps = []struct{ instance, name, cluster string }{
	{"a", "web-test", "staging-eu-1"}, {"a", "web-prd", "prod-eu-1"},
	{"b", "web-test", "staging-eu-1"}, {"b", "web-prd", "prod-us-1"},
}

const instPolicy = `apiVersion: fleetwave/v1
waves:
  - name: test
    selector: {matchLabels: {env: staging}}
  - name: prd
    selector: {matchLabels: {env: prod}}
`

type instFleet struct {
	t         *testing.T
	bot       string
	clients   map[string]*argocd.Client
	envs      map[string]env
	repoURL   string
	work      string
	store     string
	instances string // the instances file
	bServer   int    // the pid of the second instance's argocd-server
}

// TestInstancesAgainstRealArgoCD (issue #36): a change touching apps of two real Argo CD instances gets one plan
// across both (each app with its instance), a rollout in wave order across both; killed (SIGKILL) mid-rollout and
// started again, it syncs every app of every instance exactly once; with the second instance's API server frozen
// mid-rollout, only that instance's apps wait, and they go on when it answers again.
func TestInstancesAgainstRealArgoCD(t *testing.T) {
	e := loadEnv(t)
	bot := os.Getenv("FLEETWAVE_E2E_BOT")
	if bot == "" {
		t.Skip("FLEETWAVE_E2E_BOT (the fleetwave binary) is not set; make e2e builds it")
	}
	if e.ArgoCDBURL == "" {
		t.Fatal("the environment has no second Argo CD instance (FLEETWAVE_E2E_ARGOCD_B_URL): rerun make e2e-up")
	}
	f := newInstFleet(t, e, bot)

	base, head := f.commitChange("1")
	t.Run("one plan across both instances", func(t *testing.T) {
		out, code := f.fleetwave("plan", "--argocd-instances", f.instances, "--repo", f.work, "--repo-url", f.repoURL,
			"--base", base, "--head", head, "--output", "json")
		if code != 0 {
			t.Fatalf("plan: exit %d\n%s", code, out)
		}
		var p struct {
			Waves []struct {
				Name    string
				Batches []struct {
					Apps []struct{ Name, Namespace, Instance string }
				}
			}
		}
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatalf("plan JSON: %v\n%s", err, out)
		}
		got := map[string][]string{}
		for _, w := range p.Waves {
			for _, b := range w.Batches {
				for _, a := range b.Apps {
					got[w.Name] = append(got[w.Name], a.Instance+"/"+a.Namespace+"/"+a.Name)
				}
			}
		}
		want := map[string][]string{
			"test": {"a/argocd/web-test", "b/argocd-b/web-test"},
			"prd":  {"a/argocd/web-prd", "b/argocd-b/web-prd"},
		}
		for w, apps := range want {
			if strings.Join(slices.Sorted(slices.Values(got[w])), " ") != strings.Join(apps, " ") {
				t.Errorf("wave %s has %v, want %v", w, got[w], apps)
			}
		}
	})

	f.push(head)
	t.Run("SIGKILL mid-rollout, started again: every app synced exactly once", func(t *testing.T) {
		p := f.startRollout(base, head)
		if _, ok := p.waitEvent(2*time.Minute, isEvent("app-syncing", "")); !ok {
			p.wait(time.Second)
			t.Fatalf("no sync started\n%s", p.output())
		}
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		p.wait(10 * time.Second)
		q := f.startRollout(base, head)
		if !q.wait(4*time.Minute) || q.code != 0 {
			t.Fatalf("the resumed rollout did not succeed (exit %d)\n%s", q.code, q.output())
		}
		f.syncedOnce(t, head)
	})

	base, head = f.commitChange("2")
	f.push(head)
	t.Run("an instance frozen mid-rollout holds only its apps", func(t *testing.T) {
		p := f.startRollout(base, head)
		if _, ok := p.waitEvent(time.Minute, isEvent("wave-started", "test")); !ok {
			p.wait(time.Second)
			t.Fatalf("the test wave never started\n%s", p.output())
		}
		if err := syscall.Kill(f.bServer, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		frozen := true
		defer func() {
			if frozen {
				_ = syscall.Kill(f.bServer, syscall.SIGCONT)
			}
		}()
		// The first instance's test app reaches the change while the second instance does not answer.
		deadline := time.Now().Add(2 * time.Minute)
		for applied(f.get(t, "a", "web-test")) != head {
			if time.Now().After(deadline) {
				t.Fatalf("instance a's web-test did not sync while instance b was frozen\n%s", p.output())
			}
			time.Sleep(time.Second)
		}
		// Past the Argo CD client's timeout the rollout finds b not answering and says so; it waits, failing nothing.
		if ev, ok := p.waitEvent(4*time.Minute, func(ev map[string]any) bool {
			return ev["event"] == "instance-unreachable" && ev["instance"] == "b"
		}); !ok {
			t.Errorf("no instance-unreachable event for b while it was frozen\n%s", p.output())
		} else {
			t.Logf("while frozen: %v", ev["message"])
		}
		select {
		case <-p.done:
			t.Fatalf("the rollout ended while instance b was frozen (exit %d)\n%s", p.code, p.output())
		default:
		}
		if got := applied(f.get(t, "a", "web-prd")); got == head {
			t.Errorf("instance a's web-prd synced while the test wave still waited for instance b")
		}
		_ = syscall.Kill(f.bServer, syscall.SIGCONT)
		frozen = false
		if !p.wait(5*time.Minute) || p.code != 0 {
			t.Fatalf("the rollout did not succeed once instance b answered again (exit %d)\n%s", p.code, p.output())
		}
		if _, ok := p.waitEvent(time.Second, func(ev map[string]any) bool {
			return ev["event"] == "instance-reachable" && ev["instance"] == "b"
		}); !ok {
			t.Errorf("no instance-reachable event for b after it answered again\n%s", p.output())
		}
		f.syncedOnce(t, head)
	})
}

func newInstFleet(t *testing.T, e env, bot string) *instFleet {
	ctx := context.Background()
	eb := e
	eb.ArgoCDURL, eb.Token = e.ArgoCDBURL, e.ArgoCDBToken
	f := &instFleet{t: t, bot: bot, envs: map[string]env{"a": e, "b": eb}, clients: map[string]*argocd.Client{},
		store: filepath.Join(t.TempDir(), "rollout.db")}
	for name, ev := range f.envs {
		c, err := argocd.New(argocd.Options{BaseURL: ev.ArgoCDURL, Token: ev.Token, UserAgent: "fleetwave-e2e"})
		if err != nil {
			t.Fatal(err)
		}
		f.clients[name] = c
	}
	pid, err := os.ReadFile(filepath.Join(filepath.Dir(e.Repo), "pids", "argocd-b-server.pid"))
	if err != nil {
		t.Fatalf("the second instance's argocd-server pid: %v", err)
	}
	if _, err := fmt.Sscan(string(pid), &f.bServer); err != nil {
		t.Fatal(err)
	}

	root := t.TempDir()
	bare := filepath.Join(root, "instances.git")
	gittest.Run(t, root, "init", "-q", "--bare", "-b", "main", bare)
	srv := gitfetchtest.Start(t, root, "", "")
	f.repoURL = srv.URL + "/instances.git"
	f.work = filepath.Join(t.TempDir(), "work")
	gittest.Run(t, root, "clone", "-q", bare, f.work)
	gittest.Run(t, f.work, "checkout", "-q", "-B", "main")
	f.write(".fleetwave.yaml", instPolicy)
	ns := map[string]string{"a": "argocd", "b": e.ArgoCDBNamespace}
	for _, a := range instApps {
		f.write("instances/"+a.instance+"/"+a.name+".yaml", fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s, namespace: %s, labels: {suite: instances}}
spec:
  project: default
  source: {repoURL: '%s', path: manifests/web, targetRevision: main}
  destination: {name: %s, namespace: e2e-%s-%s}
  syncPolicy:
    syncOptions: [CreateNamespace=true]
`, a.name, ns[a.instance], f.repoURL, a.cluster, a.instance, a.name))
	}
	f.write("manifests/web/configmap.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {change: '0'}\n")
	gittest.Run(t, f.work, "add", "-A")
	gittest.Run(t, f.work, "commit", "-q", "-m", "fleet")
	gittest.Run(t, f.work, "push", "-q", "origin", "main")
	base := gittest.Run(t, f.work, "rev-parse", "HEAD")

	tokenFile := filepath.Join(t.TempDir(), "b-token")
	if err := os.WriteFile(tokenFile, []byte(eb.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.instances = filepath.Join(t.TempDir(), "instances.yaml")
	f.write0(f.instances, fmt.Sprintf(`instances:
  - name: a
    url: %s
    token: {env: E2E_INSTANCE_A_TOKEN}
    owns: [{paths: ["instances/a/**"]}]
  - name: b
    url: %s
    token: {file: %s}
    owns: [{paths: ["instances/b/**"]}]
`, e.ArgoCDURL, eb.ArgoCDURL, tokenFile))

	for inst, ev := range f.envs {
		registerRepositories(ctx, t, ev, []map[string]any{{"repo": f.repoURL, "type": "git", "name": "instances", "insecure": true}})
		createApps(t, ev, filepath.Join(f.work, "instances", inst), []string{"web-test", "web-prd"})
	}
	for _, a := range instApps {
		syncAndWait(t, f.clients[a.instance], a.name, base)
	}
	return f
}

func (f *instFleet) write(rel, content string) { f.write0(filepath.Join(f.work, rel), content) }

func (f *instFleet) write0(p, content string) {
	f.t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *instFleet) commitChange(label string) (string, string) {
	base := gittest.Run(f.t, f.work, "rev-parse", "HEAD")
	f.write("manifests/web/configmap.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {change: '"+label+"'}\n")
	gittest.Run(f.t, f.work, "commit", "-q", "-am", "change "+label)
	return base, gittest.Run(f.t, f.work, "rev-parse", "HEAD")
}

func (f *instFleet) push(head string) {
	gittest.Run(f.t, f.work, "push", "-q", "origin", head+":refs/heads/main")
}

func (f *instFleet) fleetwave(args ...string) (string, int) {
	cmd := exec.Command(f.bot, args...)
	cmd.Env = append(os.Environ(), "E2E_INSTANCE_A_TOKEN="+f.envs["a"].Token)
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
		out = append(out, ee.Stderr...)
	} else if err != nil {
		f.t.Fatalf("fleetwave %v: %v", args, err)
	}
	return string(out), code
}

func (f *instFleet) startRollout(base, head string) *rolloutProc {
	return startFleetwave(f.t, f.bot, []string{"rollout", "--argocd-instances", f.instances, "--store", f.store,
		"--repo", f.work, "--repo-url", f.repoURL, "--base", base, "--head", head, "--output", "json"},
		"E2E_INSTANCE_A_TOKEN="+f.envs["a"].Token)
}

func (f *instFleet) get(t *testing.T, instance, name string) *v1alpha1.Application {
	t.Helper()
	app, err := f.clients[instance].GetApplication(context.Background(), name, "")
	if err != nil {
		t.Fatalf("%s/%s: %v", instance, name, err)
	}
	return app
}

// syncedOnce checks, in each instance's own history, that every app ran rev exactly once.
func (f *instFleet) syncedOnce(t *testing.T, rev string) {
	t.Helper()
	counts := map[string]int{}
	for _, a := range instApps {
		app := f.get(t, a.instance, a.name)
		n := 0
		for _, h := range app.Status.History {
			if h.Revision == rev {
				n++
			}
		}
		counts[a.instance+"/"+a.name] = n
		if n != 1 {
			t.Errorf("%s/%s ran %s %d times, want exactly once", a.instance, a.name, rev[:10], n)
		}
	}
	t.Logf("syncs of %s per app, from each Argo CD's history: %v", rev[:10], counts)
}
