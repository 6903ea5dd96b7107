package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/fleetwave/fleetwave/internal/argocd/argocdsim"
)

type argocdSimOptions struct {
	addr  string
	fleet string
	token string
	seed  uint64
	sim   argocdsim.Config
}

// newArgocdSimCmd is the hidden `fleetwave argocd-sim`: the simulated Argo CD API for the demo and benchmarks.
// It prints its URL as the first line of standard output and serves until interrupted.
func newArgocdSimCmd(deps *Deps) *cobra.Command {
	o := argocdSimOptions{}
	cmd := &cobra.Command{
		Use:    "argocd-sim --addr 127.0.0.1:0 --fleet <fleet.yaml>",
		Short:  "Serve a simulated Argo CD API (demo, benchmarks)",
		Hidden: true,
		Long: `Serve a simulated Argo CD API: applications, clusters and refs from a fleet file, Argo CD's operation and
reconcile state machine, the application stream, and optional faults. The URL is printed on the first line of
standard output. Flags override the file's "simulation" section.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runArgocdSim(cmd.Context(), deps, cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", "127.0.0.1:0", "listen address (port 0 picks a free port)")
	f.StringVar(&o.fleet, "fleet", "", "fleet file: refs, clusters, apps, simulation settings")
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
	if o.fleet == "" {
		return usageErr(errors.New("argocd-sim needs --fleet"))
	}
	data, err := os.ReadFile(o.fleet)
	if err != nil {
		return usageErr(fmt.Errorf("reading fleet file: %w", err))
	}
	fleet, err := argocdsim.ParseFleet(data)
	if err != nil {
		return usageErr(fmt.Errorf("%s: %w", o.fleet, err))
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
		return usageErr(fmt.Errorf("%s: %w", o.fleet, err))
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
