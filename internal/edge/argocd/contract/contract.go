// Package contract holds the behaviour fleetwave relies on from Argo CD's API, as tests that run against any
// Argo CD: the simulator (argocdsim) in the fast suite, a real Argo CD in the end-to-end suite. When the
// simulator passes and the real server fails, the simulator is wrong.
package contract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	synccommon "github.com/argoproj/argo-cd/gitops-engine/v3/pkg/sync/common"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
)

// Target is an Argo CD to check, with the apps the suite may change.
type Target struct {
	// Options reach the server (BaseURL, Token, TLS); the suite makes its own clients from them.
	Options argocd.Options
	// ManualApp is a single-source app with automated sync off whose repository holds OldRevision and
	// NewRevision. The suite syncs and rolls it back, and leaves it at NewRevision.
	ManualApp string
	// OldRevision and NewRevision are two commit SHAs ManualApp can be synced to.
	OldRevision, NewRevision string
	// Selector is a label selector matching ManualApp.
	Selector string
	// AutoApp has automated sync on (refusal checks). Empty skips them.
	AutoApp string
	// SlowApp has automated sync off and a sync that runs long (a PreSync hook that sleeps for a minute), so
	// it can be terminated. The suite always terminates its syncs. Empty skips the terminate check and makes
	// the concurrent-sync check use ManualApp.
	SlowApp string
	// Timeout bounds each wait (default 2m).
	Timeout time.Duration
	// ClockSkew tolerated between this machine and the server when comparing timestamps (default 2s).
	ClockSkew time.Duration
}

// Run runs the contract against targets made by newTarget (called once per check; it may return the same
// server each time). Checks run in order, not in parallel: they share apps.
func Run(t *testing.T, newTarget func(t *testing.T) Target) {
	checks := []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"ListFilters", listFilters},
		{"GetAndRefresh", getAndRefresh},
		{"SyncToRevisionAndWait", syncAndWait},
		{"RefuseSyncWhileOperationRuns", refuseConcurrentSync},
		{"RefuseWhileAutomated", refuseWhileAutomated},
		{"RefuseSyncInsideSyncWindow", refuseInsideSyncWindow},
		{"RefuseRollbackToUnknownID", refuseUnknownRollback},
		{"RefuseTerminateWithoutOperation", refuseTerminateIdle},
		{"RefuseBadToken", refuseBadToken},
		{"Rollback", rollback},
		{"Terminate", terminate},
		{"StreamBothEncodings", streamEncodings},
		{"StreamOmitsFields", streamOmitsFields},
		{"ManagedResources", managedResources},
		{"ManifestsAtRevision", manifests},
		{"GenerateApplicationSet", generateAppSet},
		{"ManifestsAtUnknownRevision", manifestsAtUnknownRevision},
		{"ClustersAndSettings", clustersAndSettings},
		{"Patch", patch},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			tg := newTarget(t)
			if tg.Timeout == 0 {
				tg.Timeout = 2 * time.Minute
			}
			if tg.ClockSkew == 0 {
				tg.ClockSkew = 2 * time.Second
			}
			cl, err := argocd.New(tg.Options)
			if err != nil {
				t.Fatal(err)
			}
			c.fn(t, &suite{Target: tg, c: cl})
		})
	}
}

type suite struct {
	Target
	c *argocd.Client
}

func (s *suite) ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), s.Timeout)
	t.Cleanup(cancel)
	return ctx
}

// waitFor follows the app's stream (which starts with its current state) until cond holds.
func (s *suite) waitFor(t *testing.T, c *argocd.Client, name, what string, cond func(*v1alpha1.Application) bool) *v1alpha1.Application {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), s.Timeout)
	defer cancel()
	var got, last *v1alpha1.Application
	err := c.Watch(ctx, argocd.WatchQuery{Name: name}, argocd.WatchHandler{OnEvent: func(ev v1alpha1.ApplicationWatchEvent) {
		a := ev.Application
		last = &a
		if got == nil && cond(&a) {
			got = &a
			cancel()
		}
	}})
	if got == nil {
		t.Fatalf("waiting for %s of %s: %v (last seen: %s)", what, name, err, describe(last))
	}
	return got
}

