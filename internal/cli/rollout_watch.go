package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fleetwave/fleetwave/internal/checkrun"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/rollout"
)

// The terminal reporter of `fleetwave rollout`. The executor reports through check-runs in the App; here the
// rollout's state is read back from the store (the only place it lives) whenever the executor publishes a
// transition, and every change since the last reading becomes one event: a plain line, or with --output json one
// JSON object per line. Transitions the store shows only in passing (a step that went from pending to synced
// between two readings) are filled in, in their natural order, so the stream does not depend on timing.

// rolloutEvent is one line of `fleetwave rollout --output json`. The field names are a contract.
type rolloutEvent struct {
	Time    time.Time `json:"time"`
	Event   string    `json:"event"`
	Rollout int64     `json:"rollout,omitempty"`
	Wave    string    `json:"wave,omitempty"`
	// Batch is the app's batch within its wave (0-based), on app events.
	Batch *int   `json:"batch,omitempty"`
	App   string `json:"app,omitempty"`
	// Instance is the Argo CD instance of the app (app events) or the instance itself (instance-unreachable,
	// instance-reachable); absent in a fleet of one Argo CD.
	Instance string     `json:"instance,omitempty"`
	Cluster  string     `json:"cluster,omitempty"`
	State    string     `json:"state,omitempty"`
	Revision string     `json:"revision,omitempty"`
	Health   string     `json:"health,omitempty"`
	Until    *time.Time `json:"until,omitempty"`
	// Command is what to run to act on the event (approve a wave, resume a paused rollout).
	Command string `json:"command,omitempty"`
	// Apps are the apps still in flight (interrupt, paused).
	Apps    []string        `json:"apps,omitempty"`
	Message string          `json:"message,omitempty"`
	Summary *rolloutSummary `json:"summary,omitempty"`
}

// rolloutSummary is the end of a run: every app of the rollout in exactly one list.
type rolloutSummary struct {
	State      string           `json:"state"`
	Synced     []string         `json:"synced"`
	Skipped    []string         `json:"skipped"`
	Failed     []failedApp      `json:"failed"`
	RolledBack []string         `json:"rolledBack"`
	InFlight   []string         `json:"inFlight"`
	NotStarted []string         `json:"notStarted"`
	OutOfPlan  []failedApp      `json:"outOfPlan,omitempty"` // synced to the merge by Argo CD's automated sync or a person, not the plan
	Waves      []waveSummaryRow `json:"waves"`
	// ProcessGoneSince: the rollout is unfinished and not paused, but no process runs it since then (`rollout
	// status` only): `rollout resume --argocd` or a rerun of the rollout command takes it over.
	ProcessGoneSince *time.Time `json:"processGoneSince,omitempty"`
}

type failedApp struct {
	App     string `json:"app"`
	Cluster string `json:"cluster,omitempty"`
	Message string `json:"message"`
}

type waveSummaryRow struct {
	Name  string `json:"name"`
	State string `json:"state"`
	// Unreachable says, per Argo CD instance holding the wave's apps on it, which and why ("instance eu
	// unreachable since 10:02: dial tcp …"); a fleet of several instances only.
	Unreachable []string `json:"unreachable,omitempty"`
}

// eventSink writes events as text lines or JSON lines; it is safe for concurrent use. On a terminal (tty) the
// text lines scroll above a status line redrawn in place: the wave, its counts, the apps in flight, the soak's
// countdown.
type eventSink struct {
	mu     sync.Mutex
	w      io.Writer
	json   bool
	tty    bool
	status string
}

const clearLine = "\r\033[K"

func (s *eventSink) emit(ev rolloutEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.json {
		b, _ := json.Marshal(ev)
		_, _ = s.w.Write(append(b, '\n'))
		return
	}
	line := ev.Time.Local().Format("15:04:05") + " " + eventText(ev) + "\n"
	if s.tty {
		if ev.Event == "summary" {
			s.status = ""
		}
		line = clearLine + line + s.status
	}
	_, _ = io.WriteString(s.w, line)
}

// setStatus redraws the status line (terminals only).
func (s *eventSink) setStatus(status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.tty || s.json || status == s.status {
		return
	}
	s.status = status
	_, _ = io.WriteString(s.w, clearLine+status)
}

