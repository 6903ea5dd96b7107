package cli

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	gogithub "github.com/google/go-github/v60/github"
	dto "github.com/prometheus/client_model/go"

	"github.com/fleetwave/fleetwave/internal/config"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/instances"
	"github.com/fleetwave/fleetwave/internal/edge/github"
	"github.com/fleetwave/fleetwave/internal/edge/github/fakegithub"
	"github.com/fleetwave/fleetwave/internal/edge/metrics"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
	"github.com/fleetwave/fleetwave/internal/testkit/logtest"
	"github.com/fleetwave/fleetwave/webhooks"
)

// TestServeWiresInstances: with an instances file, serve names the instances in its "use cases wired" line, and
// a push to the default branch is planned across both instances (each app on the instance whose rules own its
// file) and rolled out through each app's own instance: every app synced exactly once, counted by its simulator,
// and each instance's requests counted under its own service label. The tokens are never logged.
func TestServeWiresInstances(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	eu, us, file, env := twoInstances(t)
	set, err := instances.LoadWith(file, instances.Options{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	key, keyPEM := fakegithub.AppKey()
	fake := fakegithub.New(t, fakegithub.WithApp(12345, &key.PublicKey))
	gh, err := github.NewApp(github.AppConfig{AppID: 12345, APIURL: fake.URL(), Transport: fake.Client().Transport, PrivateKey: keyPEM})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, "sqlite://"+filepath.Join(dir, "fleetwave.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })

	// The GitOps repository: the apps of both instances under their directories; the push changes them all.
	repoDir := filepath.Join(dir, "Hello-World")
	apps := map[string]string{"clusters/eu/web-test-eu.yaml": "test-eu", "clusters/eu/web-prd-eu.yaml": "prd-eu", "clusters/us/web-prd-us.yaml": "prd-us"}
	color := func(c string) {
		for path := range apps {
			name := strings.TrimSuffix(filepath.Base(path), ".yaml")
			filetest.Write(t, repoDir, "manifests/"+name+"/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {color: "+c+"}\n")
		}
	}
	for path, cluster := range apps {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		filetest.Write(t, repoDir, path, "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: "+name+", namespace: argocd}\nspec:\n  project: default\n"+
			"  source: {repoURL: 'https://github.com/Codertocat/Hello-World.git', targetRevision: master, path: manifests/"+name+"}\n  destination: {name: "+cluster+", namespace: web}\n")
	}
	filetest.Write(t, repoDir, ".fleetwave.yaml", "apiVersion: fleetwave/v1\nwaves:\n  - name: canary\n    selector: {matchLabels: {env: test}}\n  - name: production\n    selector: {matchLabels: {env: prd}}\n")
	color("blue")
	git := func(args ...string) string { return gittest.Run(t, repoDir, args...) }
	git("init", "-q", "-b", "master")
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	before := git("rev-parse", "HEAD")
	color("green")
	git("commit", "-q", "-am", "green")
	after := git("rev-parse", "HEAD")
	eu.SetRef("HEAD", after)
	us.SetRef("HEAD", after)

	var logs logtest.Buffer
	mets := metrics.New()
	w, err := wireServe(ctx, serveDeps{Log: slog.New(slog.NewJSONHandler(&logs, nil)), GitHub: gh, Store: st, Metrics: mets, Instances: set,
		Config: &config.Serve{ArgoCDInstancesFile: file, Store: config.NewSecret("sqlite://" + filepath.Join(dir, "fleetwave.db")),
			CacheDir: filepath.Join(dir, "cache"), ReplicaName: "fleetwave-0"}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	for _, want := range []string{`"argocd":true`, `"argocd_instances":"eu,us"`, `"executor":"rollout (owner fleetwave-0)"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the wiring log lacks %s:\n%s", want, logs.String())
		}
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
	if err != nil || len(rs) != 1 {
		t.Fatalf("rollouts %+v, %v; want one for the push\n%s", rs, err, logs.String())
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := st.GetRollout(ctx, rs[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		if r.State.Terminal() {
			if r.State != store.RolloutSucceeded {
				t.Fatalf("rollout %s: %s\n%s", r.State, r.Message, logs.String())
			}
			break
		}
		if time.Now().After(deadline) {
			evs, _ := st.ListEvents(ctx, r.ID, 0, 100)
			ws, _ := st.ListWaves(ctx, r.ID)
			var gates []string
			for _, w := range ws {
				gates = append(gates, w.Name+" "+string(w.State)+" "+string(w.GateState))
			}
			t.Fatalf("rollout still %s: %s; events %+v; waves %v\n%s", r.State, r.Message, evs, gates, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	steps, err := st.ListSteps(ctx, rs[0].ID, store.StepFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range steps {
		got = append(got, s.App.Instance+"/"+s.App.Name)
	}
	slices.Sort(got)
	if want := "eu/web-prd-eu,eu/web-test-eu,us/web-prd-us"; strings.Join(got, ",") != want {
		t.Errorf("steps %v, want %s", got, want)
	}
	for sim, names := range map[*argocdsim.Server][]string{eu: {"web-test-eu", "web-prd-eu"}, us: {"web-prd-us"}} {
		for _, a := range names {
			if c := sim.Counts(a); c.SyncsAccepted != 1 {
				t.Errorf("%s: %d syncs accepted by its instance, want 1", a, c.SyncsAccepted)
			}
		}
	}
	gathered, err := mets.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	fams := map[string]*dto.MetricFamily{}
	for _, f := range gathered {
		fams[f.GetName()] = f
	}
	for _, inst := range []string{"eu", "us"} {
		if n := value(fams, "fleetwave_upstream_requests_total", map[string]string{"service": "argocd", "instance": inst}); n < 1 {
			t.Errorf("no request of instance %s counted (%v)", inst, n)
		}
	}
	// What runs where (#37): serve follows both instances; w.inv holds their apps, Synced once the rollout's
	// post-sync reconciles are streamed, and /metrics counts them per instance.
	if w.inv == nil {
		t.Fatal("serve with Argo CD instances has no inventory")
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		snap := w.inv.Snapshot()
		var apps []string
		for _, a := range snap.Apps {
			apps = append(apps, a.Instance+"/"+a.Name+" "+a.Sync)
		}
		synced := len(snap.Instances) == 2 && snap.Instances[0].Synced && snap.Instances[1].Synced
		want := "eu/web-prd-eu Synced,eu/web-test-eu Synced,us/web-prd-us Synced"
		if synced && strings.Join(apps, ",") == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("inventory %v, instances %+v; want %s, both instances synced", apps, snap.Instances, want)
		}
	}
	gathered, err = mets.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	fams = map[string]*dto.MetricFamily{}
	for _, f := range gathered {
		fams[f.GetName()] = f
	}
	if n := value(fams, "fleetwave_inventory_apps", map[string]string{"instance": "eu", "sync": "Synced"}); n != 2 {
		t.Errorf("fleetwave_inventory_apps{instance=eu,sync=Synced} = %v, want 2", n)
	}
	if n := value(fams, "fleetwave_inventory_stream_synced", map[string]string{"instance": "us"}); n != 1 {
		t.Errorf("fleetwave_inventory_stream_synced{instance=us} = %v, want 1", n)
	}
	if strings.Contains(logs.String(), "t0ken") {
		t.Error("a token was logged")
	}
}
