package checkrun

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/github"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/rollout"
	"github.com/fleetwave/fleetwave/internal/testkit/golden"
)

const (
	revA = "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a"
	revB = "1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b"
	revC = "2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c"
)

func TestExternalID(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Ref
		ok   bool
	}{
		{externalID(12, "", false), Ref{RolloutID: 12}, true},
		{externalID(12, "canary", false), Ref{RolloutID: 12, Wave: "canary"}, true},
		{externalID(12, "", true), Ref{RolloutID: 12, Rollback: true}, true},
		{"fleetwave:x", Ref{}, false},
		{"fleetwave:12:wave:", Ref{}, false},
		{"other:12", Ref{}, false},
		{"fleetwave:12:nope", Ref{}, false},
	} {
		got, ok := ParseExternalID(tt.in)
		if ok != tt.ok || got != tt.want {
			t.Errorf("ParseExternalID(%q) = %+v, %v", tt.in, got, ok)
		}
	}
}

// midway is a rollout caught mid-way: production awaiting approval after a soak and a metric gate, one app
// failed within the threshold.
func midway() rollout.Snapshot {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	maxv := 0.01
	pl := plan.Plan{Policy: ".fleetwave.yaml", Waves: []plan.Wave{
		{Name: "canary", Gates: plan.Gates{Soak: plan.Duration(10 * time.Minute), OnFailure: plan.OnFailurePause}},
		{Name: "production", Gates: plan.Gates{ToleratedFailures: 1, OnFailure: plan.OnFailurePause,
			Approval: &plan.Approval{Required: true, Teams: []string{"org/sre"}},
			Metrics:  []plan.MetricGate{{Prometheus: &plan.PrometheusGate{URL: "http://prom:9090", Query: "sum(rate(http_5xx[5m]))", Max: &maxv, For: plan.Duration(5 * time.Minute)}}}}},
	}}
	r := store.Rollout{ID: 3, Repo: "org/gitops", PRNumber: 42, MergeSHA: revB, State: store.RolloutAwaitingApproval,
		CheckRunID: 100, CreatedAt: t0, UpdatedAt: t0.Add(30 * time.Minute)}
	waves := []rollout.WaveSnapshot{
		{Wave: store.Wave{RolloutID: 3, Index: 0, Name: "canary", State: store.WaveSucceeded, CheckRunID: 101, StartedAt: t0, FinishedAt: t0.Add(12 * time.Minute)},
			Gates: &pl.Waves[0].Gates, SoakStartedAt: t0.Add(2 * time.Minute), SoakUntil: t0.Add(12 * time.Minute), SoakDone: true},
		{Wave: store.Wave{RolloutID: 3, Index: 1, Name: "production", State: store.WaveAwaitingApproval, CheckRunID: 102, StartedAt: t0.Add(12 * time.Minute)},
			Gates:   &pl.Waves[1].Gates,
			Metrics: []rollout.MetricCheck{{Query: "sum(rate(http_5xx[5m]))", At: t0.Add(25 * time.Minute), OK: true, Result: "0.002"}}},
	}
	step := func(id int64, wave, batch int, name string, st store.StepState, started time.Duration, msg string) store.AppStep {
		s := store.AppStep{ID: id, RolloutID: 3, Wave: wave, Batch: batch, App: store.AppKey{Namespace: "argocd", Name: name},
			Cluster: strings.TrimPrefix(name, "web-"), PreviousRevision: revA, TargetRevision: revB, State: st, Op: store.OpSync,
			Health: "Healthy", Message: msg}
		if st != store.StepPending {
			s.IntentAt = t0.Add(started)
			s.OpStartedAt = t0.Add(started + time.Second)
			s.OpFinishedAt = t0.Add(started + 41*time.Second)
		}
		return s
	}
	steps := []store.AppStep{
		step(1, 0, 0, "web-test-1", store.StepSynced, time.Minute, "applied 1b1b1b1b1b, Healthy"),
		step(2, 1, 0, "web-prd-1", store.StepSynced, 13*time.Minute, "applied 1b1b1b1b1b, Healthy"),
		step(3, 1, 0, "web-prd-2", store.StepFailed, 13*time.Minute, "sync Failed: admission webhook \"x\" denied | the request"),
		step(4, 1, 1, "web-prd-3", store.StepSkipped, 14*time.Minute, "already Synced and Healthy at 1b1b1b1b1b"),
	}
	return rollout.Snapshot{Rollout: r, Plan: pl, PlanDigest: "sha256:aaaaaaaaaaaaaaaa", PRPlanDigest: "sha256:bbbbbbbbbbbbbbbb",
		PlanChanges: []string{"app web-prd-3 added (wave production)"}, AutomatedSync: plan.AutomatedSyncDisableDuringRollout,
		Waves: waves, Steps: steps, WaitedBy: []store.Rollout{{ID: 4, MergeSHA: revC}}}
}