// isTerminal reports whether w is a terminal (a character device), looking through writers that wrap another
// and say so with Unwrap.
func isTerminal(w io.Writer) bool {
	for {
		u, ok := w.(interface{ Unwrap() io.Writer })
		if !ok {
			break
		}
		w = u.Unwrap()
	}
	f, ok := w.(interface{ Stat() (os.FileInfo, error) })
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// statusLine is the live line of a reading: the current wave, its apps by state, those in flight, the soak left.
func (w *watcher) statusLine(s snapshot) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	cur := -1
	for i, wv := range s.waves {
		if wv.State != store.WaveSucceeded {
			cur = i
			break
		}
	}
	if cur < 0 || s.r.State.Terminal() {
		return ""
	}
	wv := s.waves[cur]
	var total, done, failed int
	var flying []string
	for _, st := range s.steps {
		if st.Wave != cur {
			continue
		}
		total++
		switch {
		case st.State == store.StepSynced || st.State == store.StepSkipped:
			done++
		case st.State == store.StepFailed:
			failed++
		case st.State.InFlight():
			flying = append(flying, st.App.Name)
		}
	}
	line := fmt.Sprintf("▶ rollout #%d %s · wave %d/%d %s %s · %d/%d done", s.r.ID, s.r.State, cur+1, len(s.waves), wv.Name, wv.State, done, total)
	if failed > 0 {
		line += fmt.Sprintf(", %d failed", failed)
	}
	if len(flying) > 0 {
		if len(flying) > 3 {
			flying = append(flying[:3], fmt.Sprintf("+%d", len(flying)-3))
		}
		line += " · syncing " + strings.Join(flying, ", ")
	}
	if until, ok := w.soakUntil[wv.Name]; ok && wv.State == store.WaveGating {
		if left := until.Sub(w.now()); left > 0 {
			line += " · soak " + left.Round(time.Second).String() + " left"
		}
	}
	if until, ok := w.heldUntil[wv.Name]; ok && wv.State == store.WaveRunning {
		line += " · held by a sync window"
		if until != nil {
			if left := until.Sub(w.now()); left > 0 {
				line += " for " + left.Round(time.Second).String()
			}
		}
	}
	if wv.State == store.WaveAwaitingApproval {
		var appr *plan.Approval
		if pw := w.planWave(cur); pw != nil {
			appr = pw.Gates.Approval
		}
		line += " · " + w.approveCommand(wv.Name, appr)
	}
	return line
}

// eventText is the plain line of an event (without its time).
func eventText(ev rolloutEvent) string {
	var b strings.Builder
	switch {
	case ev.App != "":
		if ev.Instance != "" {
			fmt.Fprintf(&b, "  %s/%s", ev.Instance, ev.App)
		} else {
			fmt.Fprintf(&b, "  %s", ev.App)
		}
		if ev.Cluster != "" {
			fmt.Fprintf(&b, " (%s)", ev.Cluster)
		}
		b.WriteString(": " + strings.TrimPrefix(ev.Event, "app-"))
		if ev.Revision != "" {
			b.WriteString(" " + text.ShortRev(ev.Revision))
		}
		if ev.Health != "" && ev.Event != "app-syncing" {
			b.WriteString(", " + ev.Health)
		}
		if ev.Event == "app-synced" {
			return b.String() // Argo CD's message repeats the revision and health
		}
	case ev.Wave != "":
		fmt.Fprintf(&b, "wave %s: %s", ev.Wave, strings.ReplaceAll(strings.TrimPrefix(ev.Event, "wave-"), "-", " "))
		if ev.Until != nil {
			fmt.Fprintf(&b, " until %s", ev.Until.Local().Format("15:04:05"))
		}
	case ev.Event == "summary":
		return summaryText(ev)
	default:
		if ev.Rollout != 0 {
			fmt.Fprintf(&b, "rollout #%d: ", ev.Rollout)
		}
		if ev.State != "" {
			b.WriteString(ev.State)
		} else {
			b.WriteString(ev.Event)
		}
	}
	if ev.Message != "" {
		b.WriteString(": " + ev.Message)
	}
	if len(ev.Apps) > 0 {
		b.WriteString(" (in flight: " + strings.Join(ev.Apps, ", ") + ")")
	}
	if ev.Command != "" {
		b.WriteString(" — run: " + ev.Command)
	}
	return b.String()
}

