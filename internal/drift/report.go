package drift

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/fleetwave/fleetwave/internal/edge/github"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/inventory"
)

// Issues files the reports: the GitHub adapter's *github.Client of the installation on the report repository.
type Issues interface {
	CreateIssue(ctx context.Context, repo, title, body string) (github.Issue, error)
	EditIssue(ctx context.Context, repo string, number int, title, body string) error
	CloseIssue(ctx context.Context, repo string, number int, comment string) error
	// OpenIssues lists the App's open issues of repo whose body starts with marker, oldest first.
	OpenIssues(ctx context.Context, repo, marker string) ([]github.Issue, error)
}

// Records keeps the open reports across restarts and replicas: the store's drift reports.
type Records interface {
	PutDriftReport(ctx context.Context, r store.DriftReport) error
	ListDriftReports(ctx context.Context) ([]store.DriftReport, error)
	DeleteDriftReport(ctx context.Context, app store.AppKey) error
}

// markerPrefix starts the first line of every report's body, followed by the app's key in JSON and " -->":
// how a report is found again on GitHub when the store does not have it.
const markerPrefix = "<!-- fleetwave:drift "

// ReporterOptions configure a Reporter.
type ReporterOptions struct {
	// Repo is the repository ("owner/name") the issues are opened in.
	Repo  string
	Clock clockwork.Clock
	// MinEdit is the shortest time between two edits of one report (default 5 minutes): an app flapping
	// between states costs one edit a MinEdit, not one an event.
	MinEdit time.Duration
	// MaxOpen caps the reports open at once (default 50): a fleet drifting all at once is one incident, not
	// hundreds of issues; the apps past the cap are counted on /metrics and logged.
	MaxOpen int
	// ArgoCDURL is the web address of an instance's Argo CD ("" for none), for the report's link.
	ArgoCDURL func(instance string) string
	// Redact masks credentials in the text Argo CD gives (an operation's message) before it is written.
	Redact func(string) string
	Log    *slog.Logger
}

// Reporter keeps one GitHub issue per app in lasting drift (a Sink of the Watcher).
type Reporter struct {
	issues  Issues
	records Records
	o       ReporterOptions

	reconciled bool
	open       map[inventory.Key]store.DriftReport
	capped     bool // the last decision had apps past MaxOpen (logged once until it has none)
	// quietUntil: after a failure, decisions before this time write nothing, so that GitHub or the store
	// failing costs a request a minute, not one per app and decision.
	quietUntil time.Time
}

// retryAfter is how long the reporter stays quiet after a failure.
const retryAfter = time.Minute

// NewReporter returns a reporter writing issues through issues and recording them in records.
func NewReporter(issues Issues, records Records, o ReporterOptions) *Reporter {
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	if o.MinEdit <= 0 {
		o.MinEdit = 5 * time.Minute
	}
	if o.MaxOpen <= 0 {
		o.MaxOpen = 50
	}
	if o.ArgoCDURL == nil {
		o.ArgoCDURL = func(string) string { return "" }
	}
	if o.Redact == nil {
		o.Redact = func(s string) string { return s }
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Reporter{issues: issues, records: records, o: o, open: map[inventory.Key]store.DriftReport{}}
}

func storeKey(k inventory.Key) store.AppKey {
	return store.AppKey{Instance: k.Instance, Namespace: k.Namespace, Name: k.Name}
}

func invKey(k store.AppKey) inventory.Key {
	return inventory.Key{Instance: k.Instance, Namespace: k.Namespace, Name: k.Name}
}

// Decided brings the reports in line with a decision (Sink). Problems are logged; what failed is tried
// again at the next decision.
func (r *Reporter) Decided(ctx context.Context, d Decision) {
	now := r.o.Clock.Now()
	if now.Before(r.quietUntil) {
		return
	}
	if err := r.report(ctx, d); err != nil {
		r.quietUntil = now.Add(retryAfter)
		r.o.Log.Warn("drift reports", slog.Any("error", err), slog.Duration("retry_in", retryAfter))
	}
}

func (r *Reporter) report(ctx context.Context, d Decision) error {
	if !r.reconciled {
		if err := r.reconcile(ctx); err != nil {
			return fmt.Errorf("reconciling the drift reports of %s with GitHub: %w", r.o.Repo, err)
		}
		r.reconciled = true
	}
	var errs []string
	fail := func(err error) { errs = append(errs, err.Error()) }
	drifting := make(map[inventory.Key]bool, len(d.Alerts))
	for _, al := range d.Alerts {
		drifting[al.App.Key] = true
	}
	// Closed first, so that a report closed makes room under MaxOpen for one to open.
	apps := make(map[inventory.Key]inventory.App, len(d.Snapshot.Apps))
	for _, a := range d.Snapshot.Apps {
		apps[a.Key] = a
	}
	synced := map[string]bool{}
	for _, in := range d.Snapshot.Instances {
		synced[in.Name] = in.Synced
	}
	for _, k := range r.sortedOpen() {
		if drifting[k] {
			continue
		}
		a, present := apps[k]
		if !present && !synced[k.Instance] {
			continue // the instance's apps are not all known yet (a restart): the app may still be there
		}
		rep := r.open[k]
		if err := r.issues.CloseIssue(ctx, r.o.Repo, rep.Number, r.closing(k, a, present, d)); err != nil {
			fail(err)
			continue
		}
		delete(r.open, k)
		r.o.Log.Info("drift report closed", slog.String("app", rep.App.String()), slog.Int("issue", rep.Number))
		if err := r.records.DeleteDriftReport(ctx, rep.App); err != nil {
			fail(err)
		}
	}
	skipped := 0
	now := r.o.Clock.Now()
	for _, al := range d.Alerts {
		title, body, digest := r.render(al)
		rep, ok := r.open[al.App.Key]
		switch {
		case !ok && len(r.open) >= r.o.MaxOpen:
			skipped++
		case !ok:
			is, err := r.issues.CreateIssue(ctx, r.o.Repo, title, body)
			if err != nil {
				fail(err)
				continue
			}
			rep = store.DriftReport{App: storeKey(al.App.Key), Repo: r.o.Repo, Number: is.Number, Digest: digest, OpenedAt: now, ReportedAt: now}
			r.open[al.App.Key] = rep
			r.o.Log.Info("drift reported", slog.String("app", rep.App.String()), slog.Int("issue", is.Number))
			if err := r.records.PutDriftReport(ctx, rep); err != nil {
				fail(err) // the issue carries its marker: the next start finds it on GitHub
			}
		case rep.Digest != digest && !now.Before(rep.ReportedAt.Add(r.o.MinEdit)):
			if err := r.issues.EditIssue(ctx, r.o.Repo, rep.Number, title, body); err != nil {
				fail(err)
				continue
			}
			rep.Digest, rep.ReportedAt = digest, now
			r.open[al.App.Key] = rep
			if err := r.records.PutDriftReport(ctx, rep); err != nil {
				fail(err)
			}
		}
	}
	if skipped > 0 && !r.capped {
		r.o.Log.Warn("drift: apps in lasting drift not reported: the open reports are at their cap",
			slog.Int("apps", skipped), slog.Int("cap", r.o.MaxOpen))
	}
	r.capped = skipped > 0

	if len(errs) > 0 {
		return fmt.Errorf("%d problems: %s", len(errs), strings.Join(errs, "; "))
	}
	return nil
}

func (r *Reporter) sortedOpen() []inventory.Key {
	keys := make([]inventory.Key, 0, len(r.open))
	for k := range r.open {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b inventory.Key) int { return strings.Compare(keyString(a), keyString(b)) })
	return keys
}