// idle waits until the app has no operation in flight.
func (s *suite) idle(t *testing.T, name string) *v1alpha1.Application {
	t.Helper()
	return s.waitFor(t, s.c, name, "no operation in progress", func(a *v1alpha1.Application) bool {
		return a.Operation == nil && (a.Status.OperationState == nil || a.Status.OperationState.Phase.Completed())
	})
}

// syncTo syncs the app to rev and waits for an operation started after the request to complete.
func (s *suite) syncTo(t *testing.T, name, rev string) *v1alpha1.Application {
	t.Helper()
	s.idle(t, name)
	at := time.Now()
	if _, err := s.c.Sync(s.ctx(t), name, argocd.SyncRequest{Revision: rev}); err != nil {
		t.Fatalf("sync %s to %s: %v", name, rev, err)
	}
	return s.waitFor(t, s.c, name, "the sync to "+rev+" to finish", s.completedSince(at))
}

func (s *suite) completedSince(at time.Time) func(*v1alpha1.Application) bool {
	notBefore := at.Truncate(time.Second).Add(-s.ClockSkew)
	return func(a *v1alpha1.Application) bool {
		os := a.Status.OperationState
		return a.Operation == nil && os != nil && os.Phase.Completed() && !os.StartedAt.Time.Before(notBefore)
	}
}

func describe(a *v1alpha1.Application) string {
	if a == nil {
		return "nothing"
	}
	phase, applied := "", ""
	if os := a.Status.OperationState; os != nil {
		phase = string(os.Phase) + " " + os.Message
		if os.SyncResult != nil {
			applied = os.SyncResult.Revision
		}
	}
	return fmt.Sprintf("rv %s, operation set %v, phase %q, applied %q, sync %s at %q, health %s, reconciledAt %v",
		a.ResourceVersion, a.Operation != nil, phase, applied, a.Status.Sync.Status, a.Status.Sync.Revision, a.Status.Health.Status, a.Status.ReconciledAt)
}

func names(list *v1alpha1.ApplicationList) []string {
	var out []string
	for _, a := range list.Items {
		out = append(out, a.Name)
	}
	return out
}

func listFilters(t *testing.T, s *suite) {
	ctx := s.ctx(t)
	all, err := s.c.ListApplications(ctx, argocd.ListQuery{Selector: s.Selector})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(names(all), s.ManualApp) {
		t.Fatalf("list %q does not hold %s: %v", s.Selector, s.ManualApp, names(all))
	}
	if !slices.IsSorted(names(all)) {
		t.Errorf("list is not sorted by name: %v", names(all))
	}
	app := all.Items[slices.Index(names(all), s.ManualApp)]
	none, err := s.c.ListApplications(ctx, argocd.ListQuery{Selector: "fleetwave-contract-no-such-label=1"})
	if err != nil || len(none.Items) != 0 {
		t.Fatalf("list with a selector matching nothing: %v, %v", err, names(none))
	}
	byProject, err := s.c.ListApplications(ctx, argocd.ListQuery{Selector: s.Selector, Projects: []string{app.Spec.Project}})
	if err != nil || !slices.Contains(names(byProject), s.ManualApp) {
		t.Fatalf("list by project %s: %v, %v", app.Spec.Project, err, names(byProject))
	}
	otherProject, err := s.c.ListApplications(ctx, argocd.ListQuery{Projects: []string{"fleetwave-contract-no-such-project"}})
	if err != nil || len(otherProject.Items) != 0 {
		t.Fatalf("list by an unknown project: %v, %v", err, names(otherProject))
	}
	byRepo, err := s.c.ListApplications(ctx, argocd.ListQuery{Repo: app.Spec.GetSource().RepoURL})
	if err != nil || !slices.Contains(names(byRepo), s.ManualApp) {
		t.Fatalf("list by repo %s: %v, %v", app.Spec.GetSource().RepoURL, err, names(byRepo))
	}
}

