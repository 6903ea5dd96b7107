package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/fleetwave/fleetwave/internal/app"
	"github.com/fleetwave/fleetwave/internal/app/executor"
	"github.com/fleetwave/fleetwave/internal/audit"
	"github.com/fleetwave/fleetwave/internal/autosync"
	"github.com/fleetwave/fleetwave/internal/checkrun"
	"github.com/fleetwave/fleetwave/internal/config"
	"github.com/fleetwave/fleetwave/internal/discover"
	"github.com/fleetwave/fleetwave/internal/drift"
	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/instances"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/livediff"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch"
	"github.com/fleetwave/fleetwave/internal/edge/gitcache"
	"github.com/fleetwave/fleetwave/internal/edge/gitfetch"
	"github.com/fleetwave/fleetwave/internal/edge/github"
	"github.com/fleetwave/fleetwave/internal/edge/github/writebudget"
	"github.com/fleetwave/fleetwave/internal/edge/metrics"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/fleetview"
	"github.com/fleetwave/fleetwave/internal/inventory"
	"github.com/fleetwave/fleetwave/internal/preview"
	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/render/isolate"
	"github.com/fleetwave/fleetwave/internal/rollout"
	"github.com/fleetwave/fleetwave/webhooks"
)

// serveFlags are the knobs of `fleetwave serve` that are not configuration of the deployment.
type serveFlags struct {
	configFile   string
	workers      int
	queueSize    int
	drainTimeout time.Duration
	logLevel     string
}