// reconcile makes the recorded reports and the open issues on GitHub agree: an open issue the store lost (a
// crash between opening it and recording it) is adopted, an app with several open issues keeps its oldest
// (or the recorded one) and the others are closed as duplicates, and a record whose issue was closed on
// GitHub is forgotten.
func (r *Reporter) reconcile(ctx context.Context) error {
	recs, err := r.records.ListDriftReports(ctx)
	if err != nil {
		return err
	}
	issues, err := r.issues.OpenIssues(ctx, r.o.Repo, markerPrefix)
	if err != nil {
		return err
	}
	byApp := map[inventory.Key][]github.Issue{}
	for _, is := range issues {
		if k, ok := parseMarker(is.Body); ok {
			byApp[k] = append(byApp[k], is)
		}
	}
	open := map[inventory.Key]store.DriftReport{}
	for _, rec := range recs {
		k := invKey(rec.App)
		if rec.Repo != r.o.Repo {
			r.o.Log.Info("drift: forgetting a report in another repository", slog.String("app", rec.App.String()),
				slog.String("repo", rec.Repo), slog.Int("issue", rec.Number))
			if err := r.records.DeleteDriftReport(ctx, rec.App); err != nil {
				return err
			}
			continue
		}
		if slices.ContainsFunc(byApp[k], func(is github.Issue) bool { return is.Number == rec.Number }) {
			open[k] = rec
			continue
		}
		if err := r.records.DeleteDriftReport(ctx, rec.App); err != nil { // closed (or deleted) on GitHub
			return err
		}
	}
	now := r.o.Clock.Now()
	for k, list := range byApp {
		keep, ok := open[k]
		if !ok {
			keep = store.DriftReport{App: storeKey(k), Repo: r.o.Repo, Number: list[0].Number, OpenedAt: now, ReportedAt: now}
			if err := r.records.PutDriftReport(ctx, keep); err != nil {
				return err
			}
			open[k] = keep
		}
		for _, is := range list {
			if is.Number == keep.Number {
				continue
			}
			if err := r.issues.CloseIssue(ctx, r.o.Repo, is.Number, fmt.Sprintf("Closed by fleetwave: a duplicate of #%d, which reports this app's drift.", keep.Number)); err != nil {
				return err
			}
		}
	}
	r.open = open
	return nil
}

// marker is the first line of the report of k.
func marker(k inventory.Key) string {
	b, _ := json.Marshal(k) // a struct of strings: never fails
	return markerPrefix + string(b) + " -->"
}

func parseMarker(body string) (inventory.Key, bool) {
	line, _, _ := strings.Cut(strings.TrimLeft(body, " \t\r\n"), "\n")
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), markerPrefix)
	if !ok {
		return inventory.Key{}, false
	}
	rest, ok = strings.CutSuffix(rest, " -->")
	var k inventory.Key
	if !ok || json.Unmarshal([]byte(rest), &k) != nil || k.Name == "" {
		return inventory.Key{}, false
	}
	return k, true
}

// keyString is how a report names an app: namespace/name, prefixed with "instance:" when the instance is not
// "" (as the store and the rollout check-runs name apps).
func keyString(k inventory.Key) string { return storeKey(k).String() }
