package isolate_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/edge/gitfetch"
	"github.com/fleetwave/fleetwave/internal/edge/gitfetch/gitfetchtest"
	"github.com/fleetwave/fleetwave/internal/edge/repocreds"
	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/render/isolate"
)

// TestPoolFetchesGitThroughTheParent: a source in another allowed git repository renders in a worker as
// in-process, the parent fetching it (the worker holds no credentials); a repository that is not allowed is
// external across the pipe, with one line and without the password.
func TestPoolFetchesGitThroughTheParent(t *testing.T) {
	const password = "isolate-git-password"
	root := t.TempDir()
	repo := gitfetchtest.NewRepo(t, root, "platform.git")
	repo.Commit("one", map[string]string{"manifests/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: platform}\ndata: {version: one}\n"})
	repo.Tag("v1", "")
	repo.Tag("svc/v2.0.0", "") // found only with the source's tagPrefix, which must cross the pipe
	srv := gitfetchtest.Start(t, root, "reader", password)
	url := srv.URL + "/platform.git"
	set, err := repocreds.Parse("repositories.yaml", []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: platform\n  labels: {argocd.argoproj.io/secret-type: repository}\n"+
		"stringData: {url: '"+url+"', username: reader, password: "+password+"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := gitfetch.New(gitfetch.Options{Repos: set, CacheDir: t.TempDir(), CAFile: srv.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := isolate.New(isolate.Options{Workers: 1, Render: render.Options{Git: f}})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	req := appReq(t, "platform", "{repoURL: '"+url+"', path: manifests, targetRevision: v1}", t.TempDir())
	if !pool.Fetches(req.App.Spec.Source) {
		t.Error("the pool does not say it fetches an allowed git source")
	}
	want, err := render.New(render.Options{Git: f}).Render(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pool.Render(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if w, g := yamlOf(t, want), yamlOf(t, got); w != g || !strings.Contains(g, "version: one") {
		t.Errorf("worker render:\n%s\nin-process:\n%s", g, w)
	}
	prefixed := appReq(t, "platform", "{repoURL: '"+url+"', path: manifests, targetRevision: '^2.0.0', tagPrefix: svc/}", t.TempDir())
	if got, err := pool.Render(context.Background(), prefixed); err != nil || !strings.Contains(yamlOf(t, got), "version: one") {
		t.Errorf("tagPrefix through the worker: %v", err)
	}
	_, err = pool.Render(context.Background(), appReq(t, "other", "{repoURL: '"+srv.URL+"/other.git', path: manifests, targetRevision: main}", t.TempDir()))
	if !errors.Is(err, render.ErrExternalSource) || !strings.Contains(err.Error(), "other.git is not in the allowed repositories") ||
		strings.Count(err.Error(), "source is not in the checkout") != 1 || strings.Contains(err.Error(), password) {
		t.Errorf("err = %v; want render.ErrExternalSource saying the repository is not allowed, once, without the password", err)
	}
}
