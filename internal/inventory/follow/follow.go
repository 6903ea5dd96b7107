// Package follow keeps an inventory.Inventory live (#37): one Follower per Argo CD instance lists the instance's
// Applications, then follows its application stream (GET /api/v1/stream/applications), so that the cost is
// that of the changes, not of the apps. A gap in the stream (a dropped connection, the server restarted) is
// closed by listing again: the list replaces the instance's apps, so apps deleted meanwhile go. While the
// instance cannot be read its apps are kept, marked stale (inventory.Instance.Synced false, with the error).
// Since times are written to the store when an app's status changes, in batches, and read back at start, so
// that a restart keeps "OutOfSync since 09:12".
package follow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/cenkalti/backoff/v4"
	"github.com/jonboulle/clockwork"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/inventory"
)

// Source is what a follower reads of one Argo CD instance (*argocd.Client).
type Source interface {
	ListApplications(ctx context.Context, q argocd.ListQuery) (*v1alpha1.ApplicationList, error)
	Watch(ctx context.Context, q argocd.WatchQuery, h argocd.WatchHandler) error
	ListClusters(ctx context.Context) ([]v1alpha1.Cluster, error)
}

// SinceStore keeps since times across restarts (*store.Store).
type SinceStore interface {
	ListAppSince(ctx context.Context, instance string) ([]store.AppSince, error)
	PutAppSince(ctx context.Context, rows []store.AppSince) error
	DeleteAppSince(ctx context.Context, apps []store.AppKey) error
}

// OmitFields are the parts of an Application the stream leaves out: the inventory reads none of them, and
// status.resources and status.history are most of a large app's bytes (docs/inventory.md has the figures).
var OmitFields = []string{"metadata.managedFields", "status.resources", "status.history",
	"status.operationState.syncResult.resources", "status.operationState.operation.sync.resources"}

// Config configures a Follower.
type Config struct {
	// Instance is the instance's name ("" for the one Argo CD of a fleet configured with FLEETWAVE_ARGOCD_URL).
	Instance  string
	Source    Source
	Inventory *inventory.Inventory
	// Store keeps since times; nil keeps them in memory only.
	Store SinceStore
	// Marks says which rollout last planned each app (App.Rollout), read every MarkRefresh (default 30s) and
	// on RefreshMarks; nil: no marks.
	Marks       MarkStore
	MarkRefresh time.Duration
	// Clock runs the follower's timers (default the real clock); the inventory has its own.
	Clock clockwork.Clock
	// ClusterRefresh is how often the instance's clusters (names, labels) are read again (default 5m); an app
	// naming a cluster not known yet has them read sooner, at most once per ClusterRetry (default 30s).
	ClusterRefresh time.Duration
	ClusterRetry   time.Duration
	// FlushInterval is how often changed since times are written, in one batch (default 2s).
	FlushInterval time.Duration
	// RetryInitial and RetryMax shape the backoff between attempts to list again (defaults 1s and 30s).
	RetryInitial, RetryMax time.Duration
	Log                    *slog.Logger
}

// Follower keeps one instance's apps in the inventory. Run it once.
type Follower struct {
	cfg Config

	// clustersMu guards the clusters and the wish to read them again.
	clustersMu    sync.Mutex
	byServer      map[string]v1alpha1.Cluster
	byName        map[string]v1alpha1.Cluster
	clustersAt    time.Time
	clustersAsked chan struct{}

	// sinceMu guards what the store holds (as last written or read) and the apps changed since.
	sinceMu  sync.Mutex
	restored map[inventory.Key]store.AppSince // read at start, consumed by the first list
	written  map[inventory.Key]store.AppSince
	dirty    map[inventory.Key]struct{}

	marksMu    sync.Mutex
	marks      map[inventory.Key]inventory.Rollout
	marksAsked chan struct{}
}