func summaryText(ev rolloutEvent) string {
	s := ev.Summary
	var b strings.Builder
	state := s.State
	if s.ProcessGoneSince != nil {
		state += " (its process is gone since " + s.ProcessGoneSince.Local().Format("15:04:05") + ")"
	}
	fmt.Fprintf(&b, "rollout #%d %s: %d synced, %d skipped (already synced and healthy), %d failed", ev.Rollout, state,
		len(s.Synced), len(s.Skipped), len(s.Failed))
	if len(s.RolledBack) > 0 {
		fmt.Fprintf(&b, ", %d rolled back", len(s.RolledBack))
	}
	if len(s.OutOfPlan) > 0 {
		fmt.Fprintf(&b, ", %d synced outside the plan", len(s.OutOfPlan))
	}
	fmt.Fprintf(&b, ", %d in flight, %d not started", len(s.InFlight), len(s.NotStarted))
	list := func(what string, apps []string) {
		const most = 30 // the JSON summary lists them all
		switch {
		case len(apps) > most:
			fmt.Fprintf(&b, "\n  %s: %s … and %d more", what, strings.Join(apps[:most], ", "), len(apps)-most)
		case len(apps) > 0:
			fmt.Fprintf(&b, "\n  %s: %s", what, strings.Join(apps, ", "))
		}
	}
	list("synced", s.Synced)
	list("skipped", s.Skipped)
	for _, f := range s.Failed {
		fmt.Fprintf(&b, "\n  failed: %s", f.App)
		if f.Cluster != "" {
			fmt.Fprintf(&b, " (%s)", f.Cluster)
		}
		fmt.Fprintf(&b, ": %s", f.Message)
	}
	for _, f := range s.OutOfPlan {
		fmt.Fprintf(&b, "\n  synced outside the plan: %s", f.App)
		if f.Cluster != "" {
			fmt.Fprintf(&b, " (%s)", f.Cluster)
		}
		fmt.Fprintf(&b, ": %s", f.Message)
	}
	list("rolled back", s.RolledBack)
	list("in flight", s.InFlight)
	list("not started", s.NotStarted)
	for _, w := range s.Waves {
		for _, u := range w.Unreachable {
			fmt.Fprintf(&b, "\n  wave %s: %s; its apps there wait", w.Name, u)
		}
	}
	if ev.Message != "" {
		b.WriteString("\n" + ev.Message)
	}
	return b.String()
}

// waveSeen is what was already said about a wave.
type waveSeen struct {
	started, gating, approvalBefore, approvalAfter, approved bool
	end                                                      store.WaveState
}

// watcher turns the store's view of one rollout into events.
type watcher struct {
	st       *store.Store
	id       int64
	sink     *eventSink
	now      func() time.Time
	commands func(verb string, args ...string) string // the command line to suggest

	mu        sync.Mutex
	state     store.RolloutState
	lastEvent int64
	waves     map[int]*waveSeen
	steps     map[int64]string
	gateLog   map[string][]rolloutEvent
	plan      *plan.Plan
	quiet     bool // prime: take the state in without a word
	waitNoted bool
	soakUntil map[string]time.Time
	// heldUntil: waves a sync window holds, and until when (nil: not known); windowLog: their events to emit.
	heldUntil map[string]*time.Time
	windowLog map[string][]rolloutEvent
}

// noteWait says which older unfinished rollouts a pending one waits for (never two rollouts on one app).
func (w *watcher) noteWait(ctx context.Context, s snapshot) {
	keys := make([]store.AppKey, len(s.steps))
	for i, st := range s.steps {
		keys[i] = st.App
	}
	act, err := w.st.ActiveRolloutsTouching(ctx, "", keys)
	if err != nil {
		return
	}
	var older []string
	for _, o := range act {
		if o.ID < s.r.ID {
			older = append(older, fmt.Sprintf("#%d (%s at %s, %s)", o.ID, o.Repo, text.ShortRev(o.MergeSHA), o.State))
		}
	}
	if len(older) > 0 {
		w.emit(rolloutEvent{Event: "rollout", State: string(store.RolloutPending),
			Message: "waits for the older unfinished rollouts touching the same apps: " + strings.Join(older, ", ") +
				" (resume, abort or roll them back with --id)"})
	}
}

