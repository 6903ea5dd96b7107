package argocdsim

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"

	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/health"
	synccommon "github.com/argoproj/argo-cd/gitops-engine/v3/pkg/sync/common"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
)

// This file is the application controller: it runs operations and reconciles apps. The steps and the order of
// writes follow controller/appcontroller.go (processRequestedAppOperation, setOperationState) and
// controller/state.go (persistRevisionHistory) of Argo CD v3.2.

var shaRe = regexp.MustCompile(`^[0-9a-f]{7,64}$`)

// resolveLocked resolves a targetRevision like the repo-server's ls-remote: a known ref, or a commit SHA.
func (s *Server) resolveLocked(rev string) (string, error) {
	if rev == "" {
		rev = "HEAD"
	}
	if sha, ok := s.refs[rev]; ok {
		return sha, nil
	}
	if shaRe.MatchString(rev) {
		return rev, nil
	}
	return "", fmt.Errorf("unable to resolve '%s' to a commit SHA", rev)
}

// resolveAppLocked resolves every source of the app (one revision per source; one for a single source).
func (s *Server) resolveAppLocked(a *v1alpha1.Application) ([]string, error) {
	if a.Spec.HasMultipleSources() {
		revs := make([]string, len(a.Spec.Sources))
		for i, src := range a.Spec.Sources {
			r, err := s.resolveLocked(src.TargetRevision)
			if err != nil {
				return nil, err
			}
			revs[i] = r
		}
		return revs, nil
	}
	src := a.Spec.GetSource()
	r, err := s.resolveLocked(src.TargetRevision)
	if err != nil {
		return nil, err
	}
	return []string{r}, nil
}

// newSyncOperation builds the operation a sync request sets (server/application/application.go Sync).
func (s *Server) newSyncOperation(a *v1alpha1.Application, revs []string, prune, dryRun bool) v1alpha1.Operation {
	op := v1alpha1.Operation{
		Sync:        &v1alpha1.SyncOperation{Prune: prune, DryRun: dryRun},
		InitiatedBy: v1alpha1.OperationInitiator{Username: s.cfg.Username},
	}
	if a.Spec.SyncPolicy != nil {
		op.Sync.SyncOptions = a.Spec.SyncPolicy.SyncOptions
		if a.Spec.SyncPolicy.Retry != nil {
			op.Retry = *a.Spec.SyncPolicy.Retry
		}
	}
	if a.Spec.HasMultipleSources() {
		op.Sync.Sources = a.Spec.Sources
		op.Sync.Revisions = revs
	} else {
		src := a.Spec.GetSource()
		op.Sync.Source = &src
		op.Sync.Revision = revs[0]
	}
	return op
}

// operationRevisions returns the revisions an operation applies, one per source.
func operationRevisions(op *v1alpha1.Operation) []string {
	if op.Sync == nil {
		return nil
	}
	if len(op.Sync.Revisions) > 0 {
		return op.Sync.Revisions
	}
	return []string{op.Sync.Revision}
}

func syncResult(a *v1alpha1.Application, revs []string) *v1alpha1.SyncOperationResult {
	r := &v1alpha1.SyncOperationResult{}
	if a.Spec.HasMultipleSources() {
		r.Sources = a.Spec.Sources
		r.Revisions = revs
	} else {
		r.Source = a.Spec.GetSource()
		r.Revision = revs[0]
	}
	return r
}

func historyEntry(a *v1alpha1.Application, id int64, revs []string, started, deployed metav1.Time, by v1alpha1.OperationInitiator) v1alpha1.RevisionHistory {
	h := v1alpha1.RevisionHistory{ID: id, DeployedAt: deployed, DeployStartedAt: &started, InitiatedBy: by}
	if a.Spec.HasMultipleSources() {
		h.Sources = a.Spec.Sources
		h.Revisions = revs
	} else {
		h.Source = a.Spec.GetSource()
		h.Revision = revs[0]
	}
	return h
}

// startOperationLocked sets the app's operation the way util/argo/argo.go SetAppOperation does (operation set,
// operationState cleared, one write) and lets the controller pick it up. It returns the JSON of that write: what
// the API answers the request that set the operation.
func (s *Server) startOperationLocked(st *appState, op v1alpha1.Operation) ([]byte, error) {
	st.app.Operation = &op
	st.app.Status.OperationState = nil
	st.opGen++
	gen := st.opGen
	s.totals.Operations++
	s.commitLocked(st)
	answer, err := committedJSON(st)
	if s.cfg.OperationStartDelay == 0 {
		// Picked up at once: still a write (and a stream event) of its own, without a timer and a second turn of
		// the lock per operation.
		s.beginOperationLocked(st, gen)
	} else {
		s.afterLocked(s.cfg.OperationStartDelay, func() { s.beginOperationLocked(st, gen) })
	}
	return answer, err
}