func getAndRefresh(t *testing.T, s *suite) {
	ctx := s.ctx(t)
	a, err := s.c.GetApplication(ctx, s.ManualApp, "")
	if err != nil || a.Name != s.ManualApp || a.ResourceVersion == "" {
		t.Fatalf("get: %v %s", err, describe(a))
	}
	if _, ok := argocd.ResourceVersion(a.ResourceVersion); !ok {
		t.Errorf("resourceVersion %q is not an integer (the orchestrator orders events by it)", a.ResourceVersion)
	}
	// A missing app is PermissionDenied (Argo CD does not tell whether an app the caller may not see exists);
	// named with a project, NotFound — also for an existing app of another project.
	if _, err := s.c.GetApplication(ctx, "fleetwave-contract-no-such-app", ""); !errors.Is(err, argocd.ErrPermissionDenied) {
		t.Fatalf("get of a missing app: %v, want PermissionDenied", err)
	}
	if _, err := s.c.FindApplication(ctx, "fleetwave-contract-no-such-app", ""); !errors.Is(err, argocd.ErrNotFound) {
		t.Fatalf("get of a missing app in project default: %v, want NotFound", err)
	}
	if _, err := s.c.FindApplication(ctx, s.ManualApp, "fleetwave-contract-no-such-project"); !errors.Is(err, argocd.ErrNotFound) {
		t.Fatalf("get of %s in another project: %v, want NotFound", s.ManualApp, err)
	}
	if a, err := s.c.FindApplication(ctx, s.ManualApp, ""); err != nil || a.Name != s.ManualApp {
		t.Fatalf("get of %s in project default: %v %s", s.ManualApp, err, describe(a))
	}
	before := time.Now().Truncate(time.Second).Add(-s.ClockSkew)
	r, err := s.c.GetApplication(ctx, s.ManualApp, v1alpha1.RefreshTypeNormal)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status.ReconciledAt == nil || r.Status.ReconciledAt.Time.Before(before) {
		t.Fatalf("a refresh answered with reconciledAt %v, older than the request (%v)", r.Status.ReconciledAt, before)
	}
	if _, ok := r.Annotations[v1alpha1.AnnotationKeyRefresh]; ok {
		t.Fatal("a refresh answered before the controller removed the refresh annotation")
	}
}

func syncAndWait(t *testing.T, s *suite) {
	s.syncTo(t, s.ManualApp, s.OldRevision)
	prev := s.idle(t, s.ManualApp)
	at := time.Now()
	ans, err := s.c.Sync(s.ctx(t), s.ManualApp, argocd.SyncRequest{Revision: s.NewRevision})
	if err != nil {
		t.Fatal(err)
	}
	// util/argo/argo.go SetAppOperation: the answer carries the operation and no operation state.
	if ans.Operation == nil || ans.Operation.Sync == nil || ans.Status.OperationState != nil {
		t.Fatalf("sync answer: %s, operationState %+v", describe(ans), ans.Status.OperationState)
	}
	if ans.Operation.Sync.Revision != s.NewRevision {
		t.Errorf("the answer's operation syncs to %q, want %s", ans.Operation.Sync.Revision, s.NewRevision)
	}
	done := s.waitFor(t, s.c, s.ManualApp, "the sync to finish", s.completedSince(at))
	os := done.Status.OperationState
	if os.Phase != synccommon.OperationSucceeded || os.SyncResult == nil || os.SyncResult.Revision != s.NewRevision {
		t.Fatalf("after the sync: %s", describe(done))
	}
	if os.FinishedAt == nil || os.FinishedAt.Before(&os.StartedAt) {
		t.Fatalf("startedAt %v finishedAt %v", os.StartedAt, os.FinishedAt)
	}
	h := done.Status.History
	if len(h) == 0 || h[len(h)-1].Revision != s.NewRevision {
		t.Fatalf("history does not end with %s: %+v", s.NewRevision, h)
	}
	if ph := prev.Status.History; len(ph) > 0 && h[len(h)-1].ID != ph[len(ph)-1].ID+1 {
		t.Errorf("history id %d after %d", h[len(h)-1].ID, ph[len(ph)-1].ID)
	}
	fin := os.FinishedAt.Time
	s.waitFor(t, s.c, s.ManualApp, "a reconcile after the operation", func(a *v1alpha1.Application) bool {
		return a.Status.ReconciledAt != nil && !a.Status.ReconciledAt.Time.Before(fin.Truncate(time.Second))
	})
}

