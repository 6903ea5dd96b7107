package rollout

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fleetwave/fleetwave/internal/command"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/store"
)

// Reporter publishes a rollout's state where people look: the app layer adapts it to GitHub check-runs on the
// merge commit (fleetwave/rollout, one fleetwave/wave: <name> per wave, fleetwave/rollback). Publishing is best
// effort: an error is logged and the rollout goes on; the next publication carries the whole state again.
type Reporter interface {
	// Publish creates the check-run (cr.ID == 0) or updates it, and returns its id (stored with the rollout
	// or wave, so the check-run is updated in place after a restart or on another replica).
	Publish(ctx context.Context, cr CheckRun) (int64, error)
}

// CheckStatus is a check-run's status.
type CheckStatus string

// The statuses.
const (
	StatusQueued     CheckStatus = "queued"
	StatusInProgress CheckStatus = "in_progress"
	StatusCompleted  CheckStatus = "completed"
)

// Conclusion is a completed check-run's conclusion.
type Conclusion string

// The conclusions used.
const (
	ConclusionSuccess   Conclusion = "success"
	ConclusionFailure   Conclusion = "failure"
	ConclusionCancelled Conclusion = "cancelled"
	ConclusionNeutral   Conclusion = "neutral"
)

// Check-run names.
const (
	CheckRollout    = "fleetwave/rollout"
	CheckRollback   = "fleetwave/rollback"
	CheckWavePrefix = "fleetwave/wave: "
)

// Action is a check-run button (GitHub: at most 3; label ≤ 20, description ≤ 40, identifier ≤ 20 characters).
// Identifier is the slash command it stands for (command.FromAction maps it back); the target wave comes from
// the check-run it is on (see ParseExternalID).
type Action struct {
	Label       string
	Description string
	Identifier  string
}

// CheckRun is one check-run's full content.
type CheckRun struct {
	ID         int64 // 0: create it
	Repo       string
	HeadSHA    string // the merge commit
	Name       string
	ExternalID string // see ParseExternalID
	Status     CheckStatus
	Conclusion Conclusion // when completed
	Title      string
	Summary    string // markdown
	Text       string // markdown: the table of apps
	Actions    []Action
	// StartedAt is zero when fleetwave has no better time than the check-run's creation.
	StartedAt time.Time
	// CompletedAt is set when Status is completed.
	CompletedAt time.Time
}

// CheckRef is what a check-run's external id says: the rollout, and the wave (by name) or the rollback.
type CheckRef struct {
	RolloutID int64
	Wave      string
	Rollback  bool
}

func externalID(id int64, wave string, rollback bool) string {
	s := "fleetwave:" + strconv.FormatInt(id, 10)
	switch {
	case rollback:
		s += ":rollback"
	case wave != "":
		s += ":wave:" + wave
	}
	return s
}

// ParseExternalID reads a check-run's external id (check_run.external_id in a requested_action event), so a
// button click finds its rollout and wave: "fleetwave:12", "fleetwave:12:wave:canary", "fleetwave:12:rollback".
func ParseExternalID(s string) (CheckRef, bool) {
	parts := strings.SplitN(s, ":", 4)
	if len(parts) < 2 || parts[0] != "fleetwave" {
		return CheckRef{}, false
	}
	id, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || id <= 0 {
		return CheckRef{}, false
	}
	ref := CheckRef{RolloutID: id}
	switch {
	case len(parts) == 2:
	case len(parts) == 3 && parts[2] == "rollback":
		ref.Rollback = true
	case len(parts) == 4 && parts[2] == "wave" && parts[3] != "":
		ref.Wave = parts[3]
	default:
		return CheckRef{}, false
	}
	return ref, true
}

type nopReporter struct{}

func (nopReporter) Publish(context.Context, CheckRun) (int64, error) { return 0, nil }

