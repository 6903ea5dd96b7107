package renderall

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"weak"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
	"github.com/fleetwave/fleetwave/internal/testkit/fleetgen"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

const repoURL = "https://github.com/example/fleet.git"

// Beside fleetgen's apps: an app-of-apps whose chart renders one child Application (found only by rendering the
// parent: discovery skips chart directories) and a second one, dup, that also has a file of its own with another
// path (the parent's is what Argo CD applies); and an app whose path does not exist.
var extra = map[string]string{
	"charts/root/Chart.yaml": "apiVersion: v2\nname: root\nversion: 1.0.0\n",
	"charts/root/templates/child.yaml": `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: child, namespace: argocd}
spec:
  project: default
  source: {repoURL: ` + repoURL + `, targetRevision: main, path: kustomize/base/gateway}
  destination: {server: https://kubernetes.default.svc, namespace: child}
`,
	"charts/root/templates/dup.yaml": `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: dup, namespace: argocd}
spec:
  project: default
  source: {repoURL: ` + repoURL + `, targetRevision: main, path: kustomize/base/auth}
  destination: {server: https://kubernetes.default.svc, namespace: dup}
`,
	"apps/dup.yaml": `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: dup, namespace: argocd}
spec:
  project: default
  source: {repoURL: ` + repoURL + `, targetRevision: main, path: kustomize/base/search}
  destination: {server: https://kubernetes.default.svc, namespace: dup}
`,
	"apps/root.yaml": `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: root, namespace: argocd}
spec:
  project: default
  source: {repoURL: ` + repoURL + `, targetRevision: main, path: charts/root}
  destination: {server: https://kubernetes.default.svc, namespace: argocd}
`,
	"apps/broken.yaml": `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: broken, namespace: argocd}
spec:
  project: default
  source: {repoURL: ` + repoURL + `, targetRevision: main, path: does/not/exist}
  destination: {server: https://kubernetes.default.svc, namespace: broken}
`,
}

// fleet commits a fleetgen fleet of clusters × 10 apps, with extra, on main.
func fleet(t *testing.T, clusters int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fleet")
	if err := fleetgen.Write(dir, repoURL, clusters); err != nil {
		t.Fatal(err)
	}
	for p, c := range extra {
		filetest.Write(t, dir, p, c)
	}
	gittest.Run(t, dir, "init", "-q", "-b", "main")
	gittest.Run(t, dir, "remote", "add", "origin", repoURL)
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "fleet")
	return dir
}