func refuseConcurrentSync(t *testing.T, s *suite) {
	app := s.ManualApp
	if s.SlowApp != "" {
		app = s.SlowApp
	}
	s.idle(t, app)
	ctx := s.ctx(t)
	at := time.Now()
	if _, err := s.c.Sync(ctx, app, argocd.SyncRequest{Revision: s.NewRevision}); err != nil {
		t.Fatal(err)
	}
	_, err := s.c.Sync(ctx, app, argocd.SyncRequest{Revision: s.NewRevision})
	if !errors.Is(err, argocd.ErrOperationInProgress) || !errors.Is(err, argocd.ErrFailedPrecondition) {
		t.Fatalf("second sync: %v, want FailedPrecondition \"another operation is already in progress\"", err)
	}
	var ae *argocd.APIError
	if errors.As(err, &ae) && ae.HTTPStatus != 400 {
		t.Errorf("HTTP %d, want 400 (grpc-gateway maps FailedPrecondition to 400)", ae.HTTPStatus)
	}
	if app == s.SlowApp {
		// Do not wait for a slow sync: end it once the controller picked it up (before, terminate is refused).
		s.waitFor(t, s.c, app, "the first sync to run", func(a *v1alpha1.Application) bool { return a.Status.OperationState != nil })
		if err := s.c.TerminateOperation(ctx, app); err != nil && !errors.Is(err, argocd.ErrInvalidArgument) {
			t.Fatal(err)
		}
	}
	s.waitFor(t, s.c, app, "the first sync to finish", s.completedSince(at))
}

func refuseWhileAutomated(t *testing.T, s *suite) {
	if s.AutoApp == "" {
		t.Skip("no app with automated sync")
	}
	ctx := s.ctx(t)
	a, err := s.c.GetApplication(ctx, s.AutoApp, "")
	if err != nil {
		t.Fatal(err)
	}
	other := s.OldRevision
	if a.Spec.GetSource().TargetRevision == other {
		other = s.NewRevision
	}
	_, err = s.c.Sync(ctx, s.AutoApp, argocd.SyncRequest{Revision: other})
	if !errors.Is(err, argocd.ErrFailedPrecondition) || errors.Is(err, argocd.ErrOperationInProgress) {
		t.Fatalf("sync of an automated app to another revision: %v, want FailedPrecondition (auto-sync)", err)
	}
	_, err = s.c.Rollback(ctx, s.AutoApp, argocd.RollbackRequest{ID: 0})
	if !errors.Is(err, argocd.ErrFailedPrecondition) || errors.Is(err, argocd.ErrOperationInProgress) {
		t.Fatalf("rollback of an automated app: %v, want FailedPrecondition", err)
	}
}

