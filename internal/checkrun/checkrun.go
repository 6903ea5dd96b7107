package checkrun

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/fleetwave/fleetwave/internal/command"
	"github.com/fleetwave/fleetwave/internal/edge/github"
	"github.com/fleetwave/fleetwave/internal/edge/github/limits"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/rollout"
)

// Check-run names.
const (
	CheckRollout    = "fleetwave/rollout"
	CheckRollback   = "fleetwave/rollback"
	CheckWavePrefix = "fleetwave/wave: "
)

// Ref is what a check-run's external id says: the rollout, and the wave (by name) or the rollback.
type Ref struct {
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
func ParseExternalID(s string) (Ref, bool) {
	parts := strings.SplitN(s, ":", 4)
	if len(parts) < 2 || parts[0] != "fleetwave" {
		return Ref{}, false
	}
	id, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || id <= 0 {
		return Ref{}, false
	}
	ref := Ref{RolloutID: id}
	switch {
	case len(parts) == 2:
	case len(parts) == 3 && parts[2] == "rollback":
		ref.Rollback = true
	case len(parts) == 4 && parts[2] == "wave" && parts[3] != "":
		ref.Wave = parts[3]
	default:
		return Ref{}, false
	}
	return ref, true
}

const maxTableRows = 250

// maxOutput keeps the summaries this package writes a margin under GitHub's limit on a check-run summary
// (limits.CheckRunText): 65,000 bytes.
const maxOutput = limits.CheckRunText - 535

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

func hhmmss(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("15:04:05")
}

// formatValue writes a metric bound as Prometheus writes sample values (as the gate's own messages do,
// internal/rollout/gates.go).
func formatValue(v float64) string { return model.SampleValue(v).String() }

type stepCounts struct{ total, pending, running, synced, skipped, failed, rolledBack, outOfPlan int }

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
		case store.StepOutOfPlan:
			c.outOfPlan++
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
	case store.StepOutOfPlan:
		return "⚠️ synced outside the plan"
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
func appTable(steps []store.AppStep, waves []rollout.WaveSnapshot, withWave bool) string {
	var b strings.Builder
	head, rule := "| App | Cluster | Batch | State | Revision | Health | Started | Took | Note |", "|---|---|---:|---|---|---|---|---:|---|"
	if withWave {
		head, rule = "| App | Cluster | Wave | Batch | State | Revision | Health | Started | Took | Note |", "|---|---|---|---:|---|---|---|---|---:|---|"
	}
	if ShowInstances(steps) { // a fleet of several Argo CD instances: each app's instance first
		head, rule = "| Instance "+head, "|---"+rule
	}
	b.WriteString(head + "\n" + rule + "\n")
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
		if ShowInstances(steps) {
			fmt.Fprintf(&b, "| %s ", mdCell(InstanceName(s.App.Instance), 40))
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

func gatesText(w rollout.WaveSnapshot) string {
	if w.Gates == nil {
		return ""
	}
	g := w.Gates
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

// The buttons (GitHub: at most 3 per check-run; label ≤ 20, description ≤ 40, identifier ≤ 20 characters). The
// identifier is the slash command the button stands for (command.FromAction maps it back); the target wave comes
// from the check-run it is on (ParseExternalID).
var (
	actPause    = github.CheckAction{Label: "Pause", Description: "Finish syncs in flight, start no more", Identifier: string(command.Pause)}
	actResume   = github.CheckAction{Label: "Resume", Description: "Continue the rollout", Identifier: string(command.Resume)}
	actAbort    = github.CheckAction{Label: "Abort", Description: "Stop; nothing is rolled back", Identifier: string(command.Abort)}
	actApprove  = github.CheckAction{Label: "Approve", Description: "Pass this approval gate", Identifier: string(command.Approve)}
	actRollback = github.CheckAction{Label: "Roll back", Description: "Sync apps back to their old revision", Identifier: string(command.Rollback)}
)

func actions(a ...github.CheckAction) []github.CheckAction { return a }

func rolloutStatus(s store.RolloutState) (status, conclusion string) {
	switch s {
	case store.RolloutPending:
		return github.StatusQueued, ""
	case store.RolloutSucceeded:
		return github.StatusCompleted, github.ConclusionSuccess
	case store.RolloutFailed, store.RolloutRolledBack:
		return github.StatusCompleted, github.ConclusionFailure
	case store.RolloutAborted:
		return github.StatusCompleted, github.ConclusionCancelled
	case store.RolloutSuperseded:
		return github.StatusCompleted, github.ConclusionNeutral
	}
	return github.StatusInProgress, ""
}

func firstUnfinished(waves []rollout.WaveSnapshot) int {
	for i, w := range waves {
		if w.State != store.WaveSucceeded {
			return i
		}
	}
	return -1
}

// withOutput sets the run's output. GitHub takes an output only with both a title and a summary.
func withOutput(cr github.CheckRun, title, summary, text string) github.CheckRun {
	if title == "" && summary == "" && text == "" {
		return cr
	}
	if title == "" {
		title = cr.Name
	}
	if summary == "" {
		summary = title
	}
	cr.Output = &github.CheckOutput{Title: title, Summary: summary, Text: text}
	return cr
}

// rolloutCheckRun is fleetwave/rollout: the whole rollout.
func rolloutCheckRun(s rollout.Snapshot) github.CheckRun {
	r := s.Rollout
	cr := github.CheckRun{HeadSHA: r.MergeSHA, Name: CheckRollout, ExternalID: externalID(r.ID, "", false), StartedAt: r.CreatedAt}
	cr.Status, cr.Conclusion = rolloutStatus(r.State)
	if cr.Status == github.StatusCompleted {
		cr.CompletedAt = r.UpdatedAt
	}
	all := countSteps(s.Steps, -1)
	wi := firstUnfinished(s.Waves)
	var title string
	switch r.State {
	case store.RolloutPending:
		title = "Queued"
		if len(s.WaitingFor) > 0 {
			title = fmt.Sprintf("Queued behind rollout #%d (merge %s)", s.WaitingFor[0].ID, text.ShortRev(s.WaitingFor[0].MergeSHA))
		}
		cr.Actions = actions(actPause, actAbort)
	case store.RolloutRunning:
		if wi >= 0 {
			c := countSteps(s.Steps, wi)
			title = fmt.Sprintf("Wave %d/%d %s: %d/%d apps done", wi+1, len(s.Waves), s.Waves[wi].Name, c.synced+c.skipped, c.total)
		} else {
			title = "Finishing"
		}
		cr.Actions = actions(actPause, actRollback, actAbort)
	case store.RolloutAwaitingApproval:
		name := ""
		if wi >= 0 {
			name = s.Waves[wi].Name
		}
		title = "Awaiting approval of wave " + name
		if wi >= 0 && s.Waves[wi].StartedAt.IsZero() {
			title = "Awaiting approval to start wave " + name
		}
		cr.Actions = actions(actApprove, actPause, actRollback)
	case store.RolloutPaused:
		title = "Paused: " + r.Message
		cr.Actions = actions(actResume, actRollback, actAbort)
	case store.RolloutSucceeded:
		title = fmt.Sprintf("Rolled out to %d apps in %d waves", all.synced+all.skipped, len(s.Waves))
		cr.Actions = actions(actRollback)
	case store.RolloutFailed:
		title = "Failed: " + r.Message
		cr.Actions = actions(actRollback)
	case store.RolloutAborted:
		title = "Aborted: " + r.Message
		cr.Actions = actions(actRollback)
	case store.RolloutRollingBack:
		title = "Rolling back: " + r.Message
	case store.RolloutRolledBack:
		title = fmt.Sprintf("Rolled back %d apps", all.rolledBack)
	case store.RolloutSuperseded:
		title = fmt.Sprintf("Superseded by rollout #%d", r.SupersededBy)
	}
	title = clip(title, 200)

	var b strings.Builder
	pr := ""
	if r.PRNumber > 0 {
		pr = fmt.Sprintf(" (PR #%d)", r.PRNumber)
	}
	fmt.Fprintf(&b, "**Rollout #%d** of merge `%s`%s: %s in %s, policy %s.\n\n", r.ID, text.ShortRev(r.MergeSHA), pr,
		text.Plural(all.total, "app"), text.Plural(len(s.Waves), "wave"), mdCell(s.Plan.Policy, 80))
	if s.PlanDiffers() {
		fmt.Fprintf(&b, "> [!WARNING]\n> The plan executed (recomputed at the merge commit, `%s`) differs from the plan shown on the PR (`%s`).\n",
			shortDigest(s.PlanDigest), shortDigest(s.PRPlanDigest))
		for i, c := range s.PlanChanges {
			if i == 30 {
				fmt.Fprintf(&b, "> - …and %d more\n", len(s.PlanChanges)-i)
				break
			}
			fmt.Fprintf(&b, "> - %s\n", mdCell(c, 200))
		}
		b.WriteString("\n")
	}
	for _, o := range s.WaitingFor {
		verb := "Waiting for"
		if s.OnConflict == rollout.ConflictSupersede {
			verb = "Superseding"
		}
		fmt.Fprintf(&b, "⏳ %s rollout #%d (merge %s, %s): it touches some of the same apps, and rollouts never interleave.\n\n",
			verb, o.ID, text.ShortRev(o.MergeSHA), o.State)
	}
	for _, o := range s.WaitedBy {
		fmt.Fprintf(&b, "⏳ Rollout #%d (merge %s) waits for this one: it touches some of the same apps.\n\n", o.ID, text.ShortRev(o.MergeSHA))
	}
	if r.SupersededBy != 0 && r.State != store.RolloutSuperseded {
		fmt.Fprintf(&b, "⏹️ Rollout #%d supersedes this one: the syncs in flight finish, no new one starts.\n\n", r.SupersededBy)
	}
	fmt.Fprintf(&b, "**State:** %s", r.State)
	if r.Message != "" {
		fmt.Fprintf(&b, " — %s", mdCell(r.Message, 500))
	}
	b.WriteString("\n\n| # | Wave | State | Apps | Synced | Skipped | Failed | Gates |\n|---:|---|---|---:|---:|---:|---:|---|\n")
	for i, w := range s.Waves {
		c := countSteps(s.Steps, i)
		fmt.Fprintf(&b, "| %d | %s | %s | %d | %d | %d | %d | %s |\n", i+1, mdCell(w.Name, 60), w.State, c.total, c.synced, c.skipped,
			c.failed, gatesText(w))
	}
	if s.AutomatedSync != "" && s.AutomatedSync != "forbid" {
		b.WriteString("\nAutomated sync is held off for the rollout's apps from its PR's plan check (before the merge) until it ends " +
			"(annotation `" + rollout.AnnotationAutomatedSync + "` keeps the original): restored when it succeeds or is aborted " +
			"(unless `/abort keep-automated-off`); after a failure or a rollback it stays off.\n")
	}
	b.WriteString("\nCommands (comment on the PR): `/pause`, `/resume`, `/abort`, `/approve [wave]`, `/rollback [wave|all]`.\n")
	return withOutput(cr, title, clip(b.String(), maxOutput), appTable(s.Steps, s.Waves, true))
}

func shortDigest(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

// waveCheckRun is fleetwave/wave: <name>: one wave.
func waveCheckRun(s rollout.Snapshot, wi int) github.CheckRun {
	r, w := s.Rollout, s.Waves[wi]
	cr := github.CheckRun{HeadSHA: r.MergeSHA, Name: CheckWavePrefix + w.Name, ExternalID: externalID(r.ID, w.Name, false),
		StartedAt: w.StartedAt}
	var waveSteps []store.AppStep
	for _, st := range s.Steps {
		if st.Wave == wi {
			waveSteps = append(waveSteps, st)
		}
	}
	c := countSteps(s.Steps, wi)
	done := fmt.Sprintf("%d/%d apps done", c.synced+c.skipped, c.total)
	if c.failed > 0 {
		done += fmt.Sprintf(", %d failed", c.failed)
	}
	var title string
	switch w.State {
	case store.WavePending:
		cr.Status, title = github.StatusQueued, fmt.Sprintf("Waiting for earlier waves (%d apps)", c.total)
	case store.WaveRunning:
		cr.Status, title = github.StatusInProgress, "Syncing: "+done
		if h := w.Hold; h != nil {
			title = "Held by " + h.Reason
			if !h.Until.IsZero() {
				title += " until " + h.Until.UTC().Format("2006-01-02 15:04 MST")
			}
			title += ": " + done
		}
		if n := len(w.Unreachable); n > 0 {
			title += fmt.Sprintf(" (%s unreachable)", text.FirstOf(instanceNames(w.Unreachable), 3))
		}
		cr.Actions = actions(actPause, actRollback, actAbort)
	case store.WaveGating:
		cr.Status, title = github.StatusInProgress, "Gates: "+done
		if !w.SoakUntil.IsZero() && !w.SoakDone {
			title = fmt.Sprintf("Soaking until %s UTC: %s", hhmmss(w.SoakUntil), done)
		}
		cr.Actions = actions(actPause, actRollback, actAbort)
	case store.WaveAwaitingApproval:
		if w.StartedAt.IsZero() {
			cr.Status, title = github.StatusInProgress, fmt.Sprintf("Awaiting approval before it starts (%s)", text.Plural(c.total, "app"))
			cr.Actions = actions(actApprove, actPause, actAbort)
		} else {
			cr.Status, title = github.StatusInProgress, "Awaiting approval before the next wave: "+done
			cr.Actions = actions(actApprove, actPause, actRollback)
		}
	case store.WaveSucceeded:
		cr.Status, cr.Conclusion, title = github.StatusCompleted, github.ConclusionSuccess, "Succeeded: "+done
	case store.WaveFailed:
		cr.Status, cr.Conclusion, title = github.StatusCompleted, github.ConclusionFailure, "Failed: "+w.Message
		if r.State == store.RolloutPaused {
			cr.Actions = actions(actResume, actRollback, actAbort)
		} else if !r.State.Terminal() || r.State == store.RolloutFailed || r.State == store.RolloutAborted {
			cr.Actions = actions(actRollback)
		}
	case store.WaveCancelled:
		cr.Status, cr.Conclusion, title = github.StatusCompleted, github.ConclusionCancelled, "Cancelled: "+done
	case store.WaveRollingBack:
		cr.Status, title = github.StatusInProgress, fmt.Sprintf("Rolling back: %d apps back so far", c.rolledBack)
	case store.WaveRolledBack:
		cr.Status, cr.Conclusion, title = github.StatusCompleted, github.ConclusionNeutral, fmt.Sprintf("Rolled back %d apps", c.rolledBack)
	}
	if c.outOfPlan > 0 {
		// Apps Argo CD's automated sync or a person synced to the merge before the wave got to them.
		title += fmt.Sprintf(" — %d synced outside the plan", c.outOfPlan)
	}
	if cr.Status == github.StatusCompleted {
		cr.CompletedAt = w.FinishedAt
		if cr.CompletedAt.IsZero() {
			cr.CompletedAt = w.UpdatedAt
		}
	}
	title = clip(title, 200)

	var b strings.Builder
	fmt.Fprintf(&b, "**Wave %d/%d %s** of rollout #%d (merge `%s`): %s on %s, %s.\n\n", wi+1, len(s.Waves),
		mdCell(w.Name, 60), r.ID, text.ShortRev(r.MergeSHA), text.Plural(c.total, "app"), text.Plural(clusterCount(waveSteps), "cluster"),
		text.Plural(batchCount(waveSteps), "batch"))
	fmt.Fprintf(&b, "**Gates:** %s\n\n", gatesText(w))
	b.WriteString(trackLine(s, wi))
	if !w.SoakStartedAt.IsZero() {
		state := "in progress"
		if w.SoakDone {
			state = "passed (no app Degraded or Missing)"
		}
		fmt.Fprintf(&b, "- Soak %s → %s UTC: %s\n", hhmmss(w.SoakStartedAt), hhmmss(w.SoakUntil), state)
	}
	for _, m := range w.Metrics {
		mark := "✅"
		if !m.OK {
			mark = "❌"
		}
		fmt.Fprintf(&b, "- %s `%s` at %s UTC: %s\n", mark, mdCell(m.Query, 120), hhmmss(m.At), mdCell(m.Result, 300))
	}
	for _, h := range w.Unreachable {
		if w.State == store.WaveRunning || w.State == store.WaveGating {
			fmt.Fprintf(&b, "- ⏸️ %s. Its apps wait and are retried; the other instances' apps go on.\n", mdCell(h.Description, 500))
		}
	}
	if h := w.Hold; h != nil && w.State == store.WaveRunning {
		fmt.Fprintf(&b, "- ⏸️ %s (Argo CD refuses their syncs; the wave waits, nothing is counted as failed). Held since %s UTC.\n",
			mdCell(h.Description, 500), hhmmss(h.Since))
	}
	if w.ApprovedBy != "" {
		fmt.Fprintf(&b, "- Approved by @%s at %s UTC\n", w.ApprovedBy, hhmmss(w.ApprovedAt))
	} else if w.State == store.WaveAwaitingApproval {
		var a *plan.Approval
		if w.Gates != nil {
			a = w.Gates.Approval
		}
		fmt.Fprintf(&b, "- ⏸️ Waiting for approval: `/approve %s` on the PR, or the Approve button. Who may approve: %s.\n",
			w.Name, mdCell(approvers(a), 300))
	}
	if w.Message != "" {
		fmt.Fprintf(&b, "\n**%s:** %s\n", w.State, mdCell(w.Message, 1000))
	}
	if note := rollout.AutomatedSyncNote(r); note != "" && (w.State == store.WaveFailed || w.State == store.WaveRolledBack || w.State == store.WaveCancelled) {
		fmt.Fprintf(&b, "\n%s\n", mdCell(note, 1000)) // which apps remain switched off, and the command that restores them
	}
	return withOutput(cr, title, clip(b.String(), maxOutput), appTable(waveSteps, s.Waves, false))
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

// rollbackCheckRun is fleetwave/rollback, the rollback's own check-run, once a rollback was asked for.
func rollbackCheckRun(s rollout.Snapshot) (github.CheckRun, bool) {
	r := s.Rollout
	var scope []rollout.WaveSnapshot
	for _, w := range s.Waves {
		if w.State == store.WaveRollingBack || w.State == store.WaveRolledBack || (w.State == store.WaveFailed && strings.HasPrefix(w.Message, "rollback failed")) {
			scope = append(scope, w)
		}
	}
	if r.State != store.RolloutRollingBack && r.RollbackCheckRunID == 0 && len(scope) == 0 {
		return github.CheckRun{}, false
	}
	cr := github.CheckRun{HeadSHA: r.MergeSHA, Name: CheckRollback, ExternalID: externalID(r.ID, "", true)}
	var steps []store.AppStep
	inScope := map[int]bool{}
	for _, w := range scope {
		inScope[w.Index] = true
	}
	for _, st := range s.Steps {
		if inScope[st.Wave] && (st.Op == store.OpRollback || rollout.Touched(st)) {
			steps = append(steps, st)
		}
	}
	c := countSteps(steps, -1)
	var title string
	switch r.State {
	case store.RolloutRollingBack:
		cr.Status, title = github.StatusInProgress, fmt.Sprintf("Rolling back: %d of %d apps back", c.rolledBack, len(steps))
	case store.RolloutFailed:
		cr.Status, cr.Conclusion, title = github.StatusCompleted, github.ConclusionFailure, "Rollback incomplete: "+r.Message
		cr.Actions = actions(actRollback)
	default:
		cr.Status, cr.Conclusion, title = github.StatusCompleted, github.ConclusionSuccess, fmt.Sprintf("Rolled back %d apps", c.rolledBack)
		if r.State == store.RolloutAborted {
			title += " (" + r.Message + ")"
			cr.Actions = actions(actRollback)
		}
	}
	if cr.Status == github.StatusCompleted {
		cr.CompletedAt = r.UpdatedAt
	}
	title = clip(title, 200)
	var b strings.Builder
	fmt.Fprintf(&b, "**Rollback** of rollout #%d (merge `%s`): every app it synced goes back to the revision it ran before, last wave first.\n\n",
		r.ID, text.ShortRev(r.MergeSHA))
	b.WriteString("| Wave | State | Apps back | Message |\n|---|---|---:|---|\n")
	for i := len(scope) - 1; i >= 0; i-- {
		w := scope[i]
		fmt.Fprintf(&b, "| %s | %s | %d | %s |\n", mdCell(w.Name, 60), w.State, countSteps(s.Steps, w.Index).rolledBack, mdCell(w.Message, 300))
	}
	b.WriteString("\nArgo CD shows rolled-back apps OutOfSync until the merge is reverted in Git; their automated sync (if fleetwave switched it off) stays off.\n")
	return withOutput(cr, title, clip(b.String(), maxOutput), appTable(steps, s.Waves, true)), true
}

// ShowInstances reports whether apps are shown with their Argo CD instance: when any is not "" (a fleet of
// several instances). A one-instance fleet's check-runs stay what they were.
func ShowInstances(steps []store.AppStep) bool {
	for _, s := range steps {
		if s.App.Instance != "" {
			return true
		}
	}
	return false
}

// InstanceName is how an instance is named to people: "" is the default Argo CD.
func InstanceName(inst string) string {
	if inst == "" {
		return "(default)"
	}
	return inst
}

func instanceNames(hs []rollout.InstanceHold) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = "instance " + InstanceName(h.Instance)
	}
	return out
}
