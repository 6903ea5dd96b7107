package helm

import (
	"context"
	"errors"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetwave/fleetwave/internal/edge/chartfetch"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch/helmrepotest"
	"github.com/fleetwave/fleetwave/internal/edge/repocreds"
	"github.com/fleetwave/fleetwave/internal/render/repofs/repofstest"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
)

func redis(version string) helmrepotest.Chart {
	return helmrepotest.Chart{Name: "redis", Version: version,
		Templates: map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: redis}\ndata: {version: \"" + version + "\"}\n"}}
}

// TestDependencyBuildFetchesLockedVersion: with a Chart.lock, `helm dependency build` downloads the locked
// versions (pkg/downloader/manager.go Build), not the newest the constraint allows; an out-of-sync lock is
// helm's error, before anything is fetched.
func TestDependencyBuildFetchesLockedVersion(t *testing.T) {
	srv := helmrepotest.New(t, "", "", redis("1.4.0"), redis("1.5.0"))
	set, err := repocreds.Parse("repositories.yaml", []byte(srv.Secret("bitnami")))
	if err != nil {
		t.Fatal(err)
	}
	f, err := chartfetch.New(chartfetch.Options{Repos: set, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	req := []*chart.Dependency{{Name: "redis", Version: "^1.0.0", Repository: "@bitnami"}}
	lock := []*chart.Dependency{{Name: "redis", Version: "1.4.0", Repository: "@bitnami"}}
	sum, err := digest([2][]*chart.Dependency{req, lock})
	if err != nil {
		t.Fatal(err)
	}
	chartYAML := "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n- {name: redis, version: ^1.0.0, repository: '@bitnami'}\n"
	lockYAML := "dependencies:\n- {name: redis, version: 1.4.0, repository: '@bitnami'}\ndigest: " + sum + "\ngenerated: \"2024-01-01T00:00:00Z\"\n"

	render := func(files map[string]string) (string, error) {
		objs, err := New().Template(context.Background(), Input{FS: repofstest.Open(t, filetest.Tree(t, files)), AppPath: "app", AppName: "app", Charts: f})
		if err != nil {
			return "", err
		}
		var b strings.Builder
		for _, o := range objs {
			v, _, _ := unstructured.NestedString(o.Object, "data", "version")
			b.WriteString(v)
		}
		return b.String(), nil
	}
	got, err := render(map[string]string{"app/Chart.yaml": chartYAML, "app/Chart.lock": lockYAML})
	if err != nil || got != "1.4.0" {
		t.Fatalf("locked: %q, %v", got, err)
	}
	got, err = render(map[string]string{"app/Chart.yaml": chartYAML})
	if err != nil || got != "1.5.0" {
		t.Fatalf("unlocked: %q, %v", got, err)
	}
	before := srv.Archives()
	_, err = render(map[string]string{"app/Chart.yaml": strings.Replace(chartYAML, "^1.0.0", "^1.1.0", 1), "app/Chart.lock": lockYAML})
	if err == nil || !strings.Contains(err.Error(), "Chart.lock) is out of sync") || srv.Archives() != before {
		t.Fatalf("out of sync: %v (%d downloads)", err, srv.Archives()-before)
	}
	_, err = render(map[string]string{"app/Chart.yaml": strings.Replace(chartYAML, "'@bitnami'", "https://charts.example.com", 1)})
	if !errors.Is(err, chartfetch.ErrNotAllowed) || !errors.Is(err, ErrMissingDependency) ||
		!strings.Contains(err.Error(), `chart dependency "redis" (version "^1.0.0"): not rendered: repository https://charts.example.com is not in the allowed repositories`) {
		t.Fatalf("not allowed: %v", err)
	}
}
