package cli

import (
	"context"
	"log/slog"
	"sync"

	"github.com/jonboulle/clockwork"

	"github.com/fleetwave/fleetwave/internal/config"
	"github.com/fleetwave/fleetwave/internal/drift"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/instances"
	"github.com/fleetwave/fleetwave/internal/edge/github"
	"github.com/fleetwave/fleetwave/internal/edge/metrics"
	"github.com/fleetwave/fleetwave/internal/edge/store"
)

// driftDeps are what the drift alerts (internal/drift) are built from.
type driftDeps struct {
	Log    *slog.Logger
	Config *config.Serve
	// Inventory is the live fleet inventory (nil: serve keeps none, and there are no drift alerts).
	Inventory drift.Inventory
	Store     *store.Store
	GitHub    *github.App
	Metrics   *metrics.Metrics // nil: no gauge
	// Instances are the Argo CD instances of FLEETWAVE_ARGOCD_INSTANCES_FILE (nil: FLEETWAVE_ARGOCD_URL's one).
	Instances *instances.Set
	Clock     clockwork.Clock // nil: the real clock
}

// startDrift starts the drift alerts when FLEETWAVE_DRIFT_AFTER is set and serve keeps an inventory: the
// watcher, the fleetwave_drift_apps gauge, and with FLEETWAVE_DRIFT_REPORT_REPO the GitHub issues. The watcher
// runs until ctx ends or the returned stop is called (stop waits for it). It returns the watcher, nil when the
// alerts are off.
func startDrift(ctx context.Context, d driftDeps) (*drift.Watcher, func()) {
	cfg := d.Config
	if cfg.DriftAfter <= 0 {
		return nil, func() {}
	}
	if d.Inventory == nil {
		d.Log.Warn("drift alerts off: serve keeps no fleet inventory (no Argo CD configured)", slog.String("setting", config.EnvDriftAfter))
		return nil, func() {}
	}
	names := []string{""}
	urls := map[string]string{"": cfg.ArgoCDURL}
	if d.Instances != nil {
		names, urls = nil, map[string]string{}
		for _, in := range d.Instances.Instances() {
			names = append(names, in.Name)
			urls[in.Name] = in.URL
		}
	}
	o := drift.Options{After: cfg.DriftAfter, Clock: d.Clock, Log: d.Log}
	if cfg.DriftReportRepo != "" {
		secrets := []string{cfg.ArgoCDToken.Reveal(), cfg.WebhookSecret.Reveal()}
		rep := drift.NewReporter(&repoIssues{app: d.GitHub, repo: cfg.DriftReportRepo}, d.Store, drift.ReporterOptions{
			Repo: cfg.DriftReportRepo, Clock: d.Clock, Log: d.Log,
			ArgoCDURL: func(instance string) string { return urls[instance] },
			Redact:    func(s string) string { return config.Redact(s, secrets...) },
		})
		o.Sinks = append(o.Sinks, rep)
	}
	w := drift.NewWatcher(d.Inventory, d.Store, o)
	if d.Metrics != nil {
		d.Metrics.Drift(w.Alerts, names)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx)
	}()
	d.Log.Info("drift alerts", slog.Duration("after", cfg.DriftAfter), slog.String("reports", cfg.DriftReportRepo))
	return w, func() { cancel(); <-done }
}

// repoIssues is the GitHub client of the App's installation on the report repository, found on first use (the
// App may be installed there after serve starts).
type repoIssues struct {
	app  *github.App
	repo string

	mu     sync.Mutex
	client *github.Client
}

func (r *repoIssues) get(ctx context.Context) (*github.Client, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.client != nil {
		return r.client, nil
	}
	id, err := r.app.RepoInstallation(ctx, r.repo)
	if err != nil {
		return nil, err
	}
	c, err := r.app.Client(id)
	if err != nil {
		return nil, err
	}
	r.client = c
	return c, nil
}

func (r *repoIssues) CreateIssue(ctx context.Context, repo, title, body string) (github.Issue, error) {
	c, err := r.get(ctx)
	if err != nil {
		return github.Issue{}, err
	}
	return c.CreateIssue(ctx, repo, title, body)
}

func (r *repoIssues) EditIssue(ctx context.Context, repo string, number int, title, body string) error {
	c, err := r.get(ctx)
	if err != nil {
		return err
	}
	return c.EditIssue(ctx, repo, number, title, body)
}

func (r *repoIssues) CloseIssue(ctx context.Context, repo string, number int, comment string) error {
	c, err := r.get(ctx)
	if err != nil {
		return err
	}
	return c.CloseIssue(ctx, repo, number, comment)
}

func (r *repoIssues) OpenIssues(ctx context.Context, repo, marker string) ([]github.Issue, error) {
	c, err := r.get(ctx)
	if err != nil {
		return nil, err
	}
	return c.OpenIssues(ctx, repo, marker)
}