// newServeCmd builds `fleetwave serve`: the GitHub App. Configuration comes from the environment and/or a
// YAML file with the same keys (the environment wins), validated before anything starts.
func newServeCmd(deps *Deps) *cobra.Command {
	f := serveFlags{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the GitHub App: webhooks in, comments and check-runs out, rollouts executed",
		Long: `serve runs the GitHub App. Webhooks arrive at ` + webhooks.Path + `; GET /healthz answers while the process
lives, GET /readyz once it can take webhooks (and 503 while it drains on SIGTERM).

Configuration (environment, or the same keys in a YAML file given with --config or $FLEETWAVE_CONFIG;
docs/configuration.md has the table):
` + config.Help(config.ForServe, 118),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.LoadServe(deps.Getenv, f.configFile, nil)
			if err != nil {
				var ce *config.Error
				if errors.As(err, &ce) && len(ce.Problems) > 1 {
					for _, p := range ce.Problems {
						fmt.Fprintln(deps.Stderr, "fleetwave: config:", p)
					}
					return usageErr(fmt.Errorf("invalid serve configuration: %d problems", len(ce.Problems)))
				}
				return usageErr(err)
			}
			return runServe(cmd.Context(), deps, cfg, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.configFile, "config", "", "YAML file with FLEETWAVE_* keys (the environment wins); default $FLEETWAVE_CONFIG")
	fl.IntVar(&f.workers, "workers", 4, "webhook deliveries handled concurrently")
	fl.IntVar(&f.queueSize, "queue", 256, "deliveries waiting for a worker before new ones get 503 (GitHub can redeliver)")
	fl.DurationVar(&f.drainTimeout, "drain-timeout", 25*time.Second, "on SIGTERM, how long to finish queued deliveries, then (again) how long the rollout executor lets syncs in flight finish")
	fl.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	return cmd
}

// writeLimits is the budget of FLEETWAVE_GITHUB_WRITES_PER_MINUTE (config.Serve.GitHubWritesPerMinute): n a
// minute in bursts of n/3 and 8n an hour, the ratios of the default (writebudget.DefaultLimits: 60, 20, 480) —
// GitHub's secondary limits are 80 a minute and 500 an hour; GitHub Enterprise Server's are set by its
// administrator. 0 is the default.
func writeLimits(n int) []writebudget.Limit {
	if n <= 0 {
		return writebudget.DefaultLimits
	}
	return []writebudget.Limit{{N: n, Per: time.Minute, Burst: max(1, n/3)}, {N: 8 * n, Per: time.Hour, Burst: 8 * n}}
}

// runServe runs the App until ctx ends (SIGTERM), then drains: stop accepting, finish the requests in flight
// and the queued deliveries, within the drain timeout.
func runServe(ctx context.Context, deps *Deps, cfg *config.Serve, f serveFlags) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return usageErr(fmt.Errorf("--log-level %q: want debug, info, warn or error", f.logLevel))
	}
	// JSON lines for a log collector; text for a person at a terminal.
	var handler slog.Handler = slog.NewJSONHandler(deps.Stderr, &slog.HandlerOptions{Level: level})
	if isTerminal(deps.Stderr) {
		handler = slog.NewTextHandler(deps.Stderr, &slog.HandlerOptions{Level: level})
	}
	log := slog.New(handler)
	log.Info("starting", slog.Any("config", cfg))

	// One registry for the process, served on /metrics (internal/edge/metrics: bounded labels, no global state).
	mets := metrics.New()
	// Every content-creating request of an installation, from every handler and the rollout executor, takes a
	// token of its budget, so that a flood slows down before GitHub's secondary limits refuse the installation.
	budget, err := writebudget.New(writebudget.Options{Limits: writeLimits(cfg.GitHubWritesPerMinute), Observer: mets, Log: log})
	if err != nil {
		return usageErr(err)
	}
	app, err := github.NewApp(github.AppConfig{
		AppID: cfg.AppID, PrivateKey: []byte(cfg.PrivateKey.Reveal()), APIURL: cfg.GitHubAPIURL,
		Transport:   mets.Transport("github", http.DefaultTransport.(*http.Transport).Clone()),
		WriteBudget: budget,
	})
	if err != nil {
		return usageErr(err)
	}
	st, err := store.Open(ctx, cfg.Store.Reveal())
	if err != nil {
		return fmt.Errorf("opening the store %s: %w", config.RedactDSN(cfg.Store.Reveal()), err)
	}
	defer st.Close()

	mets.Store(st.Counts)
	pruneCtx, stopPruning := context.WithCancel(ctx)
	defer stopPruning()
	go pruneLoop(pruneCtx, st, log, pruneEvery)
	// The audit trail's retention (docs/audit.md): finished rollouts older than FLEETWAVE_HISTORY_RETENTION.
	go audit.RunRetention(pruneCtx, st, cfg.HistoryRetention, audit.RetentionInterval, nil, log)
	var fleetSet *instances.Set
	if file := cfg.ArgoCDInstancesFile; file != "" {
		// Several Argo CD instances (docs/instances.md): the file's problems one line each, as config's.
		set, err := instances.LoadWith(file, instances.Options{Getenv: deps.env})
		if err != nil {
			var ie *instances.Error
			if errors.As(err, &ie) && len(ie.Problems) > 1 {
				for _, p := range ie.Problems {
					fmt.Fprintln(deps.Stderr, "fleetwave: config:", p.String())
				}
				return usageErr(fmt.Errorf("invalid instances file %s (%s): %d problems", file, config.EnvArgoCDInstances, len(ie.Problems)))
			}
			return usageErr(fmt.Errorf("%s: %w", config.EnvArgoCDInstances, err))
		}
		fleetSet = set
	}
	wiring, err := wireServe(ctx, serveDeps{Log: log, Config: cfg, GitHub: app, Store: st, DrainTimeout: f.drainTimeout, Metrics: mets, Instances: fleetSet})
	if err != nil {
		return err
	}
	defer wiring.close()
	// The fleet inventory (internal/inventory, kept live by wireServe whenever Argo CD is configured) is what
	// lasting drift is decided on (internal/drift; startDrift, drift.go) and what /fleet/apps shows. Without Argo
	// CD both stay off: nil interfaces, never a nil *inventory.Inventory inside one.
	var driftInventory drift.Inventory
	var appsInventory fleetview.Inventory
	if wiring.inv != nil {
		driftInventory, appsInventory = wiring.inv, wiring.inv
	}
	_, stopDrift := startDrift(ctx, driftDeps{Log: log, Config: cfg, Inventory: driftInventory, Store: st, GitHub: app, Metrics: mets, Instances: fleetSet})
	defer stopDrift()

	hooks, err := webhooks.New([]byte(cfg.WebhookSecret.Reveal()), mets.TimeHandler(wiring.handler), serveDeliveries{st},
		webhooks.WithLogger(log), webhooks.WithWorkers(f.workers), webhooks.WithQueueSize(f.queueSize))
	if err != nil {
		return usageErr(err)
	}

	var ready atomic.Bool
	mux := http.NewServeMux()
	mux.Handle("POST "+webhooks.Path, hooks)
	mets.Webhooks(hooks.Stats)
	mux.Handle("GET /metrics", mets.Handler())
	// The fleet view, only when a token for it is configured (internal/fleetview).
	if cfg.FleetViewToken.IsSet() {
		view, err := fleetview.New(st, fleetview.Options{Token: cfg.FleetViewToken.Reveal(), ArgoCDURL: cfg.ArgoCDURL, GitHubURL: gitHubWebURL(cfg.GitHubAPIURL),
			InstanceURLs: fleetSet.URLs(), InsecureCookie: cfg.FleetViewInsecureCookie,
			Inventory: appsInventory, DriftAfter: cfg.DriftAfter,
			History: audit.Handler(st, audit.Options{GitHubURL: gitHubWebURL(cfg.GitHubAPIURL)}, nil)})
		if err != nil {
			return usageErr(fmt.Errorf("%s: %w", config.EnvFleetViewToken, err))
		}
		mux.Handle(fleetview.Prefix, view)
		log.Info("fleet view", slog.String("path", fleetview.Prefix))
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if !ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		if err := wiring.ready(r.Context()); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ready\n")
	})
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second, // a 25 MiB payload over a slow link
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		// Requests in flight at SIGTERM must finish: their context keeps ctx's values, not its cancellation.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return usageErr(fmt.Errorf("listening on %s: %w", cfg.Addr, err))
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	ready.Store(true)
	log.Info("listening", slog.String("addr", ln.Addr().String()), slog.String("webhooks", webhooks.Path))

	select {
	case err := <-served:
		_ = hooks.Shutdown(context.WithoutCancel(ctx))
		return fmt.Errorf("serving on %s: %w", cfg.Addr, err)
	case <-ctx.Done():
	}
	ready.Store(false)
	log.Info("draining", slog.Duration("timeout", f.drainTimeout))
	drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.drainTimeout)
	defer cancel()
	// Requests in flight are answered (and their deliveries queued) before the queue is drained; new
	// connections are refused from here on.
	var errs []error
	if err := srv.Shutdown(drainCtx); err != nil {
		errs = append(errs, fmt.Errorf("stopping the HTTP server: %w", err))
	}
	if err := hooks.Shutdown(drainCtx); err != nil {
		errs = append(errs, err)
	}
	stats := hooks.Stats()
	log.Info("stopped", slog.Int64("accepted", stats.Accepted), slog.Int64("handled", stats.Handled),
		slog.Int64("failed", stats.Failed), slog.Int64("dropped", stats.Dropped))
	return errors.Join(errs...)
}

