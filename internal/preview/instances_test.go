package preview

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetwave/fleetwave/internal/discover"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/report"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

// instanceApp is an Application of the fleet below, rendering the local chart charts/hv (or a plugin).
func instanceApp(name, source string) string {
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s, namespace: argocd}
spec:
  project: default
  source: {repoURL: 'https://github.com/example/fleet.git', targetRevision: HEAD, %s}
  destination: {server: 'https://kubernetes.default.svc', namespace: %s}
`, name, source, name)
}

// instancesRepo is a fleet whose head adds an app per Argo CD instance (apps/eu, apps/us: a chart that writes the
// Helm version it is rendered with; a plugin app in each), and one app outside both (apps/stray.yaml); the base
// holds a live-generated ApplicationSet under apps/us.
func instancesRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fleet")
	write(t, dir, map[string]string{
		"charts/hv/Chart.yaml":        "apiVersion: v2\nname: hv\nversion: 0.1.0\n",
		"charts/hv/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: hv}\ndata: {helm: {{ .Capabilities.HelmVersion.Version | quote }}, kube: {{ .Capabilities.KubeVersion.Version | quote }}}\n",
		"apps/us/generated.yaml": `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: previews, namespace: argocd}
spec:
  generators: [{plugin: {configMapRef: {name: p}}}]
  template:
    metadata: {name: 'gen-{{name}}'}
    spec:
      project: default
      source: {repoURL: 'https://github.com/example/fleet.git', targetRevision: HEAD, path: charts/hv}
      destination: {server: 'https://kubernetes.default.svc', namespace: gen}
