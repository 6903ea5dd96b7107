package argocdsim

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	jsonpatch "github.com/evanphx/json-patch"
	"google.golang.org/grpc/codes"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
)

// Messages and codes below are the ones server/application/application.go and util/argo/argo.go return.

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/applications", s.handleList)
	mux.HandleFunc("GET /api/v1/applications/{name}", s.handleGet)
	mux.HandleFunc("PATCH /api/v1/applications/{name}", s.handlePatch)
	mux.HandleFunc("POST /api/v1/applications/{name}/sync", s.handleSync)
	mux.HandleFunc("POST /api/v1/applications/{name}/rollback", s.handleRollback)
	mux.HandleFunc("DELETE /api/v1/applications/{name}/operation", s.handleTerminate)
	mux.HandleFunc("GET /api/v1/applications/{name}/managed-resources", s.handleManagedResources)
	mux.HandleFunc("GET /api/v1/applications/{name}/manifests", s.handleManifests)
	mux.HandleFunc("GET /api/v1/applications/{name}/syncwindows", s.handleSyncWindows)
	mux.HandleFunc("GET /api/v1/projects/{name}", s.handleProject)
	mux.HandleFunc("PUT /api/v1/projects/{name}", s.handleUpdateProject)
	mux.HandleFunc("POST /api/v1/applicationsets/generate", s.handleGenerate)
	mux.HandleFunc("GET /api/v1/stream/applications", s.handleStream)
	mux.HandleFunc("GET /api/v1/clusters", s.handleClusters)
	mux.HandleFunc("GET /api/v1/settings", s.handleSettings)
	mux.HandleFunc("POST /api/webhook", s.handleWebhook) // webhook.go: no bearer token, as Argo CD's
	// The release it answers as: the one fleetwave links (go.mod) and renders as by default, so a test against the
	// simulator renders as a real current Argo CD would be rendered.
	mux.HandleFunc("GET /api/version", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]string{"Version": "v3.6.1+argocdsim"})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serve(mux, w, r) })
}

// serve counts the request, then applies latency, injected faults and authentication before routing.
func (s *Server) serve(mux *http.ServeMux, w http.ResponseWriter, r *http.Request) {
	app := appFromPath(r.URL.Path)
	stream := r.URL.Path == "/api/v1/stream/applications"
	s.mu.Lock()
	closed := s.closed
	s.totals.Requests++
	if app != "" {
		s.totals.AppRequests++
		s.countsLocked(app).Requests++
	}
	s.mu.Unlock()
	if closed {
		writeError(w, codes.Unavailable, "server is shutting down")
		return
	}
	if !s.hang(r.Context()) {
		return // a Hanging outage outlived the request: nothing is answered
	}
	if s.serveOutage(w) {
		return
	}
	d := s.cfg.APILatency
	if s.chance(s.cfg.LatencySpikeRate) {
		d += s.cfg.LatencySpike
	}
	if d > 0 {
		select {
		case <-s.clk.After(d):
		case <-r.Context().Done():
			return
		}
	}
	if s.chance(s.cfg.ErrorRate) {
		s.mu.Lock()
		s.totals.InjectedErrors++
		s.mu.Unlock()
		writeError(w, codes.Unavailable, "simulated outage")
		return
	}
	if r.Method != http.MethodGet && !strings.EqualFold(r.Header.Get("Content-Type"), "application/json") {
		// server/server.go enforceContentTypes (--api-content-types, default application/json): every other method
		// needs the JSON content type, with or without a body.
		http.Error(w, "Invalid content type", http.StatusUnsupportedMediaType)
		return
	}
	if !s.authorized(r) && r.URL.Path != "/api/webhook" {
		writeError(w, codes.Unauthenticated, "no session information")
		return
	}
	if !stream && s.chance(s.cfg.LostResponseRate) {
		mux.ServeHTTP(&discardWriter{h: http.Header{}}, r)
		s.mu.Lock()
		s.totals.LostResponses++
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte("<html><body><h1>502 Bad Gateway</h1></body></html>\n"))
		return
	}
	mux.ServeHTTP(w, r)
}

