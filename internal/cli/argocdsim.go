package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/spf13/cobra"

	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/instances"
)

type argocdSimOptions struct {
	addr     string
	fleet    string
	fromPlan string
	repoURL  string
	token    string
	// instancesFile and instance: with --from-plan, seed only the apps instance holds (by the plan's own instance
	// field, or by the instances file's rules).
	instancesFile string
	instance      string
	seed          uint64
	sim           argocdsim.Config
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
so that 'fleetwave rollout' of the same change can run against it. It is a simulator: nothing is deployed.

With --instance NAME it is one Argo CD instance of a fleet run by several (docs/instances.md), seeded with the
plan's apps that instance holds: the plan's own instance field when the plan was made with --argocd-instances,
else the rules of the --argocd-instances file, an app of an app-of-apps held by its parent's instance (run one
simulator per instance).`,
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
	f.StringVar(&o.instance, "instance", "", "with --from-plan: seed only the apps this Argo CD instance holds")
	f.StringVar(&o.instancesFile, argocdInstancesFlag, "", "with --instance: the instances file whose rules say which apps it holds, when the plan does not")
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
	var holds func(planApp) (bool, error)
	switch {
	case o.instance == "" && o.instancesFile != "":
		return usageErr(fmt.Errorf("--%s needs --instance: the instance this simulator is", argocdInstancesFlag))
	case o.instance != "" && o.fromPlan == "":
		return usageErr(errors.New("--instance needs --from-plan: the plan whose apps it seeds"))
	case o.instance != "":
		var set *instances.Set
		if o.instancesFile != "" {
			var err error
			if set, err = loadInstances(deps, o.instancesFile, ""); err != nil {
				return usageErr(err)
			}
			if _, ok := set.Get(o.instance); !ok {
				return usageErr(fmt.Errorf("--instance %s: not an instance of %s (%s)", o.instance, o.instancesFile, strings.Join(set.Names(), ", ")))
			}
		}
		holds = heldBy(o.instance, set)
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
		if err := seedFromPlan(fleet, o.fromPlan, o.repoURL, holds); err != nil {
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

// planApp is what seeding reads of one of a plan's apps: its place in the plan (waves[].batches[].apps[]) with,
// from the report's apps[], the file that declares it, its app-of-apps parent and its project.
type planApp struct {
	Name, Namespace, Cluster, Server, Instance string
	ClusterLabels, Labels                      map[string]string
	File, Parent, Project                      string
	parent                                     *planApp
}

// seedFromPlan adds to fleet the apps of a plan file: every planned app on its cluster, live at the plan's
// base, HEAD at its head. holds, when not nil, picks the apps to seed (one instance's).
func seedFromPlan(fleet *argocdsim.Fleet, path, repoURL string, holds func(planApp) (bool, error)) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading plan: %w", err)
	}
	var p struct {
		Base, Head string
		Apps       []struct{ Name, Namespace, File, Parent, Project string }
		Waves      []struct {
			Batches []struct{ Apps []planApp }
		}
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return fmt.Errorf("%s: not a plan ('fleetwave plan --output json'): %w", path, err)
	}
	if p.Head == "" || len(p.Waves) == 0 {
		return fmt.Errorf("%s: not a plan with waves ('fleetwave plan --output json')", path)
	}
	// Each app once, by namespace/name: its plan entry, with what the report's apps[] says of it (its file, parent
	// and project); a parent the plan does not place still places its children by its file.
	byKey := map[string]*planApp{}
	var planned []*planApp
	for wi := range p.Waves {
		for bi := range p.Waves[wi].Batches {
			for ai := range p.Waves[wi].Batches[bi].Apps {
				a := &p.Waves[wi].Batches[bi].Apps[ai]
				byKey[a.Namespace+"/"+a.Name] = a
				planned = append(planned, a)
			}
		}
	}
	for _, r := range p.Apps {
		a, ok := byKey[r.Namespace+"/"+r.Name]
		if !ok {
			a = &planApp{Name: r.Name, Namespace: r.Namespace}
			byKey[r.Namespace+"/"+r.Name] = a
		}
		a.File, a.Parent, a.Project = r.File, r.Parent, r.Project
	}
	for _, a := range byKey {
		a.parent = byKey[a.Parent]
	}
	if fleet.Refs == nil {
		fleet.Refs = map[string]string{}
	}
	fleet.Refs["HEAD"] = p.Head
	seen := map[string]bool{}
	for _, a := range planned {
		if holds != nil {
			ok, err := holds(*a)
			if err != nil {
				return fmt.Errorf("%s: app %s/%s %w", path, a.Namespace, a.Name, err)
			}
			if !ok {
				continue
			}
		}
		if !seen[a.Cluster] {
			seen[a.Cluster] = true
			fleet.Clusters = append(fleet.Clusters, argocdsim.FleetCluster{Name: a.Cluster, Server: a.Server, Labels: a.ClusterLabels})
		}
		fleet.Apps = append(fleet.Apps, argocdsim.FleetApp{Name: a.Name, Namespace: a.Namespace, Labels: a.Labels,
			RepoURL: repoURL, Path: a.Name, TargetRevision: "HEAD", LiveRevision: p.Base,
			Destination: v1alpha1.ApplicationDestination{Name: a.Cluster, Namespace: a.Name}})
	}
	return nil
}

// maxParentDepth bounds the walk up an app's app-of-apps parents (a plan file naming parents in a cycle ends it).
const maxParentDepth = 64

// heldBy says whether instance holds a plan's app: the plan's own instance field when it has one (a plan made
// with --argocd-instances), else set's rules (nil: the plan must say), an app of an app-of-apps held by its
// parent's instance as discovery places it (internal/discover/instance.go). An app the rules place nowhere, or
// twice, is an error: a simulator seeded without it would make the rollout fail far from the cause.
func heldBy(instance string, set *instances.Set) func(planApp) (bool, error) {
	return func(a planApp) (bool, error) {
		if a.Instance != "" {
			return a.Instance == instance, nil
		}
		if set == nil {
			return false, fmt.Errorf("has no instance in the plan: give --%s, whose rules place it", argocdInstancesFlag)
		}
		top := &a
		for depth := 0; top.parent != nil && depth < maxParentDepth; depth++ {
			top = top.parent
		}
		name, err := set.Resolve(instances.App{Path: top.File, Namespace: top.Namespace, Name: top.Name, Project: top.Project,
			Labels: top.Labels, DestinationName: top.Cluster, DestinationServer: top.Server})
		if err != nil && top.Parent != "" {
			return false, fmt.Errorf("%w; its app-of-apps parent %s, whose instance it takes, is not in the plan", err, top.Parent)
		}
		if err != nil {
			return false, err
		}
		return name == instance, nil
	}
}