// refuseInsideSyncWindow: a deny window of the app's project over the app (or an allow window not open now) makes
// the API server refuse a manual sync with PermissionDenied "cannot sync: blocked by sync window"; manualSync on
// the window lets manual syncs through. GET .../syncwindows says the same. The project's windows are restored.
func refuseInsideSyncWindow(t *testing.T, s *suite) {
	ctx := s.ctx(t)
	app := s.idle(t, s.ManualApp)
	project := app.Spec.Project
	if project == "" {
		project = "default"
	}
	p, err := s.c.GetProject(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	orig := p.Spec.SyncWindows
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.Timeout)
		defer cancel()
		p, err := s.c.GetProject(ctx, project)
		if err == nil {
			p.Spec.SyncWindows = orig
			_, err = s.c.UpdateProject(ctx, p)
		}
		if err != nil {
			t.Errorf("restoring the sync windows of project %s: %v", project, err)
		}
	})
	// setWindows replaces the project's windows and waits until the API server evaluates them for the app (it
	// reads projects from an informer's cache).
	setWindows := func(w v1alpha1.InlineSyncWindow, canSync bool) {
		t.Helper()
		cur, err := s.c.GetProject(ctx, project)
		if err != nil {
			t.Fatal(err)
		}
		w.Applications = []string{app.Name}
		cur.Spec.SyncWindows = append(slices.Clone(orig), &w)
		if _, err := s.c.UpdateProject(ctx, cur); err != nil {
			t.Fatal(err)
		}
		for {
			sw, err := s.c.SyncWindows(ctx, s.ManualApp)
			if err == nil && sw.CanSync == canSync && slices.ContainsFunc(sw.AssignedWindows, func(a argocd.SyncWindow) bool {
				return a.Kind == w.Kind && a.Schedule == w.Schedule && a.ManualSync == w.ManualSync
			}) {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("GET syncwindows never showed the %s window %q (manualSync %v) with canSync %v: %+v, %v", w.Kind, w.Schedule, w.ManualSync, canSync, sw, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	refused := func(what string) {
		t.Helper()
		_, err := s.c.Sync(ctx, s.ManualApp, argocd.SyncRequest{Revision: s.NewRevision})
		var ae *argocd.APIError
		if !errors.As(err, &ae) || !errors.Is(err, argocd.ErrPermissionDenied) || ae.Message != argocd.SyncWindowBlockedText || !argocd.IsSyncWindowRefusal(err) {
			t.Fatalf("sync %s: %v, want PermissionDenied %q", what, err, argocd.SyncWindowBlockedText)
		}
	}
	always := v1alpha1.InlineSyncWindow{Kind: "deny", Schedule: "* * * * *", Duration: "1h"} // a minute's start, an hour long: always active
	setWindows(always, false)
	refused("inside a deny window")
	sw, err := s.c.SyncWindows(ctx, s.ManualApp)
	if err != nil || len(sw.ActiveWindows) != 1 || sw.ActiveWindows[0].Kind != "deny" {
		t.Fatalf("GET syncwindows inside a deny window: %+v, %v", sw, err)
	}

	closed := v1alpha1.InlineSyncWindow{Kind: "allow", Schedule: fmt.Sprintf("0 %d * * *", (time.Now().UTC().Hour()+12)%24), Duration: "1h"}
	setWindows(closed, false)
	refused("outside the only allow window")

	always.ManualSync = true
	setWindows(always, true) // canSync: a manual sync would be accepted (not sent: it would start an operation)
	if h := argocd.EvaluateWindows(argocd.AppWindows(v1alpha1.SyncWindows{&always}, app), time.Now()); h.Blocked {
		t.Fatalf("EvaluateWindows blocks a manual sync in a deny window with manualSync: %+v", h)
	}
}

func refuseUnknownRollback(t *testing.T, s *suite) {
	s.idle(t, s.ManualApp)
	_, err := s.c.Rollback(s.ctx(t), s.ManualApp, argocd.RollbackRequest{ID: 987654})
	if !errors.Is(err, argocd.ErrInvalidArgument) {
		t.Fatalf("rollback to an unknown id: %v, want InvalidArgument", err)
	}
}

func refuseTerminateIdle(t *testing.T, s *suite) {
	s.idle(t, s.ManualApp)
	if err := s.c.TerminateOperation(s.ctx(t), s.ManualApp); !errors.Is(err, argocd.ErrInvalidArgument) {
		t.Fatalf("terminate without an operation: %v, want InvalidArgument", err)
	}
}

func refuseBadToken(t *testing.T, s *suite) {
	o := s.Options
	o.Token = "fleetwave-contract-invalid-token"
	bad, err := argocd.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.ListApplications(s.ctx(t), argocd.ListQuery{}); !errors.Is(err, argocd.ErrUnauthenticated) {
		t.Fatalf("list with a bad token: %v, want Unauthenticated", err)
	}
}

func rollback(t *testing.T, s *suite) {
	s.syncTo(t, s.ManualApp, s.OldRevision)
	done := s.syncTo(t, s.ManualApp, s.NewRevision)
	var id int64 = -1
	for _, h := range done.Status.History {
		if h.Revision == s.OldRevision {
			id = h.ID
		}
	}
	if id < 0 {
		t.Fatalf("no history entry for %s: %+v", s.OldRevision, done.Status.History)
	}
	at := time.Now()
	if _, err := s.c.Rollback(s.ctx(t), s.ManualApp, argocd.RollbackRequest{ID: id}); err != nil {
		t.Fatal(err)
	}
	rb := s.waitFor(t, s.c, s.ManualApp, "the rollback to finish", s.completedSince(at))
	if os := rb.Status.OperationState; os.Phase != synccommon.OperationSucceeded || os.SyncResult.Revision != s.OldRevision {
		t.Fatalf("after the rollback: %s", describe(rb))
	}
	s.syncTo(t, s.ManualApp, s.NewRevision)
}

func terminate(t *testing.T, s *suite) {
	if s.SlowApp == "" {
		t.Skip("no slow app")
	}
	s.idle(t, s.SlowApp)
	at := time.Now()
	if _, err := s.c.Sync(s.ctx(t), s.SlowApp, argocd.SyncRequest{Revision: s.NewRevision}); err != nil {
		t.Fatal(err)
	}
	notBefore := at.Truncate(time.Second).Add(-s.ClockSkew)
	s.waitFor(t, s.c, s.SlowApp, "the sync to run", func(a *v1alpha1.Application) bool {
		os := a.Status.OperationState
		return os != nil && os.Phase == synccommon.OperationRunning && !os.StartedAt.Time.Before(notBefore)
	})
	if err := s.c.TerminateOperation(s.ctx(t), s.SlowApp); err != nil {
		t.Fatal(err)
	}
	done := s.waitFor(t, s.c, s.SlowApp, "the terminated operation to end", s.completedSince(at))
	if os := done.Status.OperationState; os.Phase == synccommon.OperationSucceeded {
		t.Fatalf("a terminated operation ended %s", describe(done))
	}
}

func streamEncodings(t *testing.T, s *suite) {
	for _, f := range []struct {
		name   string
		format argocd.StreamFormat
	}{{"ndjson", argocd.StreamNDJSON}, {"sse", argocd.StreamSSE}} {
		t.Run(f.name, func(t *testing.T) {
			o := s.Options
			o.StreamFormat = f.format
			c, err := argocd.New(o)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), s.Timeout)
			defer cancel()
			var first *v1alpha1.ApplicationWatchEvent
			var seen []string
			// Once connected, ask for a refresh: its writes must come down the stream as MODIFIED events.
			refresh := func(bool) {
				go func() { _, _ = c.GetApplication(ctx, s.ManualApp, v1alpha1.RefreshTypeNormal) }()
			}
			err = c.Watch(ctx, argocd.WatchQuery{Selector: s.Selector}, argocd.WatchHandler{OnConnect: refresh, OnEvent: func(ev v1alpha1.ApplicationWatchEvent) {
				if ev.Application.Name != s.ManualApp {
					return
				}
				if first == nil {
					e := ev
					first = &e
				}
				seen = append(seen, string(ev.Type))
				if ev.Type == "MODIFIED" {
					cancel()
				}
			}})
			if first == nil || first.Type != "ADDED" || !slices.Contains(seen, "MODIFIED") {
				t.Fatalf("stream (%v) events for %s: %v", err, s.ManualApp, seen)
			}
		})
	}
}

// streamOmitsFields: a stream asked to leave fields out (the `fields` parameter's exclude form) sends the app
// without them and with the rest; a GET still has them.
func streamOmitsFields(t *testing.T, s *suite) {
	ctx := s.ctx(t)
	full, err := s.c.GetApplication(ctx, s.ManualApp, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Status.Resources) == 0 || full.Status.OperationState == nil || full.Status.OperationState.SyncResult == nil ||
		len(full.Status.OperationState.SyncResult.Resources) == 0 {
		t.Fatalf("%s has no status.resources or syncResult.resources to leave out: %s", s.ManualApp, describe(full))
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var got *v1alpha1.Application
	err = s.c.Watch(wctx, argocd.WatchQuery{Name: s.ManualApp, OmitFields: []string{"status.resources",
		"status.operationState.syncResult.resources", "metadata.managedFields"}}, argocd.WatchHandler{
		OnEvent: func(ev v1alpha1.ApplicationWatchEvent) {
			if ev.Application.Name == s.ManualApp {
				got = &ev.Application
				cancel()
			}
		}})
	if got == nil {
		t.Fatalf("no event for %s: %v", s.ManualApp, err)
	}
	if got.Status.Resources != nil || len(got.ManagedFields) > 0 {
		t.Errorf("stream sent status.resources (%d) or managedFields (%d)", len(got.Status.Resources), len(got.ManagedFields))
	}
	os := got.Status.OperationState
	if os == nil || os.SyncResult == nil || os.SyncResult.Resources != nil {
		t.Fatalf("stream's operationState: want it without syncResult.resources, got %+v", os)
	}
	if got.ResourceVersion == "" || os.Phase != full.Status.OperationState.Phase || os.SyncResult.Revision != full.Status.OperationState.SyncResult.Revision ||
		got.Status.Sync.Status != full.Status.Sync.Status || len(got.Status.History) != len(full.Status.History) ||
		got.Spec.GetSource().RepoURL != full.Spec.GetSource().RepoURL {
		t.Errorf("stream left out more than asked:\nstream %s\nGET    %s", describe(got), describe(full))
	}
}

func managedResources(t *testing.T, s *suite) {
	items, err := s.c.ManagedResources(s.ctx(t), s.ManualApp)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) == 0 {
		t.Fatal("no managed resources")
	}
	for _, it := range items {
		for field, v := range map[string]string{"targetState": it.TargetState, "liveState": it.LiveState} {
			if v == "" {
				continue
			}
			var doc any
			if err := json.Unmarshal([]byte(v), &doc); err != nil {
				t.Errorf("%s %s/%s %s is not JSON-encoded: %v", it.Kind, it.Namespace, it.Name, field, err)
			}
		}
	}
}

func manifests(t *testing.T, s *suite) {
	m, err := s.c.Manifests(s.ctx(t), s.ManualApp, s.NewRevision)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) == 0 {
		t.Fatal("no manifests")
	}
	for _, doc := range m.Manifests {
		var obj struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal([]byte(doc), &obj); err != nil || obj.Kind == "" {
			t.Errorf("manifest is not a JSON object with a kind: %.80q", doc)
		}
	}
}

