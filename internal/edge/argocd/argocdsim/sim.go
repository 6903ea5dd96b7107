package argocdsim

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/health"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	gojson "github.com/goccy/go-json"
	"github.com/jonboulle/clockwork"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
)

// Config shapes the simulated Argo CD. The zero value is a fast, fault-free server on the real clock.
type Config struct {
	// Clock drives every delay; inject a fake (or run inside testing/synctest) so tests never sleep.
	Clock clockwork.Clock
	// Seed makes the random faults reproducible.
	Seed uint64
	// Namespace is the control-plane namespace apps live in by default ("argocd").
	Namespace string
	// Token, when set, is the only bearer token accepted (Unauthenticated otherwise).
	Token string
	// Username is recorded as operation.initiatedBy.username (default "admin").
	Username string
	// Users are further accounts: bearer token → username, accepted besides Token and recorded as
	// initiatedBy.username of the syncs they request (someone syncing by hand).
	Users map[string]string

	// SyncDuration is how long an operation stays Running (default 1s); Behavior overrides it per app.
	SyncDuration time.Duration
	// OperationStartDelay is the controller's delay before it picks up a requested operation.
	OperationStartDelay time.Duration
	// ReconcileDelay is how long after a finished operation, a spec change or a refresh request the app is
	// reconciled (default 100ms).
	ReconcileDelay time.Duration
	// ProgressingFor keeps health Progressing that long after a successful sync before it settles.
	ProgressingFor time.Duration
	// TerminateDelay is how long a Terminating operation takes to stop (default 100ms).
	TerminateDelay time.Duration
	// ResyncPeriod reconciles every app periodically (Argo CD's default is 180s); 0 disables.
	ResyncPeriod time.Duration

	// FailureRate is the probability an operation ends Failed; DegradationRate that a successful sync leaves the
	// app Degraded.
	FailureRate     float64
	DegradationRate float64

	// APILatency delays every API answer; LatencySpikeRate of them get LatencySpike more.
	APILatency       time.Duration
	LatencySpikeRate float64
	LatencySpike     time.Duration
	// ErrorRate of requests get 503 Unavailable without being processed.
	ErrorRate float64
	// LostResponseRate of non-stream requests are processed but answered 502 (a proxy losing the answer).
	LostResponseRate float64
	// StreamDropMean, when set, drops each watch stream after a random (exponential) lifetime of this mean.
	StreamDropMean time.Duration
	// KeepaliveInterval of server-sent event streams (default 15s, as argoproj/pkg grpc/http).
	KeepaliveInterval time.Duration

	// StaleStatusFor reproduces Progressive Syncs' race: for this long after a sync or rollback request, the app
	// is shown as it was before the request, reporting Synced and Healthy with a fresh reconciledAt.
	StaleStatusFor time.Duration

	// Manifests renders an app at a revision (JSON objects). Default: a ConfigMap and a Deployment per app.
	Manifests ManifestFunc
	// Settings answered by GET /api/v1/settings.
	Settings Settings
	// LiveGenerator stands in for the live services of ApplicationSet generators (SCM providers, pull requests,
	// plugins, duck types) in POST /api/v1/applicationsets/generate: the parameter sets a generator of that kind
	// yields. nil: the simulator generates list generators only.
	LiveGenerator func(kind string, g *v1alpha1.ApplicationSetGenerator) ([]map[string]any, error)
}

// Settings is what GET /api/v1/settings answers.
type Settings struct {
	URL            string `json:"url,omitempty"`
	AppLabelKey    string `json:"appLabelKey,omitempty"`
	TrackingMethod string `json:"trackingMethod,omitempty"`
	InstallationID string `json:"installationID,omitempty"`
	KustomizeBuild string `json:"-"`
}

// ManifestFunc renders app at revision: one JSON object per manifest.
type ManifestFunc func(app *v1alpha1.Application, revision string) ([]string, error)

// Behavior overrides the simulation for one app.
type Behavior struct {
	SyncDuration time.Duration // 0: Config.SyncDuration
	Fail         bool          // operations end Failed
	FailMessage  string
	Degrade      bool // successful syncs leave the app Degraded
}