func newWatcher(st *store.Store, id int64, sink *eventSink, commands func(string, ...string) string) *watcher {
	return &watcher{st: st, id: id, sink: sink, now: time.Now, commands: commands,
		waves: map[int]*waveSeen{}, steps: map[int64]string{}, gateLog: map[string][]rolloutEvent{}, soakUntil: map[string]time.Time{},
		heldUntil: map[string]*time.Time{}, windowLog: map[string][]rolloutEvent{}}
}

// snapshot is one reading of the rollout.
type snapshot struct {
	r     store.Rollout
	waves []store.Wave
	steps []store.AppStep
}

func (s snapshot) inFlight() []string {
	var out []string
	for _, st := range s.steps {
		if st.State.InFlight() {
			out = append(out, st.App.Name)
		}
	}
	return out
}

// read reads the rollout from the store.
func (w *watcher) read(ctx context.Context) (snapshot, error) {
	var s snapshot
	var err error
	if s.r, err = w.st.GetRollout(ctx, w.id); err != nil {
		return s, err
	}
	if s.waves, err = w.st.ListWaves(ctx, w.id); err != nil {
		return s, err
	}
	if s.steps, err = w.st.ListSteps(ctx, w.id, store.StepFilter{}); err != nil {
		return s, err
	}
	slices.SortStableFunc(s.steps, func(a, b store.AppStep) int {
		if a.Wave != b.Wave {
			return a.Wave - b.Wave
		}
		if a.Batch != b.Batch {
			return a.Batch - b.Batch
		}
		return int(a.ID - b.ID)
	})
	return s, nil
}

// prime takes in the rollout's state without emitting it: a rerun reports what happens from now on.
func (w *watcher) prime(ctx context.Context) (snapshot, error) {
	w.quiet = true
	defer func() { w.quiet = false }()
	return w.poll(ctx)
}

// poll reads the rollout and emits what changed; it returns the reading.
func (w *watcher) poll(ctx context.Context) (snapshot, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	// The audit log first, then the rollout, its waves, its steps: each reading is at least as new as the one
	// before it, so a soak the log shows started is never reported ahead of the app outcomes before it, and a
	// wave is never seen finished ahead of its apps.
	evs, err := w.st.ListEvents(ctx, w.id, w.lastEvent, 0)
	if err != nil {
		return snapshot{}, err
	}
	s, err := w.read(ctx)
	if err != nil {
		return s, err
	}
	if w.plan == nil {
		var p plan.Plan
		if json.Unmarshal(s.r.Plan, &p) == nil {
			w.plan = &p
		}
	}
	for _, e := range evs {
		w.lastEvent = e.ID
		ev := rolloutEvent{Time: e.At, Rollout: w.id, Wave: e.Target}
		switch e.Action {
		case "soak-started":
			ev.Event = "soak-started"
			if t, err := time.Parse(time.RFC3339, strings.TrimPrefix(e.Message, "until ")); err == nil {
				ev.Until = &t
				w.soakUntil[e.Target] = t
			}
		case "soak-passed", "metrics-passed":
			ev.Event = e.Action
		case "instance-unreachable", "instance-reachable":
			// An Argo CD instance of the rollout stopped answering (its apps wait) or answers again
			// (internal/rollout unreachable.go): the event names the instance, not a wave.
			w.emit(rolloutEvent{Time: e.At, Event: e.Action, Rollout: w.id, Instance: e.Target,
				Message: "instance " + e.Target + ": " + e.Message})
			continue
		case "automated-sync-late":
			// The rollout had to switch automated sync off at its start (internal/rollout automated.go): too late
			// with a Git webhook. One line, once.
			w.emit(rolloutEvent{Time: e.At, Event: "automated-sync-late", Rollout: w.id, Message: e.Message +
				"; run `fleetwave rollout prepare` before merging"})
			continue
		case "window-held", "window-released":
			// A sync window holds the wave (internal/rollout windows.go): "until <RFC3339>: <which apps, which
			// window>", or the description alone when Argo CD's windows never open within the search horizon.
			ev.Event, ev.Message = "wave-"+strings.TrimPrefix(e.Action, "window-"), e.Message
			if rest, ok := strings.CutPrefix(e.Message, "until "); ok {
				if at, msg, ok := strings.Cut(rest, ": "); ok {
					if t, err := time.Parse(time.RFC3339, at); err == nil {
						ev.Until, ev.Message = &t, msg
					}
				}
			}
			if ev.Event == "wave-held" {
				w.heldUntil[e.Target] = ev.Until
			} else {
				delete(w.heldUntil, e.Target)
			}
			w.windowLog[e.Target] = append(w.windowLog[e.Target], ev)
			continue
		default:
			continue
		}
		w.gateLog[e.Target] = append(w.gateLog[e.Target], ev)
	}

	if s.r.State == store.RolloutPending && !w.waitNoted && w.now().Sub(s.r.CreatedAt) > 2*time.Second {
		w.waitNoted = true
		w.noteWait(ctx, s)
	}
	late := s.r.State == store.RolloutPaused || s.r.State.Terminal()
	if !late {
		w.rolloutState(s)
	}
	for i, wv := range s.waves {
		w.wave(s, i, wv)
	}
	if late {
		w.rolloutState(s)
	}
	return s, nil
}