// view is everything a rollout's check-runs show.
type view struct {
	r          store.Rollout
	sp         *storedPlan
	waves      []store.Wave
	steps      []store.AppStep
	waitingFor []store.Rollout // older rollouts this one waits for
	waitedBy   []store.Rollout // newer rollouts waiting for this one
}

// publish asks the driver's publisher to publish the rollout's check-runs. It does not wait: reporting (GitHub
// calls) never slows a rollout down; requests made while a publication runs are coalesced into the next one.
func (d *driver) publish(context.Context, int64) {
	select {
	case d.pubCh <- struct{}{}:
	default:
	}
}

// publisher publishes on request until ctx ends.
func (d *driver) publisher(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.pubCh:
			d.flush(ctx)
		}
	}
}

// flush publishes now (the final state, before the driver lets the rollout go) and reports whether every
// check-run is up to date on GitHub.
func (d *driver) flush(ctx context.Context) bool {
	d.pubMu.Lock()
	defer d.pubMu.Unlock()
	return d.e.publishAll(ctx, d.id, d.published)
}

// publishFinished publishes a rollout nobody drives (recorded finished, e.g. a plan that breaks the policy).
func (e *Executor) publishFinished(ctx context.Context, r store.Rollout) {
	e.publishAll(ctx, r.ID, map[string]string{})
}

// publishAll builds every check-run of a rollout and publishes those that changed since last time. It reports
// whether all of them are published.
func (e *Executor) publishAll(ctx context.Context, id int64, published map[string]string) bool {
	if _, none := e.rep.(nopReporter); none {
		return true
	}
	if ctx.Err() != nil {
		return false
	}
	v, err := e.view(ctx, id)
	if err != nil {
		e.o.log.Warn("reading a rollout to publish it", "rollout", id, "err", err)
		return false
	}
	ok := true
	crs := []CheckRun{rolloutCheckRun(v)}
	for i := range v.waves {
		crs = append(crs, waveCheckRun(v, i))
	}
	if cr, ok := rollbackCheckRun(v); ok {
		crs = append(crs, cr)
	}
	for _, cr := range crs {
		digest := checkDigest(cr)
		if published[cr.ExternalID] == digest {
			continue
		}
		newID, err := e.rep.Publish(ctx, cr)
		if err != nil {
			e.o.log.Warn("publishing a check-run", "rollout", id, "check", cr.Name, "err", err)
			ok = false
			continue
		}
		published[cr.ExternalID] = digest
		if cr.ID == 0 && newID != 0 {
			e.saveCheckRunID(ctx, v, cr, newID)
		}
	}
	return ok
}

func checkDigest(cr CheckRun) string {
	cr.ID = 0
	b, _ := json.Marshal(cr)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func (e *Executor) saveCheckRunID(ctx context.Context, v view, cr CheckRun, id int64) {
	var err error
	switch {
	case cr.Name == CheckRollout:
		_, err = e.updateRollout(ctx, v.r.ID, func(x *store.Rollout) (bool, error) {
			ok := x.CheckRunID == 0
			x.CheckRunID = id
			return ok, nil
		})
	case cr.Name == CheckRollback:
		_, err = e.updateRollout(ctx, v.r.ID, func(x *store.Rollout) (bool, error) {
			ok := x.RollbackCheckRunID == 0
			x.RollbackCheckRunID = id
			return ok, nil
		})
	default:
		for _, w := range v.waves {
			if CheckWavePrefix+w.Name == cr.Name {
				_, err = e.updateWave(ctx, v.r.ID, w.Index, func(x *store.Wave) (bool, error) {
					ok := x.CheckRunID == 0
					x.CheckRunID = id
					return ok, nil
				})
			}
		}
	}
	if err != nil {
		e.o.log.Warn("recording a check-run id", "rollout", v.r.ID, "check", cr.Name, "err", err)
	}
}

func (e *Executor) view(ctx context.Context, id int64) (view, error) {
	r, err := e.st.GetRollout(ctx, id)
	if err != nil {
		return view{}, err
	}
	sp, err := parseStoredPlan(r.Plan)
	if err != nil {
		return view{}, err
	}
	v := view{r: r, sp: sp}
	if v.waves, err = e.st.ListWaves(ctx, id); err != nil {
		return view{}, err
	}
	if v.steps, err = e.st.ListSteps(ctx, id, store.StepFilter{}); err != nil {
		return view{}, err
	}
	if !r.State.Terminal() && len(v.steps) > 0 {
		keys := make([]store.AppKey, len(v.steps))
		for i, s := range v.steps {
			keys[i] = s.App
		}
		act, err := e.st.ActiveRolloutsTouching(ctx, "", keys)
		if err != nil {
			return view{}, err
		}
		for _, o := range act {
			switch {
			case o.ID < r.ID && r.State == store.RolloutPending:
				v.waitingFor = append(v.waitingFor, o)
			case o.ID > r.ID:
				v.waitedBy = append(v.waitedBy, o)
			}
		}
	}
	return v, nil
}

// Rendering.

const maxTableRows = 250

// maxOutput keeps summaries and texts under GitHub's 65,535-character limit.
const maxOutput = 65000

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-len("… (truncated)")] + "… (truncated)"
}

