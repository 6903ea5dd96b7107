package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
)

// twoInstances serves two simulated Argo CD instances on loopback: eu with the clusters test-eu and prd-eu and
// an app on each, us with prd-us and its app. It returns the simulators, an instances file whose rules give
// clusters/eu/** to eu and clusters/us/** to us, and the environment with their tokens.
func twoInstances(t *testing.T) (eu, us *argocdsim.Server, file string, env map[string]string) {
	t.Helper()
	return twoInstancesOwning(t, `[{paths: ["clusters/eu/**"]}]`, `[{paths: ["clusters/us/**"]}]`)
}

// twoInstancesOwning is twoInstances with the instances' owns rules given (YAML flow sequences).
func twoInstancesOwning(t *testing.T, euOwns, usOwns string) (eu, us *argocdsim.Server, file string, env map[string]string) {
	t.Helper()
	cfg := argocdsim.Config{SyncDuration: 100 * time.Millisecond, ReconcileDelay: 10 * time.Millisecond}
	cluster := func(name, envName string) v1alpha1.Cluster {
		return v1alpha1.Cluster{Name: name, Server: "https://" + name + ".example.com", Labels: map[string]string{"env": envName}}
	}
	eu, euURL := newRolloutSim(t, cfg, []v1alpha1.Cluster{cluster("test-eu", "test"), cluster("prd-eu", "prd")},
		[]simApp{{name: "web-test-eu", cluster: "test-eu"}, {name: "web-prd-eu", cluster: "prd-eu"}})
	us, usURL := newRolloutSim(t, cfg, []v1alpha1.Cluster{cluster("prd-us", "prd")}, []simApp{{name: "web-prd-us", cluster: "prd-us"}})
	file = writeInstances(t, fmt.Sprintf(`instances:
  - name: eu
    url: %s
    token: {env: ARGOCD_EU_TOKEN}
    maxSyncs: 1
    owns: %s
  - name: us
    url: %s
    token: {env: ARGOCD_US_TOKEN}
    owns: %s
`, euURL, euOwns, usURL, usOwns))
	return eu, us, file, map[string]string{"ARGOCD_EU_TOKEN": "t0ken", "ARGOCD_US_TOKEN": "t0ken"}
}