func clustersAndSettings(t *testing.T, s *suite) {
	ctx := s.ctx(t)
	cs, err := s.c.ListClusters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Server == "" {
			t.Errorf("cluster %q without a server", c.Name)
		}
	}
	if _, err := s.c.Settings(ctx); err != nil {
		t.Fatal(err)
	}
}

func patch(t *testing.T, s *suite) {
	ctx := s.ctx(t)
	key := "fleetwave.io/contract"
	val := fmt.Sprint(time.Now().UnixNano())
	a, err := s.c.Patch(ctx, s.ManualApp, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, val), argocd.PatchMerge)
	if err != nil || a.Annotations[key] != val {
		t.Fatalf("merge patch: %v, annotations %v", err, a.Annotations)
	}
	a, err = s.c.Patch(ctx, s.ManualApp, `[{"op":"remove","path":"/metadata/annotations/fleetwave.io~1contract"}]`, argocd.PatchJSON)
	if err != nil || a.Annotations[key] != "" {
		t.Fatalf("json patch: %v, annotations %v", err, a.Annotations)
	}
	if _, err := s.c.Patch(ctx, s.ManualApp, `{}`, "strategic"); !errors.Is(err, argocd.ErrInvalidArgument) {
		t.Fatalf("unsupported patch type: %v, want InvalidArgument", err)
	}
}
