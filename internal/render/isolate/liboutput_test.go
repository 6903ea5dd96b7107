package isolate_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/render/isolate"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
	"github.com/fleetwave/fleetwave/internal/testkit/logtest"
)

// TestLibraryOutputIsLoggedOnce: Kustomize prints a deprecation warning for each kustomization it loads
// (fmt.Fprintf(os.Stderr), kusttarget.go Load). Rendered by workers, each distinct warning is one structured
// log line for the whole pool, naming the first app that printed it, however many apps and builds print it;
// a new warning is a new line; the renders are unchanged.
func TestLibraryOutputIsLoggedOnce(t *testing.T) {
	root := filetest.Tree(t, map[string]string{
		"old/kustomization.yaml":   "resources: [../base]\ncommonLabels: {a: b}\n",
		"older/kustomization.yaml": "bases: [../base]\ncommonLabels: {a: b}\n",
		"base/kustomization.yaml":  "resources: [cm.yaml]\n",
		"base/cm.yaml":             cm,
	})
	var logs logtest.Buffer
	pool, err := isolate.New(isolate.Options{Workers: 2, Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	inproc := render.New(render.Options{})
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := hostileApp(t, fmt.Sprintf("app-%d", i), "{repoURL: R, path: old}", root)
			got, err := pool.Render(context.Background(), req)
			if err != nil {
				t.Error(err)
				return
			}
			want, err := inproc.Render(context.Background(), req)
			if err != nil {
				t.Error(err)
				return
			}
			if yamlOf(t, got) != yamlOf(t, want) {
				t.Errorf("app-%d: the worker's render differs from the in-process one", i)
			}
		}()
	}
	wg.Wait()
	lines := logLines(t, logs.String())
	if len(lines) != 1 || !strings.Contains(lines[0], `"level":"WARN"`) || !strings.Contains(lines[0], `"app":"app-`) ||
		!strings.Contains(lines[0], `'commonLabels' is deprecated`) {
		t.Fatalf("log after 6 builds printing one warning:\n%s\nwant one WARN line naming an app and the warning", logs.String())
	}
	// bases: a second, distinct warning, logged once too; commonLabels is not logged again.
	for range 3 {
		if _, err := pool.Render(context.Background(), hostileApp(t, "older-app", "{repoURL: R, path: older}", root)); err != nil {
			t.Fatal(err)
		}
	}
	lines = logLines(t, logs.String())
	if len(lines) != 2 || !strings.Contains(lines[1], `"app":"older-app"`) || !strings.Contains(lines[1], `'bases' is deprecated`) {
		t.Fatalf("log after a build printing a new warning:\n%s\nwant a second line for it, naming older-app", logs.String())
	}
}

func logLines(t *testing.T, s string) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}