func (s *Server) beginOperationLocked(st *appState, gen int64) {
	if !s.alive(st) || st.opGen != gen || st.app.Operation == nil {
		return
	}
	op := st.app.Operation.DeepCopy()
	// The controller records the revision it syncs to while the operation runs (controller/sync.go SyncAppState),
	// so syncResult.revision is set before the phase says Succeeded.
	st.app.Status.OperationState = &v1alpha1.OperationState{
		Operation:  *op,
		Phase:      synccommon.OperationRunning,
		Message:    "one or more tasks are running",
		StartedAt:  metav1.NewTime(s.now()),
		SyncResult: syncResult(st.app, operationRevisions(op)),
	}
	s.commitLocked(st)
	d := st.behavior.SyncDuration
	if d == 0 {
		d = s.cfg.SyncDuration
	}
	s.afterLocked(d, func() { s.finishOperationLocked(st, gen) })
}

func (s *Server) finishOperationLocked(st *appState, gen int64) {
	if !s.alive(st) || st.opGen != gen {
		return
	}
	state := st.app.Status.OperationState
	if state == nil || state.Phase != synccommon.OperationRunning {
		return
	}
	op := state.Operation
	revs := operationRevisions(&op)
	dryRun := op.Sync != nil && op.Sync.DryRun
	fail := st.behavior.Fail || s.chance(s.cfg.FailureRate)
	if dryRun {
		state.Phase = synccommon.OperationSucceeded
		state.Message = "successfully synced (all tasks run)"
		s.completeLocked(st, state)
		return // no refresh after a dry run (controller/appcontroller.go processRequestedAppOperation)
	}
	if fail {
		state.Phase = synccommon.OperationFailed
		state.Message = st.behavior.FailMessage
		if state.Message == "" {
			state.Message = "one or more objects failed to apply, reason: simulated failure"
		}
		// The per-resource results name what failed (gitops-engine's sync context: the failed apply's resource
		// SyncFailed with kubectl's message): here the app's last object.
		if res := s.resourceResultsLocked(st.app, revs); len(res) > 0 {
			last := res[len(res)-1]
			last.Status, last.Message, last.HookPhase = synccommon.ResultCodeSyncFailed, state.Message, synccommon.OperationFailed
			state.SyncResult.Resources = res
		}
	} else {
		st.applied = slices.Clone(revs)
		st.final = health.HealthStatusHealthy
		if st.behavior.Degrade || s.chance(s.cfg.DegradationRate) {
			st.final = health.HealthStatusDegraded
		}
		st.health = st.final
		if s.cfg.ProgressingFor > 0 {
			st.health = health.HealthStatusProgressing
			s.afterLocked(s.cfg.ProgressingFor, func() { s.settleHealthLocked(st, gen) })
		}
		// History is written before the final operation state (controller/state.go persistRevisionHistory).
		var next int64
		if len(st.app.Status.History) > 0 {
			next = st.app.Status.History.LastRevisionHistory().ID + 1
		}
		st.app.Status.History = append(st.app.Status.History,
			historyEntry(st.app, next, revs, state.StartedAt, metav1.NewTime(s.now()), op.InitiatedBy)).
			Trunc(st.app.Spec.GetRevisionHistoryLimit())
		s.commitLocked(st)
		state.Phase = synccommon.OperationSucceeded
		state.Message = "successfully synced (all tasks run)"
		state.SyncResult.Resources = s.resourceResultsLocked(st.app, revs)
	}
	s.completeLocked(st, state)
	s.requestReconcileLocked(st)
}

// completeLocked writes a completed operation state: finishedAt set and the operation cleared in one patch
// (controller/appcontroller.go setOperationState).
func (s *Server) completeLocked(st *appState, state *v1alpha1.OperationState) {
	now := s.now()
	fin := metav1.NewTime(now)
	state.FinishedAt = &fin
	s.countsLocked(st.app.Name).LastOpFinished = now
	st.app.Operation = nil
	s.commitLocked(st)
}

func (s *Server) settleHealthLocked(st *appState, gen int64) {
	if !s.alive(st) || st.opGen != gen {
		return
	}
	st.health = st.final
	s.reconcileLocked(st)
}