func (s *Server) authorized(r *http.Request) bool {
	if s.cfg.Token == "" {
		return true
	}
	tok := bearer(r)
	if _, ok := s.cfg.Users[tok]; ok && tok != "" {
		return true
	}
	return subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.Token)) == 1
}

func bearer(r *http.Request) string {
	tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if c, err := r.Cookie("argocd.token"); err == nil && tok == "" {
		tok = c.Value
	}
	return tok
}

// username is who the request's token belongs to (Config.Users), Config.Username otherwise.
func (s *Server) username(r *http.Request) string {
	if u, ok := s.cfg.Users[bearer(r)]; ok {
		return u
	}
	return s.cfg.Username
}

// appFromPath returns the app named by /api/v1/applications/{name}[/...], or "".
func appFromPath(p string) string {
	rest, ok := strings.CutPrefix(p, "/api/v1/applications/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	return name
}

func (s *Server) countsLocked(app string) *Counts {
	c, ok := s.counts[app]
	if !ok {
		c = &Counts{}
		s.counts[app] = c
	}
	return c
}

// lookupLocked finds the app named by the request, checking ?appNamespace and ?project like the real server
// (server/application/application.go getAppEnforceRBAC): a missing app is PermissionDenied unless the request
// names a project — Argo CD does not tell a caller whether an app it may not see exists — and NotFound (also for
// an app of another project) when it does.
func (s *Server) lookupLocked(r *http.Request, name string) (*appState, *apiError) {
	st, ok := s.apps[name]
	q := r.URL.Query()
	if ok {
		if ns := q.Get("appNamespace"); ns != "" && ns != st.app.Namespace {
			ok = false
		}
	}
	project := q.Get("project")
	if !ok && project == "" {
		return nil, &apiError{codes.PermissionDenied, "permission denied"}
	}
	if ok && project != "" {
		effective := st.app.Spec.Project
		if effective == "" {
			effective = "default"
		}
		ok = effective == project
	}
	if !ok {
		return nil, &apiError{codes.NotFound, fmt.Sprintf("applications.argoproj.io %q not found", name)}
	}
	return st, nil
}

// appLocked is the common start of an app-scoped request, s.mu held: the request is counted for the app (count
// bumps its counter), then the app is looked up; when it is not found the error is written and ok is false.
func (s *Server) appLocked(w http.ResponseWriter, r *http.Request, name string, count func(*Counts)) (*appState, *Counts, bool) {
	c := s.countsLocked(name)
	count(c)
	st, aerr := s.lookupLocked(r, name)
	if aerr != nil {
		aerr.write(w)
		return nil, c, false
	}
	return st, c, true
}

func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	sel, err := labels.Parse(q.Get("selector"))
	if err != nil {
		writeError(w, codes.Unknown, fmt.Sprintf("error parsing the selector: %v", err))
		return
	}
	projects := append(q["projects"], q["project"]...)
	repo, ns, name := q.Get("repo"), q.Get("appNamespace"), q.Get("name")
	s.mu.Lock()
	s.totals.Lists++
	list := v1alpha1.ApplicationList{Items: []v1alpha1.Application{}}
	list.ResourceVersion = fmt.Sprint(s.rv)
	for _, n := range s.sortedNamesLocked() {
		st := s.apps[n]
		a := st.app
		if !sel.Matches(labels.Set(a.Labels)) || (ns != "" && a.Namespace != ns) || (name != "" && a.Name != name) ||
			(len(projects) > 0 && !slices.Contains(projects, a.Spec.Project)) || (repo != "" && !hasRepo(a, repo)) {
			continue
		}
		list.Items = append(list.Items, *s.viewLocked(st))
	}
	s.mu.Unlock()
	writeJSON(w, &list)
}