func (w *watcher) emit(ev rolloutEvent) {
	if w.quiet {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = w.now().UTC()
	}
	ev.Rollout = w.id
	w.sink.emit(ev)
}

func (w *watcher) rolloutState(s snapshot) {
	r := s.r
	if r.State == w.state {
		return
	}
	prev := w.state
	w.state = r.State
	ev := rolloutEvent{Event: "rollout", State: string(r.State), Message: cliCommands.Replace(r.Message)}
	switch r.State {
	case store.RolloutPending:
		if r.Message == "" {
			return // about to start (a reading may or may not catch it): only a wait is worth a line
		}
	case store.RolloutAwaitingApproval:
		return // the wave says which approval
	case store.RolloutRunning:
		if prev == store.RolloutAwaitingApproval {
			return
		}
		if prev == store.RolloutPaused {
			ev.Message = "resumed"
		}
	case store.RolloutPaused:
		ev.Apps = s.inFlight()
		ev.Command = w.commands("resume")
	}
	w.emit(ev)
}

// cliCommands turns the executor's slash commands (written for PR comments) into the CLI's.
var cliCommands = strings.NewReplacer("/resume", "`fleetwave rollout resume`", "/rollback", "`fleetwave rollout rollback`",
	"/abort", "`fleetwave rollout abort`", "/approve", "`fleetwave rollout approve`", "/pause", "`fleetwave rollout pause`")

// waveGates describes the gates a planned wave has after its last batch ("" for none).
func (w *watcher) planWave(i int) *plan.Wave {
	if w.plan == nil || i >= len(w.plan.Waves) {
		return nil
	}
	return &w.plan.Waves[i]
}

