package drift_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/fleetwave/fleetwave/internal/config"
	"github.com/fleetwave/fleetwave/internal/drift"
	"github.com/fleetwave/fleetwave/internal/edge/github"
	"github.com/fleetwave/fleetwave/internal/edge/github/fakegithub"
	"github.com/fleetwave/fleetwave/internal/edge/metrics"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/inventory"
)

const (
	opsRepo   = "acme/fleet-ops"
	appID     = 99
	install   = 42
	secretTok = "argocd-repo-token-do-not-print"
)

var t0 = time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)

// world is one fleetwave process's view: an inventory, the store, GitHub and the clock; restart gives a new
// process on the same store and GitHub.
type world struct {
	t     *testing.T
	ctx   context.Context
	clock *clockwork.FakeClock
	inv   *inventory.Inventory
	gh    *fakegithub.Server
	dsn   string
	st    *store.Store
	w     *drift.Watcher
	// maxOpen is the reporter's MaxOpen (0: its default).
	maxOpen int
	// mets is the /metrics registry the gauge of the current process is on.
	mets *metrics.Metrics
}

func newWorld(t *testing.T) *world {
	clock := clockwork.NewFakeClockAt(t0)
	k, _ := fakegithub.AppKey()
	w := &world{t: t, ctx: context.Background(), clock: clock, inv: inventory.New(clock.Now),
		gh:  fakegithub.New(t, fakegithub.WithApp(appID, &k.PublicKey), fakegithub.WithInstallation(opsRepo, install)),
		dsn: "sqlite://" + filepath.Join(t.TempDir(), "fw.db")}
	w.start()
	return w
}

// start is a fleetwave process: a store handle, a GitHub client, a reporter and a watcher of the inventory.
func (w *world) start() {
	w.t.Helper()
	st, err := store.Open(w.ctx, w.dsn, store.WithClock(w.clock))
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { st.Close() })
	_, key := fakegithub.AppKey()
	app, err := github.NewApp(github.AppConfig{AppID: appID, PrivateKey: key, APIURL: w.gh.URL(), Transport: w.gh.Client().Transport,
		ClientOptions: []github.ClientOption{github.WithBotLogin(w.gh.BotLogin())}})
	if err != nil {
		w.t.Fatal(err)
	}
	id, err := app.RepoInstallation(w.ctx, opsRepo)
	if err != nil {
		w.t.Fatal(err)
	}
	client, err := app.Client(id)
	if err != nil {
		w.t.Fatal(err)
	}
	rep := drift.NewReporter(client, st, drift.ReporterOptions{Repo: opsRepo, Clock: w.clock, MinEdit: 5 * time.Minute, MaxOpen: w.maxOpen,
		ArgoCDURL: func(string) string { return "https://argocd.example.com" },
		Redact:    func(s string) string { return config.Redact(s, secretTok) }})
	w.st = st
	w.w = drift.NewWatcher(w.inv, st, drift.Options{After: 30 * time.Minute, Clock: w.clock, Sinks: []drift.Sink{rep}})
	w.mets = metrics.New()
	w.mets.Drift(w.w.Alerts, []string{""})
}