// gitHubWebURL is GitHub's web address for an API URL: https://github.com for the public API (""), and
// https://<host> for GitHub Enterprise Server's https://<host>/api/v3.
func gitHubWebURL(api string) string {
	api = strings.TrimRight(api, "/")
	if api == "" || api == "https://api.github.com" {
		return "https://github.com"
	}
	return strings.TrimSuffix(api, "/api/v3")
}

// serveDeliveries adapts the store's delivery log to webhooks.DeliveryStore (and DeliveryForgetter).
type serveDeliveries struct{ st *store.Store }

func (d serveDeliveries) Seen(ctx context.Context, id string) (bool, error) {
	first, err := d.st.MarkDelivery(ctx, id)
	return !first, err
}

func (d serveDeliveries) Forget(ctx context.Context, id string) error {
	return d.st.UnmarkDelivery(ctx, id)
}

// ---------------------------------------------------------------------------------------------------------
// USE-CASE WIRING SEAM. Everything above is the App's HTTP edge; the use cases plug in here.
// ---------------------------------------------------------------------------------------------------------

// serveDeps are the process-wide adapters the use cases are built from.
type serveDeps struct {
	Log    *slog.Logger
	Config *config.Serve
	GitHub *github.App // GitHub.Client(installationID) per event; GitHub.GitCredentials for clones
	Store  *store.Store
	// DrainTimeout bounds the rollout executor's drain at shutdown (--drain-timeout; default 20s).
	DrainTimeout time.Duration
	// Metrics receives the use cases' series (Argo CD requests, the chart cache); nil: none.
	Metrics *metrics.Metrics
	// Instances are the Argo CD instances of FLEETWAVE_ARGOCD_INSTANCES_FILE (nil: one Argo CD, or none).
	Instances *instances.Set
}

