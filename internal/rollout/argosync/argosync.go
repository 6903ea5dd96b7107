package argosync

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/health"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/jonboulle/clockwork"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
)

// API is the part of Argo CD's API the orchestrator uses. *argocd.Client implements it.
type API interface {
	GetApplication(ctx context.Context, name string, refresh v1alpha1.RefreshType) (*v1alpha1.Application, error)
	Sync(ctx context.Context, name string, req argocd.SyncRequest) (*v1alpha1.Application, error)
	Watch(ctx context.Context, q argocd.WatchQuery, h argocd.WatchHandler) error
}

// Outcome is the verdict for one app.
type Outcome string

const (
	// OutcomeSynced: the bot synced the app and saw it applied, reconciled and Healthy.
	OutcomeSynced Outcome = "synced"
	// OutcomeSkipped: the app already was Synced and Healthy at the revision.
	OutcomeSkipped Outcome = "skipped"
	// OutcomeWaited: an operation already in progress applied the revision; the bot waited for it.
	OutcomeWaited Outcome = "waited"
	// OutcomeFailed: the revision could not be brought to a Healthy app; Message says why.
	OutcomeFailed Outcome = "failed"
	// OutcomeDryRun: nothing was changed; Message says what would be done.
	OutcomeDryRun Outcome = "dry-run"
)

// Result is what happened to one app.
type Result struct {
	App      string
	Outcome  Outcome
	Revision string // the planned revision
	Message  string
	// Start and End bracket the bot's work on the app (its clock).
	Start, End time.Time
	// TriggeredAt is when the bot sent its sync request; zero when it sent none.
	TriggeredAt time.Time
	// OperationStartedAt and OperationFinishedAt are the observed operation's timestamps (Argo CD's clock,
	// second precision); zero when no operation was observed.
	OperationStartedAt, OperationFinishedAt time.Time
	SyncStatus                              v1alpha1.SyncStatusCode
	Health                                  health.HealthStatusCode
	// APICalls counts the requests the bot made for this app (retries inside the client not included).
	APICalls int
}

// Duration is End - Start.
func (r Result) Duration() time.Duration { return r.End.Sub(r.Start) }

// Options tune the orchestrator. The zero value is usable.
type Options struct {
	// Concurrency bounds the apps worked on at once by Run (default 10).
	Concurrency int
	// DryRun changes nothing: each app's result says what would be done.
	DryRun bool
	// Prune is passed to the sync.
	Prune bool
	// RepoURL names the repository the revision belongs to; needed for multi-source apps (the sources with this
	// repoURL get the revision).
	RepoURL string
	// Selector restricts the shared watch stream (the rollout's label selector); empty watches every app.
	Selector string
	// Timeout bounds the work on one app (default 15m).
	Timeout time.Duration
	// ResolveTimeout bounds the wait for the app's targetRevision to resolve to the revision (default 2m).
	// After it, the app is synced to the revision explicitly (Argo CD then shows it OutOfSync), unless
	// RequireResolved.
	ResolveTimeout  time.Duration
	RequireResolved bool
	// Branch, when set, is the branch the revision is the tip of (the repository's default branch): an app whose
	// targetRevision (of its sources from RepoURL, for a multi-source app) does not resolve there — anything but
	// empty, HEAD, Branch or refs/heads/<Branch>: another branch, a tag, a fixed commit — is not synced to the
	// revision; it ends skipped, "not rolled out: tracks <rev>, not <Branch>".
	Branch string
	// StallTimeout: when the stream said nothing about a waited-on app for this long, the app is read once
	// (Argo CD drops events for slow streams); the interval doubles up to 5m (default 30s).
	StallTimeout time.Duration
	// ClockSkew widens the "operation started after the bot's request" check for a bot clock ahead of Argo CD's
	// (default 2s). See doc.go.
	ClockSkew time.Duration
	// LostAnswerGrace is how long, after a sync request whose answer never came (a 5xx or a dropped connection
	// after the request was sent), the app is watched for an operation the request may have started before it
	// is judged again or re-sent (default 15s): Argo CD may have acted, and its API may still show the app as it
	// was before the request for a while (its cache lags: Progressive Syncs' race, argo-cd #29410).
	LostAnswerGrace time.Duration
	// MaxSyncAttempts bounds the sync requests per app when other operations keep getting in the way
	// (default 2).
	MaxSyncAttempts int
	// LostSyncRetries is how many times a sync request that vanished without starting an operation is sent again
	// before the app fails (0: never; a vanished request is then waited for until Timeout, as before). An
	// argocd-agent principal can answer a sync request and lose it before the agent starts it (argocd-agent #841,
	// #809): the executor enables it for instances marked agent. See doc.go, "A sync that never started".
	LostSyncRetries int
	// LostSyncGrace is how long after an accepted sync request the app may show no operation started for it
	// before a fresh read decides whether the request vanished (default 30s); it doubles with each re-request.
	LostSyncGrace time.Duration
	// OnLostSync runs before each re-request of a vanished sync (requests: how many were sent so far; reason: what
	// the app showed). The rollout executor logs it and records an event there; an error cancels the re-request
	// and fails the app.
	OnLostSync func(ctx context.Context, app, revision string, requests int, reason string) error
	// Clock is the bot's clock (default real).
	Clock clockwork.Clock
	// OnTrigger runs just before the sync request of an app. The rollout executor persists its intent there;
	// an error cancels the sync and fails the app.
	OnTrigger func(ctx context.Context, app, revision string) error
	// OnOperationDone runs once an app's operation finished and applied the revision, before the wait for its
	// health: Argo CD's controller no longer works on the app's sync (an operation processor is free), though the
	// app is not done yet. The rollout executor frees the app's place in its instance's budget there.
	OnOperationDone func(ctx context.Context, app string)
	// OnResult is called as each app finishes (from the app's goroutine).
	OnResult func(Result)
}