// gauge is fleetwave_drift_apps{instance="",project="payments",state} on /metrics.
func (w *world) gauge(state string) float64 {
	w.t.Helper()
	mfs, err := w.mets.Registry().Gather()
	if err != nil {
		w.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "fleetwave_drift_apps" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["project"] == "payments" && labels["state"] == state {
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

func (w *world) evaluate() drift.Decision {
	w.t.Helper()
	d, _, err := w.w.Evaluate(w.ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	return d
}

func (w *world) apply(name, sync, health string) {
	w.inv.Apply(inventory.App{Key: inventory.Key{Namespace: "argocd", Name: name}, Project: "payments", Cluster: "https://prd-eu-1",
		ClusterName: "prd-eu-1", Revision: strings.Repeat("a", 40), Sync: sync, Health: health,
		Operation: &inventory.Operation{By: "automated", Phase: "Failed", Revision: strings.Repeat("a", 40), StartedAt: t0, FinishedAt: t0,
			Message: "one or more objects failed to apply: https://bot:" + secretTok + "@git.example.com/fleet.git"}})
}

// issues are the drift reports on GitHub, by state.
func (w *world) issues() (open, closed []fakegithub.Issue) {
	for _, is := range w.gh.Issues(opsRepo) {
		if is.State == "open" {
			open = append(open, is)
		} else {
			closed = append(closed, is)
		}
	}
	return open, closed
}

func (w *world) wantIssues(step string, open, closed int) []fakegithub.Issue {
	w.t.Helper()
	o, c := w.issues()
	if len(o) != open || len(c) != closed {
		w.t.Fatalf("%s: %d open and %d closed issues; want %d and %d:\nopen %+v\nclosed %+v", step, len(o), len(c), open, closed, o, c)
	}
	return o
}

func (w *world) alerts() int { return len(w.w.Alerts()) }

// TestLastingDriftIsReportedOnce is the issue's proof, with an injected clock: drift appears, crosses the
// threshold, is reported once (one issue), changes (the issue is edited, not duplicated), survives restarts
// with one issue, converges (the issue is closed); an app a running rollout is about to sync is not reported.
func TestLastingDriftIsReportedOnce(t *testing.T) {
	w := newWorld(t)
	w.apply("web-eu", "Synced", "Healthy")
	w.apply("api-eu", "Synced", "Healthy")
	w.evaluate()
	w.wantIssues("all synced", 0, 0)

	// A rollout is about to sync api-eu (pending, its step not done): its drift is the rollout's.
	r, _, err := w.st.CreateRollout(w.ctx, store.NewRollout{Repo: "acme/gitops", MergeSHA: "m1", Plan: []byte("{}"), State: store.RolloutPaused,
		Waves: []store.NewWave{{Name: "all", Steps: []store.NewStep{{App: store.AppKey{Namespace: "argocd", Name: "api-eu"}, Cluster: "prd-eu-1"}}}}})
	if err != nil {
		t.Fatal(err)
	}

	// Drift appears.
	w.clock.Advance(time.Minute)
	w.apply("web-eu", "OutOfSync", "Healthy")
	w.apply("api-eu", "OutOfSync", "Healthy")
	w.evaluate()
	w.wantIssues("drift below the threshold", 0, 0)
	if w.alerts() != 0 {
		t.Fatalf("alerts below the threshold: %+v", w.w.Alerts())
	}

	// It crosses the threshold: one issue, for web-eu only.
	w.clock.Advance(30 * time.Minute)
	d := w.evaluate()
	open := w.wantIssues("past the threshold", 1, 0)
	if w.alerts() != 1 || d.Alerts[0].App.Name != "web-eu" || w.gauge(drift.OutOfSync) != 1 {
		t.Fatalf("alerts: %+v; gauge %v", d.Alerts, w.gauge(drift.OutOfSync))
	}
	is := open[0]
	for _, s := range []string{"Drift: argocd/web-eu is OutOfSync", "has been **OutOfSync** since 2026-11-29 08:01 UTC", "(30m0s)",
		"| Project | payments |", "| Cluster | prd-eu-1 (https://prd-eu-1) |", "| Revision | `aaaaaaaaaa` |",
		"Failed by automated at aaaaaaaaaa", "[Open argocd/web-eu in Argo CD](https://argocd.example.com/applications/argocd/web-eu)"} {
		if !strings.Contains(is.Title+"\n"+is.Body, s) {
			t.Errorf("the report does not say %q:\n%s\n%s", s, is.Title, is.Body)
		}
	}
	if strings.Contains(is.Body, "Argo CD instance") {
		t.Errorf("a single-instance fleet's report names the instance:\n%s", is.Body)
	}

	// The same state again: nothing written.
	w.clock.Advance(10 * time.Minute)
	w.evaluate()
	if o := w.wantIssues("unchanged", 1, 0); o[0].Edits != 0 {
		t.Errorf("an unchanged report was edited %d times", o[0].Edits)
	}

	// It changes: the issue is edited, not duplicated; a second change within MinEdit waits for it.
	w.apply("web-eu", "OutOfSync", "Degraded")
	w.clock.Advance(31 * time.Minute)
	w.evaluate()
	o := w.wantIssues("changed", 1, 0)
	if o[0].Number != is.Number || o[0].Edits != 1 || !strings.Contains(o[0].Title, "OutOfSync and Degraded") {
		t.Fatalf("after a change: %+v", o[0])
	}
	if w.gauge(drift.OutOfSync) != 1 || w.gauge(drift.Degraded) != 1 {
		t.Errorf("gauge OutOfSync %v, Degraded %v; want 1 and 1", w.gauge(drift.OutOfSync), w.gauge(drift.Degraded))
	}
	w.apply("web-eu", "OutOfSync", "Progressing")
	w.evaluate()
	if o := w.wantIssues("changed again at once", 1, 0); o[0].Edits != 1 {
		t.Errorf("edited %d times within MinEdit; want 1", o[0].Edits)
	}
	w.clock.Advance(5 * time.Minute)
	w.evaluate()
	if o := w.wantIssues("changed again, later", 1, 0); o[0].Edits != 2 || strings.Contains(o[0].Title, "Degraded") {
		t.Errorf("after MinEdit: %+v", o[0])
	}

	// Restart: a new process on the same store and GitHub keeps the one issue.
	w.start()
	w.evaluate()
	w.wantIssues("after a restart", 1, 0)

	// Restart after a crash between opening the issue and recording it, with a duplicate on GitHub: the
	// issue is adopted from its marker and the duplicate closed.
	if err := w.st.DeleteDriftReport(w.ctx, store.AppKey{Namespace: "argocd", Name: "web-eu"}); err != nil {
		t.Fatal(err)
	}
	w.gh.AddIssue(opsRepo, w.gh.BotLogin(), "Drift: argocd/web-eu is OutOfSync", is.Body)
	w.gh.AddIssue(opsRepo, "mallory", "Drift: argocd/web-eu is OutOfSync", is.Body) // a person's copy is not the App's
	w.start()
	w.evaluate()
	o = w.wantIssues("after a crash", 2, 1) // the App's one, and mallory's left alone
	if o[0].Number != is.Number {
		t.Errorf("kept #%d; want the oldest, #%d", o[0].Number, is.Number)
	}
	recs, err := w.st.ListDriftReports(w.ctx)
	if err != nil || len(recs) != 1 || recs[0].Number != is.Number {
		t.Fatalf("records after reconciling: %+v, %v", recs, err)
	}

	// The rollout finishes without syncing api-eu: now its drift is an alert.
	if _, err := w.st.UpdateRollout(w.ctx, withState(r, store.RolloutAborted)); err != nil {
		t.Fatal(err)
	}
	w.evaluate()
	w.wantIssues("rollout aborted", 3, 1)
	if w.alerts() != 2 || w.gauge(drift.OutOfSync) != 2 {
		t.Errorf("%d alerts, gauge %v; want web-eu and api-eu", w.alerts(), w.gauge(drift.OutOfSync))
	}

	// Converges: the issues are closed with a comment, the alerts are gone.
	w.apply("web-eu", "Synced", "Healthy")
	w.apply("api-eu", "Synced", "Healthy")
	w.evaluate()
	w.wantIssues("converged", 1, 3) // mallory's stays open
	if w.alerts() != 0 || w.gauge(drift.OutOfSync) != 0 {
		t.Errorf("alerts after converging: %+v; gauge %v", w.w.Alerts(), w.gauge(drift.OutOfSync))
	}
	cms := w.gh.Comments(opsRepo, is.Number)
	if len(cms) != 1 || !strings.Contains(cms[0].Body, "Converged (") || !strings.Contains(cms[0].Body, "is Synced and Healthy") {
		t.Errorf("closing comments on #%d: %+v", is.Number, cms)
	}
	if recs, err := w.st.ListDriftReports(w.ctx); err != nil || len(recs) != 0 {
		t.Errorf("records after converging: %+v, %v", recs, err)
	}

	// Drift again later: a new issue, one.
	w.apply("web-eu", "OutOfSync", "Healthy")
	w.clock.Advance(time.Hour)
	w.evaluate()
	w.wantIssues("drift again", 2, 3)

	// No secret reached GitHub.
	for _, r := range w.gh.Requests() {
		if strings.Contains(string(r.Body), secretTok) {
			t.Errorf("%s %s sent the secret: %s", r.Method, r.Path, r.Body)
		}
	}
}

func withState(r store.Rollout, s store.RolloutState) store.Rollout {
	r.State = s
	return r
}

// TestReportsAreBoundedAndNameTheInstance: at most MaxOpen reports are open at once; an app of a named instance
// is named with it; an app deleted from Argo CD closes its report only once its instance's list is complete
// (after a restart the inventory fills up: absence then says nothing).
func TestReportsAreBoundedAndNameTheInstance(t *testing.T) {
	w := newWorld(t)
	w.maxOpen = 2
	w.start()
	for _, n := range []string{"a", "b", "c"} {
		w.inv.Apply(inventory.App{Key: inventory.Key{Instance: "eu", Namespace: "argocd", Name: n}, Project: "p", Sync: "OutOfSync", Health: "Healthy"})
	}
	w.clock.Advance(time.Hour)
	w.evaluate()
	open := w.wantIssues("three apps drift, cap two", 2, 0)
	if open[0].Title != "Drift: eu:argocd/a is OutOfSync" || !strings.Contains(open[0].Body, "| Argo CD instance | eu |") {
		t.Errorf("report of an app of instance eu: %s\n%s", open[0].Title, open[0].Body)
	}
	if w.alerts() != 3 {
		t.Errorf("%d alerts; the cap bounds the reports, not the alerts (the metric counts all three)", w.alerts())
	}

	// a is deleted, but the instance's stream has not given its whole list yet: the report stays.
	w.inv.Remove(inventory.Key{Instance: "eu", Namespace: "argocd", Name: "a"})
	w.evaluate()
	w.wantIssues("deleted, instance not synced", 2, 0)
	// The instance's list is complete: a is gone, its report closed, and c reported in its place.
	w.inv.SetInstance(inventory.Instance{Name: "eu", Synced: true, Since: w.clock.Now()})
	w.evaluate()
	w.wantIssues("deleted, instance synced", 2, 1)
	if cms := w.gh.Comments(opsRepo, open[0].Number); len(cms) != 1 || !strings.Contains(cms[0].Body, "is no longer in Argo CD") {
		t.Errorf("closing comment of a deleted app: %+v", cms)
	}
}

type failingIssues struct {
	drift.Issues
	calls int
}

func (f *failingIssues) OpenIssues(context.Context, string, string) ([]github.Issue, error) {
	f.calls++
	return nil, errors.New("GitHub is down")
}

// TestReporterQuietAfterAFailure: GitHub failing costs one attempt a minute, not one per decision.
func TestReporterQuietAfterAFailure(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	st, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "fw.db"), store.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	gh := &failingIssues{}
	rep := drift.NewReporter(gh, st, drift.ReporterOptions{Repo: opsRepo, Clock: clock})
	for i := 0; i < 10; i++ {
		rep.Decided(context.Background(), drift.Decision{At: clock.Now()})
		clock.Advance(time.Second)
	}
	if gh.calls != 1 {
		t.Errorf("%d attempts in 10 s; want 1", gh.calls)
	}
	clock.Advance(time.Minute)
	rep.Decided(context.Background(), drift.Decision{At: clock.Now()})
	if gh.calls != 2 {
		t.Errorf("%d attempts after a minute; want 2", gh.calls)
	}
}