// serveWiring is what the seam returns.
type serveWiring struct {
	handler webhooks.Handler                // receives every verified, first-time delivery it Handles
	ready   func(ctx context.Context) error // extra readiness checks for /readyz (nil error: ready)
	close   func()                          // releases what the use cases hold, after the queue drained
	// inv is what runs where (#37, docs/inventory.md): every app of every configured Argo CD instance, kept
	// live until serve's context ends; nil without Argo CD. The fleet page and the drift alerts read it.
	inv *inventory.Inventory
}

// wireServe builds the webhook handler from the use cases of internal/app:
//   - GitHub: one client per installation from the App (d.GitHub);
//   - clones: a gitcache under FLEETWAVE_CACHE_DIR, else next to the SQLite store ("<dir>/fleetwave-cache"),
//     else the user's cache directory; fetched with the installation token;
//   - rendering: internal/render in worker processes of this binary (internal/render/isolate; newServeRenderer
//     reads FLEETWAVE_RENDER_WORKERS, FLEETWAVE_RENDER_MEMORY, FLEETWAVE_RENDER_TIMEOUT, FLEETWAVE_RENDER_SHARE),
//     shared fairly among installations; FLEETWAVE_RENDER_BUDGET bounds the time of one change's renders
//     (preview.Input.RenderBudget, default 10m), with the settings of
//     FLEETWAVE_RENDER_SETTINGS (a render-env.yaml file) over those Argo CD reports when it is configured;
//     charts of the Helm repositories FLEETWAVE_REPOSITORIES_FILE allows are fetched (internal/edge/chartfetch, by
//     this process for its workers) and cached under the cache directory's charts/; sources in the other git
//     repositories it allows are fetched at their targetRevision (internal/edge/gitfetch, mirrors under git/);
//   - clusters: Argo CD's cluster list when FLEETWAVE_ARGOCD_URL is set, else FLEETWAVE_CLUSTERS_FILE, else each
//     repository's own cluster Secrets;
//   - live state: with Argo CD, the affected apps are also compared with their live state (internal/edge/argocd/livediff);
//   - rollouts: with Argo CD, merges and rollout commands go to the rollout executor (internal/rollout, over the
//     store and Argo CD) through internal/app/executor; internal/checkrun publishes its check-runs, written with
//     the token of the installation stored with each rollout (the one its merge came through). It runs from
//     here on (resuming unfinished rollouts) and is drained by close. Without Argo CD, app.LoggingExecutor logs merges and answers commands.
func wireServe(ctx context.Context, d serveDeps) (serveWiring, error) {
	cacheDir := serveCacheDir(d.Config.CacheDir, d.Config.Store.Reveal())
	cache, err := gitcache.New(cacheDir, gitcache.WithCredentials(d.GitHub.GitCredentials))
	if err != nil {
		return serveWiring{}, usageErr(err)
	}
	opts := []app.Option{app.WithLogger(d.Log), app.WithAppID(d.Config.AppID), app.WithAllowedOwners(d.Config.AllowedOwners...)}
	if d.Store != nil {
		// What was previewed, and each head's check runs, outlive the process and are shared by replicas.
		opts = append(opts, app.WithPreviews(d.Store))
		// The command comments and check-run buttons acted on, by their own identity (a replayed signed body
		// under a new delivery id is not acted on again), in the store's delivery log: across restarts and replicas.
		opts = append(opts, app.WithCommandLog(serveDeliveries{d.Store}))
	}
	if d.Metrics != nil {
		opts = append(opts, app.WithObserver(d.Metrics))
	}
	var ex *rollout.Executor // with Argo CD

	// The inventory's instances ("" for FLEETWAVE_ARGOCD_URL's), followed when Argo CD is configured.
	var argoClients map[string]*argocd.Client
	var settings render.Settings
	var fl *fleet
	var fileSettings render.Settings
	if d.Instances != nil {
		var err error
		if fl, ex, err = wireInstances(ctx, d); err != nil {
			return serveWiring{}, err
		}
		argoClients = fl.clients
		adapter := executor.New(ex, d.Log)
		opts = append(opts, app.WithMerges(adapter), app.WithCommands(adapter))
		if d.Store != nil {
			opts = append(opts, app.WithAutomatedSyncHolds(fl.holder(d.Store)))
		}
	} else if d.Config.ArgoCDURL != "" {
		argoOpts := argocd.Options{BaseURL: d.Config.ArgoCDURL, Token: d.Config.ArgoCDToken.Reveal(), Insecure: d.Config.ArgoCDInsecure}
		if d.Metrics != nil {
			argoOpts.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return d.Metrics.Transport("argocd", rt) }
		}
		argo, err := argocd.New(argoOpts)
		if err != nil {
			return serveWiring{}, usageErr(fmt.Errorf("argo cd %s: %w", d.Config.ArgoCDURL, err))
		}
		argoClients = map[string]*argocd.Client{"": argo}
		// Render as the Argo CD release the server runs (FLEETWAVE_RENDER_SETTINGS' argocdVersion wins).
		settings.ArgoCDVersion = detectArgoCDVersion(ctx, argo, d.Log)
		opts = append(opts, app.WithClusters(argoClusters(argo)),
			app.WithArgoCD(livediff.New(argo, livediff.Options{Server: d.Config.ArgoCDURL}).Ports()),
			app.WithArgoCDURL(d.Config.ArgoCDURL),
			// Pull-request heads rendered through Argo CD: only the repositories named (never forks; docs/security.md).
			app.WithArgoCDRenderHead(d.Config.ArgoCDRenderHeadRepos...))

		// A rollout recorded before the store kept its installation: GitHub says which one covers the repository
		// (GET /repos/{o}/{r}/installation).
		reporter := executor.NewReporter(func(id int64) (executor.CheckRuns, error) { return d.GitHub.Client(id) },
			d.GitHub.RepoInstallation)
		exOpts := []rollout.Option{rollout.WithLogger(d.Log)}
		if name := d.Config.ReplicaName; name != "" {
			exOpts = append(exOpts, rollout.WithOwner(name))
		}
		ex = rollout.New(d.Store, argo, checkrun.NewPublisher(reporter), exOpts...)
		adapter := executor.New(ex, d.Log)
		opts = append(opts, app.WithMerges(adapter), app.WithCommands(adapter))
		if d.Store != nil {
			// The plan check switches automated sync off before the merge can land (automatedSync:
			// disable-during-rollout): the rollout of the merge takes the holds over.
			opts = append(opts, app.WithAutomatedSyncHolds(&autosync.Holder{Argo: argo, Store: d.Store}))
		}
	} else if file := d.Config.ClustersFile; file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return serveWiring{}, usageErr(fmt.Errorf("reading clusters file: %w", err))
		}
		cs, err := discover.ParseClusters(file, data)
		if err != nil {
			return serveWiring{}, usageErr(err)
		}
		opts = append(opts, app.WithClusters(func(context.Context) ([]discover.Cluster, error) { return cs, nil }))
	}
	if file := d.Config.RenderSettingsFile; file != "" {
		s, err := render.LoadSettings(file)
		if err != nil {
			return serveWiring{}, usageErr(fmt.Errorf("%s: %w", config.EnvRenderSettings, err))
		}
		settings = overlaySettings(settings, s)
		fileSettings = s
	}
	opts = append(opts, app.WithSettings(settings))
	if fl != nil {
		// Each instance renders with its own release and settings; FLEETWAVE_RENDER_SETTINGS wins over them.
		opts = append(opts, app.WithInstances(fl.appInstances(fileSettings, d.Log)))
	}

	ghFactory := func(id int64) (app.GitHub, error) { return d.GitHub.Client(id) }
	var charts *chartfetch.Fetcher
	var git *gitfetch.Fetcher
	if d.Config.Repositories != nil && d.Config.Repositories.Len() > 0 {
		// Charts and other git repositories are cached next to the clones, bounded, and survive restarts.
		if charts, err = newChartFetcher(d.Config.Repositories, cacheDir); err != nil {
			return serveWiring{}, usageErr(err)
		}
		if git, err = newGitFetcher(d.Config.Repositories, cacheDir); err != nil {
			return serveWiring{}, usageErr(err)
		}
		if d.Metrics != nil {
			d.Metrics.Charts(charts.Requests, []string{"index", "index-304", "archive", "oci-tags", "oci-manifest", "oci-blob", "cache-hit"})
		}
	}
	// PR content renders in worker processes, each capped in memory and killed at the time cap (isolate).
	renderer, closeRenderer, renderMode, err := newServeRenderer(d.Config.Render, d.Log, render.Options{Charts: charts, Git: git})
	if err != nil {
		return serveWiring{}, usageErr(err)
	}
	if b := d.Config.Render.Budget; b != 0 {
		opts = append(opts, app.WithRenderBudget(b))
	}
	if pool, ok := renderer.(*isolate.Pool); ok {
		if err := pool.Prestart(ctx); err != nil {
			closeRenderer()
			return serveWiring{}, fmt.Errorf("render workers: %w", err)
		}
		opts = append(opts, app.WithTenantRenderers(func(tenant, group string) preview.Renderer { return pool.For(tenant, group) }))
	}
	a, err := app.New(ghFactory, cache, renderer, opts...)
	if err != nil {
		closeRenderer()
		return serveWiring{}, err
	}
	execName, closeFn := "none (merges and rollout commands are logged)", func() {}
	if ex != nil {
		execName = "rollout (owner " + ex.Owner() + ")"
		// Run outlives ctx (SIGTERM): the executor is drained by close, after the webhook queue, with Stop.
		runCtx, cancelRun := context.WithCancel(context.WithoutCancel(ctx))
		ran := make(chan struct{})
		go func() {
			defer close(ran)
			if err := ex.Run(runCtx); err != nil && !errors.Is(err, context.Canceled) {
				d.Log.Error("rollout executor stopped", slog.Any("error", err))
			}
		}()
		closeFn = func() {
			// Stop lets the syncs in flight finish and releases the leases; past the bound, what is still in
			// flight is abandoned as in a crash and reconciled with Argo CD at the next start.
			drain := d.DrainTimeout
			if drain <= 0 {
				drain = 20 * time.Second
			}
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drain)
			defer cancel()
			if err := ex.Stop(sctx); err != nil {
				d.Log.Warn("rollout executor not drained: the next start reconciles what was in flight", slog.Any("error", err))
			}
			cancelRun()
			<-ran
		}
	}
	wired := []any{slog.String("cache", cache.Dir()), slog.Bool("argocd", d.Config.ArgoCDURL != "" || fl != nil)}
	if fl != nil {
		wired = append(wired, slog.String("argocd_instances", strings.Join(fl.set.Names(), ",")))
	}
	d.Log.Info("use cases wired", append(wired, slog.String("executor", execName), slog.String("render", renderMode))...)
	closeUseCases := closeFn
	closeFn = func() {
		closeUseCases()
		closeRenderer()
	}
	var inv *inventory.Inventory
	if argoClients != nil {
		// The followers stop with ctx (SIGTERM), or at close; close waits for their last since times to be written.
		var since inventoryStore
		if d.Store != nil {
			since = d.Store
		}
		invCtx, stopInventory := context.WithCancel(ctx)
		var waitInventory func()
		inv, waitInventory = startInventory(invCtx, argoClients, since, d.Metrics, d.Log)
		closeBefore := closeFn
		closeFn = func() {
			closeBefore()
			stopInventory()
			waitInventory()
		}
	}
	return serveWiring{
		handler: a,
		ready: func(context.Context) error {
			if _, err := os.Stat(cache.Dir()); err != nil {
				return fmt.Errorf("clone cache: %w", err)
			}
			return nil
		},
		close: closeFn,
		inv:   inv,
	}, nil
}

