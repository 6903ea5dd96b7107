package rollout

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/kit/text"
)

// Sync windows. An AppProject's syncWindows make Argo CD refuse a sync ("cannot sync: blocked by sync window",
// PermissionDenied: server/application/application.go Sync) while a deny window is active or no allow window
// is; fleetwave's syncs are manual ones, so a window with manualSync lets them through. A refused app is not a
// failed app: the wave is held until the window opens.
//
// Before a batch, the executor reads the windows of its apps' projects (WindowReader) and evaluates them as
// Argo CD does on its clock (argocd.EvaluateWindows): the apps a window blocks are held, the others synced.
// When only held apps are left, the wave waits — its check-run in progress, "Held by a sync window … until …",
// an event for the terminal — until the earliest of them opens, re-reading the windows at least every
// windowRecheck (a project edited meanwhile). A sync Argo CD refuses all the same (its clock, a window edited
// since, windows the token may not read) puts the app back to pending and holds the wave for windowRetry.

// WindowReader reads an AppProject's sync windows; *argocd.Client implements it. When the executor's ArgoCD
// also implements it, each batch's apps are checked against their windows before any sync.
type WindowReader interface {
	ProjectSyncWindows(ctx context.Context, project string) (v1alpha1.SyncWindows, error)
}

// AppWindowReader reads the sync windows Argo CD assigns to one app and whether it accepts a manual sync now
// (GET /api/v1/applications/{name}/syncwindows); *argocd.Client implements it. The executor falls back to it when
// the token may not read the app's project: it needs only the app's get permission, but its windows carry no
// time zone (server/application/application.go convertSyncWindows), so "until" is computed as if in UTC.
type AppWindowReader interface {
	SyncWindows(ctx context.Context, name string) (*argocd.SyncWindows, error)
}

const (
	// windowRecheck bounds the wait of a held wave between readings of its windows.
	windowRecheck = 5 * time.Minute
	// windowRetry is how long a wave waits after Argo CD refused a sync the windows, as read, allowed.
	windowRetry = time.Minute
	// heldAppsShown bounds the apps a hold names.
	heldAppsShown = 5
)

// windowHold is a wave held by sync windows, kept in the wave's gate state for its check-run and the terminal.
type windowHold struct {
	Apps   []string  `json:"apps"`  // the first heldAppsShown held apps
	Count  int       `json:"count"` // all held apps
	Reason string    `json:"reason"`
	Until  time.Time `json:"until,omitzero"` // when the first of them may sync; zero: not known
	Since  time.Time `json:"since"`
}

// describe says it in one line: "3 apps (web, api, db) held by deny window '0 9 * * *' (1h) until 2026-11-27
// 10:00 UTC".
func (h *windowHold) describe() string {
	s := h.what()
	if !h.Until.IsZero() {
		s += " until " + h.Until.UTC().Format("2006-01-02 15:04 MST")
	}
	return s
}

// what is describe without the time.
func (h *windowHold) what() string {
	apps := text.Plural(h.Count, "app")
	if len(h.Apps) > 0 {
		names := h.Apps
		more := ""
		if h.Count > len(names) {
			more = ", …"
		}
		apps += " (" + joinNames(names) + more + ")"
	}
	return apps + " held by " + h.Reason
}

func joinNames(names []string) string {
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}

// checkWindows splits a batch's apps into those their sync windows let through now and the held ones. Apps
// whose windows cannot be read (no WindowReader, an error) are let through: Argo CD decides, and a refusal is
// handled as a hold (record).
//
// With several instances (#36) each instance's apps are checked on their own, at once, and an instance's reads
// are bounded by windowReadBound: an instance that does not answer delays only its own apps, whose syncs then
// find it down and hold them (unreachable.go), instead of holding every instance's apps behind its timeouts.
func (d *driver) checkWindows(ctx context.Context, todo []store.AppStep) ([]store.AppStep, *windowHold) {
	if len(todo) == 0 {
		return todo, nil
	}
	now := d.e.o.clock.Now()
	insts, by := groupByInstance(todo)
	if !d.e.inst.multi {
		return d.checkWindowsOf(ctx, todo, now)
	}
	type result struct {
		allowed []store.AppStep
		hold    *windowHold
	}
	results := make([]result, len(insts))
	var wg sync.WaitGroup
	for i, inst := range insts {
		if held, _ := d.instanceHeld(inst); held {
			results[i].allowed = by[inst] // known down: its syncs wait for it
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			bctx, cancel := context.WithTimeout(ctx, windowReadBound)
			defer cancel()
			results[i].allowed, results[i].hold = d.checkWindowsOf(bctx, by[inst], now)
		}()
	}
	wg.Wait()
	var allowed []store.AppStep
	var hold *windowHold
	for _, r := range results {
		allowed = append(allowed, r.allowed...)
		hold = mergeHolds(hold, r.hold)
	}
	return allowed, hold
}