`,
	})
	gittest.Run(t, dir, "init", "-q", "-b", "main")
	gittest.Run(t, dir, "remote", "add", "origin", "https://github.com/example/fleet.git")
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "base")
	gittest.Run(t, dir, "checkout", "-q", "-b", "change")
	write(t, dir, map[string]string{
		"apps/eu/web.yaml":    instanceApp("web-eu", "path: charts/hv"),
		"apps/us/web.yaml":    instanceApp("web-us", "path: charts/hv"),
		"apps/eu/plugin.yaml": instanceApp("cmp-eu", "path: charts/hv, plugin: {name: sops}"),
		"apps/us/plugin.yaml": instanceApp("cmp-us", "path: charts/hv, plugin: {name: sops}"),
		"apps/stray.yaml":     instanceApp("stray", "path: charts/hv"),
	})
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "add apps")
	return dir
}

// byPath maps an app to an instance by the directory of its file (apps/<instance>/...).
func byPath(a discover.App) (string, error) {
	switch {
	case strings.HasPrefix(a.File, "apps/eu/"):
		return "eu", nil
	case strings.HasPrefix(a.File, "apps/us/"):
		return "us", nil
	}
	return "", fmt.Errorf("maps to no Argo CD instance (%s matches no instance's paths)", a.File)
}

// instanceArgoCD plays every port of one Argo CD instance and records which apps each was asked about.
type instanceArgoCD struct {
	name                       string
	mu                         sync.Mutex
	live                       map[string][]*unstructured.Unstructured // app name → head render compared
	remote, generated, windows []string
}

func (i *instanceArgoCD) CompareLive(_ context.Context, apps []LiveApp) ([]*report.Live, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	for _, a := range apps {
		i.live[a.App.Name] = a.Head
	}
	return make([]*report.Live, len(apps)), nil
}

func (i *instanceArgoCD) RenderRemote(_ context.Context, app *v1alpha1.Application, _ []string, _ []string) (*RemoteRender, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.remote = append(i.remote, app.Name)
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "rendered-by-" + i.name}}}
	return &RemoteRender{Objects: []*unstructured.Unstructured{cm}}, nil
}

func (i *instanceArgoCD) GenerateApplicationSet(_ context.Context, set *v1alpha1.ApplicationSet) ([]v1alpha1.Application, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.generated = append(i.generated, set.Name)
	return nil, nil
}

func (i *instanceArgoCD) ProjectSyncWindows(_ context.Context, project string) (ProjectWindows, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.windows = append(i.windows, project)
	return nil, errors.New("no windows read in this test")
}

func (i *instanceArgoCD) ports() ArgoCD {
	return ArgoCD{Live: i, Remote: i, AppSets: i, Windows: i}
}

// TestEveryAppKnowsItsInstance: with an instance resolver, each app is held by its instance — in the report, the
// plan, and the Argo CD it is compared with, rendered by, generated by and whose sync windows it reads — and an
// app that maps to no instance is an error line and an unplaced app of the plan with the resolver's reason, never
// rendered; the instance "" (today's single Argo CD) is asked nothing.
func TestEveryAppKnowsItsInstance(t *testing.T) {
	dir := instancesRepo(t)
	eu := &instanceArgoCD{name: "eu", live: map[string][]*unstructured.Unstructured{}}
	us := &instanceArgoCD{name: "us", live: map[string][]*unstructured.Unstructured{}}
	single := &instanceArgoCD{name: "", live: map[string][]*unstructured.Unstructured{}}
	res, err := Run(context.Background(), render.New(render.Options{}), Input{RepoDir: dir, Base: "main", Head: "change", Plan: true,
		ArgoCD: single.ports(), InstanceOf: byPath,
		Instances: map[string]Instance{"eu": {ArgoCD: eu.ports()}, "us": {ArgoCD: us.ports()}}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"web-eu": "eu", "cmp-eu": "eu", "web-us": "us", "cmp-us": "us", "stray": ""}
	for _, a := range res.Report.Apps {
		inst, ok := want[a.Name]
		if !ok {
			t.Errorf("unexpected app %s in the report", a.Name)
			continue
		}
		if a.Instance != inst {
			t.Errorf("%s: instance %q, want %q", a.Name, a.Instance, inst)
		}
		if a.Name == "stray" {
			if a.Status != report.StatusError || !strings.Contains(a.Error, `app "stray" (charts/hv): maps to no Argo CD instance (apps/stray.yaml matches no instance's paths)`) {
				t.Errorf("stray: status %s, error %q; want an error with the resolver's reason", a.Status, a.Error)
			}
		} else if a.Status != report.StatusAdded {
			t.Errorf("%s: status %s (%s), want added", a.Name, a.Status, a.Error)
		}
	}
	for who, got := range map[string][]string{"eu": slices.Sorted(maps.Keys(eu.live)), "us": slices.Sorted(maps.Keys(us.live)), "": slices.Sorted(maps.Keys(single.live))} {
		wantLive := map[string][]string{"eu": {"cmp-eu", "web-eu"}, "us": {"cmp-us", "web-us"}, "": nil}[who]
		if !slices.Equal(got, wantLive) {
			t.Errorf("instance %q compared %v live, want %v", who, got, wantLive)
		}
	}
	if !slices.Equal(eu.remote, []string{"cmp-eu"}) || !slices.Equal(us.remote, []string{"cmp-us"}) || len(single.remote) > 0 {
		t.Errorf("remote renders: eu %v, us %v, single %v; want each plugin app by its own instance", eu.remote, us.remote, single.remote)
	}
	if objs := eu.live["cmp-eu"]; len(objs) != 1 || objs[0].GetName() != "rendered-by-eu" {
		t.Errorf("cmp-eu rendered as %v, want eu's remote render", objs)
	}
	if len(us.generated) == 0 || len(eu.generated) > 0 || len(single.generated) > 0 {
		t.Errorf("ApplicationSet generated by eu %v, us %v, single %v; want us alone", eu.generated, us.generated, single.generated)
	}
	if len(eu.windows) == 0 || len(us.windows) == 0 || len(single.windows) > 0 {
		t.Errorf("sync windows read from eu %v, us %v, single %v; want eu and us", eu.windows, us.windows, single.windows)
	}
	pl := res.Plan
	if pl == nil {
		t.Fatal("no plan")
	}
	if pl.Complete() {
		t.Error("the plan is complete with an app that maps to no instance")
	}
	var unplaced []string
	for _, u := range pl.Unplaced {
		unplaced = append(unplaced, u.App+": "+u.Reason)
	}
	if len(unplaced) != 1 || !strings.HasPrefix(unplaced[0], "stray: ") || !strings.Contains(unplaced[0], "matches no instance's paths") {
		t.Errorf("unplaced %q, want stray with the resolver's reason", unplaced)
	}
	placed := map[string]string{}
	for _, w := range pl.Waves {
		for _, b := range w.Batches {
			for _, a := range b.Apps {
				placed[a.Name] = a.Instance
			}
		}
	}
	for name, inst := range want {
		if got, ok := placed[name]; name != "stray" && (!ok || got != inst) {
			t.Errorf("plan: %s placed %v with instance %q, want %q", name, ok, got, inst)
		}
	}
}

