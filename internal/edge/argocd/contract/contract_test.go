package contract_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/contract"
)

const (
	oldRev = "9a3f0c2e7b1d4a5f8c6e0b2d4f6a8c0e1b3d5f7a"
	newRev = "4c8e1a7d2b9f3e5a6c0d8b1f4e7a2c5d9b3f6e0a"
)

// simTarget serves a fresh simulator over real HTTP with short, real-time durations.
func simTarget(cfg argocdsim.Config) func(t *testing.T) contract.Target {
	return func(t *testing.T) contract.Target {
		cfg.Token = "contract-token"
		sim := argocdsim.New(cfg)
		srv := httptest.NewServer(sim.Handler())
		t.Cleanup(func() { srv.Close(); sim.Close() })
		sim.SetRef("HEAD", newRev)
		add := func(name string, auto bool, b argocdsim.Behavior) {
			a := &v1alpha1.Application{}
			a.Name = name
			a.Labels = map[string]string{"suite": "contract"}
			a.Spec.Source = &v1alpha1.ApplicationSource{RepoURL: "https://git.example.com/fleet/gitops.git", Path: "apps/" + name, TargetRevision: "HEAD"}
			a.Spec.Destination = v1alpha1.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: name}
			if auto {
				a.Spec.SyncPolicy = &v1alpha1.SyncPolicy{Automated: &v1alpha1.SyncPolicyAutomated{}}
			}
			if err := sim.AddApp(a, argocdsim.AppOptions{LiveRevisions: []string{newRev}, Behavior: b}); err != nil {
				t.Fatal(err)
			}
		}
		add("guestbook", false, argocdsim.Behavior{})
		add("guestbook-auto", true, argocdsim.Behavior{})
		add("guestbook-slow", false, argocdsim.Behavior{SyncDuration: time.Minute})
		sim.AddCluster(v1alpha1.Cluster{Name: "in-cluster", Server: v1alpha1.KubernetesInternalAPIServerAddr})
		return contract.Target{
			Options: argocd.Options{BaseURL: srv.URL, Token: "contract-token",
				RetryInitialInterval: 5 * time.Millisecond, RetryMaxInterval: 50 * time.Millisecond, MaxRetries: 8},
			ManualApp: "guestbook", AutoApp: "guestbook-auto", SlowApp: "guestbook-slow",
			OldRevision: oldRev, NewRevision: newRev, Selector: "suite=contract", Timeout: 30 * time.Second,
		}
	}
}

func TestSimulatorHonoursTheContract(t *testing.T) {
	contract.Run(t, simTarget(argocdsim.Config{SyncDuration: 150 * time.Millisecond, ReconcileDelay: 20 * time.Millisecond, TerminateDelay: 20 * time.Millisecond}))
}

// TestContractUnderFaults: the client's retries and the stream's reconnects make 20% injected 5xx, latency
// spikes and dropped streams invisible to the caller.
func TestContractUnderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	contract.Run(t, simTarget(argocdsim.Config{
		SyncDuration: 150 * time.Millisecond, ReconcileDelay: 20 * time.Millisecond, TerminateDelay: 20 * time.Millisecond,
		Seed: 7, ErrorRate: 0.2, APILatency: 2 * time.Millisecond, LatencySpikeRate: 0.05, LatencySpike: 200 * time.Millisecond,
		StreamDropMean: 300 * time.Millisecond,
	}))
}