// windowReadBound bounds the sync-window reads of one instance's apps in a batch when the rollout spans several
// instances: past it, the apps are let through (Argo CD decides at the sync, and a sync that finds the instance
// down holds its apps).
const windowReadBound = 10 * time.Second

// mergeHolds adds b's held apps to a's: the earliest opening and its reason win.
func mergeHolds(a, b *windowHold) *windowHold {
	switch {
	case b == nil:
		return a
	case a == nil:
		return b
	}
	a.Count += b.Count
	for _, name := range b.Apps {
		if len(a.Apps) < heldAppsShown {
			a.Apps = append(a.Apps, name)
		}
	}
	if !b.Until.IsZero() && (a.Until.IsZero() || b.Until.Before(a.Until)) {
		a.Until, a.Reason = b.Until, b.Reason
	}
	return a
}

// checkWindowsOf is checkWindows over apps read through ctx.
func (d *driver) checkWindowsOf(ctx context.Context, todo []store.AppStep, now time.Time) ([]store.AppStep, *windowHold) {
	projects := map[string]v1alpha1.SyncWindows{}
	unreadable := map[string]bool{}
	var allowed []store.AppStep
	var hold *windowHold
	for _, s := range todo {
		argo, _ := d.e.argoFor(s.App.Instance)
		wr, ok := argo.(WindowReader)
		if !ok {
			allowed = append(allowed, s)
			continue
		}
		app := d.readApp(ctx, s.App, time.Time{})
		if app == nil {
			allowed = append(allowed, s)
			continue
		}
		proj := app.Spec.Project
		if proj == "" {
			proj = "default"
		}
		pk := s.App.Instance + "\x00" + proj // projects are per instance
		ws, seen := projects[pk]
		if !seen {
			var err error
			if ws, err = wr.ProjectSyncWindows(ctx, proj); err != nil {
				d.e.o.log.Warn("reading the sync windows of a project: asking per app", "rollout", d.id, "instance", s.App.Instance, "project", proj, "err", err)
				unreadable[pk] = true
				ws = nil
			}
			projects[pk] = ws
		}
		var h argocd.WindowHold
		if unreadable[pk] {
			h = d.appWindows(ctx, s.App, now)
		} else {
			h = argocd.EvaluateWindows(argocd.AppWindows(ws, app), now)
		}
		if !h.Blocked {
			allowed = append(allowed, s)
			continue
		}
		if hold == nil {
			hold = &windowHold{Reason: h.Reason, Until: h.Until, Since: now}
		}
		hold.Count++
		if len(hold.Apps) < heldAppsShown {
			hold.Apps = append(hold.Apps, s.App.Name)
		}
		if !h.Until.IsZero() && (hold.Until.IsZero() || h.Until.Before(hold.Until)) {
			hold.Until, hold.Reason = h.Until, h.Reason
		}
	}
	return allowed, hold
}