// hasRepo matches a source repository URL, ignoring case and a trailing ".git" (util/argo FilterByRepo
// compares normalised URLs).
func hasRepo(a *v1alpha1.Application, repo string) bool {
	norm := func(u string) string { return strings.TrimSuffix(strings.ToLower(strings.TrimSuffix(u, "/")), ".git") }
	for _, src := range a.Spec.GetSources() {
		if norm(src.RepoURL) == norm(repo) {
			return true
		}
	}
	return false
}

func (s *Server) handleGet(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	refresh := r.URL.Query().Get("refresh")
	s.mu.Lock()
	c := s.countsLocked(name)
	c.Gets++
	st, aerr := s.lookupLocked(r, name)
	if aerr != nil {
		s.mu.Unlock()
		aerr.write(w)
		return
	}
	if refresh == "" {
		_, b, err := s.viewJSONLocked(st)
		s.mu.Unlock()
		writeRawJSON(w, b, err)
		return
	}
	// Refresh: annotate, let the controller reconcile, answer once that reconcile is written
	// (server/application/application.go Get).
	c.Refreshes++
	c.LastRefreshReceived = s.now()
	if refresh != string(v1alpha1.RefreshTypeHard) {
		refresh = string(v1alpha1.RefreshTypeNormal)
	}
	if st.app.Annotations == nil {
		st.app.Annotations = map[string]string{}
	}
	st.app.Annotations[v1alpha1.AnnotationKeyRefresh] = refresh
	s.commitLocked(st)
	ch := make(chan struct{})
	st.waiters = append(st.waiters, ch)
	s.requestReconcileLocked(st)
	s.mu.Unlock()
	select {
	case <-ch:
	case <-r.Context().Done():
		return
	case <-s.done:
		writeError(w, codes.Unavailable, "server is shutting down")
		return
	}
	s.mu.Lock()
	_, b, err := s.viewJSONLocked(st)
	s.countsLocked(name).LastRefreshAnswered = s.now()
	s.mu.Unlock()
	writeRawJSON(w, b, err)
}

type patchRequest struct {
	Patch     string `json:"patch"`
	PatchType string `json:"patchType"`
}

func (s *Server) handlePatch(out http.ResponseWriter, r *http.Request) {
	w := deferWrites(out) // answer after the lock is released
	defer w.flush()
	name := r.PathValue("name")
	var req patchRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, codes.InvalidArgument, fmt.Sprintf("decoding request: %v", err))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st, _, ok := s.appLocked(w, r, name, func(c *Counts) { c.Patches++ })
	if !ok {
		return
	}
	cur, err := json.Marshal(st.app)
	if err != nil {
		writeError(w, codes.Internal, err.Error())
		return
	}
	var patched []byte
	switch req.PatchType {
	case "json", "":
		p, err := jsonpatch.DecodePatch([]byte(req.Patch))
		if err != nil {
			writeError(w, codes.Unknown, fmt.Sprintf("error decoding json patch: %v", err))
			return
		}
		if patched, err = p.Apply(cur); err != nil {
			writeError(w, codes.Unknown, fmt.Sprintf("error applying patch: %v", err))
			return
		}
	case "merge":
		if patched, err = jsonpatch.MergePatch(cur, []byte(req.Patch)); err != nil {
			writeError(w, codes.Unknown, fmt.Sprintf("error calculating merge patch: %v", err))
			return
		}
	default:
		writeError(w, codes.InvalidArgument, fmt.Sprintf("Patch type '%s' is not supported", req.PatchType))
		return
	}
	var next v1alpha1.Application
	if err := json.Unmarshal(patched, &next); err != nil {
		writeError(w, codes.Unknown, fmt.Sprintf("error unmarshaling patched app: %v", err))
		return
	}
	// Only spec, labels, annotations and finalizers are updated (server/application/application.go updateApp).
	specChanged := !jsonEqual(next.Spec, st.app.Spec)
	st.app.Spec = next.Spec
	st.app.Labels = next.Labels
	st.app.Annotations = next.Annotations
	st.app.Finalizers = next.Finalizers
	if specChanged {
		st.app.Generation++
		st.autoRev = ""
		s.requestReconcileLocked(st)
	}
	s.commitLocked(st)
	b, err := committedJSON(st)
	writeRawJSON(w, b, err)
}