// AppOptions seed an app's live state.
type AppOptions struct {
	// LiveRevisions are the revisions deployed before the simulation starts (one per source); empty: never
	// synced (health Missing).
	LiveRevisions []string
	// Health of the live app (default Healthy).
	Health   health.HealthStatusCode
	Behavior Behavior
}

// Counts are the requests the server received for one app, faults included.
type Counts struct {
	Requests      int // every request naming the app
	Gets          int
	Refreshes     int // gets with ?refresh
	Syncs         int // sync requests received (accepted or not)
	SyncsAccepted int // operations started by a sync request
	SyncsDropped  int // sync requests answered 200 whose operation was then cleared unstarted (DropSyncs)
	Rollbacks     int
	Terminates    int
	Patches       int
	OtherReads    int // managed-resources, manifests, syncwindows
	// WebhookRefreshes counts the refreshes POST /api/webhook asked for the app.
	WebhookRefreshes int

	// SyncAnswersLost counts the sync requests processed whose connection was then closed unanswered
	// (LoseSyncAnswers); each is counted in SyncsAccepted (or SyncsDropped) too.
	SyncAnswersLost int

	// When (on the server's clock) the last sync request was accepted, the last operation finished, and the last
	// refresh was received and answered: where a client's time goes, e.g. how long after a wave's start its last
	// sync arrived.
	LastSyncAccepted, LastOpFinished, LastRefreshReceived, LastRefreshAnswered time.Time
}

// Totals are server-wide counters.
type Totals struct {
	Requests       int
	AppRequests    int // requests naming one app
	Lists          int
	Streams        int // stream connections opened
	StreamDrops    int // streams the server dropped on purpose
	InjectedErrors int
	LostResponses  int
	Operations     int   // operations started, manual and automated
	Reconciles     int   // reconciles run (periodic resyncs included)
	StreamBytes    int64 // bytes of stream messages sent, after each stream's `fields` filter
	// Webhooks counts the POST /api/webhook push events received, WebhookRefreshes the apps they refreshed.
	Webhooks, WebhookRefreshes int

	// SyncAnswersLost counts the sync requests processed whose connection was then closed unanswered
	// (LoseSyncAnswers).
	SyncAnswersLost int
}

// Server is a simulated Argo CD API server with the application controller's state machine. Create it with
// New, seed it, serve Handler() (or use RoundTripper() in-process), and Close it.
type Server struct {
	cfg     Config
	clk     clockwork.Clock
	handler http.Handler

	rngMu sync.Mutex
	rng   *rand.Rand

	streamBytes atomic.Int64 // Totals.StreamBytes, counted outside mu by each stream

	mu       sync.Mutex
	rv       int64
	apps     map[string]*appState
	refs     map[string]string
	clusters []v1alpha1.Cluster
	subs     map[*subscriber]struct{}
	timers   map[*timerHandle]struct{}
	blocked  map[string]bool // sync window closed (SetSyncWindowBlocked)
	drops    map[string]int  // sync requests to drop per app (DropSyncs)
	projects map[string]*v1alpha1.AppProject
	counts   map[string]*Counts
	totals   Totals
	closed   bool
	outage   Outage // SetOutage
	// outageEnded is closed when the outage changes: the requests a Hanging outage holds go on.
	outageEnded chan struct{}
	done        chan struct{}

	// outageGen counts the outage's changes: a timed outage ends only the outage it began.
	outageGen int64
	// lostAnswers are the sync answers to lose per app, AnyApp's for any (LoseSyncAnswers).
	lostAnswers map[string]lostAnswers
}

type appState struct {
	app      *v1alpha1.Application
	lastJSON []byte // the app without resourceVersion, as last committed (no-op writes do not bump it)
	// objects memoizes objectsLocked per revision and generation (Config.Manifests is a function of both).
	objects    map[string][]manifestObject
	objectsGen int64
	applied    []string
	health     health.HealthStatusCode // live health, published at the next reconcile
	final      health.HealthStatusCode // health after the Progressing phase
	behavior   Behavior
	opGen      int64 // invalidates timers of an earlier operation
	autoRev    string
	waiters    []chan struct{} // refresh requests waiting for the next reconcile
	// reconcileQueued: a reconcile is queued (requestReconcileLocked) and has not run yet.
	reconcileQueued bool

	stale      *v1alpha1.Application
	staleUntil time.Time
}