func mdCell(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return strings.ReplaceAll(s, "|", `\|`)
}

// short abbreviates a commit SHA.
func short(rev string) string {
	if len(rev) > 10 && (len(rev) == 40 || len(rev) == 64) {
		return rev[:10]
	}
	return rev
}

func hhmmss(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("15:04:05")
}

type stepCounts struct{ total, pending, running, synced, skipped, failed, rolledBack int }

func countSteps(steps []store.AppStep, wave int) stepCounts {
	var c stepCounts
	for _, s := range steps {
		if wave >= 0 && s.Wave != wave {
			continue
		}
		c.total++
		switch s.State {
		case store.StepPending:
			c.pending++
		case store.StepIntent, store.StepTriggered:
			c.running++
		case store.StepSynced:
			c.synced++
		case store.StepSkipped:
			c.skipped++
		case store.StepFailed:
			c.failed++
		case store.StepRolledBack:
			c.rolledBack++
		}
	}
	return c
}

func stepLabel(s store.AppStep) string {
	switch s.State {
	case store.StepPending:
		return "⏳ pending"
	case store.StepIntent, store.StepTriggered:
		if s.Op == store.OpRollback {
			return "🔄 rolling back"
		}
		return "🔄 syncing"
	case store.StepSynced:
		return "✅ synced"
	case store.StepSkipped:
		return "⏭️ skipped"
	case store.StepFailed:
		if s.Op == store.OpRollback {
			return "❌ rollback failed"
		}
		return "❌ failed"
	case store.StepRolledBack:
		return "↩️ rolled back"
	}
	return string(s.State)
}

func revCell(from, to string) string {
	abbrev := func(r string) string {
		if r == "" {
			return "?"
		}
		return "`" + r[:min(7, len(r))] + "`"
	}
	return abbrev(from) + " → " + abbrev(to)
}