type syncRequest struct {
	Revision        string                           `json:"revision"`
	Revisions       []string                         `json:"revisions"`
	SourcePositions []int64                          `json:"sourcePositions"`
	Prune           bool                             `json:"prune"`
	DryRun          bool                             `json:"dryRun"`
	Strategy        *v1alpha1.SyncStrategy           `json:"strategy"`
	Resources       []v1alpha1.SyncOperationResource `json:"resources"`
	SyncOptions     *struct {
		Items []string `json:"items"`
	} `json:"syncOptions"`
	RetryStrategy *v1alpha1.RetryStrategy `json:"retryStrategy"`
	Manifests     []string                `json:"manifests"`
}

func (s *Server) handleSync(out http.ResponseWriter, r *http.Request) {
	w := deferWrites(out) // answer after the lock is released
	defer w.flush()
	name := r.PathValue("name")
	var req syncRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, codes.InvalidArgument, fmt.Sprintf("decoding request: %v", err))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st, c, ok := s.appLocked(w, r, name, func(c *Counts) { c.Syncs++ })
	if !ok {
		return
	}
	a := st.app
	if s.blocked[name] {
		writeError(w, codes.PermissionDenied, argocd.SyncWindowBlockedText)
		return
	}
	// server/application/application.go Sync: proj.Spec.SyncWindows.Matches(a).CanSync(true, nil), before RBAC's sync
	// check and anything else.
	if ok, err := argocd.CanSyncAt(s.appWindowsLocked(a), s.clk.Now(), true); err != nil {
		writeError(w, codes.PermissionDenied, fmt.Sprintf("cannot sync: invalid sync window: %v", err))
		return
	} else if !ok {
		writeError(w, codes.PermissionDenied, argocd.SyncWindowBlockedText)
		return
	}
	automated := a.Spec.SyncPolicy != nil && a.Spec.SyncPolicy.IsAutomatedSyncEnabled()
	if req.Manifests != nil && automated && !req.DryRun {
		writeError(w, codes.FailedPrecondition, "cannot use local sync when Automatic Sync Policy is enabled unless for dry run")
		return
	}
	revs, aerr := s.resolveSyncRevisionsLocked(a, &req, automated)
	if aerr != nil {
		aerr.write(w)
		return
	}
	if a.Operation != nil {
		writeError(w, codes.FailedPrecondition, "error setting app operation: another operation is already in progress")
		return
	}
	op := s.newSyncOperation(a, revs, req.Prune, req.DryRun)
	op.InitiatedBy.Username = s.username(r)
	op.Sync.SyncStrategy = req.Strategy
	op.Sync.Resources = req.Resources
	op.Sync.Manifests = req.Manifests
	if req.SyncOptions != nil {
		op.Sync.SyncOptions = req.SyncOptions.Items
	}
	if req.RetryStrategy != nil {
		op.Retry = *req.RetryStrategy
	}
	s.staleLocked(st)
	if s.loseAnswerLocked(name) {
		// Processed, then the connection closes unanswered (lostanswer.go); an outage that follows begins
		// before the write, so no stream carries it.
		w.abort()
	}
	if s.takeDropLocked(name) {
		b, err := s.dropOperationLocked(st, op)
		c.SyncsDropped++
		writeRawJSON(w, b, err)
		return
	}
	b, err := s.startOperationLocked(st, op)
	c.SyncsAccepted++
	c.LastSyncAccepted = s.now()
	writeRawJSON(w, b, err)
}