// New returns a follower of cfg.Instance.
func New(cfg Config) *Follower {
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.ClusterRefresh <= 0 {
		cfg.ClusterRefresh = 5 * time.Minute
	}
	if cfg.ClusterRetry <= 0 {
		cfg.ClusterRetry = 30 * time.Second
	}
	if cfg.MarkRefresh <= 0 {
		cfg.MarkRefresh = 30 * time.Second
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = 2 * time.Second
	}
	if cfg.RetryInitial <= 0 {
		cfg.RetryInitial = time.Second
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = 30 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Follower{cfg: cfg, clustersAsked: make(chan struct{}, 1), marksAsked: make(chan struct{}, 1), written: map[inventory.Key]store.AppSince{},
		dirty: map[inventory.Key]struct{}{}}
}

// Run follows the instance until ctx ends, then writes the since times still pending and returns nil. It
// returns an error only when the stream is refused for good (a 4xx other than a throttle: a token that may
// not read applications), after marking the instance so.
func (f *Follower) Run(ctx context.Context) error {
	f.restore(ctx)
	var wg sync.WaitGroup
	bg, stop := context.WithCancel(ctx)
	wg.Add(3)
	go func() { defer wg.Done(); f.flushLoop(bg) }()
	go func() { defer wg.Done(); f.clusterLoop(bg) }()
	go func() { defer wg.Done(); f.markLoop(bg) }()
	defer func() {
		stop()
		wg.Wait()
		// ctx has ended: the last batch gets a context of its own, short.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		f.flush(fctx)
	}()

	b := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(f.cfg.RetryInitial),
		backoff.WithMaxInterval(f.cfg.RetryMax),
		backoff.WithRandomizationFactor(0.5),
		backoff.WithMaxElapsedTime(0),
	)
	var down time.Time // since when the instance cannot be read
	for {
		listed, err := f.session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if listed {
			b.Reset()
			down = time.Time{}
		}
		if down.IsZero() {
			down = f.cfg.Clock.Now()
		}
		f.cfg.Inventory.SetInstance(inventory.Instance{Name: f.cfg.Instance, Since: down.UTC(), Error: err.Error()})
		f.cfg.Log.Warn("inventory: Argo CD instance's applications not followed, listing again", "instance", f.cfg.Instance, "err", err)
		var ae *argocd.APIError
		if errors.As(err, &ae) && ae.HTTPStatus >= 400 && ae.HTTPStatus < 500 && ae.HTTPStatus != 429 && ae.HTTPStatus != 408 {
			return fmt.Errorf("following the applications of Argo CD instance %q: %w", f.cfg.Instance, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-f.cfg.Clock.After(b.NextBackOff()):
		}
	}
}

// session lists the apps and follows the stream until it has a gap; listed reports whether the list arrived.
// The stream is opened before the list is read and its events are held until the list is in the inventory:
// those the list already holds (resourceVersion not after the list's) are dropped, the others applied.
func (f *Follower) session(ctx context.Context) (listed bool, err error) {
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s := &stream{f: f, cancel: cancel}
	done := make(chan error, 1)
	go func() {
		// ResourceVersion "0": no initial snapshot (the list is the snapshot), every change after it.
		err := f.cfg.Source.Watch(sctx, argocd.WatchQuery{ResourceVersion: "0", OmitFields: OmitFields}, argocd.WatchHandler{
			OnRawEvent:   s.event,
			OnDisconnect: func(err error) { cancel(fmt.Errorf("application stream: %w", err)) },
		})
		if err == nil {
			err = errors.New("application stream ended")
		}
		cancel(err) // a list still running is of no use
		done <- err
	}()
	if err := f.refreshClusters(sctx, true); err != nil {
		f.cfg.Log.Warn("inventory: reading Argo CD clusters", "instance", f.cfg.Instance, "err", err)
	}
	list, err := f.cfg.Source.ListApplications(sctx, argocd.ListQuery{})
	if err == nil {
		s.listed(list)
	} else {
		cancel(err)
	}
	<-done
	if ctx.Err() != nil {
		return s.isListed(), ctx.Err()
	}
	// The first cause wins: the disconnect, the failed list, or the stream's end.
	return s.isListed(), context.Cause(sctx)
}

// stream is one session's handling of the stream's events.
type stream struct {
	f      *Follower
	cancel context.CancelCauseFunc

	mu     sync.Mutex
	ready  bool            // the list is in the inventory
	listRV int64           // the list's resourceVersion
	held   []*argocd.Event // events before the list
}

func (s *stream) isListed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ready
}

// listed puts the list in the inventory and applies the events held meanwhile that are newer.
func (s *stream) listed(list *v1alpha1.ApplicationList) {
	f := s.f
	s.mu.Lock()
	defer s.mu.Unlock()
	rv, _ := argocd.ResourceVersion(list.ResourceVersion)
	apps := make([]inventory.App, 0, len(list.Items))
	f.sinceMu.Lock()
	restored := f.restored
	f.restored = nil
	f.sinceMu.Unlock()
	for i := range list.Items {
		a := &list.Items[i]
		if n, ok := argocd.ResourceVersion(a.ResourceVersion); ok && n > rv {
			rv = n // a list without its own resourceVersion: its newest app's
		}
		app := f.app(a)
		if r, ok := restored[app.Key]; ok {
			if r.Sync == app.Sync && app.SyncSince.IsZero() {
				app.SyncSince = r.SyncSince
			}
			if r.Health == app.Health && app.HealthSince.IsZero() {
				app.HealthSince = r.HealthSince
			}
		}
		apps = append(apps, app)
	}
	f.cfg.Inventory.Replace(f.cfg.Instance, apps)
	s.listRV = rv
	s.ready = true
	f.replaced(apps)
	held := s.held
	s.held = nil
	for _, ev := range held {
		s.applyLocked(ev)
	}
}

