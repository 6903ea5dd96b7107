package isolate_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/edge/chartfetch"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch/helmrepotest"
	"github.com/fleetwave/fleetwave/internal/edge/repocreds"
	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/render/isolate"
)

// TestPoolFetchesChartsThroughTheParent: a chart from a Helm repository renders in a worker as in-process, the
// parent fetching it (the worker holds no credentials), and a chart of a repository not allowed fails with the
// fetcher's sentinel.
func TestPoolFetchesChartsThroughTheParent(t *testing.T) {
	const password = "isolate-test-password"
	srv := helmrepotest.New(t, "fleet", password, helmrepotest.Chart{Name: "demo", Version: "1.2.0", Values: "count: 2\n",
		Templates: map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}}\ndata: {count: {{ .Values.count | quote }}}\n"}})
	set, err := repocreds.Parse("repositories.yaml", []byte(srv.Secret("demo")))
	if err != nil {
		t.Fatal(err)
	}
	f, err := chartfetch.New(chartfetch.Options{Repos: set, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := isolate.New(isolate.Options{Workers: 1, Render: render.Options{Charts: f}})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	req := appReq(t, "demo", "{repoURL: "+srv.URL+", chart: demo, targetRevision: 1.2.0}", t.TempDir())
	want, err := render.New(render.Options{Charts: f}).Render(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pool.Render(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var wb, gb bytes.Buffer
	_ = render.WriteYAML(&wb, want.Objects)
	_ = render.WriteYAML(&gb, got.Objects)
	if wb.String() != gb.String() || !strings.Contains(gb.String(), `count: "2"`) {
		t.Errorf("worker render:\n%s\nin-process:\n%s", gb.String(), wb.String())
	}
	_, err = pool.Render(context.Background(), appReq(t, "other", "{repoURL: https://charts.example.invalid, chart: x, targetRevision: 1.0.0}", t.TempDir()))
	if !errors.Is(err, chartfetch.ErrNotAllowed) || strings.Contains(err.Error(), password) {
		t.Errorf("err = %v; want chartfetch.ErrNotAllowed, without the password", err)
	}
}
