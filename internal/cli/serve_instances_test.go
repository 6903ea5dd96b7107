package cli

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/argocd/instances"
	"github.com/fleetwave/fleetwave/internal/config"
	"github.com/fleetwave/fleetwave/internal/github"
	"github.com/fleetwave/fleetwave/internal/metrics"
	"github.com/fleetwave/fleetwave/internal/store"
	"github.com/fleetwave/fleetwave/internal/github/fakegithub"
	"github.com/fleetwave/fleetwave/internal/testkit/logtest"
)

// TestServeWiresInstances: with an instances file, serve wires the rollout executor over every instance and
// says which instances in its "use cases wired" line; the tokens are never logged.
func TestServeWiresInstances(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	_, _, file, env := twoInstances(t)
	set, err := instances.LoadWith(file, instances.Options{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	key, keyPEM := fakegithub.AppKey()
	fake := fakegithub.New(t, fakegithub.WithApp(12345, &key.PublicKey))
	gh, err := github.NewApp(github.AppConfig{AppID: 12345, APIURL: fake.URL(), Transport: fake.Client().Transport, PrivateKey: keyPEM})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, "sqlite://"+filepath.Join(dir, "fleetwave.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var logs logtest.Buffer
	w, err := wireServe(ctx, serveDeps{Log: slog.New(slog.NewJSONHandler(&logs, nil)), GitHub: gh, Store: st, Metrics: metrics.New(), Instances: set,
		Config: &config.Serve{ArgoCDInstancesFile: file, Store: config.NewSecret("sqlite://" + filepath.Join(dir, "fleetwave.db")),
			CacheDir: filepath.Join(dir, "cache"), ReplicaName: "fleetwave-0"}})
	if err != nil {
		t.Fatal(err)
	}
	w.close()
	for _, want := range []string{`"argocd":true`, `"argocd_instances":"eu,us"`, `"executor":"rollout (owner fleetwave-0)"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the wiring log lacks %s:\n%s", want, logs.String())
		}
	}
	if strings.Contains(logs.String(), "t0ken") {
		t.Error("a token was logged")
	}
}
