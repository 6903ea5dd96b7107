package kustomize

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/render/repofs"
	"github.com/fleetwave/fleetwave/internal/render/repofs/repofstest"
)

// tripwires makes any attempt to run git or helm, or to reach the network over HTTP(S), observable: PATH holds
// only fake git/helm that leave a marker, and the proxy variables point at a listener that counts connections.
// It returns a check to call after the builds.
type tripwires struct {
	marker string
	conns  *atomic.Int64
}

func setTripwires(tb interface {
	Helper()
	TempDir() string
	Setenv(string, string)
	Cleanup(func())
	Fatal(...any)
}) tripwires {
	tb.Helper()
	bin := tb.TempDir()
	marker := filepath.Join(tb.TempDir(), "executed")
	for _, name := range []string{"git", "helm", "helmV3", "kubectl", "sh"} {
		script := "#!/bin/sh\necho \"$0 $@\" >> " + marker + "\nexit 1\n"
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o700); err != nil {
			tb.Fatal(err)
		}
	}
	tb.Setenv("PATH", bin)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var conns atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			_ = c.Close()
		}
	}()
	tb.Cleanup(func() { _ = ln.Close() })
	proxy := "http://" + ln.Addr().String()
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		tb.Setenv(k, proxy)
	}
	tb.Setenv("NO_PROXY", "")
	tb.Setenv("no_proxy", "")
	return tripwires{marker: marker, conns: &conns}
}

func (w tripwires) check(t *testing.T) {
	t.Helper()
	if b, err := os.ReadFile(w.marker); err == nil {
		t.Fatalf("a program was executed: %s", b)
	}
	if n := w.conns.Load(); n > 0 {
		t.Fatalf("%d network connections were attempted", n)
	}
}

// TestNoExecNoNetwork runs the refusal fixtures and a Helm build behind the tripwires.
func TestNoExecNoNetwork(t *testing.T) {
	w := setTripwires(t)
	e := New()
	for _, dir := range []string{"remote-github", "remote-https", "remote-git", "remote-ssh", "remote-patch", "exec-plugin", "krm-function", "helm-pull", "helm-generator-plugin"} {
		_, err := e.Build(context.Background(), Input{FS: repofstest.Open(t, filepath.Join("testdata", dir)), AppPath: "app", BuildOptions: "--enable-helm --enable-alpha-plugins --enable-exec"})
		if err == nil {
			t.Errorf("%s: build succeeded", dir)
		}
	}
	if _, err := e.Build(context.Background(), Input{FS: repofstest.Open(t, "testdata/helm-chart"), AppPath: "overlay", BuildOptions: "--enable-helm"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // let the listener count a late connection
	w.check(t)
}

const fuzzSecret = "FUZZ-SECRET-0f1e2d3c"

var fuzzOptions = []string{"", "--enable-helm", "--load-restrictor LoadRestrictionsNone --enable-helm", "--enable-alpha-plugins --reorder none"}

// FuzzBuild builds arbitrary kustomization.yaml bytes over a small tree. A build must not panic, run a program,
// open a connection, or read the file planted next to the checkout.
func FuzzBuild(f *testing.F) {
	seeds := []string{
		"resources:\n- cm.yaml\n",
		"resources:\n- ../base\nnamespace: x\nnamePrefix: p-\n",
		"resources:\n- ../../outside/secret.yaml\n",
		"resources:\n- link.yaml\n",
		"resources:\n- github.com/org/repo//x?ref=v1\n",
		"resources:\n- https://example.com/x.yaml\n",
		"helmCharts:\n- name: demo\n  releaseName: r\n  valuesInline: {a: 1}\n",
		"helmCharts:\n- name: nope\n  repo: https://charts.example.com\n",
		"configMapGenerator:\n- name: c\n  files:\n  - ../../outside/secret.yaml\n",
		"patches:\n- path: https://example.com/p.yaml\n",
		"transformers:\n- |-\n  apiVersion: builtin\n  kind: PatchTransformer\n  metadata:\n    name: p\n  path: ../../outside/secret.yaml\n",
		"openapi:\n  path: cm.yaml\nresources:\n- cm.yaml\n",
		"components:\n- ../base\n",
	}
	for i, s := range seeds {
		f.Add([]byte(s), uint8(i))
	}
	outside := f.TempDir()
	w := setTripwires(f)
	e := New()
	f.Fuzz(func(t *testing.T, kustomization []byte, opt uint8) {
		if strings.Contains(string(kustomization), "SECRET") {
			return // the input itself spells the marker
		}
		parent := t.TempDir()
		root := filepath.Join(parent, "repo")
		write := func(p, c string) {
			full := filepath.Join(root, p)
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(c), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		secret := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + fuzzSecret + "\n"
		if err := os.MkdirAll(filepath.Join(parent, "outside"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(parent, "outside", "secret.yaml"), []byte(secret), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(outside, "secret.yaml"), []byte(secret), 0o600); err != nil {
			t.Fatal(err)
		}
		write("app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n")
		write("base/kustomization.yaml", "resources:\n- d.yaml\n")
		write("base/d.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n")
		write("app/charts/demo/Chart.yaml", "apiVersion: v2\nname: demo\nversion: 0.1.0\n")
		write("app/charts/demo/values.yaml", "a: 0\n")
		write("app/charts/demo/templates/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  a: {{ .Values.a | quote }}\n")
		if err := os.Symlink(filepath.Join(outside, "secret.yaml"), filepath.Join(root, "app", "link.yaml")); err != nil {
			t.Fatal(err)
		}
		write("app/kustomization.yaml", string(kustomization))
		repo, err := repofs.New(root, 0)
		if err != nil {
			t.Fatal(err)
		}
		repo = repo.WithRecorder(&repofs.Recorder{})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		objs, err := e.Build(ctx, Input{FS: repo, AppPath: "app", BuildOptions: fuzzOptions[int(opt)%len(fuzzOptions)], KubeVersion: "v1.30.0"})
		for _, o := range objs {
			b, _ := o.MarshalJSON()
			if strings.Contains(string(b), fuzzSecret) {
				t.Fatalf("a file outside the checkout was read: %s", b)
			}
		}
		if err != nil && strings.Contains(err.Error(), fuzzSecret) {
			t.Fatalf("a file outside the checkout leaked into the error: %v", err)
		}
		for _, p := range repo.Recorder().Files() {
			if c, err := repofs.Clean(p); err != nil || c != p {
				t.Fatalf("recorded a path outside the checkout: %q", p)
			}
		}
		w.check(t)
	})
}
