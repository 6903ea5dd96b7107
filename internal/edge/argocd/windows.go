package argocd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/robfig/cron/v3"
)

// Sync windows: an AppProject's spec.syncWindows decide when Argo CD accepts a sync of an app. Which windows
// apply to an app is Argo CD's own v1alpha1.SyncWindows.Matches (time-independent, used as is). Whether they
// allow a sync now is v1alpha1.SyncWindows.CanSync (pkg/apis/application/v1alpha1/types.go), which reads
// time.Now(): CanSyncAt is that function evaluated at a given instant (the executor's and the simulator's
// injected clock), ported line by line; TestCanSyncAtMatchesArgoCD checks it against Argo CD's at the real time.
//
// The API server evaluates them for a manual sync, i.e. every sync fleetwave sends (server/application/
// application.go Sync: proj.Spec.SyncWindows.Matches(a).CanSync(true, nil)), and refuses with PermissionDenied
// "cannot sync: blocked by sync window" (or "cannot sync: invalid sync window: …" when a schedule or duration
// does not parse).

// SyncWindowBlockedText is the message of the API server's refusal of a sync inside a closed window.
const SyncWindowBlockedText = "cannot sync: blocked by sync window"

// IsSyncWindowRefusal reports whether err is Argo CD refusing a sync because of the app's sync windows.
func IsSyncWindowRefusal(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) {
		return false
	}
	return ae.Is(ErrPermissionDenied) && strings.HasPrefix(ae.Message, "cannot sync: ") && strings.Contains(ae.Message, "sync window")
}

// cronParser is the parser of v1alpha1.SyncWindows.active: five fields, no seconds, no descriptors.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// windowTimes parses a window's schedule and duration as v1alpha1.SyncWindows.active does (same errors).
func windowTimes(w *v1alpha1.InlineSyncWindow) (cron.Schedule, time.Duration, error) {
	schedule, err := cronParser.Parse(w.Schedule)
	if err != nil {
		return nil, 0, fmt.Errorf("cannot parse schedule '%s': %w", w.Schedule, err)
	}
	duration, err := time.ParseDuration(w.Duration)
	if err != nil {
		return nil, 0, fmt.Errorf("cannot parse duration '%s': %w", w.Duration, err)
	}
	return schedule, duration, nil
}

// tzOffset is v1alpha1.InlineSyncWindow.scheduleOffsetByTimeZone: the offset of the window's time zone (an unknown
// one counts as UTC, as Argo CD's does after logging a warning). Argo CD takes the offset at time.Now(); this
// takes it at the evaluated instant, the same thing when evaluating now.
func tzOffset(w *v1alpha1.InlineSyncWindow, at time.Time) time.Duration {
	loc, err := time.LoadLocation(w.TimeZone)
	if err != nil {
		loc = time.UTC
	}
	_, off := at.In(loc).Zone()
	return time.Duration(off) * time.Second
}

// windowActive is v1alpha1.InlineSyncWindow.active at the instant now: the window's schedule, shifted by its time
// zone, started less than its duration before now (an open interval: not active at its start second itself).
func windowActive(w *v1alpha1.InlineSyncWindow, now time.Time) (bool, error) {
	now = now.UTC()
	schedule, duration, err := windowTimes(w)
	if err != nil {
		return false, err
	}
	off := tzOffset(w, now)
	next := schedule.Next(now.Add(off - duration))
	return next.Before(now.Add(off)), nil
}

// ActiveWindowsAt is v1alpha1.SyncWindows.Active evaluated at now: the windows active then (nil when none).
func ActiveWindowsAt(ws v1alpha1.SyncWindows, now time.Time) (v1alpha1.SyncWindows, error) {
	return activeAt(ws, now)
}

// activeAt is v1alpha1.SyncWindows.active: the windows active at now (nil when none).
func activeAt(ws v1alpha1.SyncWindows, now time.Time) (v1alpha1.SyncWindows, error) {
	var active v1alpha1.SyncWindows
	for _, w := range ws {
		ok, err := windowActive(w, now)
		if err != nil {
			return nil, err
		}
		if ok {
			active = append(active, w)
		}
	}
	return active, nil
}

