package preview

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

// cappedRenderer stands for a renderer whose app "bomb" runs to the time cap on every render; the other apps
// render as usual. It counts the bomb's renders.
type cappedRenderer struct {
	cap   time.Duration
	r     Renderer
	mu    sync.Mutex
	bombs int
}

// Fetches is the wrapped renderer's.
func (c *cappedRenderer) Fetches(src *v1alpha1.ApplicationSource) bool { return c.r.Fetches(src) }

func (c *cappedRenderer) Render(ctx context.Context, req render.Request) (*render.Result, error) {
	if req.App.Name != "bomb" {
		return c.r.Render(ctx, req)
	}
	c.mu.Lock()
	c.bombs++
	c.mu.Unlock()
	select {
	case <-time.After(c.cap):
	case <-ctx.Done():
		return nil, &render.Error{App: req.App.Name, Err: ctx.Err()}
	}
	return nil, &render.Error{App: req.App.Name, Err: fmt.Errorf("refused (time-limit): render exceeded %s", c.cap)}
}

func capApp(name, annotation string) string {
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s, namespace: argocd, annotations: {note: %q}}
spec:
  project: default
  source: {repoURL: 'https://github.com/example/fleet.git', targetRevision: HEAD, path: %s}
  destination: {server: 'https://kubernetes.default.svc', namespace: %s}
`, name, annotation, name, name)
}

// capRepo is a repository with a bomb at base (and an ordinary app), and a head commit writing head over it.
func capRepo(t *testing.T, head map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fleet")
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
	write(map[string]string{
		"apps/bomb.yaml": capApp("bomb", "a"), "bomb/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {k: '1'}\n",
		"apps/web.yaml": capApp("web", "a"), "web/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: w}\ndata: {k: '1'}\n",
	})
	gittest.Run(t, dir, "init", "-q", "-b", "main")
	gittest.Run(t, dir, "remote", "add", "origin", "https://github.com/example/fleet.git")
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "base")
	gittest.Run(t, dir, "checkout", "-q", "-b", "change")
	write(head)
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "change")
	return dir
}

// TestBombAtBaseCostsOneCap: an app whose render runs to the time cap at base, touched by a change that leaves
// what it renders from as it was (an annotation of its Application), is rendered once — the change costs one
// cap, not two — and its head says why it was not rendered again; a change to its files renders it again.
func TestBombAtBaseCostsOneCap(t *testing.T) {
	const timeCap = 2 * time.Second
	for _, tc := range []struct {
		name    string
		head    map[string]string
		renders int
		within  time.Duration
		want    string
	}{
		{"annotation only", map[string]string{"apps/bomb.yaml": capApp("bomb", "b")}, 1, 2 * timeCap,
			"refused (time-limit): render exceeded 2s at the base; the change leaves everything it renders from as it was, so it was not rendered again"},
		{"its files changed", map[string]string{"bomb/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {k: '2'}\n"}, 2, 4 * timeCap,
			"refused (time-limit): render exceeded 2s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := capRepo(t, tc.head)
			r := &cappedRenderer{cap: timeCap, r: render.New(render.Options{})}
			start := time.Now()
			rep, err := reportOf(Run(context.Background(), r, Input{RepoDir: dir, Base: "main", Head: "change"}))
			if err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			t.Logf("%s: the bomb rendered %d times, the preview took %.1f s with a %s cap", tc.name, r.bombs, took.Seconds(), timeCap)
			if r.bombs != tc.renders {
				t.Errorf("the bomb was rendered %d times, want %d", r.bombs, tc.renders)
			}
			if took >= tc.within {
				t.Errorf("the preview took %s, want under %s", took, tc.within)
			}
			found := false
			for _, a := range rep.Apps {
				if a.Name == "bomb" {
					found = true
					if !strings.Contains(a.Error, tc.want) {
						t.Errorf("bomb: error %q, want %q", a.Error, tc.want)
					}
				}
			}
			if !found {
				t.Errorf("no bomb in the report: %+v", rep.Apps)
			}
		})
	}
}