// event handles one event of the stream (on the stream's goroutine).
func (s *stream) event(ev *argocd.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ready {
		s.held = append(s.held, ev)
		return
	}
	s.applyLocked(ev)
}

func (s *stream) applyLocked(ev *argocd.Event) {
	f := s.f
	if n, ok := argocd.ResourceVersion(ev.ResourceVersion); ok && n <= s.listRV {
		return // the list holds this or newer
	}
	k := inventory.Key{Instance: f.cfg.Instance, Namespace: ev.Namespace, Name: ev.Name}
	if ev.Type == watch.Deleted {
		if f.cfg.Inventory.Remove(k) {
			f.markDirty(k)
		}
		return
	}
	a, err := ev.Application()
	if err != nil {
		s.cancel(fmt.Errorf("decoding application stream message: %w", err))
		return
	}
	if f.cfg.Inventory.Apply(f.app(a)) {
		f.markDirty(k)
	}
}

// app is what the inventory keeps of a, with its cluster's name and labels.
func (f *Follower) app(a *v1alpha1.Application) inventory.App {
	out := inventory.FromApplication(f.cfg.Instance, a)
	out.Rollout = f.mark(out.Key)
	f.clustersMu.Lock()
	defer f.clustersMu.Unlock()
	c, ok := f.byServer[a.Spec.Destination.Server]
	if !ok && a.Spec.Destination.Server == "" {
		c, ok = f.byName[a.Spec.Destination.Name]
	}
	if ok {
		out.ClusterName = c.Name
		out.ClusterLabels = c.Labels
	} else if out.Cluster != "" {
		select {
		case f.clustersAsked <- struct{}{}:
		default:
		}
	}
	return out
}

// refreshClusters reads the instance's clusters, unless they were read less than ClusterRetry ago and force
// is false. Apps whose cluster's name or labels changed are applied again.
func (f *Follower) refreshClusters(ctx context.Context, force bool) error {
	f.clustersMu.Lock()
	recent := !f.clustersAt.IsZero() && f.cfg.Clock.Since(f.clustersAt) < f.cfg.ClusterRetry
	f.clustersMu.Unlock()
	if recent && !force {
		return nil
	}
	cs, err := f.cfg.Source.ListClusters(ctx)
	f.clustersMu.Lock()
	f.clustersAt = f.cfg.Clock.Now()
	if err != nil {
		f.clustersMu.Unlock()
		return err
	}
	byServer := make(map[string]v1alpha1.Cluster, len(cs))
	byName := make(map[string]v1alpha1.Cluster, len(cs))
	for _, c := range cs {
		c = v1alpha1.Cluster{Server: c.Server, Name: c.Name, Labels: c.Labels}
		byServer[c.Server] = c
		byName[c.Name] = c
	}
	same := len(byServer) == len(f.byServer)
	for s, c := range byServer {
		if o, ok := f.byServer[s]; !ok || o.Name != c.Name || !labelsEqual(o.Labels, c.Labels) {
			same = false
		}
	}
	f.byServer, f.byName = byServer, byName
	f.clustersMu.Unlock()
	if same {
		return nil
	}
	// Rare (a cluster added or relabelled): every app of the instance is looked at once.
	for _, a := range f.cfg.Inventory.Snapshot().Apps {
		if a.Instance != f.cfg.Instance {
			continue
		}
		c, ok := byServer[a.Cluster]
		if !ok {
			c, ok = byName[a.Cluster]
		}
		if !ok || (c.Name == a.ClusterName && labelsEqual(c.Labels, a.ClusterLabels)) {
			continue
		}
		a.ClusterName, a.ClusterLabels = c.Name, c.Labels
		f.cfg.Inventory.Apply(a)
	}
	return nil
}

func (f *Follower) clusterLoop(ctx context.Context) {
	t := f.cfg.Clock.NewTicker(f.cfg.ClusterRefresh)
	defer t.Stop()
	for {
		force := false
		select {
		case <-ctx.Done():
			return
		case <-t.Chan():
			force = true
		case <-f.clustersAsked:
		}
		if err := f.refreshClusters(ctx, force); err != nil && ctx.Err() == nil {
			f.cfg.Log.Warn("inventory: reading Argo CD clusters", "instance", f.cfg.Instance, "err", err)
		}
	}
}

func labelsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