// appTable renders steps as a markdown table (at most maxTableRows rows).
func appTable(steps []store.AppStep, waves []store.Wave, withWave bool) string {
	var b strings.Builder
	if withWave {
		b.WriteString("| App | Cluster | Wave | Batch | State | Revision | Health | Started | Took | Note |\n|---|---|---|---:|---|---|---|---|---:|---|\n")
	} else {
		b.WriteString("| App | Cluster | Batch | State | Revision | Health | Started | Took | Note |\n|---|---|---:|---|---|---|---|---:|---|\n")
	}
	for i, s := range steps {
		if i == maxTableRows {
			fmt.Fprintf(&b, "\n…and %d more apps.\n", len(steps)-i)
			break
		}
		rev := revCell(s.PreviousRevision, s.TargetRevision)
		if s.Op == store.OpRollback && s.State != store.StepPending {
			rev = revCell(s.TargetRevision, s.PreviousRevision)
		}
		started := s.OpStartedAt
		if started.IsZero() {
			started = s.IntentAt
		}
		took := ""
		if !s.OpStartedAt.IsZero() && !s.OpFinishedAt.IsZero() {
			took = s.OpFinishedAt.Sub(s.OpStartedAt).Round(time.Second).String()
		}
		fmt.Fprintf(&b, "| %s | %s |", mdCell(s.App.Name, 80), mdCell(s.Cluster, 40))
		if withWave {
			name := strconv.Itoa(s.Wave + 1)
			if s.Wave < len(waves) {
				name = waves[s.Wave].Name
			}
			fmt.Fprintf(&b, " %s |", mdCell(name, 40))
		}
		fmt.Fprintf(&b, " %d | %s | %s | %s | %s | %s | %s |\n", s.Batch+1, stepLabel(s), rev, mdCell(s.Health, 20),
			hhmmss(started), took, mdCell(s.Message, 120))
	}
	return clip(b.String(), maxOutput)
}

func gatesText(v view, wi int) string {
	if wi >= len(v.sp.Waves) {
		return ""
	}
	g := v.sp.Waves[wi].Gates
	var parts []string
	if g.Approval.Before() {
		parts = append(parts, g.Approval.Describe())
	}
	if g.Soak > 0 {
		parts = append(parts, "soak "+g.Soak.String())
	}
	for _, m := range g.Metrics {
		if p := m.Prometheus; p != nil {
			s := "`" + mdCell(p.Query, 60) + "`"
			if p.Max != nil {
				s += " ≤ " + formatValue(*p.Max)
			}
			if p.Min != nil {
				s += " ≥ " + formatValue(*p.Min)
			}
			if p.For > 0 {
				s += " for " + p.For.String()
			}
			parts = append(parts, s)
		}
	}
	if g.Approval.After() {
		parts = append(parts, g.Approval.Describe())
	}
	parts = append(parts, fmt.Sprintf("tolerates %d failed", g.ToleratedFailures))
	return strings.Join(parts, " · ")
}

var (
	actPause    = Action{"Pause", "Finish syncs in flight, start no more", string(command.Pause)}
	actResume   = Action{"Resume", "Continue the rollout", string(command.Resume)}
	actAbort    = Action{"Abort", "Stop; nothing is rolled back", string(command.Abort)}
	actApprove  = Action{"Approve", "Pass this approval gate", string(command.Approve)}
	actRollback = Action{"Roll back", "Sync apps back to their old revision", string(command.Rollback)}
)

func rolloutStatus(s store.RolloutState) (CheckStatus, Conclusion) {
	switch s {
	case store.RolloutPending:
		return StatusQueued, ""
	case store.RolloutSucceeded:
		return StatusCompleted, ConclusionSuccess
	case store.RolloutFailed, store.RolloutRolledBack:
		return StatusCompleted, ConclusionFailure
	case store.RolloutAborted:
		return StatusCompleted, ConclusionCancelled
	case store.RolloutSuperseded:
		return StatusCompleted, ConclusionNeutral
	}
	return StatusInProgress, ""
}

func firstUnfinished(waves []store.Wave) int {
	for i, w := range waves {
		if w.State != store.WaveSucceeded {
			return i
		}
	}
	return -1
}