// resolveSyncRevisionsLocked follows server/application/application.go resolveSourceRevisions.
func (s *Server) resolveSyncRevisionsLocked(a *v1alpha1.Application, req *syncRequest, automated bool) ([]string, *apiError) {
	if a.Spec.HasMultipleSources() {
		sources := slices.Clone(a.Spec.Sources)
		n := int64(len(sources))
		for i, pos := range req.SourcePositions {
			if pos <= 0 || pos > n {
				return nil, &apiError{codes.Unknown, "source position is out of range"}
			}
			if i >= len(req.Revisions) {
				return nil, &apiError{codes.InvalidArgument, "revisions and sourcePositions differ in length"}
			}
			sources[pos-1].TargetRevision = req.Revisions[i]
		}
		revs := make([]string, len(sources))
		for i, src := range sources {
			if automated && !req.DryRun && firstNonEmpty(a.Spec.Sources[i].TargetRevision, "HEAD") != firstNonEmpty(src.TargetRevision, "HEAD") {
				return nil, &apiError{codes.FailedPrecondition, fmt.Sprintf("Cannot sync source %s to %s: auto-sync currently set to %s",
					src.RepoURL, src.TargetRevision, a.Spec.Sources[i].TargetRevision)}
			}
			r, err := s.resolveLocked(src.TargetRevision)
			if err != nil {
				return nil, &apiError{codes.FailedPrecondition, err.Error()}
			}
			revs[i] = r
		}
		return revs, nil
	}
	src := a.Spec.GetSource()
	if automated && !req.DryRun && req.Revision != "" && req.Revision != firstNonEmpty(src.TargetRevision, "HEAD") {
		return nil, &apiError{codes.FailedPrecondition, fmt.Sprintf("Cannot sync to %s: auto-sync currently set to %s", req.Revision, src.TargetRevision)}
	}
	r, err := s.resolveLocked(firstNonEmpty(req.Revision, src.TargetRevision))
	if err != nil {
		return nil, &apiError{codes.FailedPrecondition, err.Error()}
	}
	return []string{r}, nil
}

type rollbackRequest struct {
	ID     int64 `json:"id"`
	Prune  bool  `json:"prune"`
	DryRun bool  `json:"dryRun"`
}

func (s *Server) handleRollback(out http.ResponseWriter, r *http.Request) {
	w := deferWrites(out) // answer after the lock is released
	defer w.flush()
	name := r.PathValue("name")
	var req rollbackRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, codes.InvalidArgument, fmt.Sprintf("decoding request: %v", err))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st, _, ok := s.appLocked(w, r, name, func(c *Counts) { c.Rollbacks++ })
	if !ok {
		return
	}
	a := st.app
	if a.Spec.SyncPolicy != nil && a.Spec.SyncPolicy.IsAutomatedSyncEnabled() {
		writeError(w, codes.FailedPrecondition, "rollback cannot be initiated when auto-sync is enabled")
		return
	}
	var h *v1alpha1.RevisionHistory
	for i := range a.Status.History {
		if a.Status.History[i].ID == req.ID {
			h = &a.Status.History[i]
		}
	}
	if h == nil {
		writeError(w, codes.InvalidArgument, fmt.Sprintf("application %s does not have deployment with id %v", qualifiedName(a, s.cfg.Namespace), req.ID))
		return
	}
	if a.Operation != nil {
		writeError(w, codes.FailedPrecondition, "error setting app operation: another operation is already in progress")
		return
	}
	op := v1alpha1.Operation{
		Sync: &v1alpha1.SyncOperation{
			Revision: h.Revision, Revisions: h.Revisions, DryRun: req.DryRun, Prune: req.Prune,
			SyncStrategy: &v1alpha1.SyncStrategy{Apply: &v1alpha1.SyncStrategyApply{}},
			Source:       h.Source.DeepCopy(), Sources: h.Sources,
		},
		InitiatedBy: v1alpha1.OperationInitiator{Username: s.username(r)},
	}
	if a.Spec.SyncPolicy != nil {
		op.Sync.SyncOptions = a.Spec.SyncPolicy.SyncOptions
	}
	if len(h.Sources) > 0 {
		op.Sync.Source = nil
	}
	s.staleLocked(st)
	b, err := s.startOperationLocked(st, op)
	writeRawJSON(w, b, err)
}

