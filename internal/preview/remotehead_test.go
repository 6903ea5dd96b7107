package preview

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/report"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

// remoteLive is a LiveComparer and RemoteRenderer that records the revisions it is asked to render at.
type remoteLive struct {
	mu        sync.Mutex
	revisions []string
	repoURLs  []string
}

func (r *remoteLive) CompareLive(_ context.Context, apps []LiveApp) ([]*report.Live, error) {
	return make([]*report.Live, len(apps)), nil
}

func (r *remoteLive) RenderRemote(_ context.Context, app *v1alpha1.Application, revisions []string, repoURLs []string) (*RemoteRender, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.revisions = append(r.revisions, revisions...)
	r.repoURLs = repoURLs
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "plug"}, "data": map[string]any{"rev": revisions[0]}}}
	return &RemoteRender{Objects: []*unstructured.Unstructured{cm}}, nil
}

// pluginRepo is a repository with one config-management-plugin app whose directory the change edits.
func pluginRepo(t *testing.T) (dir, base, head string) {
	t.Helper()
	dir = filetest.Tree(t, map[string]string{
		"apps/plug.yaml": `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: plug, namespace: argocd}
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: plug}
  source: {repoURL: https://github.com/example/plug.git, path: plug, targetRevision: HEAD, plugin: {name: vault}}
`,
		"plug/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plug}\ndata: {secret: <path:kv/data/db#password>}\n",
	})
	gittest.Run(t, dir, "init", "-q", "-b", "main")
	gittest.Run(t, dir, "remote", "add", "origin", "https://github.com/example/plug.git")
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "base")
	base = gittest.Run(t, dir, "rev-parse", "HEAD")
	filetest.Write(t, dir, "plug/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plug}\ndata: {secret: <path:kv/data/other#password>}\n")
	gittest.Run(t, dir, "commit", "-q", "-am", "head")
	head = gittest.Run(t, dir, "rev-parse", "HEAD")
	return dir, base, head
}

// With NoRemoteHead (a pull request of a repository that did not opt in, or any fork's), the head side is never
// rendered through Argo CD: Argo CD's plugins would resolve what the head writes (issue 38 item 6). The base side,
// merged content, still is.
func TestNoRemoteHead(t *testing.T) {
	dir, base, head := pluginRepo(t)
	for _, off := range []bool{true, false} {
		live := &remoteLive{}
		rep, err := reportOf(Run(context.Background(), render.New(render.Options{}), Input{RepoDir: dir, Base: base, Head: head, ArgoCD: ArgoCD{Live: live, Remote: live}, NoRemoteHead: off}))
		if err != nil {
			t.Fatal(err)
		}
		var app *report.App
		for i := range rep.Apps {
			if rep.Apps[i].Name == "plug" {
				app = &rep.Apps[i]
			}
		}
		if app == nil {
			t.Fatalf("NoRemoteHead %v: no app plug in %+v", off, rep.Apps)
		}
		asked := strings.Join(live.revisions, ",")
		if off {
			if strings.Contains(asked, head) || !strings.Contains(asked, base) {
				t.Errorf("NoRemoteHead: Argo CD asked to render %s; want the base %s only", asked, base)
			}
			if !strings.Contains(app.Error, "rendering a pull request's head remotely is off") {
				t.Errorf("NoRemoteHead: app error %q", app.Error)
			}
		} else if !strings.Contains(asked, head) {
			t.Errorf("opted in: Argo CD asked to render %s; want the head %s too", asked, head)
		}
		if len(live.repoURLs) == 0 || live.repoURLs[0] != "https://github.com/example/plug.git" {
			t.Errorf("RenderRemote got repository URLs %v, want the origin's", live.repoURLs)
		}
	}
}
