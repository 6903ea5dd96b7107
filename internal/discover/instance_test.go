package discover

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
)

// TestClusterGeneratorListsItsInstancesClusters: an ApplicationSet's cluster generator lists the clusters of the
// instance that holds the set, not another instance's.
func TestClusterGeneratorListsItsInstancesClusters(t *testing.T) {
	files := map[string]string{"us/set.yaml": `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: everywhere, namespace: argocd}
spec:
  generators: [{clusters: {}}]
  template:
    metadata: {name: 'web-{{name}}'}
    spec: {project: default, source: {repoURL: '` + repoURL + `', path: x}, destination: {server: '{{server}}', namespace: x}}
`}
	inv := Discover(Options{Root: filetest.Tree(t, files), IsThisRepo: thisRepo,
		Instance: func(App) (string, error) { return "us", nil },
		InstanceClusters: map[string][]Cluster{
			"eu": {{Name: "prd-eu-1", Server: "https://prd-eu-1.example.com"}},
			"us": {{Name: "prd-us-1", Server: "https://prd-us-1.example.com"}, {Name: "prd-us-2", Server: "https://prd-us-2.example.com"}},
		}})
	var got []string
	for _, a := range inv.Apps() {
		got = append(got, a.Key+"@"+a.Instance+"/"+a.Cluster.Name)
	}
	// Argo CD adds its own in-cluster when no Secret declares it (each instance its own).
	want := []string{"argocd/web-in-cluster@us/in-cluster", "argocd/web-prd-us-1@us/prd-us-1", "argocd/web-prd-us-2@us/prd-us-2"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("apps %v, want %v (problems %v)", got, want, inv.Problems)
	}
}

// TestAppsKnowTheirInstance: with Options.Instance, a file's app is held by the instance the resolver names, an
// ApplicationSet's apps by the set's instance (whatever their own labels), and an app the resolver places nowhere
// carries the resolver's reason; an instance with its own cluster list resolves its apps' destinations there
// (both instances call a cluster "in-cluster", with different Kubernetes versions).
func TestAppsKnowTheirInstance(t *testing.T) {
	app := func(name, dest string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: " + name + ", namespace: argocd}\n" +
			"spec: {project: default, source: {repoURL: '" + repoURL + "', path: x}, destination: {name: " + dest + ", namespace: x}}\n"
	}
	files := map[string]string{
		"eu/web.yaml": app("web-eu", "in-cluster"),
		"us/web.yaml": app("web-us", "in-cluster"),
		"stray.yaml":  app("stray", "in-cluster"),
		"us/set.yaml": `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: fan, namespace: argocd}
spec:
  generators: [{list: {elements: [{suffix: a}, {suffix: b}]}}]
  template:
    metadata: {name: 'fan-{{suffix}}', labels: {owner: eu}}
    spec: {project: default, source: {repoURL: '` + repoURL + `', path: x}, destination: {name: in-cluster, namespace: x}}
`,
	}
	resolve := func(a App) (string, error) {
		if i := strings.Index(a.File, "/"); i > 0 {
			return a.File[:i], nil
		}
		return "", errors.New("maps to no Argo CD instance (" + a.File + " is in no instance's directory)")
	}
	inv := Discover(Options{Root: filetest.Tree(t, files), IsThisRepo: thisRepo, Instance: resolve, InstanceClusters: map[string][]Cluster{
		"eu": {{Name: "in-cluster", Server: InClusterServer, KubeVersion: "v1.29.0"}},
		"us": {{Name: "in-cluster", Server: InClusterServer, KubeVersion: "v1.31.0"}},
	}})
	want := map[string]struct{ instance, kube, err string }{
		"argocd/web-eu": {"eu", "v1.29.0", ""}, "argocd/web-us": {"us", "v1.31.0", ""},
		"argocd/fan-a": {"us", "v1.31.0", ""}, "argocd/fan-b": {"us", "v1.31.0", ""},
		"argocd/stray": {"", "", "maps to no Argo CD instance (stray.yaml is in no instance's directory)"},
	}
	apps := inv.Apps()
	if len(apps) != len(want) {
		t.Fatalf("%d apps, want %d (problems %v)", len(apps), len(want), inv.Problems)
	}
	for _, a := range apps {
		w := want[a.Key]
		var gotErr string
		if a.InstanceErr != nil {
			gotErr = a.InstanceErr.Error()
		}
		if a.Instance != w.instance || gotErr != w.err || a.Cluster.KubeVersion != w.kube {
			t.Errorf("%s: instance %q (%q), cluster version %q; want %q (%q), %q", a.Key, a.Instance, gotErr, a.Cluster.KubeVersion, w.instance, w.err, w.kube)
		}
	}
}