func (s *Server) handleTerminate(out http.ResponseWriter, r *http.Request) {
	w := deferWrites(out) // answer after the lock is released
	defer w.flush()
	name := r.PathValue("name")
	s.mu.Lock()
	defer s.mu.Unlock()
	st, _, ok := s.appLocked(w, r, name, func(c *Counts) { c.Terminates++ })
	if !ok {
		return
	}
	if st.app.Operation == nil || st.app.Status.OperationState == nil {
		writeError(w, codes.InvalidArgument, "Unable to terminate operation. No operation is in progress")
		return
	}
	s.terminateLocked(st)
	writeJSON(w, struct{}{})
}

func (s *Server) handleManagedResources(out http.ResponseWriter, r *http.Request) {
	w := deferWrites(out) // answer after the lock is released
	defer w.flush()
	name := r.PathValue("name")
	s.mu.Lock()
	defer s.mu.Unlock()
	st, _, ok := s.appLocked(w, r, name, func(c *Counts) { c.OtherReads++ })
	if !ok {
		return
	}
	items, err := s.managedResourcesLocked(st)
	if err != nil {
		writeError(w, codes.Unknown, err.Error())
		return
	}
	writeJSON(w, map[string]any{"items": items})
}

func (s *Server) handleManifests(out http.ResponseWriter, r *http.Request) {
	w := deferWrites(out) // answer after the lock is released
	defer w.flush()
	name := r.PathValue("name")
	s.mu.Lock()
	defer s.mu.Unlock()
	st, _, ok := s.appLocked(w, r, name, func(c *Counts) { c.OtherReads++ })
	if !ok {
		return
	}
	app, rev := st.app, r.URL.Query().Get("revision")
	if rev == "" {
		rev = st.app.Spec.GetSource().TargetRevision
	} else if !app.Spec.HasMultipleSources() && app.Spec.Source != nil {
		app = app.DeepCopy() // rendered with that targetRevision, as GetManifests sets it
		app.Spec.Source.TargetRevision = rev
	}
	// A multi-source app takes revisions and sourcePositions pairwise (server/application/application.go
	// GetManifests): the app is rendered with those targetRevisions, and Manifests gets the first source's.
	if positions := r.URL.Query()["sourcePositions"]; app.Spec.HasMultipleSources() && len(positions) > 0 {
		revs := r.URL.Query()["revisions"]
		app = app.DeepCopy()
		for i, p := range positions {
			n, err := strconv.Atoi(p)
			if err != nil || n <= 0 || n > len(app.Spec.Sources) || i >= len(revs) {
				writeError(w, codes.Unknown, "source position is out of range")
				return
			}
			app.Spec.Sources[n-1].TargetRevision = revs[i]
		}
		rev = app.Spec.Sources[0].TargetRevision
	}
	sha, err := s.resolveLocked(rev)
	if err != nil {
		writeError(w, codes.Unknown, err.Error())
		return
	}
	docs, err := s.cfg.Manifests(app, sha)
	if err != nil {
		writeError(w, codes.Unknown, fmt.Sprintf("failed to generate manifest: %v", err))
		return
	}
	writeJSON(w, map[string]any{
		"manifests": docs, "revision": sha, "namespace": st.app.Spec.Destination.Namespace,
		"server": st.app.Spec.Destination.Server, "sourceType": "Directory",
	})
}

func (s *Server) handleSyncWindows(out http.ResponseWriter, r *http.Request) {
	w := deferWrites(out) // answer after the lock is released
	defer w.flush()
	name := r.PathValue("name")
	s.mu.Lock()
	defer s.mu.Unlock()
	st, _, ok := s.appLocked(w, r, name, func(c *Counts) { c.OtherReads++ })
	if !ok {
		return
	}
	// server/application/application.go GetApplicationSyncWindows: the windows matched to the app (assigned), those
	// active now, and CanSync(true, nil); convertSyncWindows keeps kind, schedule, duration and manualSync.
	windows := s.appWindowsLocked(st.app)
	now := s.clk.Now()
	canSync, err := argocd.CanSyncAt(windows, now, true)
	if err != nil {
		writeError(w, codes.Unknown, fmt.Sprintf("invalid sync windows: %v", err))
		return
	}
	active, _ := argocd.ActiveWindowsAt(windows, now) // CanSyncAt parsed them already
	if s.blocked[name] {
		canSync = false
		active = append(active, &v1alpha1.InlineSyncWindow{Kind: "deny", Schedule: "* * * * *", Duration: "1h"})
	}
	ans := map[string]any{"canSync": canSync}
	if v := convertSyncWindows(active); v != nil {
		ans["activeWindows"] = v
	}
	if v := convertSyncWindows(windows); v != nil {
		ans["assignedWindows"] = v
	}
	writeJSON(w, ans)
}