// serveCacheDir chooses the clone cache directory: explicit, else next to the SQLite database, else the user's
// cache directory (PostgreSQL deployments), else the temporary directory.
func serveCacheDir(explicit, storeDSN string) string {
	if explicit != "" {
		return explicit
	}
	if scheme, rest, ok := strings.Cut(storeDSN, "://"); ok && (strings.EqualFold(scheme, "sqlite") || strings.EqualFold(scheme, "sqlite3")) && rest != "" {
		return filepath.Join(filepath.Dir(rest), "fleetwave-cache")
	}
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "fleetwave")
	}
	return filepath.Join(os.TempDir(), "fleetwave-cache")
}

// argoClusters lists Argo CD's clusters as discovery sees them (name, server, project, labels, annotations).
func argoClusters(c *argocd.Client) app.ClusterSource {
	return func(ctx context.Context) ([]discover.Cluster, error) {
		list, err := c.ListClusters(ctx)
		if err != nil {
			return nil, err
		}
		out := make([]discover.Cluster, 0, len(list))
		for _, cl := range list {
			// The version and API list Argo CD's controller discovered and renders this destination with.
			out = append(out, discover.Cluster{Name: cl.Name, Server: cl.Server, Project: cl.Project, Labels: cl.Labels, Annotations: cl.Annotations,
				KubeVersion: cl.Info.ServerVersion, APIVersions: cl.Info.APIVersions})
		}
		return out, nil
	}
}