// rolledBack is the same rollout rolled back.
func rolledBack() rollout.Snapshot {
	rb := midway()
	rb.Rollout.State, rb.Rollout.RollbackCheckRunID, rb.Rollout.Message = store.RolloutRolledBack, 103, "rolled back"
	rb.WaitedBy = nil
	rb.Waves[0].State, rb.Waves[1].State = store.WaveRolledBack, store.WaveRolledBack
	for i := range rb.Steps {
		if rb.Steps[i].State == store.StepSynced || rb.Steps[i].State == store.StepFailed {
			rb.Steps[i].State, rb.Steps[i].Op, rb.Steps[i].Message = store.StepRolledBack, store.OpRollback, "applied 0a0a0a0a0a, Healthy"
		}
	}
	return rb
}

// TestCheckRunGolden renders the check-runs of a rollout caught mid-way and of its rollback.
func TestCheckRunGolden(t *testing.T) {
	v := midway()
	var b strings.Builder
	writeCheckRun(&b, 100, rolloutCheckRun(v))
	writeCheckRun(&b, 101, waveCheckRun(v, 0))
	writeCheckRun(&b, 102, waveCheckRun(v, 1))
	rb := rolledBack()
	cr, ok := rollbackCheckRun(rb)
	if !ok {
		t.Fatal("no rollback check-run")
	}
	writeCheckRun(&b, 103, cr)
	writeCheckRun(&b, 100, rolloutCheckRun(rb))
	golden.Assert(t, "checkruns.golden.md", b.String())
}

func writeCheckRun(b *strings.Builder, id int64, cr github.CheckRun) {
	out := cr.Output
	if out == nil {
		out = &github.CheckOutput{}
	}
	fmt.Fprintf(b, "# %s (id %d, external id %s)\n\nstatus: %s, conclusion: %s, started %s, completed %s\n\ntitle: %s\n\nactions:",
		cr.Name, id, cr.ExternalID, cr.Status, cr.Conclusion, hhmmss(cr.StartedAt), hhmmss(cr.CompletedAt), out.Title)
	for _, a := range cr.Actions {
		fmt.Fprintf(b, " [%s: %s (%s)]", a.Label, a.Description, a.Identifier)
	}
	fmt.Fprintf(b, "\n\n## summary\n\n%s\n## text\n\n%s\n", out.Summary, out.Text)
}

func TestActionsFitGitHubLimits(t *testing.T) {
	for _, a := range []github.CheckAction{actPause, actResume, actAbort, actApprove, actRollback} {
		if len(a.Label) > 20 || len(a.Description) > 40 || len(a.Identifier) > 20 {
			t.Errorf("action %+v exceeds GitHub's limits (label 20, description 40, identifier 20)", a)
		}
	}
}

// TestOutOfPlanAppOnItsWave: an app synced to the merge outside the plan shows as such on its wave's check-run,
// in the title and in the app table, never as skipped or pending.
func TestOutOfPlanAppOnItsWave(t *testing.T) {
	v := midway()
	v.Waves[1].State, v.Waves[1].StartedAt = store.WaveAwaitingApproval, time.Time{}
	for i := range v.Steps {
		if v.Steps[i].Wave == 1 {
			v.Steps[i].State, v.Steps[i].Message = store.StepPending, ""
		}
	}
	v.Steps[2].State, v.Steps[2].Message = store.StepOutOfPlan, "synced outside the plan by automated sync (operation succeeded, started 12:00:01)"
	cr := waveCheckRun(v, 1)
	if !strings.Contains(cr.Output.Title, "1 synced outside the plan") {
		t.Errorf("title %q", cr.Output.Title)
	}
	var row string
	for _, l := range strings.Split(cr.Output.Text, "\n") {
		if strings.Contains(l, "web-prd-2") {
			row = l
		}
	}
	if !strings.Contains(row, "synced outside the plan") || strings.Contains(row, "skipped") || strings.Contains(row, "pending") {
		t.Errorf("web-prd-2's row: %q\n%s", row, cr.Output.Text)
	}
}