type timerHandle struct{ t clockwork.Timer }

// New builds a server. Call Close when done: it stops timers and ends open streams.
func New(cfg Config) *Server {
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.Namespace == "" {
		cfg.Namespace = "argocd"
	}
	if cfg.Username == "" {
		cfg.Username = "admin"
	}
	if cfg.SyncDuration == 0 {
		cfg.SyncDuration = time.Second
	}
	if cfg.ReconcileDelay == 0 {
		cfg.ReconcileDelay = 100 * time.Millisecond
	}
	if cfg.TerminateDelay == 0 {
		cfg.TerminateDelay = 100 * time.Millisecond
	}
	if cfg.KeepaliveInterval == 0 {
		cfg.KeepaliveInterval = 15 * time.Second
	}
	if cfg.Manifests == nil {
		cfg.Manifests = DefaultManifests
	}
	if cfg.Settings.AppLabelKey == "" {
		cfg.Settings.AppLabelKey = "app.kubernetes.io/instance"
	}
	if cfg.Settings.TrackingMethod == "" {
		cfg.Settings.TrackingMethod = "annotation"
	}
	s := &Server{
		cfg:      cfg,
		clk:      cfg.Clock,
		rng:      rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		apps:     map[string]*appState{},
		refs:     map[string]string{},
		subs:     map[*subscriber]struct{}{},
		timers:   map[*timerHandle]struct{}{},
		blocked:  map[string]bool{},
		projects: map[string]*v1alpha1.AppProject{},
		counts:   map[string]*Counts{},
		done:     make(chan struct{}),
	}
	s.handler = s.routes()
	if cfg.ResyncPeriod > 0 {
		s.mu.Lock()
		s.scheduleResyncLocked()
		s.mu.Unlock()
	}
	return s
}

// Close stops every timer and ends open streams. The server answers 503 afterwards.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	for h := range s.timers {
		h.t.Stop()
	}
	s.timers = nil
	for _, st := range s.apps {
		for _, w := range st.waiters {
			close(w)
		}
		st.waiters = nil
	}
	close(s.done)
}

// Handler is the HTTP API.
func (s *Server) Handler() http.Handler { return s.handler }

// SetRef points a ref (branch, tag, "HEAD") at a commit, as a push would. Apps notice at their next reconcile
// (RefreshAll, a refresh request, the resync period).
func (s *Server) SetRef(ref, sha string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refs[ref] = sha
}

// RefreshAll reconciles every app now, as a Git webhook would make Argo CD do.
func (s *Server) RefreshAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, name := range s.sortedNamesLocked() {
		s.reconcileLocked(s.apps[name])
	}
}

// SetBehavior overrides the simulation for one app.
func (s *Server) SetBehavior(name string, b Behavior) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.apps[name]
	if !ok {
		return fmt.Errorf("setting behavior: no application %q", name)
	}
	st.behavior = b
	return nil
}

// SetSyncWindowBlocked closes (or opens) a deny sync window over the app: syncs get PermissionDenied. It
// overrides the app's project's windows (SetProject); use those to test how windows are evaluated.
func (s *Server) SetSyncWindowBlocked(name string, blocked bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.blocked[name] = blocked
}

// SetProject creates or replaces an AppProject. Its spec.syncWindows are evaluated as Argo CD does, on the
// server's clock: a manual sync of an app they block is refused (handleSync), automated sync waits
// (reconcileLocked), GET .../syncwindows and GET /api/v1/projects/{name} show them. The project "default" exists
// without being set, with no windows.
func (s *Server) SetProject(p v1alpha1.AppProject) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p.Kind, p.APIVersion = "AppProject", "argoproj.io/v1alpha1"
	if p.Namespace == "" {
		p.Namespace = s.cfg.Namespace
	}
	s.rv++
	p.ResourceVersion = strconv.FormatInt(s.rv, 10)
	s.projects[p.Name] = p.DeepCopy()
}