// instancesRepo is a GitOps repository of the apps of twoInstances, each declared under its instance's
// directory (and, with stray, one more under a directory no instance owns); the change edits every app.
func instancesRepo(t *testing.T, stray bool) (dir, head string) {
	t.Helper()
	dir = t.TempDir()
	apps := map[string]string{"clusters/eu/web-test-eu.yaml": "test-eu", "clusters/eu/web-prd-eu.yaml": "prd-eu", "clusters/us/web-prd-us.yaml": "prd-us"}
	if stray {
		apps["other/web-stray.yaml"] = "prd-us"
	}
	files := map[string]string{".fleetwave.yaml": "apiVersion: fleetwave/v1\nwaves:\n  - name: canary\n    selector: {matchLabels: {env: test}}\n  - name: production\n    selector: {matchLabels: {env: prd}}\n"}
	for path, cluster := range apps {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		files[path] = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: " + name + ", namespace: argocd}\nspec:\n  project: default\n" +
			"  source: {repoURL: https://git.example.com/gitops.git, path: manifests/" + name + "}\n  destination: {name: " + cluster + ", namespace: web}\n"
		files["manifests/"+name+"/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {color: blue}\n"
	}
	changed := map[string]string{}
	for path := range apps {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		changed["manifests/"+name+"/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {color: green}\n"
	}
	return dir, commitChange(t, dir, files, changed)
}

// planApps are the apps of a plan's JSON (plan --output json), as wave/app@instance.
func planApps(t *testing.T, out string) (placed []string, unplaced []string) {
	t.Helper()
	var doc struct {
		Waves []struct {
			Name    string `json:"name"`
			Batches []struct {
				Apps []struct {
					Name, Instance string
				} `json:"apps"`
			} `json:"batches"`
		} `json:"waves"`
		Unplaced []struct {
			App, Instance, Reason string
		} `json:"unplaced"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not the JSON of plan: %v\n%s", err, out)
	}
	for _, w := range doc.Waves {
		for _, b := range w.Batches {
			for _, a := range b.Apps {
				placed = append(placed, w.Name+"/"+a.Name+"@"+a.Instance)
			}
		}
	}
	for _, u := range doc.Unplaced {
		unplaced = append(unplaced, u.App+": "+u.Reason)
	}
	return placed, unplaced
}

// TestPlanAcrossInstances: plan --argocd-instances makes one plan over the apps of both instances, each app
// with the instance whose rules own its file; an app no instance owns is a line naming it and the rules
// looked at, and the plan is not complete.
func TestPlanAcrossInstances(t *testing.T) {
	_, _, file, env := twoInstances(t)
	dir, _ := instancesRepo(t, false)
	var out outBuffer
	code, stderr := runArgo(t, context.Background(), env, &out, "plan", "--repo", dir, "--base", "main", "--head", "change",
		"--repo-url", "https://git.example.com/gitops.git", "--argocd-instances", file, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out.String())
	}
	placed, unplaced := planApps(t, out.String())
	want := "canary/web-test-eu@eu,production/web-prd-eu@eu,production/web-prd-us@us"
	if got := strings.Join(placed, ","); got != want || len(unplaced) != 0 {
		t.Errorf("plan: %s, unplaced %v\nwant %s", got, unplaced, want)
	}
	if strings.Contains(out.String()+stderr, "t0ken") {
		t.Error("a token was printed")
	}

	dir, _ = instancesRepo(t, true)
	out = outBuffer{}
	code, stderr = runArgo(t, context.Background(), env, &out, "plan", "--repo", dir, "--base", "main", "--head", "change",
		"--repo-url", "https://git.example.com/gitops.git", "--argocd-instances", file)
	// The app is not placed: its line names it and the rules looked at, and the plan is incomplete (exit 1).
	wantLine := "fleetwave: plan: app argocd/web-stray: app \"web-stray\" (manifests/web-stray): maps to no Argo CD instance (" +
		file + ": no rule of any instance matches path other/web-stray.yaml, no labels, project default, destination prd-us)\n"
	wantLast := "plan: the plan is incomplete: 1 app of the change held by no single Argo CD instance, so the plan does not place them"
	if code != 1 || !strings.Contains(stderr, wantLine) || !strings.HasSuffix(stderr, wantLast) ||
		!strings.Contains(out.String(), "incomplete: 1 app of the change could not be rendered") {
		t.Errorf("an app of no instance: exit %d, stderr:\n%s\nstdout:\n%s\nwant exit 1, the plan incomplete, a line %q and last %q", code, stderr, out.String(), wantLine, wantLast)
	}
}

// TestRolloutAcrossInstances: rollout --argocd-instances plans the change across both instances and syncs every
// app through its own instance exactly once (counted by each simulator), in wave order.
func TestRolloutAcrossInstances(t *testing.T) {
	eu, us, file, env := twoInstances(t)
	dir, head := instancesRepo(t, false)
	eu.SetRef("HEAD", head)
	us.SetRef("HEAD", head)
	db := filepath.Join(t.TempDir(), "r.db")
	var out outBuffer
	code, stderr := runArgo(t, context.Background(), env, &out, "rollout", "--argocd-instances", file, "--repo", dir, "--base", "main", "--head", "change",
		"--repo-url", "https://git.example.com/gitops.git", "--store", db, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out.String())
	}
	evs := jsonEvents(t, out.String())
	last := evs[len(evs)-1]
	if last.Event != "summary" || last.Summary == nil || last.Summary.State != "succeeded" || len(last.Summary.Synced) != 3 {
		t.Fatalf("summary %+v", last)
	}
	for sim, apps := range map[*argocdsim.Server][]string{eu: {"web-test-eu", "web-prd-eu"}, us: {"web-prd-us"}} {
		for _, a := range apps {
			if c := sim.Counts(a); c.SyncsAccepted != 1 {
				t.Errorf("%s: %d syncs accepted by its instance, want 1", a, c.SyncsAccepted)
			}
		}
	}
	// The canary (eu) ended before production started on either instance.
	canaryEnd := eu.Counts("web-test-eu").LastOpFinished
	for sim, a := range map[*argocdsim.Server]string{eu: "web-prd-eu", us: "web-prd-us"} {
		if acc := sim.Counts(a).LastSyncAccepted; acc.Before(canaryEnd) {
			t.Errorf("%s synced at %s, before the canary ended at %s", a, acc, canaryEnd)
		}
	}
	if strings.Contains(out.String()+stderr, "t0ken") {
		t.Error("a token was printed")
	}
}

// TestAppOfAppsChildrenTakeTheirRootsInstance: an instances file that names only each instance's app-of-apps root
// places every app the root applies, and every app of an ApplicationSet the root applies, on the root's instance,
// although each of them is also a file of its own that no rule names (Argo CD applies them in the root's
// instance). Before, each child was asked of the rules by its own file first and stayed "maps to no Argo CD
// instance". The rollout then syncs each app through its root's instance, once.
func TestAppOfAppsChildrenTakeTheirRootsInstance(t *testing.T) {
	eu, us, file, env := twoInstancesOwning(t, `[{paths: ["bootstrap/eu.yaml"]}]`, `[{paths: ["bootstrap/us.yaml"]}]`)
	dir := t.TempDir()
	const repoURL = "https://git.example.com/gitops.git"
	root := func(name, path string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: " + name + ", namespace: argocd}\nspec:\n  project: default\n" +
			"  source: {repoURL: " + repoURL + ", path: " + path + ", directory: {recurse: true}}\n  destination: {name: in-cluster, namespace: argocd}\n"
	}
	app := func(name, cluster string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: " + name + ", namespace: argocd}\nspec:\n  project: default\n" +
			"  source: {repoURL: " + repoURL + ", path: manifests/" + name + "}\n  destination: {name: " + cluster + ", namespace: web}\n"
	}
	cm := func(color string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {color: " + color + "}\n"
	}
	files := map[string]string{
		".fleetwave.yaml":            "apiVersion: fleetwave/v1\nwaves:\n  - name: canary\n    selector: {matchLabels: {env: test}}\n  - name: production\n    selector: {matchLabels: {env: prd}}\n",
		"bootstrap/eu.yaml":          root("root-eu", "apps-eu"),
		"bootstrap/us.yaml":          root("root-us", "apps-us"),
		"apps-eu/web-test-eu.yaml":   app("web-test-eu", "test-eu"),
		"apps-eu/nested/prd-eu.yaml": app("web-prd-eu", "prd-eu"),
		"apps-us/set.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: web-us, namespace: argocd}\nspec:\n" +
			"  generators: [{list: {elements: [{cluster: prd-us}]}}]\n  template:\n    metadata: {name: 'web-{{cluster}}'}\n" +
			"    spec: {project: default, source: {repoURL: " + repoURL + ", path: 'manifests/web-{{cluster}}'}, destination: {name: '{{cluster}}', namespace: web}}\n",
	}
	changed := map[string]string{}
	for _, n := range []string{"web-test-eu", "web-prd-eu", "web-prd-us"} {
		files["manifests/"+n+"/cm.yaml"], changed["manifests/"+n+"/cm.yaml"] = cm("blue"), cm("green")
	}
	head := commitChange(t, dir, files, changed)

	var out outBuffer
	code, stderr := runArgo(t, context.Background(), env, &out, "plan", "--repo", dir, "--base", "main", "--head", "change",
		"--repo-url", repoURL, "--argocd-instances", file, "-o", "json")
	placed, unplaced := planApps(t, out.String())
	want := "canary/web-test-eu@eu,production/web-prd-eu@eu,production/web-prd-us@us"
	if got := strings.Join(placed, ","); code != 0 || got != want || len(unplaced) != 0 {
		t.Fatalf("plan: exit %d, %s, unplaced %v\nwant %s\n%s", code, got, unplaced, want, stderr)
	}

	eu.SetRef("HEAD", head)
	us.SetRef("HEAD", head)
	out = outBuffer{}
	code, stderr = runArgo(t, context.Background(), env, &out, "rollout", "--argocd-instances", file, "--repo", dir, "--base", "main", "--head", "change",
		"--repo-url", repoURL, "--store", filepath.Join(t.TempDir(), "r.db"), "-o", "json")
	if code != 0 {
		t.Fatalf("rollout: exit %d: %s\n%s", code, stderr, out.String())
	}
	for sim, apps := range map[*argocdsim.Server][]string{eu: {"web-test-eu", "web-prd-eu"}, us: {"web-prd-us"}} {
		for _, a := range apps {
			if c := sim.Counts(a); c.SyncsAccepted != 1 {
				t.Errorf("%s: %d syncs accepted by its instance, want 1", a, c.SyncsAccepted)
			}
		}
	}
}

// TestAgentInstanceRequestsALostSyncAgain: an instance marked agent: true (an argocd-agent principal) that accepts a
// sync and drops it before it starts (argocd-agent #841) gets it requested again; the app syncs exactly once. The
// same drop on an instance not marked agent fails the app (no re-request: TestLostSyncRetriesAreOffByDefault).
func TestAgentInstanceRequestsALostSyncAgain(t *testing.T) {
	eu, us, file, env := twoInstances(t)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(strings.Replace(string(data), "  - name: us\n", "  - name: us\n    agent: true\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	dir, head := instancesRepo(t, false)
	eu.SetRef("HEAD", head)
	us.SetRef("HEAD", head)
	us.DropSyncs("web-prd-us", 1)
	var out outBuffer
	code, stderr := runArgo(t, context.Background(), env, &out, "rollout", "--argocd-instances", file, "--repo", dir, "--base", "main", "--head", "change",
		"--repo-url", "https://git.example.com/gitops.git", "--store", filepath.Join(t.TempDir(), "r.db"), "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out.String())
	}
	c := us.Counts("web-prd-us")
	if c.SyncsDropped != 1 || c.SyncsAccepted != 1 {
		t.Errorf("web-prd-us on the agent instance: %d syncs dropped, %d run; want 1 dropped, then 1 run", c.SyncsDropped, c.SyncsAccepted)
	}
}

// TestAgentInstanceRendersAsItsAgents: an argocd-agent principal's apps render with the agents' namespace and
// mapping from the instances file (the tracking id the agents' Argo CD computes), the other instance's without.
func TestAgentInstanceRendersAsItsAgents(t *testing.T) {
	cfg := argocdsim.Config{SyncDuration: 100 * time.Millisecond, ReconcileDelay: 10 * time.Millisecond}
	_, euURL := newRolloutSim(t, cfg, nil, nil)
	_, edgeURL := newRolloutSim(t, cfg, nil, nil)
	file := writeInstances(t, fmt.Sprintf(`instances:
  - name: eu
    url: %s
    token: {env: ARGOCD_TOKEN}
    owns: [{paths: ["clusters/eu/**"]}]
  - name: edge
    url: %s
    token: {env: ARGOCD_TOKEN}
    agent: true
    agentNamespace: agents
    agentDestinationMapping: true
    owns: [{paths: ["edge/**"]}]
`, euURL, edgeURL))
	set, err := loadInstances(&Deps{Getenv: func(k string) string { return map[string]string{"ARGOCD_TOKEN": "t0ken"}[k] }}, file, "")
	if err != nil {
		t.Fatal(err)
	}
	fl, err := newFleet(set, nil)
	if err != nil {
		t.Fatal(err)
	}
	insts, err := fl.previewInstances(context.Background(), previewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := insts["edge"].Settings; s == nil || s.AgentNamespace != "agents" || !s.AgentDestinationMapping {
		t.Errorf("edge renders with %+v, want the agents' namespace and mapping", s)
	}
	if s := insts["eu"].Settings; s == nil || s.AgentNamespace != "" || s.AgentDestinationMapping {
		t.Errorf("eu renders with %+v, want no agent settings", s)
	}
	app := &v1alpha1.Application{}
	app.Name, app.Namespace = "web", "edge-eu-1"
	if got := insts["edge"].Settings.InstanceName(app); got != "edge-eu-1_web" {
		t.Errorf("tracking name under destination-based mapping %q, want edge-eu-1_web", got)
	}
}