// inactiveAllowsAt is v1alpha1.SyncWindows.inactiveAllows: the allow windows not active at now.
func inactiveAllowsAt(ws v1alpha1.SyncWindows, now time.Time) (v1alpha1.SyncWindows, error) {
	var inactive v1alpha1.SyncWindows
	for _, w := range ws {
		if w.Kind != "allow" {
			continue
		}
		ok, err := windowActive(w, now)
		if err != nil {
			return nil, err
		}
		if !ok {
			inactive = append(inactive, w)
		}
	}
	return inactive, nil
}

// CanSyncAt is v1alpha1.SyncWindows.CanSync(isManual, nil) evaluated at the instant now, for windows that already
// apply to the app (v1alpha1.SyncWindows.Matches). The nil is a sync not yet started, as the API server's Sync and
// the controller's automated-sync check ask (argo-cd v3.6 server/application/application.go, controller/
// appcontroller.go); a window's syncOverrun (v3.6) only concerns an operation already running (controller/sync.go
// syncWindowPreventsSync), which fleetwave never asks about. In Argo CD's order: an active deny window blocks, unless the
// sync is manual and every active deny window has manualSync; else an active allow window allows; else an
// inactive allow window blocks, unless the sync is manual and every inactive allow window has manualSync; no
// window at all allows.
func CanSyncAt(ws v1alpha1.SyncWindows, now time.Time, isManual bool) (bool, error) {
	if len(ws) == 0 {
		return true, nil
	}
	active, err := activeAt(ws, now)
	if err != nil {
		return false, fmt.Errorf("invalid sync windows: %w", err)
	}
	if deny, manual := hasDeny(active); deny {
		return isManual && manual, nil
	}
	if hasAllow(active) {
		return true, nil
	}
	inactive, err := inactiveAllowsAt(ws, now)
	if err != nil {
		return false, fmt.Errorf("invalid sync windows: %w", err)
	}
	if len(inactive) > 0 {
		return isManual && manualEnabled(inactive), nil
	}
	return true, nil
}

// hasDeny is v1alpha1.SyncWindows.hasDeny: a deny window is there, and whether every deny window has manualSync.
func hasDeny(ws v1alpha1.SyncWindows) (found, manual bool) {
	for _, w := range ws {
		if w.Kind != "deny" {
			continue
		}
		if !found {
			manual = w.ManualSync
		} else if manual {
			manual = w.ManualSync
		}
		found = true
	}
	return found, manual
}

// hasAllow is v1alpha1.SyncWindows.hasAllow.
func hasAllow(ws v1alpha1.SyncWindows) bool {
	for _, w := range ws {
		if w.Kind == "allow" {
			return true
		}
	}
	return false
}

// manualEnabled is v1alpha1.SyncWindows.manualEnabled: every window has manualSync (false for none).
func manualEnabled(ws v1alpha1.SyncWindows) bool {
	if len(ws) == 0 {
		return false
	}
	for _, w := range ws {
		if !w.ManualSync {
			return false
		}
	}
	return true
}

// WindowHold says whether an app's sync windows let a manual sync (fleetwave's) through at an instant, and if
// not, why and until when.
type WindowHold struct {
	// Blocked: Argo CD would refuse a manual sync now.
	Blocked bool
	// By are the windows that block: the active deny windows, or (no deny, no active allow) the inactive allow
	// windows. Reason says it in one phrase ("deny window '0 9 * * *' (1h)", "no allow window open").
	By     v1alpha1.SyncWindows
	Reason string
	// Until is the first instant a manual sync is allowed again; zero when none within the search horizon
	// (windowHorizon) or when the windows are invalid (Err).
	Until time.Time
	// Err: a schedule or duration does not parse; Argo CD refuses every sync of the app until it is fixed.
	Err error
}

// windowHorizon bounds the search for the next instant a sync is allowed (a yearly deny window is covered).
const windowHorizon = 400 * 24 * time.Hour

// EvaluateWindows tells whether the windows (already matched to the app) let fleetwave's manual sync through
// at now, and if not, when they will next.
func EvaluateWindows(ws v1alpha1.SyncWindows, now time.Time) WindowHold {
	ok, err := CanSyncAt(ws, now, true)
	if err != nil {
		return WindowHold{Blocked: true, Err: err, Reason: err.Error()}
	}
	if ok {
		return WindowHold{}
	}
	h := WindowHold{Blocked: true}
	active, _ := activeAt(ws, now)
	var denies v1alpha1.SyncWindows
	for _, w := range active {
		if w.Kind == "deny" && !w.ManualSync {
			denies = append(denies, w)
		}
	}
	if len(denies) > 0 {
		h.By = denies
		h.Reason = describeWindows("deny window", denies)
	} else {
		h.By, _ = inactiveAllowsAt(ws, now)
		h.Reason = "outside " + describeWindows("allow window", h.By)
	}
	h.Until = nextAllowed(ws, now)
	return h
}