// Every app is handed over once with its own render, the child of the app-of-apps too, but dup: its file's render,
// then the parent's, marked Again; the app that fails is one result among the others, which all render; the
// counts follow the stream.
func TestEveryAppStreamed(t *testing.T) {
	const clusters = 3
	dir := fleet(t, clusters)
	var mu sync.Mutex
	got := map[string]Result{}
	maxDone := 0
	sum, err := Run(context.Background(), render.New(render.Options{}), Input{RepoDir: dir, Revision: "main", Concurrency: 2}, func(r Result) error {
		mu.Lock()
		defer mu.Unlock()
		if prev, twice := got[r.App.Key]; twice != r.Again {
			t.Errorf("%s: handed over before: %v, again: %v", r.App.Key, twice, r.Again)
		} else if twice && (r.App.Key != "argocd/dup" || prev.App.Parent != "" || r.App.Parent != "argocd/root") {
			t.Errorf("%s handed over twice (parents %q, %q)", r.App.Key, prev.App.Parent, r.App.Parent)
		}
		got[r.App.Key] = r
		if r.Done < maxDone || r.Done == maxDone && !r.Again || r.Known < r.Done {
			t.Errorf("%s: done %d after %d, known %d", r.App.Key, r.Done, maxDone, r.Known)
		}
		maxDone = r.Done
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := clusters*fleetgen.AppsPerCluster + 4 // root, child, dup, broken
	if len(got) != want || sum.Apps != want || sum.Rendered != want-1 || sum.Failed != 1 || sum.Skipped != 0 || sum.OK() {
		t.Fatalf("%d results; summary %+v; want %d apps, 1 failed", len(got), sum, want)
	}
	if len(sum.Commit) != 40 {
		t.Errorf("commit %q", sum.Commit)
	}
	for key, r := range got {
		switch key {
		case "argocd/broken":
			if r.Status != Failed || r.Err == nil || !strings.Contains(r.Err.Error(), "does/not/exist") || r.Objects != nil {
				t.Errorf("broken: %s %v, %d objects", r.Status, r.Err, len(r.Objects))
			}
			continue
		case "argocd/child":
			if r.App.Parent != "argocd/root" {
				t.Errorf("child: parent %q", r.App.Parent)
			}
		case "argocd/dup":
			// The last result is the parent's Application: kustomize/base/auth, not the file's search.
			if !r.Again || len(r.Objects) == 0 || !strings.HasPrefix(r.Objects[0].GetName(), "auth") {
				t.Errorf("dup: again %v, first object %v", r.Again, r.Objects)
			}
		}
		if r.Status != Rendered || r.Err != nil || len(r.Objects) == 0 {
			t.Errorf("%s: %s %v, %d objects", key, r.Status, r.Err, len(r.Objects))
			continue
		}
		// Each render is the app's own: Argo CD's tracking id names it on every object.
		for _, o := range r.Objects {
			if id := o.GetAnnotations()["argocd.argoproj.io/tracking-id"]; !strings.HasPrefix(id, r.App.App.Name+":") {
				t.Errorf("%s: object %s has tracking id %q", key, o.GetName(), id)
			}
		}
	}
	if c := got["argocd/c-0001-web"]; len(c.Objects) != 3 {
		t.Errorf("c-0001-web: %d objects, want the chart's 3", len(c.Objects))
	}
}

// The renders are not held: when an app's result is handed over, the renders handed over before it are garbage
// but for those still in flight and the argoproj.io objects app-of-apps reads. Weak pointers to each result's
// objects tell which are still reachable after a collection.
func TestRendersAreNotHeld(t *testing.T) {
	const clusters, conc = 4, 2
	dir := fleet(t, clusters)
	var mu sync.Mutex
	var handed []weak.Pointer[unstructured.Unstructured]
	worst := 0
	_, err := Run(context.Background(), render.New(render.Options{}), Input{RepoDir: dir, Revision: "main", Concurrency: conc}, func(r Result) error {
		mu.Lock()
		defer mu.Unlock()
		for _, o := range r.Objects {
			if o.GroupVersionKind().Group != "argoproj.io" {
				handed = append(handed, weak.Make(o))
			}
		}
		if r.Done%10 != 0 {
			return nil
		}
		runtime.GC()
		alive := 0
		for _, w := range handed {
			if w.Value() != nil {
				alive++
			}
		}
		// This result's objects (the sink holds them) and, at most, those of the renders in flight.
		worst = max(worst, alive-len(r.Objects))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(handed) < 100 {
		t.Fatalf("only %d objects handed over", len(handed))
	}
	// A render in flight holds at most one app's objects (fleetgen's apps have at most 4).
	if worst > conc*4 {
		t.Fatalf("up to %d objects of earlier results still reachable, over %d", worst, conc*4)
	}
	t.Logf("%d objects handed over; at most %d of earlier results reachable at a time", len(handed), worst)
}

// An error of the sink (the output cannot be written) ends the run with that error.
func TestSinkErrorStops(t *testing.T) {
	dir := fleet(t, 2)
	boom := errors.New("disk full")
	var mu sync.Mutex
	calls := 0
	_, err := Run(context.Background(), render.New(render.Options{}), Input{RepoDir: dir, Concurrency: 2}, func(Result) error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the sink's", err)
	}
	if calls > 2 {
		t.Fatalf("the sink was called %d times after failing", calls)
	}
}

// A revision that does not exist is an error, not an empty fleet.
func TestUnknownRevision(t *testing.T) {
	dir := fleet(t, 1)
	_, err := Run(context.Background(), render.New(render.Options{}), Input{RepoDir: dir, Revision: "nope"}, func(Result) error { return nil })
	if err == nil {
		t.Fatal("no error for an unknown revision")
	}
}
