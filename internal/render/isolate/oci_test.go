package isolate_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/edge/chartfetch"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch/helmrepotest"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch/ocitest"
	"github.com/fleetwave/fleetwave/internal/edge/repocreds"
	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/render/isolate"
)

// TestPoolFetchesOCIThroughTheParent: a Helm chart from an OCI registry and a native OCI source render in a
// worker as in-process, the parent pulling them (the worker holds no registry credentials); wrong credentials are
// one line without the password.
func TestPoolFetchesOCIThroughTheParent(t *testing.T) {
	const password = "isolate-registry-password"
	reg := ocitest.New(t, "fleet", password)
	file := helmrepotest.Package(t, helmrepotest.Chart{Name: "demo", Version: "1.2.0", Values: "count: 2\n",
		Templates: map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}}\ndata: {count: {{ .Values.count | quote }}}\n"}}, t.TempDir())
	archive, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	reg.MustPushChart(t, archive, "charts")
	var layer bytes.Buffer
	zw := gzip.NewWriter(&layer)
	tw := tar.NewWriter(zw)
	body := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: native}\ndata: {from: oci}\n"
	_ = tw.WriteHeader(&tar.Header{Name: "app/cm.yaml", Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte(body))
	_ = tw.Close()
	_ = zw.Close()
	reg.MustPushArtifact(t, "manifests", "1.0.0", ocitest.Blob{}, nil, ocitest.Blob{MediaType: "application/vnd.oci.image.layer.v1.tar+gzip", Data: layer.Bytes()})

	secrets := reg.Secret("charts", reg.Host+"/charts", map[string]string{"enableOCI": "true"}) + "---\n" +
		reg.Secret("manifests", "oci://"+reg.Host+"/manifests", map[string]string{"type": "oci"})
	fetcher := func(secrets string) *chartfetch.Fetcher {
		set, err := repocreds.Parse("repositories.yaml", []byte(secrets))
		if err != nil {
			t.Fatal(err)
		}
		f, err := chartfetch.New(chartfetch.Options{Repos: set, CacheDir: t.TempDir(), Transport: reg.Transport()})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	f := fetcher(secrets)
	pool, err := isolate.New(isolate.Options{Workers: 1, Render: render.Options{Charts: f}})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for _, tc := range []struct{ source, want string }{
		{"{repoURL: " + reg.Host + "/charts, chart: demo, targetRevision: ^1.0.0}", `count: "2"`},
		{"{repoURL: oci://" + reg.Host + "/manifests, path: app, targetRevision: 1.0.0}", "from: oci"},
	} {
		req := appReq(t, "demo", tc.source, t.TempDir())
		want, err := render.New(render.Options{Charts: f}).Render(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pool.Render(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if yamlOf(t, want) != yamlOf(t, got) || !strings.Contains(yamlOf(t, got), tc.want) {
			t.Errorf("%s: worker render:\n%s\nin-process:\n%s", tc.source, yamlOf(t, got), yamlOf(t, want))
		}
	}

	wrong, err := isolate.New(isolate.Options{Workers: 1, Render: render.Options{Charts: fetcher(strings.ReplaceAll(secrets, password, "not-"+password))}})
	if err != nil {
		t.Fatal(err)
	}
	defer wrong.Close()
	_, err = wrong.Render(context.Background(), appReq(t, "demo", "{repoURL: "+reg.Host+"/charts, chart: demo, targetRevision: 1.2.0}", t.TempDir()))
	if err == nil || !strings.Contains(err.Error(), "401 Unauthorized") || strings.Contains(err.Error(), password) {
		t.Errorf("wrong credentials: %v", err)
	}
}