// TestRenderedAsItsOwnInstanceRendersIt: the same Application under two instances at different Argo CD versions
// renders as each does — Helm 3 under Argo CD 3.4, Helm 4 from 3.5 (internal/render/target Helm4) — for each
// instance's own cluster version, and the instance whose installation ID is set stamps it on what it tracks.
func TestRenderedAsItsOwnInstanceRendersIt(t *testing.T) {
	dir := instancesRepo(t)
	eu := &instanceArgoCD{name: "eu", live: map[string][]*unstructured.Unstructured{}}
	us := &instanceArgoCD{name: "us", live: map[string][]*unstructured.Unstructured{}}
	inCluster := func(v string) []discover.Cluster {
		return []discover.Cluster{{Name: "in-cluster", Server: discover.InClusterServer, KubeVersion: v}}
	}
	_, err := Run(context.Background(), render.New(render.Options{}), Input{RepoDir: dir, Base: "main", Head: "change",
		InstanceOf: byPath, Instances: map[string]Instance{
			"eu": {ArgoCD: ArgoCD{Live: eu}, Settings: &render.Settings{ArgoCDVersion: "3.4", InstallationID: "argocd-eu"}, Clusters: inCluster("v1.29.4")},
			"us": {ArgoCD: ArgoCD{Live: us}, Settings: &render.Settings{ArgoCDVersion: "3.6"}, Clusters: inCluster("v1.31.2")},
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		inst                   *instanceArgoCD
		app, helm, kube, stamp string
	}{
		{eu, "web-eu", "v3.", "v1.29.4", "argocd-eu"},
		{us, "web-us", "v4.", "v1.31.2", ""},
	} {
		objs := tc.inst.live[tc.app]
		if len(objs) != 1 {
			t.Fatalf("%s: %d objects compared, want the chart's ConfigMap", tc.app, len(objs))
		}
		data, _, _ := unstructured.NestedStringMap(objs[0].Object, "data")
		if !strings.HasPrefix(data["helm"], tc.helm) || data["kube"] != tc.kube {
			t.Errorf("%s: rendered with Helm %q for Kubernetes %q, want %s… for %s", tc.app, data["helm"], data["kube"], tc.helm, tc.kube)
		}
		if got := objs[0].GetAnnotations()["argocd.argoproj.io/installation-id"]; got != tc.stamp {
			t.Errorf("%s: installation ID %q, want %q", tc.app, got, tc.stamp)
		}
	}
}

// TestDestinationOutsideItsInstance: an app whose destination is not among its own instance's clusters is refused
// by the plan, saying which instance, even when the fleet-wide cluster list is empty.
func TestDestinationOutsideItsInstance(t *testing.T) {
	dir := instancesRepo(t)
	// far (held by us) deploys to eu's cluster prd-eu-1.
	write(t, dir, map[string]string{"apps/us/far.yaml": strings.Replace(instanceApp("far", "path: charts/hv"),
		"https://kubernetes.default.svc", "https://prd-eu-1.example.com", 1)})
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "far")
	res, err := Run(context.Background(), render.New(render.Options{}), Input{RepoDir: dir, Base: "main", Head: "change", Plan: true,
		InstanceOf: byPath, Instances: map[string]Instance{
			"eu": {Clusters: []discover.Cluster{{Name: "prd-eu-1", Server: "https://prd-eu-1.example.com"}, {Name: "in-cluster", Server: discover.InClusterServer}}},
			"us": {Clusters: []discover.Cluster{{Name: "prd-us-1", Server: "https://prd-us-1.example.com"}}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, v := range res.Plan.Violations {
		if v.Rule == plan.RuleDestination {
			msgs = append(msgs, v.Message)
		}
	}
	want := []string{"app argocd/far: destination server https://prd-eu-1.example.com is not a cluster of Argo CD instance us: Argo CD refuses to sync it"}
	slices.Sort(msgs)
	if !slices.Equal(msgs, want) {
		t.Errorf("destination violations:\n%s\nwant\n%s", strings.Join(msgs, "\n"), strings.Join(want, "\n"))
	}
}

// downLive is an instance whose live state cannot be read.
type downLive struct{}

func (downLive) CompareLive(context.Context, []LiveApp) ([]*report.Live, error) {
	return nil, errors.New("dial tcp 10.0.0.1:443: connection refused")
}

// TestOneInstanceDownLeavesTheOthersCompared: an instance that cannot be read leaves only its apps without the
// live state, with a note naming it; the other instance's apps are compared.
func TestOneInstanceDownLeavesTheOthersCompared(t *testing.T) {
	dir := instancesRepo(t)
	us := &instanceArgoCD{name: "us", live: map[string][]*unstructured.Unstructured{}}
	res, err := Run(context.Background(), render.New(render.Options{}), Input{RepoDir: dir, Base: "main", Head: "change",
		InstanceOf: byPath, Instances: map[string]Instance{"eu": {ArgoCD: ArgoCD{Live: downLive{}}}, "us": {ArgoCD: ArgoCD{Live: us}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := us.live["web-us"]; !ok {
		t.Errorf("us compared %v, want web-us among them", slices.Sorted(maps.Keys(us.live)))
	}
	want := "live state not compared on Argo CD instance eu: dial tcp 10.0.0.1:443: connection refused"
	if !slices.Contains(res.Report.Notes, want) {
		t.Errorf("notes %q, want %q", res.Report.Notes, want)
	}
}

// TestChildRenderedAsItsParentsInstance: an app whose own file a rule gives to us, applied by an app-of-apps root
// held by eu, is held by eu (Argo CD applies it there): rendered with eu's Argo CD release and cluster, compared
// with eu's live state only, although discovery met it first as a file of us and rendered it so.
func TestChildRenderedAsItsParentsInstance(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fleet")
	write(t, dir, map[string]string{
		"charts/hv/Chart.yaml":        "apiVersion: v2\nname: hv\nversion: 0.1.0\n",
		"charts/hv/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: hv}\ndata: {helm: {{ .Capabilities.HelmVersion.Version | quote }}, kube: {{ .Capabilities.KubeVersion.Version | quote }}}\n",
		"root.yaml":                   instanceApp("root", "path: apps/us, directory: {recurse: true}"),
	})
	gittest.Run(t, dir, "init", "-q", "-b", "main")
	gittest.Run(t, dir, "remote", "add", "origin", "https://github.com/example/fleet.git")
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "base")
	gittest.Run(t, dir, "checkout", "-q", "-b", "change")
	write(t, dir, map[string]string{"apps/us/web.yaml": instanceApp("web-us", "path: charts/hv")})
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "add an app")

	eu := &instanceArgoCD{name: "eu", live: map[string][]*unstructured.Unstructured{}}
	us := &instanceArgoCD{name: "us", live: map[string][]*unstructured.Unstructured{}}
	inCluster := func(v string) []discover.Cluster {
		return []discover.Cluster{{Name: "in-cluster", Server: discover.InClusterServer, KubeVersion: v}}
	}
	rootOnEU := func(a discover.App) (string, error) {
		if a.File == "root.yaml" {
			return "eu", nil
		}
		return byPath(a)
	}
	res, err := Run(context.Background(), render.New(render.Options{}), Input{RepoDir: dir, Base: "main", Head: "change",
		InstanceOf: rootOnEU, Instances: map[string]Instance{
			"eu": {ArgoCD: ArgoCD{Live: eu}, Settings: &render.Settings{ArgoCDVersion: "3.4"}, Clusters: inCluster("v1.29.4")},
			"us": {ArgoCD: ArgoCD{Live: us}, Settings: &render.Settings{ArgoCDVersion: "3.6"}, Clusters: inCluster("v1.31.2")},
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range res.Report.Apps {
		if a.Name == "web-us" && (a.Instance != "eu" || a.Parent != "argocd/root") {
			t.Errorf("web-us: instance %q, parent %q; want eu, argocd/root", a.Instance, a.Parent)
		}
	}
	if len(us.live["web-us"]) != 0 {
		t.Errorf("web-us compared with us's live state")
	}
	objs := eu.live["web-us"]
	if len(objs) != 1 {
		t.Fatalf("web-us: %d objects compared with eu, want the chart's ConfigMap", len(objs))
	}
	data, _, _ := unstructured.NestedStringMap(objs[0].Object, "data")
	if !strings.HasPrefix(data["helm"], "v3.") || data["kube"] != "v1.29.4" {
		t.Errorf("web-us: rendered with Helm %q for Kubernetes %q, want eu's v3… for v1.29.4", data["helm"], data["kube"])
	}
}