func describeWindows(kind string, ws v1alpha1.SyncWindows) string {
	var parts []string
	for _, w := range ws {
		s := fmt.Sprintf("'%s' (%s", w.Schedule, w.Duration)
		if w.TimeZone != "" && w.TimeZone != "UTC" {
			s += " " + w.TimeZone
		}
		parts = append(parts, s+")")
	}
	if len(parts) > 1 {
		kind += "s"
	}
	return kind + " " + strings.Join(parts, ", ")
}

// nextAllowed is the first instant after now at which CanSyncAt allows a manual sync, zero when none within
// windowHorizon. Whether a window is active changes only at the instants its occurrences start and end, so only
// those are tried: a window is active in the open interval (start, start+duration) (windowActive), so an
// occurrence starting at s is tried at s+1s (cron's resolution is the minute), one ending at e at e itself.
func nextAllowed(ws v1alpha1.SyncWindows, now time.Time) time.Time {
	t := now.UTC()
	end := t.Add(windowHorizon)
	for t.Before(end) {
		next := time.Time{}
		for _, w := range ws {
			schedule, duration, err := windowTimes(w)
			if err != nil {
				return time.Time{}
			}
			off := tzOffset(w, t)
			// The next occurrence's start, and the end of the earliest occurrence still running or to come.
			start := schedule.Next(t.Add(off)).Add(-off).Add(time.Second)
			stop := schedule.Next(t.Add(off - duration)).Add(duration - off)
			for _, c := range []time.Time{start, stop} {
				if c.After(t) && (next.IsZero() || c.Before(next)) {
					next = c
				}
			}
		}
		if next.IsZero() {
			return time.Time{}
		}
		if ok, err := CanSyncAt(ws, next, true); err == nil && ok {
			return next
		}
		t = next
	}
	return time.Time{}
}

// GetProject reads an AppProject (GET /api/v1/projects/{name}, server/project/project.go Get). Its
// spec.syncWindows are what the app's sync windows are matched from.
func (c *Client) GetProject(ctx context.Context, name string) (*v1alpha1.AppProject, error) {
	if name == "" || strings.ContainsRune(name, '/') || name == "." || name == ".." {
		return nil, &validationError{fmt.Sprintf("project name %q is not valid", name)}
	}
	var out v1alpha1.AppProject
	if err := c.call(ctx, request{method: "GET", path: apiPath("projects", name)}, &out); err != nil {
		return nil, fmt.Errorf("getting project %q: %w", name, err)
	}
	return &out, nil
}

// UpdateProject replaces an AppProject (PUT /api/v1/projects/{name}, server/project/project.go Update), e.g. its
// sync windows. p must carry the resourceVersion it was read at.
func (c *Client) UpdateProject(ctx context.Context, p *v1alpha1.AppProject) (*v1alpha1.AppProject, error) {
	if p.Name == "" || strings.ContainsRune(p.Name, '/') || p.Name == "." || p.Name == ".." {
		return nil, &validationError{fmt.Sprintf("project name %q is not valid", p.Name)}
	}
	var out v1alpha1.AppProject
	body := struct {
		Project *v1alpha1.AppProject `json:"project"`
	}{p}
	if err := c.call(ctx, request{method: "PUT", path: apiPath("projects", p.Name), body: body}, &out); err != nil {
		return nil, fmt.Errorf("updating project %q: %w", p.Name, err)
	}
	return &out, nil
}

// ProjectSyncWindows returns the sync windows of an AppProject (v1alpha1.SyncWindows.Matches picks an app's).
func (c *Client) ProjectSyncWindows(ctx context.Context, project string) (v1alpha1.SyncWindows, error) {
	p, err := c.GetProject(ctx, project)
	if err != nil {
		return nil, err
	}
	return p.Spec.SyncWindows, nil
}

// AppWindows returns the windows of ws that apply to app (Argo CD's v1alpha1.SyncWindows.Matches).
func AppWindows(ws v1alpha1.SyncWindows, app *v1alpha1.Application) v1alpha1.SyncWindows {
	m := ws.Matches(app)
	if m == nil {
		return nil
	}
	return *m
}
