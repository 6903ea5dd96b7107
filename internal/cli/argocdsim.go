package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/spf13/cobra"

	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
)

type argocdSimOptions struct {
	addr     string
	fleet    string
	fromPlan string
	repoURL  string
	token    string
	seed     uint64
	sim      argocdsim.Config
}

// newArgocdSimCmd is `fleetwave argocd-sim`: the simulated Argo CD API for the demo, tests and benchmarks. It
// prints its URL as the first line of standard output and serves until interrupted.
func newArgocdSimCmd(deps *Deps) *cobra.Command {
	o := argocdSimOptions{}
	cmd := &cobra.Command{
		Use:   "argocd-sim --addr 127.0.0.1:0 (--fleet <fleet.yaml> | --from-plan <plan.json>)",
		Short: "Serve a simulated Argo CD API to try a rollout without a cluster (demo, tests, benchmarks)",
		Long: `Serve a simulated Argo CD API: applications, clusters and refs from a fleet file, Argo CD's operation and
reconcile state machine, the application stream, and optional faults. The URL is printed on the first line of
standard output. Flags override the file's "simulation" section.

--from-plan seeds the simulator with the apps of a plan ('fleetwave plan --output json'): each planned app on its
destination cluster (with the cluster's labels), live at the plan's base revision, with HEAD at its head revision,
so that 'fleetwave rollout' of the same change can run against it. It is a simulator: nothing is deployed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runArgocdSim(cmd.Context(), deps, cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", "127.0.0.1:0", "listen address (port 0 picks a free port)")
	f.StringVar(&o.fleet, "fleet", "", "fleet file: refs, clusters, apps, simulation settings")
	f.StringVar(&o.fromPlan, "from-plan", "", "seed the apps of this plan ('fleetwave plan --output json'), live at its base")
	f.StringVar(&o.repoURL, "repo-url", "https://github.com/example/fleet.git", "with --from-plan: the apps' repoURL")
	f.StringVar(&o.token, "token", "", "require this bearer token")
	f.Uint64Var(&o.seed, "seed", 1, "random seed of the faults")
	f.DurationVar(&o.sim.SyncDuration, "sync-duration", time.Second, "how long an operation runs")
	f.DurationVar(&o.sim.ReconcileDelay, "reconcile-delay", 100*time.Millisecond, "delay of a reconcile after an operation or refresh")
	f.DurationVar(&o.sim.ProgressingFor, "progressing-for", 0, "health stays Progressing this long after a sync")
	f.DurationVar(&o.sim.ResyncPeriod, "resync", 0, "periodic reconcile of every app (0: off)")
	f.Float64Var(&o.sim.FailureRate, "failure-rate", 0, "share of operations that fail")
	f.Float64Var(&o.sim.DegradationRate, "degradation-rate", 0, "share of syncs that leave the app Degraded")
	f.DurationVar(&o.sim.APILatency, "latency", 0, "latency of every API answer")
	f.Float64Var(&o.sim.ErrorRate, "error-rate", 0, "share of requests answered 503")
	f.DurationVar(&o.sim.StreamDropMean, "stream-drop-mean", 0, "drop streams after a random lifetime of this mean (0: never)")
	f.DurationVar(&o.sim.StaleStatusFor, "stale-status", 0, "show pre-sync status this long after a sync request")
	return cmd
}

func runArgocdSim(ctx context.Context, deps *Deps, cmd *cobra.Command, o argocdSimOptions) error {
	if o.fleet == "" && o.fromPlan == "" {
		return usageErr(errors.New("argocd-sim needs --fleet or --from-plan"))
	}
	fleet := &argocdsim.Fleet{}
	if o.fleet != "" {
		data, err := os.ReadFile(o.fleet)
		if err != nil {
			return usageErr(fmt.Errorf("reading fleet file: %w", err))
		}
		if fleet, err = argocdsim.ParseFleet(data); err != nil {
			return usageErr(fmt.Errorf("%s: %w", o.fleet, err))
		}
	}
	if o.fromPlan != "" {
		if err := seedFromPlan(fleet, o.fromPlan, o.repoURL); err != nil {
			return usageErr(err)
		}
	}
	// The file's simulation section applies first; flags given on the command line win.
	cfg := fleet.Apply(argocdsim.Config{SyncDuration: time.Second, ReconcileDelay: 100 * time.Millisecond, Seed: o.seed})
	f := cmd.Flags()
	for name, apply := range map[string]func(){
		"sync-duration":    func() { cfg.SyncDuration = o.sim.SyncDuration },
		"reconcile-delay":  func() { cfg.ReconcileDelay = o.sim.ReconcileDelay },
		"progressing-for":  func() { cfg.ProgressingFor = o.sim.ProgressingFor },
		"resync":           func() { cfg.ResyncPeriod = o.sim.ResyncPeriod },
		"failure-rate":     func() { cfg.FailureRate = o.sim.FailureRate },
		"degradation-rate": func() { cfg.DegradationRate = o.sim.DegradationRate },
		"latency":          func() { cfg.APILatency = o.sim.APILatency },
		"error-rate":       func() { cfg.ErrorRate = o.sim.ErrorRate },
		"stream-drop-mean": func() { cfg.StreamDropMean = o.sim.StreamDropMean },
		"stale-status":     func() { cfg.StaleStatusFor = o.sim.StaleStatusFor },
		"token":            func() { cfg.Token = o.token },
		"seed":             func() { cfg.Seed = o.seed },
	} {
		if f.Changed(name) {
			apply()
		}
	}
	sim := argocdsim.New(cfg)
	defer sim.Close()
	if err := sim.Seed(fleet); err != nil {
		return usageErr(fmt.Errorf("seeding the simulator: %w", err))
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return usageErr(fmt.Errorf("listening on %s: %w", o.addr, err))
	}
	srv := &http.Server{Handler: sim.Handler(), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(deps.Stdout, "http://%s\n", ln.Addr())
	fmt.Fprintf(deps.Stderr, "argocd-sim: %d applications; sync %s, reconcile %s, failure rate %g, error rate %g\n",
		len(sim.AppNames()), cfg.SyncDuration, cfg.ReconcileDelay, cfg.FailureRate, cfg.ErrorRate)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("argocd-sim: serving: %w", err)
	case <-ctx.Done():
	}
	sim.Close() // ends open streams so Shutdown does not wait for them
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		// A request still being answered after the grace period (a stream write to a client that stopped
		// reading) is cut: the simulator keeps no state worth waiting for.
		fmt.Fprintf(deps.Stderr, "argocd-sim: connections still open after %s were closed\n", 5*time.Second)
		_ = srv.Close()
	}
	return nil
}

// seedFromPlan adds to fleet the apps of a plan file: every planned app on its cluster, live at the plan's
// base, HEAD at its head.
func seedFromPlan(fleet *argocdsim.Fleet, path, repoURL string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading plan: %w", err)
	}
	var p struct {
		Base, Head string
		Waves      []struct {
			Batches []struct {
				Apps []struct {
					Name, Namespace, Cluster, Server string
					ClusterLabels, Labels            map[string]string
				}
			}
		}
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return fmt.Errorf("%s: not a plan ('fleetwave plan --output json'): %w", path, err)
	}
	if p.Head == "" || len(p.Waves) == 0 {
		return fmt.Errorf("%s: not a plan with waves ('fleetwave plan --output json')", path)
	}
	if fleet.Refs == nil {
		fleet.Refs = map[string]string{}
	}
	fleet.Refs["HEAD"] = p.Head
	seen := map[string]bool{}
	for _, w := range p.Waves {
		for _, b := range w.Batches {
			for _, a := range b.Apps {
				if !seen[a.Cluster] {
					seen[a.Cluster] = true
					fleet.Clusters = append(fleet.Clusters, argocdsim.FleetCluster{Name: a.Cluster, Server: a.Server, Labels: a.ClusterLabels})
				}
				fleet.Apps = append(fleet.Apps, argocdsim.FleetApp{Name: a.Name, Namespace: a.Namespace, Labels: a.Labels,
					RepoURL: repoURL, Path: a.Name, TargetRevision: "HEAD", LiveRevision: p.Base,
					Destination: v1alpha1.ApplicationDestination{Name: a.Cluster, Namespace: a.Name}})
			}
		}
	}
	return nil
}