// TestChildrenTakeTheirParentsInstance: the rules name only the app-of-apps root's file; its child Application and
// ApplicationSet are files of their own too, which no rule names. Found first as files they have no instance;
// once the root's manifests declare them they are placed on the root's instance (Argo CD applies them there),
// the set generates over that instance's clusters, and what it had generated over the repository's clusters
// alone (prd-eu-1, not a cluster of us) is gone. A rule naming the child's own file for another instance does not
// win over the parent either.
func TestChildrenTakeTheirParentsInstance(t *testing.T) {
	set := `{apiVersion: argoproj.io/v1alpha1, kind: ApplicationSet, metadata: {name: fan, namespace: argocd},
		spec: {generators: [{clusters: {}}], template: {metadata: {name: 'fan-{{name}}'}, spec: {project: default, source: {repoURL: ` + repoURL + `, path: x}, destination: {server: '{{server}}', namespace: x}}}}}`
	files := map[string]string{
		"root.yaml":       appDoc("root", "argocd", "apps"),
		"apps/child.yaml": appDoc("child", "argocd", "child"),
		"apps/other.yaml": appDoc("other", "argocd", "other"),
		"apps/set.yaml":   set,
	}
	resolve := func(a App) (string, error) {
		switch a.File {
		case "root.yaml":
			return "us", nil
		case "apps/other.yaml":
			return "eu", nil // the parent's instance applies it all the same
		}
		return "", errors.New("maps to no Argo CD instance (" + a.File + ")")
	}
	inv := Discover(Options{Root: filetest.Tree(t, files), IsThisRepo: thisRepo, Instance: resolve,
		Clusters: []Cluster{{Name: "prd-eu-1", Server: "https://prd-eu-1.example.com"}},
		InstanceClusters: map[string][]Cluster{
			"eu": {{Name: "prd-eu-1", Server: "https://prd-eu-1.example.com"}},
			"us": {{Name: "prd-us-1", Server: "https://prd-us-1.example.com"}},
		}})
	f := &fakeRender{calls: map[string]int{}, objs: map[string][]string{
		"argocd/root":           {appDoc("child", "argocd", "child"), appDoc("other", "argocd", "other"), set},
		"argocd/child":          {},
		"argocd/other":          {},
		"argocd/fan-in-cluster": {},
		"argocd/fan-prd-us-1":   {},
		"argocd/fan-prd-eu-1":   {},
	}}
	inv.Expand(context.Background(), f.render, 2)
	if p := problems(inv); p != "" {
		t.Fatalf("problems: %s", p)
	}
	var got []string
	for _, a := range inv.Apps() {
		s := a.Key + "@" + a.Instance + "/" + a.Cluster.Name
		if a.InstanceErr != nil {
			s += " (" + a.InstanceErr.Error() + ")"
		}
		got = append(got, s)
	}
	want := []string{"argocd/child@us/in-cluster", "argocd/fan-in-cluster@us/in-cluster", "argocd/fan-prd-us-1@us/prd-us-1",
		"argocd/other@us/in-cluster", "argocd/root@us/in-cluster"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("apps:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