func (w *watcher) wave(s snapshot, i int, wv store.Wave) {
	seen := w.waves[i]
	if seen == nil {
		seen = &waveSeen{}
		w.waves[i] = seen
	}
	pw := w.planWave(i)
	var appr *plan.Approval
	if pw != nil {
		appr = pw.Gates.Approval
	}
	active := wv.State == store.WaveRunning || wv.State == store.WaveGating || wv.State == store.WaveAwaitingApproval
	if seen.end != "" && (active || wv.State == store.WavePending) && seen.end != store.WaveSucceeded {
		// A failed wave retried by resume.
		w.emit(rolloutEvent{Event: "wave-retried", Wave: wv.Name, Message: "its failed apps are synced again"})
		seen.end, seen.gating, seen.approvalAfter = "", false, false
	}
	// Approval before the wave.
	if appr.Before() && !seen.approvalBefore && (wv.State == store.WaveAwaitingApproval && wv.StartedAt.IsZero() || wv.ApprovedBy != "") {
		seen.approvalBefore = true
		w.emit(rolloutEvent{Event: "wave-awaiting-approval", Wave: wv.Name, Message: "before the wave starts" + approvers(appr),
			Command: w.approveCommand(wv.Name, appr)})
	}
	if appr.Before() && wv.ApprovedBy != "" && !seen.approved {
		seen.approved = true
		w.emit(rolloutEvent{Event: "wave-approved", Wave: wv.Name, Message: "by " + wv.ApprovedBy})
	}
	stepsActive := false // the steps are read after the wave: they may show it started before it does
	for _, st := range s.steps {
		if st.Wave == i && st.State != store.StepPending {
			stepsActive = true
		}
	}
	if !seen.started && (!wv.StartedAt.IsZero() || stepsActive) {
		seen.started = true
		msg := ""
		if pw != nil {
			msg = fmt.Sprintf("%s in %s", text.Plural(pw.AppCount(), "app"), text.Plural(len(pw.Batches), "batch"))
		}
		w.emit(rolloutEvent{Event: "wave-started", Wave: wv.Name, Message: msg})
	}
	for _, ev := range w.windowLog[wv.Name] {
		w.emit(ev)
	}
	delete(w.windowLog, wv.Name)
	for _, st := range s.steps {
		if st.Wave == i {
			w.step(wv, st)
		}
	}
	hasGates := pw != nil && (pw.Gates.Soak > 0 || len(pw.Gates.Metrics) > 0)
	logged := w.gateLog[wv.Name]
	delete(w.gateLog, wv.Name)
	// Every wave passes through gating, for an instant when it has no gates: only gates are worth a line.
	reached := len(logged) > 0 || (hasGates && (wv.State == store.WaveGating || wv.State == store.WaveSucceeded ||
		(wv.State == store.WaveAwaitingApproval && !wv.StartedAt.IsZero())))
	if reached && !seen.gating && seen.end == "" {
		seen.gating = true
		w.emit(rolloutEvent{Event: "wave-gating", Wave: wv.Name, Message: gatesText(pw)})
	}
	for _, ev := range logged {
		w.emit(ev)
	}
	if appr.After() && !seen.approvalAfter && (wv.State == store.WaveAwaitingApproval && !wv.StartedAt.IsZero() || wv.ApprovedBy != "") {
		seen.approvalAfter = true
		w.emit(rolloutEvent{Event: "wave-awaiting-approval", Wave: wv.Name, Message: "after its gates, before the next wave" + approvers(appr),
			Command: w.approveCommand(wv.Name, appr)})
	}
	if appr.After() && wv.ApprovedBy != "" && !seen.approved {
		seen.approved = true
		w.emit(rolloutEvent{Event: "wave-approved", Wave: wv.Name, Message: "by " + wv.ApprovedBy})
	}
	switch wv.State {
	case store.WaveSucceeded, store.WaveFailed, store.WaveCancelled, store.WaveRollingBack, store.WaveRolledBack:
		if seen.end != wv.State {
			seen.end = wv.State
			w.emit(rolloutEvent{Event: "wave-" + string(wv.State), Wave: wv.Name, Message: cliCommands.Replace(wv.Message)})
		}
	}
}

// approveCommand is the command that approves a wave from the terminal: for a wave whose approval names teams
// the plain command is refused (rollout.StatedApprover), so it states the first of them with --member-of.
func (w *watcher) approveCommand(wave string, a *plan.Approval) string {
	if a != nil && len(a.Teams) > 0 {
		return w.commands("approve", wave, "--member-of", a.Teams[0])
	}
	return w.commands("approve", wave)
}

func approvers(a *plan.Approval) string {
	if a == nil || len(a.Teams) == 0 {
		return ""
	}
	return " (teams " + strings.Join(a.Teams, ", ") + ")"
}

func gatesText(pw *plan.Wave) string {
	if pw == nil {
		return ""
	}
	var parts []string
	if pw.Gates.Soak > 0 {
		parts = append(parts, "soak "+pw.Gates.Soak.String())
	}
	if n := len(pw.Gates.Metrics); n > 0 {
		parts = append(parts, text.Plural(n, "metric gate"))
	}
	return strings.Join(parts, ", ")
}