// overlaySettings returns base with the fields set in over replacing its own.
func overlaySettings(base, over render.Settings) render.Settings {
	if over.KubeVersion != "" {
		base.KubeVersion = over.KubeVersion
	}
	if len(over.APIVersions) > 0 {
		base.APIVersions = over.APIVersions
	}
	if over.AppLabelKey != "" {
		base.AppLabelKey = over.AppLabelKey
	}
	if over.TrackingMethod != "" {
		base.TrackingMethod = over.TrackingMethod
	}
	if over.InstallationID != "" {
		base.InstallationID = over.InstallationID
	}
	if over.KustomizeBuildOptions != "" {
		base.KustomizeBuildOptions = over.KustomizeBuildOptions
	}
	if over.ControlPlaneNamespace != "" {
		base.ControlPlaneNamespace = over.ControlPlaneNamespace
	}
	if over.ArgoCDVersion != "" {
		base.ArgoCDVersion = over.ArgoCDVersion
	}
	return base
}

// wireInstances connects serve to every Argo CD instance of the instances file: a client each (its requests
// counted in the metrics as service "argocd" with the instance as a label, a set as bounded as the file), and the rollout executor
// syncing each app through its own instance within its maxSyncs.
func wireInstances(_ context.Context, d serveDeps) (*fleet, *rollout.Executor, error) {
	var wrap func(string, http.RoundTripper) http.RoundTripper
	if d.Metrics != nil {
		wrap = func(name string, rt http.RoundTripper) http.RoundTripper {
			return d.Metrics.ArgoCDTransport(name, rt)
		}
	}
	fl, err := newFleet(d.Instances, wrap)
	if err != nil {
		return nil, nil, usageErr(fmt.Errorf("%s: %w", config.EnvArgoCDInstances, err))
	}
	reporter := executor.NewReporter(func(id int64) (executor.CheckRuns, error) { return d.GitHub.Client(id) },
		d.GitHub.RepoInstallation)
	exOpts := append([]rollout.Option{rollout.WithLogger(d.Log)}, fl.executorOptions(nil)...)
	if name := d.Config.ReplicaName; name != "" {
		exOpts = append(exOpts, rollout.WithOwner(name))
	}
	return fl, rollout.New(d.Store, nil, checkrun.NewPublisher(reporter), exOpts...), nil
}
