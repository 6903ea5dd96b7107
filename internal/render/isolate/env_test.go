package isolate_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/render/isolate"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
)

// envProbe, a file in a worker's TMPDIR, has the worker write its environment beside it (probeWorkerEnv).
const envProbe = "worker-env-probe"

// probeWorkerEnv runs first in TestMain: in a worker whose TMPDIR holds envProbe it writes os.Environ() there,
// one variable a line, before serving. TMPDIR is one of the variables a worker keeps.
func probeWorkerEnv() {
	if os.Getenv("FLEETWAVE_RENDER_WORKER") != "1" {
		return
	}
	dir := os.Getenv("TMPDIR")
	if dir == "" {
		return
	}
	if _, err := os.Stat(filepath.Join(dir, envProbe)); err != nil {
		return
	}
	_ = os.WriteFile(filepath.Join(dir, "worker-env"), []byte(strings.Join(os.Environ(), "\n")), 0o600)
}

// TestWorkerEnvironmentHoldsNoSecret: a worker starts with an allow-listed environment. The parent's webhook
// secret, Argo CD token, store DSN and fleet-view token (and anything else) never reach it (issue 38 item 11;
// docs/isolation.md: workers hold no credentials).
func TestWorkerEnvironmentHoldsNoSecret(t *testing.T) {
	tmp := t.TempDir()
	if err := os.WriteFile(filepath.Join(tmp, envProbe), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	secrets := map[string]string{
		"FLEETWAVE_WEBHOOK_SECRET":     "whsec-not-for-workers",
		"FLEETWAVE_ARGOCD_TOKEN":       "argocd-token-not-for-workers",
		"FLEETWAVE_STORE":              "postgres://fleet:dsn-password-not-for-workers@db/fleet",
		"FLEETWAVE_FLEETVIEW_TOKEN":    "fleetview-token-not-for-workers",
		"FLEETWAVE_GITHUB_PRIVATE_KEY": "private-key-not-for-workers",
		"AWS_SECRET_ACCESS_KEY":        "aws-secret-not-for-workers",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	root := filetest.Tree(t, map[string]string{"dir/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"})
	pool, err := isolate.New(isolate.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Render(context.Background(), appReq(t, "a", "{repoURL: https://example.com/r.git, path: dir}", root)); err != nil {
		pool.Close()
		t.Fatal(err)
	}
	pool.Close()
	b, err := os.ReadFile(filepath.Join(tmp, "worker-env"))
	if err != nil {
		t.Fatalf("the worker wrote no environment: %v", err)
	}
	env := string(b)
	for k, v := range secrets {
		if strings.Contains(env, v) || strings.Contains(env, k+"=") {
			t.Errorf("the worker's environment holds %s", k)
		}
	}
	for _, want := range []string{"FLEETWAVE_RENDER_WORKER=1", "TMPDIR=" + tmp, "PATH="} {
		if !strings.Contains("\n"+env, "\n"+want) {
			t.Errorf("the worker's environment lacks %s:\n%s", want, env)
		}
	}
	for _, kv := range strings.Split(env, "\n") {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "HOME", "TMPDIR", "GOGC", "GOMEMLIMIT", "GOMAXPROCS", "GODEBUG", "GOTRACEBACK", "GORACE", "GOCOVERDIR", "FLEETWAVE_RENDER_WORKER":
		default:
			t.Errorf("the worker's environment holds %s, which is not on the allow-list", k)
		}
	}
}