func rolloutCheckRun(v view) CheckRun {
	r := v.r
	cr := CheckRun{ID: r.CheckRunID, Repo: r.Repo, HeadSHA: r.MergeSHA, Name: CheckRollout, ExternalID: externalID(r.ID, "", false),
		StartedAt: r.CreatedAt}
	cr.Status, cr.Conclusion = rolloutStatus(r.State)
	if cr.Status == StatusCompleted {
		cr.CompletedAt = r.UpdatedAt
	}
	all := countSteps(v.steps, -1)
	wi := firstUnfinished(v.waves)
	switch r.State {
	case store.RolloutPending:
		cr.Title = "Queued"
		if len(v.waitingFor) > 0 {
			cr.Title = fmt.Sprintf("Queued behind rollout #%d (merge %s)", v.waitingFor[0].ID, short(v.waitingFor[0].MergeSHA))
		}
		cr.Actions = []Action{actPause, actAbort}
	case store.RolloutRunning:
		if wi >= 0 {
			c := countSteps(v.steps, wi)
			cr.Title = fmt.Sprintf("Wave %d/%d %s: %d/%d apps done", wi+1, len(v.waves), v.waves[wi].Name, c.synced+c.skipped, c.total)
		} else {
			cr.Title = "Finishing"
		}
		cr.Actions = []Action{actPause, actRollback, actAbort}
	case store.RolloutAwaitingApproval:
		name := ""
		if wi >= 0 {
			name = v.waves[wi].Name
		}
		cr.Title = "Awaiting approval of wave " + name
		if wi >= 0 && v.waves[wi].StartedAt.IsZero() {
			cr.Title = "Awaiting approval to start wave " + name
		}
		cr.Actions = []Action{actApprove, actPause, actRollback}
	case store.RolloutPaused:
		cr.Title = "Paused: " + r.Message
		cr.Actions = []Action{actResume, actRollback, actAbort}
	case store.RolloutSucceeded:
		cr.Title = fmt.Sprintf("Rolled out to %d apps in %d waves", all.synced+all.skipped, len(v.waves))
		cr.Actions = []Action{actRollback}
	case store.RolloutFailed:
		cr.Title = "Failed: " + r.Message
		cr.Actions = []Action{actRollback}
	case store.RolloutAborted:
		cr.Title = "Aborted: " + r.Message
		cr.Actions = []Action{actRollback}
	case store.RolloutRollingBack:
		cr.Title = "Rolling back: " + r.Message
	case store.RolloutRolledBack:
		cr.Title = fmt.Sprintf("Rolled back %d apps", all.rolledBack)
	case store.RolloutSuperseded:
		cr.Title = fmt.Sprintf("Superseded by rollout #%d", r.SupersededBy)
	}
	cr.Title = clip(cr.Title, 200)

	var b strings.Builder
	pr := ""
	if r.PRNumber > 0 {
		pr = fmt.Sprintf(" (PR #%d)", r.PRNumber)
	}
	fmt.Fprintf(&b, "**Rollout #%d** of merge `%s`%s: %s in %s, policy %s.\n\n", r.ID, short(r.MergeSHA), pr,
		plural(all.total, "app"), plural(len(v.waves), "wave"), mdCell(v.sp.Policy, 80))
	if v.sp.planDiffers() {
		fmt.Fprintf(&b, "> [!WARNING]\n> The plan executed (recomputed at the merge commit, `%s`) differs from the plan shown on the PR (`%s`).\n",
			shortDigest(v.sp.Execution.PlanDigest), shortDigest(v.sp.Execution.PRPlanDigest))
		for i, c := range v.sp.Execution.PlanChanges {
			if i == 30 {
				fmt.Fprintf(&b, "> - …and %d more\n", len(v.sp.Execution.PlanChanges)-i)
				break
			}
			fmt.Fprintf(&b, "> - %s\n", mdCell(c, 200))
		}
		b.WriteString("\n")
	}
	for _, o := range v.waitingFor {
		verb := "Waiting for"
		if v.sp.Execution.OnConflict == ConflictSupersede {
			verb = "Superseding"
		}
		fmt.Fprintf(&b, "⏳ %s rollout #%d (merge %s, %s): it touches some of the same apps, and rollouts never interleave.\n\n",
			verb, o.ID, short(o.MergeSHA), o.State)
	}
	for _, o := range v.waitedBy {
		fmt.Fprintf(&b, "⏳ Rollout #%d (merge %s) waits for this one: it touches some of the same apps.\n\n", o.ID, short(o.MergeSHA))
	}
	if r.SupersededBy != 0 && r.State != store.RolloutSuperseded {
		fmt.Fprintf(&b, "⏹️ Rollout #%d supersedes this one: the syncs in flight finish, no new one starts.\n\n", r.SupersededBy)
	}
	fmt.Fprintf(&b, "**State:** %s", r.State)
	if r.Message != "" {
		fmt.Fprintf(&b, " — %s", mdCell(r.Message, 500))
	}
	b.WriteString("\n\n| # | Wave | State | Apps | Synced | Skipped | Failed | Gates |\n|---:|---|---|---:|---:|---:|---:|---|\n")
	for i, w := range v.waves {
		c := countSteps(v.steps, i)
		fmt.Fprintf(&b, "| %d | %s | %s | %d | %d | %d | %d | %s |\n", i+1, mdCell(w.Name, 60), w.State, c.total, c.synced, c.skipped,
			c.failed, gatesText(v, i))
	}
	if v.sp.Execution.AutomatedSync != "" && v.sp.Execution.AutomatedSync != "forbid" {
		b.WriteString("\nAutomated sync is switched off for the rollout's apps while it runs (annotation `" + AnnotationAutomatedSync +
			"` keeps the original) and restored when it succeeds; after a failure, an abort or a rollback it stays off.\n")
	}
	b.WriteString("\nCommands (comment on the PR): `/pause`, `/resume`, `/abort`, `/approve [wave]`, `/rollback [wave|all]`.\n")
	cr.Summary = clip(b.String(), maxOutput)
	cr.Text = appTable(v.steps, v.waves, true)
	return cr
}