func (o Options) withDefaults() Options {
	if o.Concurrency <= 0 {
		o.Concurrency = 10
	}
	if o.Timeout <= 0 {
		o.Timeout = 15 * time.Minute
	}
	if o.ResolveTimeout <= 0 {
		o.ResolveTimeout = 2 * time.Minute
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = 30 * time.Second
	}
	if o.ClockSkew == 0 {
		o.ClockSkew = 2 * time.Second
	}
	if o.ClockSkew < 0 {
		o.ClockSkew = 0
	}
	if o.LostAnswerGrace <= 0 {
		o.LostAnswerGrace = 15 * time.Second
	}
	if o.LostSyncGrace <= 0 {
		o.LostSyncGrace = 30 * time.Second
	}
	if o.MaxSyncAttempts <= 0 {
		o.MaxSyncAttempts = 2
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	return o
}

// Session shares one application stream among the apps synced through it. The rollout executor keeps one per
// rollout and calls SyncApp for each app; Run is the one-shot form.
type Session struct {
	api    API
	opts   Options
	w      *watcher
	cancel context.CancelFunc
	done   chan struct{}
}

// streamOmits are the parts of an Application the session's stream asks Argo CD to leave out. Nothing waits on
// them, and they grow with the app: an entry per resource in status.resources and in the last sync's result
// (a few hundred bytes each), plus managedFields and the summary's image list. On a fleet of large apps they
// are most of every event, which the stream carries for each write of each app and the session keeps for the
// newest version of each. Whoever needs them reads the app (a GET answers it whole). Argo CD filters by
// decoding each message into a map and encoding it again, a cost on its side that its UI's own watch pays too,
// for a small fraction of the bytes on the wire and in the bot.
func streamOmits() []string {
	return []string{"metadata.managedFields", "status.resources", "status.operationState.syncResult.resources", "status.summary"}
}

// NewSession opens the shared stream. Close it when done.
func NewSession(ctx context.Context, api API, opts Options) *Session {
	opts = opts.withDefaults()
	wctx, cancel := context.WithCancel(ctx)
	s := &Session{api: api, opts: opts, w: newWatcher(), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		err := api.Watch(wctx, argocd.WatchQuery{Selector: opts.Selector, OmitFields: streamOmits()}, argocd.WatchHandler{
			OnRawEvent: s.w.onEvent,
			OnConnect:  s.w.onConnect,
		})
		if err != nil && !errors.Is(err, context.Canceled) {
			// The stream is refused for good (e.g. RBAC): waits fall back to reading the apps.
			s.w.stop()
		}
	}()
	return s
}

// WaitConnected waits until the stream is established (or failed for good), at most d.
func (s *Session) WaitConnected(ctx context.Context, d time.Duration) {
	t := s.opts.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.w.connected:
	case <-t.Chan():
	case <-ctx.Done():
	}
}

// Close ends the stream.
func (s *Session) Close() {
	s.cancel()
	<-s.done
}

// SyncApp brings one app to revision (Fastly's algorithm, see doc.go) and returns the verdict. app is the
// app's last known state (e.g. from a list); it is re-read when needed.
func (s *Session) SyncApp(ctx context.Context, app v1alpha1.Application, revision string) Result {
	r := &appRun{s: s, name: app.Name, res: Result{App: app.Name, Revision: revision, Start: s.opts.Clock.Now()}}
	if app.Namespace != "" {
		r.qname = app.Namespace + "/" + app.Name
	} else {
		r.qname = app.Name
	}
	r.sub = s.w.subscribe(app.Name, app.DeepCopy())
	defer r.sub.close()
	r.run(ctx, revision)
	r.res.End = s.opts.Clock.Now()
	if s.opts.OnResult != nil {
		s.opts.OnResult(r.res)
	}
	return r.res
}

// Run brings every app to revision, at most Options.Concurrency at a time, over one shared stream. Results are
// in the order of apps.
func Run(ctx context.Context, api API, apps []v1alpha1.Application, revision string, opts Options) []Result {
	s := NewSession(ctx, api, opts)
	defer s.Close()
	s.WaitConnected(ctx, 10*time.Second)
	results := make([]Result, len(apps))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(s.opts.Concurrency, len(apps)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				results[i] = s.SyncApp(ctx, apps[i], revision)
			}
		}()
	}
	for i := range apps {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return results
}

// Summary counts results per outcome.
func Summary(results []Result) map[Outcome]int {
	out := map[Outcome]int{}
	for _, r := range results {
		out[r.Outcome]++
	}
	return out
}