// projectLocked returns the app's project: set by SetProject, or the implicit empty "default".
func (s *Server) projectLocked(name string) (*v1alpha1.AppProject, bool) {
	if name == "" {
		name = "default"
	}
	if p, ok := s.projects[name]; ok {
		return p, true
	}
	if name == "default" {
		p := &v1alpha1.AppProject{}
		p.Name, p.Namespace, p.Kind, p.APIVersion = "default", s.cfg.Namespace, "AppProject", "argoproj.io/v1alpha1"
		return p, true
	}
	return nil, false
}

// appWindowsLocked returns the sync windows of the app's project that apply to it (Argo CD's Matches).
func (s *Server) appWindowsLocked(a *v1alpha1.Application) v1alpha1.SyncWindows {
	p, ok := s.projectLocked(a.Spec.Project)
	if !ok {
		return nil
	}
	return argocd.AppWindows(p.Spec.SyncWindows, a)
}

// AddCluster registers a cluster for GET /api/v1/clusters.
func (s *Server) AddCluster(c v1alpha1.Cluster) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.Info.ConnectionState.Status == "" {
		c.Info.ConnectionState.Status = "Successful"
	}
	s.clusters = append(s.clusters, c)
}

// AddApp adds an application and reconciles it once. Its live state is opts.LiveRevisions: when set, a past
// successful operation and history entry 0 are recorded for it.
func (s *Server) AddApp(app *v1alpha1.Application, opts AppOptions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if app.Name == "" {
		return fmt.Errorf("adding application: no name")
	}
	if _, ok := s.apps[app.Name]; ok {
		return fmt.Errorf("adding application %q: already exists", app.Name)
	}
	a := app.DeepCopy()
	if a.Namespace == "" {
		a.Namespace = s.cfg.Namespace
	}
	if a.Spec.Project == "" {
		a.Spec.Project = "default"
	}
	now := s.now()
	a.UID = types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", len(s.apps)+1))
	a.CreationTimestamp = metav1.NewTime(now)
	a.Generation = 1
	st := &appState{app: a, behavior: opts.Behavior, health: opts.Health}
	if st.health == "" {
		st.health = health.HealthStatusHealthy
	}
	if len(opts.LiveRevisions) > 0 {
		st.applied = append([]string(nil), opts.LiveRevisions...)
		started := metav1.NewTime(now.Add(-time.Hour))
		finished := metav1.NewTime(now.Add(-time.Hour + 10*time.Second))
		op := s.newSyncOperation(a, st.applied, false, false)
		a.Status.OperationState = &v1alpha1.OperationState{
			Operation: op, Phase: "Succeeded", Message: "successfully synced (all tasks run)",
			StartedAt: started, FinishedAt: &finished, SyncResult: syncResult(a, st.applied),
		}
		a.Status.OperationState.SyncResult.Resources = s.resourceResultsLocked(a, st.applied)
		a.Status.History = v1alpha1.RevisionHistories{historyEntry(a, 0, st.applied, started, finished, op.InitiatedBy)}
	}
	s.apps[a.Name] = st
	s.counts[a.Name] = &Counts{}
	s.reconcileLocked(st)
	return nil
}

// App returns the app's current state as the controller knows it (not the stale view). ok is false when there
// is no such app.
func (s *Server) App(name string) (v1alpha1.Application, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.apps[name]
	if !ok {
		return v1alpha1.Application{}, false
	}
	return *st.app.DeepCopy(), true
}

// Counts returns the requests received for one app.
func (s *Server) Counts(name string) Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.counts[name]; ok {
		return *c
	}
	return Counts{}
}

// Totals returns server-wide counters.
func (s *Server) Totals() Totals {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.totals
	t.StreamBytes = s.streamBytes.Load()
	return t
}

// AppNames lists the apps, sorted.
func (s *Server) AppNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sortedNamesLocked()
}