// convertSyncWindows is server/application/application.go convertSyncWindows: nil for none.
func convertSyncWindows(ws v1alpha1.SyncWindows) []map[string]any {
	var out []map[string]any
	for _, w := range ws {
		out = append(out, map[string]any{"kind": w.Kind, "schedule": w.Schedule, "duration": w.Duration, "manualSync": w.ManualSync})
	}
	return out
}

// handleUpdateProject is server/project/project.go Update, for its sync windows: the body's project replaces the
// stored one (a stale resourceVersion is refused as the Kubernetes API does; windows are validated as
// v1alpha1.InlineSyncWindow.Validate does, through validateProject).
func (s *Server) handleUpdateProject(out http.ResponseWriter, r *http.Request) {
	w := deferWrites(out)
	defer w.flush()
	var req struct {
		Project *v1alpha1.AppProject `json:"project"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, codes.InvalidArgument, fmt.Sprintf("decoding request: %v", err))
		return
	}
	if req.Project == nil {
		writeError(w, codes.InvalidArgument, "missing payload 'project' in request")
		return
	}
	for _, win := range req.Project.Spec.SyncWindows {
		if err := win.Validate(); err != nil {
			writeError(w, codes.InvalidArgument, err.Error())
			return
		}
	}
	s.mu.Lock()
	old, ok := s.projectLocked(req.Project.Name)
	if !ok {
		s.mu.Unlock()
		writeError(w, codes.NotFound, fmt.Sprintf("appprojects.argoproj.io %q not found", req.Project.Name))
		return
	}
	if rv := req.Project.ResourceVersion; rv != "" && old.ResourceVersion != "" && rv != old.ResourceVersion {
		s.mu.Unlock()
		writeError(w, codes.Unknown, fmt.Sprintf(`Operation cannot be fulfilled on appprojects.argoproj.io %q: the object has been modified; please apply your changes to the latest version and try again`, req.Project.Name))
		return
	}
	s.mu.Unlock()
	s.SetProject(*req.Project)
	s.mu.Lock()
	p, _ := s.projectLocked(req.Project.Name)
	b, err := json.Marshal(p)
	s.mu.Unlock()
	writeRawJSON(w, b, err)
}

// handleProject is server/project/project.go Get: the AppProject, or NotFound as the Kubernetes API says it.
func (s *Server) handleProject(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	s.mu.Lock()
	p, ok := s.projectLocked(name)
	var b []byte
	var err error
	if ok {
		b, err = json.Marshal(p)
	}
	s.mu.Unlock()
	if !ok {
		writeError(w, codes.NotFound, fmt.Sprintf("appprojects.argoproj.io %q not found", name))
		return
	}
	writeRawJSON(w, b, err)
}

func (s *Server) handleClusters(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	list := v1alpha1.ClusterList{Items: slices.Clone(s.clusters)}
	s.mu.Unlock()
	if list.Items == nil {
		list.Items = []v1alpha1.Cluster{}
	}
	writeJSON(w, &list)
}

func (s *Server) handleSettings(w http.ResponseWriter, _ *http.Request) {
	out := map[string]any{
		"url": s.cfg.Settings.URL, "appLabelKey": s.cfg.Settings.AppLabelKey,
		"trackingMethod": s.cfg.Settings.TrackingMethod, "controllerNamespace": s.cfg.Namespace,
		// What Argo CD v3.2 serves with an empty argocd-cm: resource.compareoptions' default
		// ignoreResourceStatusField "all" adds /status to every kind (util/settings GetResourceOverrides), and
		// the overrides' ignoreDifferences are YAML strings (v1alpha1.ResourceOverride MarshalJSON).
		"resourceOverrides": map[string]any{"*/*": map[string]any{
			"ignoreDifferences":     "jqPathExpressions: null\njsonPointers:\n- /status\nmanagedFieldsManagers: null\n",
			"ignoreResourceUpdates": "jqPathExpressions: null\njsonPointers: null\nmanagedFieldsManagers: null\n",
		}},
	}
	if s.cfg.Settings.InstallationID != "" {
		out["installationID"] = s.cfg.Settings.InstallationID
	}
	if s.cfg.Settings.KustomizeBuild != "" {
		out["kustomizeOptions"] = map[string]any{"buildOptions": s.cfg.Settings.KustomizeBuild}
	}
	writeJSON(w, out)
}

func qualifiedName(a *v1alpha1.Application, controlNS string) string {
	if a.Namespace == "" || a.Namespace == controlNS {
		return a.Name
	}
	return a.Namespace + "/" + a.Name
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

func jsonEqual(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// apiError is a gRPC status, written as grpc-gateway v1 does.
type apiError struct {
	code codes.Code
	msg  string
}

func (e *apiError) write(w http.ResponseWriter) { writeError(w, e.code, e.msg) }

// writeError writes grpc-gateway v1's error body with its HTTP status (runtime/errors.go DefaultHTTPError,
// HTTPStatusFromCode).
func writeError(w http.ResponseWriter, code codes.Code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(httpStatusFromCode(code))
	_ = json.NewEncoder(w).Encode(map[string]any{"error": msg, "code": uint32(code), "message": msg, "details": []any{}})
}

// httpStatusFromCode is grpc-gateway v1.16 runtime.HTTPStatusFromCode.
func httpStatusFromCode(c codes.Code) int {
	switch c {
	case codes.OK:
		return http.StatusOK
	case codes.Canceled:
		return http.StatusRequestTimeout
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange:
		return http.StatusBadRequest
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout
	case codes.NotFound:
		return http.StatusNotFound
	case codes.AlreadyExists, codes.Aborted:
		return http.StatusConflict
	case codes.PermissionDenied:
		return http.StatusForbidden
	case codes.Unauthenticated:
		return http.StatusUnauthorized
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	case codes.Unimplemented:
		return http.StatusNotImplemented
	case codes.Unavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	writeRawJSON(w, b, err)
}

// writeRawJSON answers b, the JSON encoding made by the caller (err: it failed).
func writeRawJSON(w http.ResponseWriter, b []byte, err error) {
	if err != nil {
		writeError(w, codes.Internal, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// deferredWriter holds an answer until flush, so that handlers holding the server's lock never wait on a slow
// client while holding it.
type deferredWriter struct {
	out     http.ResponseWriter
	code    int
	buf     bytes.Buffer
	aborted bool // flush closes the connection instead of answering (LoseSyncAnswers)
}

// abort makes flush close the connection without an answer: it panics with http.ErrAbortHandler, which net/http's
// server and the in-process transport take for a connection closed by the server.
func (d *deferredWriter) abort() { d.aborted = true }

func deferWrites(out http.ResponseWriter) *deferredWriter { return &deferredWriter{out: out} }

func (d *deferredWriter) Header() http.Header { return d.out.Header() }

func (d *deferredWriter) WriteHeader(code int) {
	if d.code == 0 {
		d.code = code
	}
}

func (d *deferredWriter) Write(b []byte) (int, error) {
	d.WriteHeader(http.StatusOK)
	return d.buf.Write(b)
}

func (d *deferredWriter) flush() {
	if d.aborted {
		panic(http.ErrAbortHandler)
	}
	if d.code == 0 {
		d.code = http.StatusOK
	}
	d.out.WriteHeader(d.code)
	_, _ = d.out.Write(d.buf.Bytes())
}

// discardWriter swallows an answer (a lost response).
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Flush()                      {}