func shortDigest(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

func waveCheckRun(v view, wi int) CheckRun {
	r, w := v.r, v.waves[wi]
	cr := CheckRun{ID: w.CheckRunID, Repo: r.Repo, HeadSHA: r.MergeSHA, Name: CheckWavePrefix + w.Name,
		ExternalID: externalID(r.ID, w.Name, false), StartedAt: w.StartedAt}
	var waveSteps []store.AppStep
	for _, s := range v.steps {
		if s.Wave == wi {
			waveSteps = append(waveSteps, s)
		}
	}
	c := countSteps(v.steps, wi)
	gs := readGateState(w)
	done := fmt.Sprintf("%d/%d apps done", c.synced+c.skipped, c.total)
	if c.failed > 0 {
		done += fmt.Sprintf(", %d failed", c.failed)
	}
	switch w.State {
	case store.WavePending:
		cr.Status, cr.Title = StatusQueued, fmt.Sprintf("Waiting for earlier waves (%d apps)", c.total)
	case store.WaveRunning:
		cr.Status, cr.Title = StatusInProgress, "Syncing: "+done
		if h := gs.Window; h != nil {
			cr.Title = "Held by " + h.Reason
			if !h.Until.IsZero() {
				cr.Title += " until " + h.Until.UTC().Format("2006-01-02 15:04 MST")
			}
			cr.Title += ": " + done
		}
		cr.Actions = []Action{actPause, actRollback, actAbort}
	case store.WaveGating:
		cr.Status, cr.Title = StatusInProgress, "Gates: "+done
		if !gs.SoakUntil.IsZero() && !gs.SoakDone {
			cr.Title = fmt.Sprintf("Soaking until %s UTC: %s", hhmmss(gs.SoakUntil), done)
		}
		cr.Actions = []Action{actPause, actRollback, actAbort}
	case store.WaveAwaitingApproval:
		if w.StartedAt.IsZero() {
			cr.Status, cr.Title = StatusInProgress, fmt.Sprintf("Awaiting approval before it starts (%s)", plural(c.total, "app"))
			cr.Actions = []Action{actApprove, actPause, actAbort}
		} else {
			cr.Status, cr.Title = StatusInProgress, "Awaiting approval before the next wave: "+done
			cr.Actions = []Action{actApprove, actPause, actRollback}
		}
	case store.WaveSucceeded:
		cr.Status, cr.Conclusion, cr.Title = StatusCompleted, ConclusionSuccess, "Succeeded: "+done
	case store.WaveFailed:
		cr.Status, cr.Conclusion, cr.Title = StatusCompleted, ConclusionFailure, "Failed: "+w.Message
		if r.State == store.RolloutPaused {
			cr.Actions = []Action{actResume, actRollback, actAbort}
		} else if !r.State.Terminal() || r.State == store.RolloutFailed || r.State == store.RolloutAborted {
			cr.Actions = []Action{actRollback}
		}
	case store.WaveCancelled:
		cr.Status, cr.Conclusion, cr.Title = StatusCompleted, ConclusionCancelled, "Cancelled: "+done
	case store.WaveRollingBack:
		cr.Status, cr.Title = StatusInProgress, fmt.Sprintf("Rolling back: %d apps back so far", c.rolledBack)
	case store.WaveRolledBack:
		cr.Status, cr.Conclusion, cr.Title = StatusCompleted, ConclusionNeutral, fmt.Sprintf("Rolled back %d apps", c.rolledBack)
	}
	if cr.Status == StatusCompleted {
		cr.CompletedAt = w.FinishedAt
		if cr.CompletedAt.IsZero() {
			cr.CompletedAt = w.UpdatedAt
		}
	}
	cr.Title = clip(cr.Title, 200)

	var b strings.Builder
	fmt.Fprintf(&b, "**Wave %d/%d %s** of rollout #%d (merge `%s`): %s on %s, %s.\n\n", wi+1, len(v.waves),
		mdCell(w.Name, 60), r.ID, short(r.MergeSHA), plural(c.total, "app"), plural(clusterCount(waveSteps), "cluster"),
		plural(batchCount(waveSteps), "batch"))
	fmt.Fprintf(&b, "**Gates:** %s\n\n", gatesText(v, wi))
	if !gs.SoakStartedAt.IsZero() {
		state := "in progress"
		if gs.SoakDone {
			state = "passed (no app Degraded or Missing)"
		}
		fmt.Fprintf(&b, "- Soak %s → %s UTC: %s\n", hhmmss(gs.SoakStartedAt), hhmmss(gs.SoakUntil), state)
	}
	for _, m := range gs.Metrics {
		mark := "✅"
		if !m.OK {
			mark = "❌"
		}
		fmt.Fprintf(&b, "- %s `%s` at %s UTC: %s\n", mark, mdCell(m.Query, 120), hhmmss(m.At), mdCell(m.Result, 300))
	}
	if h := gs.Window; h != nil && w.State == store.WaveRunning {
		fmt.Fprintf(&b, "- ⏸️ %s (Argo CD refuses their syncs; the wave waits, nothing is counted as failed). Held since %s UTC.\n",
			mdCell(h.describe(), 500), hhmmss(h.Since))
	}
	if w.ApprovedBy != "" {
		fmt.Fprintf(&b, "- Approved by @%s at %s UTC\n", w.ApprovedBy, hhmmss(w.ApprovedAt))
	} else if w.State == store.WaveAwaitingApproval {
		fmt.Fprintf(&b, "- ⏸️ Waiting for approval: `/approve %s` on the PR, or the Approve button. Who may approve: %s.\n",
			w.Name, mdCell(approvers(v.sp.Waves[wi].Gates.Approval), 300))
	}
	if w.Message != "" {
		fmt.Fprintf(&b, "\n**%s:** %s\n", w.State, mdCell(w.Message, 1000))
	}
	cr.Summary = clip(b.String(), maxOutput)
	cr.Text = appTable(waveSteps, v.waves, false)
	return cr
}

// approvers says who may approve a wave; a plan stored before it carried that names the teams alone.
func approvers(a *plan.Approval) string {
	switch {
	case a == nil:
		return "nobody (no approval gate)"
	case a.Approvers != "":
		return a.Approvers
	case len(a.Teams) > 0:
		return "members of " + strings.Join(a.Teams, " or ")
	}
	return "anyone the policy's approve rule allows"
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	if strings.HasSuffix(word, "ch") {
		return fmt.Sprintf("%d %ses", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func clusterCount(steps []store.AppStep) int {
	seen := map[string]bool{}
	for _, s := range steps {
		seen[s.Cluster] = true
	}
	return len(seen)
}

func batchCount(steps []store.AppStep) int {
	n := 0
	for _, s := range steps {
		n = max(n, s.Batch+1)
	}
	return n
}

// rollbackCheckRun is the rollback's own check-run, once a rollback was asked for.
func rollbackCheckRun(v view) (CheckRun, bool) {
	r := v.r
	var scope []store.Wave
	for _, w := range v.waves {
		if w.State == store.WaveRollingBack || w.State == store.WaveRolledBack || (w.State == store.WaveFailed && strings.HasPrefix(w.Message, "rollback failed")) {
			scope = append(scope, w)
		}
	}
	if r.State != store.RolloutRollingBack && r.RollbackCheckRunID == 0 && len(scope) == 0 {
		return CheckRun{}, false
	}
	cr := CheckRun{ID: r.RollbackCheckRunID, Repo: r.Repo, HeadSHA: r.MergeSHA, Name: CheckRollback, ExternalID: externalID(r.ID, "", true)}
	var steps []store.AppStep
	inScope := map[int]bool{}
	for _, w := range scope {
		inScope[w.Index] = true
	}
	for _, s := range v.steps {
		if inScope[s.Wave] && (s.Op == store.OpRollback || touched(s)) {
			steps = append(steps, s)
		}
	}
	c := countSteps(steps, -1)
	switch r.State {
	case store.RolloutRollingBack:
		cr.Status, cr.Title = StatusInProgress, fmt.Sprintf("Rolling back: %d of %d apps back", c.rolledBack, len(steps))
	case store.RolloutFailed:
		cr.Status, cr.Conclusion, cr.Title = StatusCompleted, ConclusionFailure, "Rollback incomplete: "+r.Message
		cr.Actions = []Action{actRollback}
	default:
		cr.Status, cr.Conclusion, cr.Title = StatusCompleted, ConclusionSuccess, fmt.Sprintf("Rolled back %d apps", c.rolledBack)
		if r.State == store.RolloutAborted {
			cr.Title += " (" + r.Message + ")"
			cr.Actions = []Action{actRollback}
		}
	}
	if cr.Status == StatusCompleted {
		cr.CompletedAt = r.UpdatedAt
	}
	cr.Title = clip(cr.Title, 200)
	var b strings.Builder
	fmt.Fprintf(&b, "**Rollback** of rollout #%d (merge `%s`): every app it synced goes back to the revision it ran before, last wave first.\n\n",
		r.ID, short(r.MergeSHA))
	b.WriteString("| Wave | State | Apps back | Message |\n|---|---|---:|---|\n")
	for i := len(scope) - 1; i >= 0; i-- {
		w := scope[i]
		fmt.Fprintf(&b, "| %s | %s | %d | %s |\n", mdCell(w.Name, 60), w.State, countSteps(v.steps, w.Index).rolledBack, mdCell(w.Message, 300))
	}
	b.WriteString("\nArgo CD shows rolled-back apps OutOfSync until the merge is reverted in Git; their automated sync (if fleetwave switched it off) stays off.\n")
	cr.Summary = clip(b.String(), maxOutput)
	cr.Text = appTable(steps, v.waves, true)
	return cr, true
}