// terminateLocked handles DELETE .../operation: Terminating now, Failed after TerminateDelay.
func (s *Server) terminateLocked(st *appState) {
	st.app.Status.OperationState.Phase = synccommon.OperationTerminating
	s.commitLocked(st)
	st.opGen++ // the running operation will not finish by itself any more
	gen := st.opGen
	s.afterLocked(s.cfg.TerminateDelay, func() {
		if !s.alive(st) || st.opGen != gen || st.app.Status.OperationState == nil {
			return
		}
		state := st.app.Status.OperationState
		state.Phase = synccommon.OperationFailed
		state.Message = "Operation terminated"
		s.completeLocked(st, state)
		s.requestReconcileLocked(st)
	})
}

// requestReconcileLocked queues a reconcile of the app after ReconcileDelay. Like the controller's refresh
// queue (a client-go workqueue: adding a key already waiting is a no-op, controller/appcontroller.go
// requestAppRefresh), a request while one is queued is merged into it: a refresh asked for just after an
// operation ended is answered by the reconcile the operation's end queued.
func (s *Server) requestReconcileLocked(st *appState) {
	if st.reconcileQueued {
		return
	}
	st.reconcileQueued = true
	s.afterLocked(s.cfg.ReconcileDelay, func() { s.reconcileLocked(st) })
}

// reconcileLocked compares the app (controller/state.go CompareAppState): resolves the target revision, sets
// sync status against what is live, publishes live health, stamps reconciledAt and removes the refresh
// annotation. Then automated sync may start an operation (controller/appcontroller.go autoSync).
func (s *Server) reconcileLocked(st *appState) {
	st.reconcileQueued = false
	if !s.alive(st) {
		return
	}
	s.totals.Reconciles++
	a := st.app
	now := metav1.NewTime(s.now())
	revs, err := s.resolveAppLocked(a)
	a.Status.Conditions = nil
	if err != nil {
		a.Status.Sync.Status = v1alpha1.SyncStatusCodeUnknown
		a.Status.Conditions = []v1alpha1.ApplicationCondition{{
			Type: v1alpha1.ApplicationConditionComparisonError, Message: err.Error(), LastTransitionTime: &now,
		}}
	} else {
		a.Status.Sync.ComparedTo = v1alpha1.ComparedTo{Destination: a.Spec.Destination}
		if a.Spec.HasMultipleSources() {
			a.Status.Sync.Revisions = revs
			a.Status.Sync.ComparedTo.Sources = a.Spec.Sources
		} else {
			a.Status.Sync.Revision = revs[0]
			a.Status.Sync.ComparedTo.Source = a.Spec.GetSource()
		}
		a.Status.Sync.Status = v1alpha1.SyncStatusCodeOutOfSync
		if len(st.applied) > 0 && slices.Equal(st.applied, revs) {
			a.Status.Sync.Status = v1alpha1.SyncStatusCodeSynced
		}
		a.Status.Resources = s.resourceStatusesLocked(st, revs)
	}
	h := st.health
	if len(st.applied) == 0 {
		h = health.HealthStatusMissing
	}
	if a.Status.Health.Status != h {
		a.Status.Health.Status = h
		a.Status.Health.LastTransitionTime = &now
	}
	a.Status.ReconciledAt = &now
	a.Status.SourceType = v1alpha1.ApplicationSourceTypeDirectory
	if a.Annotations != nil {
		delete(a.Annotations, v1alpha1.AnnotationKeyRefresh)
		if len(a.Annotations) == 0 {
			a.Annotations = nil
		}
	}
	s.commitLocked(st)
	for _, w := range st.waiters {
		close(w)
	}
	st.waiters = nil

	if err == nil && a.Spec.SyncPolicy != nil && a.Spec.SyncPolicy.IsAutomatedSyncEnabled() &&
		a.Status.Sync.Status == v1alpha1.SyncStatusCodeOutOfSync && a.Operation == nil && s.autoSyncAllowedLocked(a) {
		key := fmt.Sprint(revs)
		if st.autoRev == key {
			return // already attempted (controller/appcontroller.go autoSync: "most recent sync already to")
		}
		st.autoRev = key
		op := s.newSyncOperation(a, revs, a.Spec.SyncPolicy.Automated.GetPrune(), false) // appcontroller.go autoSync: Prune: Automated.GetPrune()
		op.InitiatedBy = v1alpha1.OperationInitiator{Automated: true}
		_, _ = s.startOperationLocked(st, op) // nobody to answer: the controller started it
	}
}

// autoSyncAllowedLocked: the app's sync windows let an automated sync through now (controller/appcontroller.go
// processAppRefreshQueueItem: project.Spec.SyncWindows.Matches(app).CanSync(false, nil), an error counting as no;
// "Sync prevented by sync window" otherwise).
func (s *Server) autoSyncAllowedLocked(a *v1alpha1.Application) bool {
	if s.blocked[a.Name] {
		return false
	}
	ok, _ := argocd.CanSyncAt(s.appWindowsLocked(a), s.clk.Now(), false)
	return ok
}