func (s *Server) sortedNamesLocked() []string {
	names := make([]string, 0, len(s.apps))
	for n := range s.apps {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (s *Server) now() time.Time { return s.clk.Now().UTC() }

// afterLocked runs f under the lock after d, unless the server is closed first.
func (s *Server) afterLocked(d time.Duration, f func()) {
	if s.closed {
		return
	}
	h := &timerHandle{}
	h.t = s.clk.AfterFunc(d, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed {
			return
		}
		delete(s.timers, h)
		f()
	})
	s.timers[h] = struct{}{}
}

// alive reports whether st is still the registered state of its app (it may have been replaced).
func (s *Server) alive(st *appState) bool {
	return s.apps[st.app.Name] == st
}

func (s *Server) chance(p float64) bool {
	if p <= 0 {
		return false
	}
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return s.rng.Float64() < p
}

func (s *Server) expDuration(mean time.Duration) time.Duration {
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return time.Duration(s.rng.ExpFloat64() * float64(mean))
}

// commitLocked records a change of st.app as a Kubernetes write would: a new resourceVersion and a MODIFIED
// event, unless nothing changed (a no-op patch bumps nothing).
func (s *Server) commitLocked(st *appState) {
	st.app.ResourceVersion = ""
	b, err := encodeApp(st.app)
	if err != nil {
		panic(fmt.Sprintf("argocdsim: marshaling application: %v", err))
	}
	if string(b) == string(st.lastJSON) {
		st.app.ResourceVersion = strconv.FormatInt(s.rv, 10)
		return
	}
	st.lastJSON = b
	s.rv++
	st.app.ResourceVersion = strconv.FormatInt(s.rv, 10)
	s.broadcastLocked(watch.Modified, st)
}

// withResourceVersion returns app, the JSON of an Application without metadata.resourceVersion, with it set to
// rv, in the place encoding/json puts it (after metadata.uid, which every simulated app has): the encoding a
// commit already made is reused for the stream instead of encoding the object again. nil when app has no uid.
func withResourceVersion(app []byte, rv string) []byte {
	const uid = `"uid":"`
	i := bytes.Index(app, []byte(uid))
	if i < 0 {
		return nil
	}
	i += len(uid)
	j := bytes.IndexByte(app[i:], '"')
	if j < 0 {
		return nil
	}
	i += j + 1
	field := `,"resourceVersion":` + strconv.Quote(rv)
	out := make([]byte, 0, len(app)+len(field))
	return append(append(append(out, app[:i]...), field...), app[i:]...)
}

// publishLocked sends the app's current view again (the end of a stale window).
func (s *Server) publishLocked(st *appState) {
	s.rv++
	st.app.ResourceVersion = strconv.FormatInt(s.rv, 10)
	s.broadcastLocked(watch.Modified, st)
}

// inStaleWindowLocked: the API still shows the app as it was before a sync request (st.stale,
// Config.StaleStatusFor).
func (s *Server) inStaleWindowLocked(st *appState) bool {
	return st.stale != nil && s.now().Before(st.staleUntil)
}

// viewJSONLocked is viewLocked with its JSON: outside a stale window, the app itself and the encoding of its
// last commit (every change of st.app is committed), not a new one.
func (s *Server) viewJSONLocked(st *appState) (*v1alpha1.Application, []byte, error) {
	if s.inStaleWindowLocked(st) {
		v := s.viewLocked(st)
		b, err := encodeApp(v)
		return v, b, err
	}
	b, err := committedJSON(st)
	return st.app, b, err
}

// committedJSON is the JSON of st.app as last committed (with its resourceVersion), reusing the commit's
// encoding.
func committedJSON(st *appState) ([]byte, error) {
	if st.lastJSON != nil {
		if b := withResourceVersion(st.lastJSON, st.app.ResourceVersion); b != nil {
			return b, nil
		}
	}
	return encodeApp(st.app)
}

// encodeApp encodes an Application as encoding/json does, byte for byte (TestEncodeAppMatchesEncodingJSON), with
// github.com/goccy/go-json: about three times faster, and every commit is encoded under the server's lock.
func encodeApp(a *v1alpha1.Application) ([]byte, error) {
	return gojson.Marshal(a)
}

// viewLocked is the app as the API shows it: a copy, stale during a stale window.
func (s *Server) viewLocked(st *appState) *v1alpha1.Application {
	if s.inStaleWindowLocked(st) {
		v := st.stale.DeepCopy()
		v.ResourceVersion = st.app.ResourceVersion
		return v
	}
	return st.app.DeepCopy()
}