// step emits what changed about one app.
func (w *watcher) step(wv store.Wave, st store.AppStep) {
	last := w.steps[st.ID]
	batch := st.Batch
	base := rolloutEvent{Wave: wv.Name, Batch: &batch, App: st.App.Name, Instance: st.App.Instance, Cluster: st.Cluster}
	syncing := func() {
		ev := base
		ev.Event, ev.Revision = "app-syncing", st.TargetRevision
		if st.Op == store.OpRollback {
			ev.Event, ev.Revision = "app-rolling-back", st.PreviousRevision
		}
		w.emit(ev)
		w.steps[st.ID] = "syncing"
	}
	switch st.State {
	case store.StepIntent, store.StepTriggered:
		if last != "syncing" {
			syncing()
		}
	case store.StepPending:
		if last == "syncing" {
			w.steps[st.ID] = "" // the intent never reached Argo CD: it is synced again
		}
	default:
		if last == string(st.State) {
			return
		}
		if last != "syncing" && st.Attempts > 0 && st.State != store.StepSkipped {
			syncing()
		}
		ev := base
		ev.Event, ev.State, ev.Health, ev.Message = "app-"+string(st.State), string(st.State), st.Health, st.Message
		switch st.State {
		case store.StepSynced:
			ev.Revision = st.TargetRevision
		case store.StepRolledBack:
			ev.Revision = st.PreviousRevision
		}
		w.emit(ev)
		w.steps[st.ID] = string(st.State)
	}
}

// summary lists every app of the reading by outcome.
func summarize(s snapshot) *rolloutSummary {
	sum := &rolloutSummary{State: string(s.r.State), Synced: []string{}, Skipped: []string{}, Failed: []failedApp{},
		RolledBack: []string{}, InFlight: []string{}, NotStarted: []string{}}
	multi := slices.ContainsFunc(s.steps, func(st store.AppStep) bool { return st.App.Instance != "" })
	for _, st := range s.steps {
		name := st.App.Name
		if multi { // a fleet of several Argo CD instances: instance/app ("" is the default instance)
			name = checkrun.InstanceName(st.App.Instance) + "/" + name
		}
		switch st.State {
		case store.StepSynced:
			sum.Synced = append(sum.Synced, name)
		case store.StepSkipped:
			sum.Skipped = append(sum.Skipped, name)
		case store.StepFailed:
			sum.Failed = append(sum.Failed, failedApp{App: name, Cluster: st.Cluster, Message: st.Message})
		case store.StepRolledBack:
			sum.RolledBack = append(sum.RolledBack, name)
		case store.StepIntent, store.StepTriggered:
			sum.InFlight = append(sum.InFlight, name)
		case store.StepOutOfPlan:
			sum.OutOfPlan = append(sum.OutOfPlan, failedApp{App: name, Cluster: st.Cluster, Message: st.Message})
		default:
			sum.NotStarted = append(sum.NotStarted, name)
		}
	}
	for _, wv := range s.waves {
		row := waveSummaryRow{Name: wv.Name, State: string(wv.State)}
		if wv.State == store.WaveRunning || wv.State == store.WaveGating {
			for _, h := range rollout.UnreachableInstances(wv) {
				row.Unreachable = append(row.Unreachable, h.Description)
			}
		}
		sum.Waves = append(sum.Waves, row)
	}
	return sum
}

// anyWaveFailed reports whether a wave of the reading failed (a rollout paused by its onFailure).
func anyWaveFailed(s snapshot) bool {
	for _, wv := range s.waves {
		if wv.State == store.WaveFailed {
			return true
		}
	}
	return false
}

// terminalReporter is the executor's Reporter port in the terminal: each publication wakes the watcher.
type terminalReporter struct{ wake chan struct{} }

func (t terminalReporter) Publish(context.Context, rollout.Snapshot, rollout.Sent) (rollout.CheckRunIDs, error) {
	select {
	case t.wake <- struct{}{}:
	default:
	}
	return rollout.CheckRunIDs{}, nil
}