func (s *Server) scheduleResyncLocked() {
	s.afterLocked(s.cfg.ResyncPeriod, func() {
		for _, name := range s.sortedNamesLocked() {
			s.reconcileLocked(s.apps[name])
		}
		s.scheduleResyncLocked()
	})
}

// manifestObject is the identity of one rendered object.
type manifestObject struct {
	group, version, kind, namespace, name string
	json                                  string
}

func (s *Server) objectsLocked(a *v1alpha1.Application, revs []string) []manifestObject {
	if len(revs) == 0 {
		return nil
	}
	st := s.apps[a.Name]
	if st == nil || st.app != a {
		return s.renderObjectsLocked(a, revs[0])
	}
	if st.objectsGen != a.Generation || st.objects == nil {
		st.objects, st.objectsGen = map[string][]manifestObject{}, a.Generation
	}
	objs, ok := st.objects[revs[0]]
	if !ok {
		objs = s.renderObjectsLocked(a, revs[0])
		st.objects[revs[0]] = objs
	}
	return objs
}

// renderObjectsLocked renders the app at rev (Config.Manifests) and names its objects.
func (s *Server) renderObjectsLocked(a *v1alpha1.Application, rev string) []manifestObject {
	docs, err := s.cfg.Manifests(a, rev)
	if err != nil {
		return nil
	}
	objs := make([]manifestObject, 0, len(docs))
	for _, d := range docs {
		var m struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if json.Unmarshal([]byte(d), &m) != nil {
			continue
		}
		g, v := splitAPIVersion(m.APIVersion)
		ns := m.Metadata.Namespace
		if ns == "" {
			ns = a.Spec.Destination.Namespace
		}
		objs = append(objs, manifestObject{g, v, m.Kind, ns, m.Metadata.Name, d})
	}
	return objs
}

func (s *Server) resourceStatusesLocked(st *appState, target []string) []v1alpha1.ResourceStatus {
	objs := s.objectsLocked(st.app, target)
	out := make([]v1alpha1.ResourceStatus, 0, len(objs))
	synced := len(st.applied) > 0 && slices.Equal(st.applied, target)
	for _, o := range objs {
		rs := v1alpha1.ResourceStatus{
			Group: o.group, Version: o.version, Kind: o.kind, Namespace: o.namespace, Name: o.name,
			Status: v1alpha1.SyncStatusCodeOutOfSync,
		}
		if synced {
			rs.Status = v1alpha1.SyncStatusCodeSynced
		}
		if len(st.applied) > 0 {
			rs.Health = &v1alpha1.HealthStatus{Status: st.health}
		}
		out = append(out, rs)
	}
	return out
}

func (s *Server) resourceResultsLocked(a *v1alpha1.Application, revs []string) v1alpha1.ResourceResults {
	objs := s.objectsLocked(a, revs)
	out := make(v1alpha1.ResourceResults, 0, len(objs))
	for _, o := range objs {
		out = append(out, &v1alpha1.ResourceResult{
			Group: o.group, Version: o.version, Kind: o.kind, Namespace: o.namespace, Name: o.name,
			Status: synccommon.ResultCodeSynced, Message: fmt.Sprintf("%s/%s configured", lower(o.kind), o.name),
			HookPhase: synccommon.OperationRunning, SyncPhase: synccommon.SyncPhaseSync,
		})
	}
	return out
}

func splitAPIVersion(av string) (group, version string) {
	for i := len(av) - 1; i >= 0; i-- {
		if av[i] == '/' {
			return av[:i], av[i+1:]
		}
	}
	return "", av
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// staleLocked starts a stale window: the app is shown as before the request, Synced and Healthy with a fresh
// reconciledAt, for Config.StaleStatusFor (Progressive Syncs' race, argo-cd #29410, #22852).
func (s *Server) staleLocked(st *appState) {
	if s.cfg.StaleStatusFor <= 0 {
		return
	}
	before := st.app.DeepCopy()
	now := metav1.NewTime(s.now())
	before.Status.Sync.Status = v1alpha1.SyncStatusCodeSynced
	before.Status.Health.Status = health.HealthStatusHealthy
	before.Status.ReconciledAt = &now
	st.stale = before
	st.staleUntil = s.now().Add(s.cfg.StaleStatusFor)
	s.afterLocked(s.cfg.StaleStatusFor, func() {
		if !s.alive(st) || st.stale != before {
			return
		}
		st.stale = nil
		s.publishLocked(st)
	})
}