// appWindows asks Argo CD whether it accepts a manual sync of the app now (AppWindowReader), for an app whose
// project's windows cannot be read: not blocked when it cannot tell either (Argo CD decides at the sync).
func (d *driver) appWindows(ctx context.Context, k store.AppKey, now time.Time) argocd.WindowHold {
	argo, _ := d.e.argoFor(k.Instance)
	ar, ok := argo.(AppWindowReader)
	if !ok {
		return argocd.WindowHold{}
	}
	sw, err := ar.SyncWindows(ctx, qualified(k))
	if err != nil || sw.CanSync {
		return argocd.WindowHold{}
	}
	conv := func(in []argocd.SyncWindow) v1alpha1.SyncWindows {
		var out v1alpha1.SyncWindows
		for _, w := range in {
			out = append(out, &v1alpha1.InlineSyncWindow{Kind: w.Kind, Schedule: w.Schedule, Duration: w.Duration, ManualSync: w.ManualSync})
		}
		return out
	}
	h := argocd.EvaluateWindows(conv(sw.AssignedWindows), now)
	if !h.Blocked || h.Err != nil {
		// Argo CD says no where the windows, read without their time zones, say yes: its word, retried.
		h = argocd.WindowHold{Blocked: true, Reason: "a sync window (Argo CD: canSync false)", Until: now.Add(windowRetry)}
	}
	return h
}

// holdWave records that a running wave waits for a sync window and sleeps until it may open (or the next
// reading of the windows).
func (d *driver) holdWave(ctx context.Context, r store.Rollout, wi int, w store.Wave, h *windowHold) (stepResult, error) {
	now := d.e.o.clock.Now()
	prev := readGateState(w).Window
	if prev != nil {
		h.Since = prev.Since
	}
	changed := prev == nil || prev.Reason != h.Reason || !prev.Until.Equal(h.Until) || prev.Count != h.Count
	if changed {
		nw, err := d.e.updateWave(ctx, d.id, wi, func(x *store.Wave) (bool, error) {
			if x.State != store.WaveRunning {
				return false, nil
			}
			gs := readGateState(*x)
			gs.Window = h
			x.GateState = gs.raw()
			return true, nil
		})
		if err != nil || nw.State != store.WaveRunning {
			return again, err
		}
		msg := h.what() + " (no opening found within a year)"
		if !h.Until.IsZero() {
			msg = "until " + h.Until.UTC().Format(time.RFC3339) + ": " + h.what()
		}
		d.e.event(ctx, r.ID, "", "window-held", w.Name, "ok", msg)
		d.publish(ctx, r.ID)
	}
	next := now.Add(windowRecheck)
	if !h.Until.IsZero() && h.Until.Before(next) {
		next = h.Until
	}
	return waitUntil(next), nil
}

// releaseHold clears a wave's hold once its windows let apps through again.
func (d *driver) releaseHold(ctx context.Context, r store.Rollout, wi int, w store.Wave) error {
	if readGateState(w).Window == nil {
		return nil
	}
	_, err := d.e.updateWave(ctx, d.id, wi, func(x *store.Wave) (bool, error) {
		gs := readGateState(*x)
		if gs.Window == nil {
			return false, nil
		}
		gs.Window = nil
		x.GateState = gs.raw()
		return true, nil
	})
	if err == nil {
		d.e.event(ctx, r.ID, "", "window-released", w.Name, "ok", "the sync window opened")
		d.publish(ctx, r.ID)
	}
	return err
}

// refusedHold is the hold after Argo CD refused syncs the windows, as read, allowed: the windows' own account
// when they now block, else Argo CD's word, retried after windowRetry.
func (d *driver) refusedHold(ctx context.Context, r store.Rollout, wi int) (*windowHold, error) {
	steps, err := d.e.st.ListSteps(ctx, r.ID, store.StepFilter{Waves: []int{wi}})
	if err != nil {
		return nil, err
	}
	var pending []store.AppStep
	for _, s := range steps {
		if s.State == store.StepPending && s.Message == windowRefusedMessage {
			pending = append(pending, s)
		}
	}
	_, h := d.checkWindows(ctx, pending)
	if h != nil {
		return h, nil
	}
	now := d.e.o.clock.Now()
	h = &windowHold{Reason: "Argo CD refusing the sync (" + argocd.SyncWindowBlockedText + ")", Until: now.Add(windowRetry), Since: now}
	for _, s := range pending {
		h.Count++
		if len(h.Apps) < heldAppsShown {
			h.Apps = append(h.Apps, s.App.Name)
		}
	}
	return h, nil
}

// windowRefusedMessage is the message of a step put back to pending after a sync window refusal.
var windowRefusedMessage = fmt.Sprintf("held: Argo CD refused the sync (%s); synced when the window opens", argocd.SyncWindowBlockedText)
