package rollout

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetwave/fleetwave/internal/golden"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/store"
)

const (
	revA = "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a"
	revB = "1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b"
	revC = "2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c"
)

func mt(t time.Time) metav1.Time   { return metav1.NewTime(t) }
func mtp(t time.Time) *metav1.Time { m := metav1.NewTime(t); return &m }

func TestJudgeStep(t *testing.T) {
	intent := time.Date(2026, 5, 1, 12, 0, 10, 600e6, time.UTC) // .6s: Argo CD's seconds truncate it
	step := store.AppStep{State: store.StepIntent, Op: store.OpSync, TargetRevision: revB, PreviousRevision: revA, IntentAt: intent}
	rollbackStep := step
	rollbackStep.Op = store.OpRollback
	opState := func(phase synccommon.OperationPhase, started time.Time, rev string) *v1alpha1.OperationState {
		os := &v1alpha1.OperationState{Phase: phase, StartedAt: mt(started), Message: "msg",
			Operation:  v1alpha1.Operation{Sync: &v1alpha1.SyncOperation{Revision: rev}},
			SyncResult: &v1alpha1.SyncOperationResult{Revision: rev}}
		if phase.Completed() {
			os.FinishedAt = mtp(started.Add(30 * time.Second))
		}
		return os
	}
	history := func(rev string, started time.Time) v1alpha1.RevisionHistories {
		return v1alpha1.RevisionHistories{{ID: 0, Revision: revA, DeployStartedAt: mtp(started.Add(-time.Hour)), DeployedAt: mt(started.Add(-time.Hour))},
			{ID: 1, Revision: rev, DeployStartedAt: mtp(started), DeployedAt: mt(started.Add(20 * time.Second))}}
	}
	sec := intent.Truncate(time.Second)
	tests := []struct {
		name string
		step store.AppStep
		app  v1alpha1.Application
		want opVerdict
	}{
		{name: "nothing happened", step: step,
			app:  v1alpha1.Application{Status: v1alpha1.ApplicationStatus{OperationState: opState(synccommon.OperationSucceeded, intent.Add(-time.Hour), revA)}},
			want: opNone},
		{name: "requested, not picked up yet", step: step,
			app:  v1alpha1.Application{Operation: &v1alpha1.Operation{Sync: &v1alpha1.SyncOperation{Revision: revB}}},
			want: opRunning},
		{name: "running, started in the intent's second", step: step,
			app: v1alpha1.Application{Status: v1alpha1.ApplicationStatus{OperationState: opState(synccommon.OperationRunning, sec, revB)}}, want: opRunning},
		{name: "succeeded", step: step,
			app: v1alpha1.Application{Status: v1alpha1.ApplicationStatus{OperationState: opState(synccommon.OperationSucceeded, sec.Add(time.Second), revB)}}, want: opSucceeded},
		{name: "failed", step: step,
			app: v1alpha1.Application{Status: v1alpha1.ApplicationStatus{OperationState: opState(synccommon.OperationFailed, sec.Add(time.Second), revB)}}, want: opFailed},
		{name: "terminating counts as running", step: step,
			app: v1alpha1.Application{Status: v1alpha1.ApplicationStatus{OperationState: opState(synccommon.OperationTerminating, sec, revB)}}, want: opRunning},
		{name: "an operation to another revision is not ours", step: step,
			app: v1alpha1.Application{Status: v1alpha1.ApplicationStatus{OperationState: opState(synccommon.OperationRunning, sec.Add(time.Second), revC)}}, want: opNone},
		{name: "an old operation to the revision is not ours", step: step,
			app: v1alpha1.Application{Status: v1alpha1.ApplicationStatus{OperationState: opState(synccommon.OperationSucceeded, sec.Add(-10*time.Second), revB)}}, want: opNone},
		{name: "within the clock skew allowance it is", step: step,
			app: v1alpha1.Application{Status: v1alpha1.ApplicationStatus{OperationState: opState(synccommon.OperationSucceeded, sec.Add(-2*time.Second), revB)}}, want: opSucceeded},
		{name: "a later operation replaced ours: the history keeps it", step: step,
			app: v1alpha1.Application{Status: v1alpha1.ApplicationStatus{OperationState: opState(synccommon.OperationRunning, sec.Add(time.Minute), revC),
				History: history(revB, sec.Add(time.Second))}}, want: opSucceeded},
		{name: "a requested operation to another revision is someone else's", step: step,
			app: v1alpha1.Application{Operation: &v1alpha1.Operation{Sync: &v1alpha1.SyncOperation{Revision: revC}}}, want: opNone},
		{name: "rollback: the operation to the previous revision", step: rollbackStep,
			app: v1alpha1.Application{Status: v1alpha1.ApplicationStatus{OperationState: opState(synccommon.OperationSucceeded, sec, revA)}}, want: opSucceeded},
		{name: "rollback: the forward sync is not it", step: rollbackStep,
			app: v1alpha1.Application{Status: v1alpha1.ApplicationStatus{OperationState: opState(synccommon.OperationSucceeded, sec, revB)}}, want: opNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, _ := judgeStep(&tt.app, tt.step, 2*time.Second); got != tt.want {
				t.Errorf("judgeStep = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestEvidenceHelpers(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 10, 0, time.UTC)
	app := &v1alpha1.Application{Status: v1alpha1.ApplicationStatus{
		History:      v1alpha1.RevisionHistories{{Revision: revA}, {Revision: revB}},
		Health:       v1alpha1.AppHealthStatus{Status: health.HealthStatusHealthy},
		ReconciledAt: mtp(now),
	}}
	if got := liveRevision(app, ""); got != revB {
		t.Errorf("liveRevision = %s", got)
	}
	if !atRevision(app, revB, "") || atRevision(app, revA, "") {
		t.Error("atRevision")
	}
	if reconciledAfter(app, now) || !reconciledAfter(app, now.Add(-time.Second)) {
		t.Error("reconciledAfter must need a later second")
	}
	multi := &v1alpha1.Application{Status: v1alpha1.ApplicationStatus{History: v1alpha1.RevisionHistories{{
		Revisions: []string{revC, revB},
		Sources:   v1alpha1.ApplicationSources{{RepoURL: "https://github.com/org/charts"}, {RepoURL: "git@github.com:Org/GitOps.git"}},
	}}}}
	if got := liveRevision(multi, "https://github.com/org/gitops"); got != revB {
		t.Errorf("multi-source liveRevision = %s", got)
	}
	if liveRevision(&v1alpha1.Application{}, "") != "" {
		t.Error("never synced app has a live revision")
	}
	deg := &v1alpha1.Application{Status: v1alpha1.ApplicationStatus{Health: v1alpha1.AppHealthStatus{Status: health.HealthStatusDegraded},
		Resources: []v1alpha1.ResourceStatus{
			{Kind: "ConfigMap", Name: "web", Health: &v1alpha1.HealthStatus{Status: health.HealthStatusHealthy}},
			{Kind: "Deployment", Name: "web", Health: &v1alpha1.HealthStatus{Status: health.HealthStatusDegraded, Message: "CrashLoopBackOff"}},
		}}}
	if got := healthProblem(deg); got != "Degraded (Deployment web: CrashLoopBackOff)" {
		t.Errorf("healthProblem = %q", got)
	}
	if healthProblem(app) != "" {
		t.Error("Healthy is a problem")
	}
	on := true
	off := false
	for _, tt := range []struct {
		p    *v1alpha1.SyncPolicy
		want bool
	}{
		{nil, false},
		{&v1alpha1.SyncPolicy{}, false},
		{&v1alpha1.SyncPolicy{Automated: &v1alpha1.SyncPolicyAutomated{}}, true},
		{&v1alpha1.SyncPolicy{Automated: &v1alpha1.SyncPolicyAutomated{Enabled: &on}}, true},
		{&v1alpha1.SyncPolicy{Automated: &v1alpha1.SyncPolicyAutomated{Enabled: &off}}, false},
	} {
		a := &v1alpha1.Application{Spec: v1alpha1.ApplicationSpec{SyncPolicy: tt.p}}
		if automatedOn(a) != tt.want {
			t.Errorf("automatedOn(%+v) != %v", tt.p, tt.want)
		}
	}
}

func TestCheckSamples(t *testing.T) {
	lo, hi := 0.5, 2.0
	both := &plan.PrometheusGate{Min: &lo, Max: &hi}
	maxOnly := &plan.PrometheusGate{Max: &hi}
	tests := []struct {
		g    *plan.PrometheusGate
		s    []Sample
		ok   bool
		desc string
	}{
		{both, []Sample{{"{}", 0.5}, {"{}", 2}}, true, "0.5, 2"},
		{both, []Sample{{`{job="a"}`, 0.4}}, false, `{job="a"} = 0.4 below min 0.5`},
		{both, []Sample{{"{}", 1}, {`{job="b"}`, 2.5}}, false, `{job="b"} = 2.5 above max 2`},
		{maxOnly, []Sample{{"{}", -100}}, true, "-100"},
		{maxOnly, nil, false, "no samples"},
		{maxOnly, []Sample{{"up", math.NaN()}}, false, "up is NaN"},
		{maxOnly, []Sample{{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}}, true, "1, 1, 1, … (4 series)"},
	}
	for _, tt := range tests {
		ok, desc := checkSamples(tt.g, tt.s)
		if ok != tt.ok || !strings.HasPrefix(desc, tt.desc) {
			t.Errorf("checkSamples(%v) = %v %q, want %v %q", tt.s, ok, desc, tt.ok, tt.desc)
		}
	}
}

func TestExternalID(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want CheckRef
		ok   bool
	}{
		{externalID(12, "", false), CheckRef{RolloutID: 12}, true},
		{externalID(12, "canary", false), CheckRef{RolloutID: 12, Wave: "canary"}, true},
		{externalID(12, "", true), CheckRef{RolloutID: 12, Rollback: true}, true},
		{"fleetwave:x", CheckRef{}, false},
		{"fleetwave:12:wave:", CheckRef{}, false},
		{"other:12", CheckRef{}, false},
		{"fleetwave:12:nope", CheckRef{}, false},
	} {
		got, ok := ParseExternalID(tt.in)
		if ok != tt.ok || got != tt.want {
			t.Errorf("ParseExternalID(%q) = %+v, %v", tt.in, got, ok)
		}
	}
}

func TestPlanChanges(t *testing.T) {
	pol, err := plan.ParsePolicy(".fleetwave.yaml", []byte(`apiVersion: fleetwave/v1
waves:
  - name: canary
    selector: {matchLabels: {env: test}}
  - name: prod
    selector: {matchLabels: {env: prd}}
`))
	if err != nil {
		t.Fatal(err)
	}
	app := func(name, env string) plan.App {
		return plan.App{Name: name, Cluster: name, ClusterLabels: map[string]string{"env": env}}
	}
	pr := plan.Build(pol, []plan.App{app("a", "test"), app("b", "prd"), app("c", "prd")})
	merge := plan.Build(pol, []plan.App{app("a", "prd"), app("b", "prd"), app("d", "test")})
	got := planChanges(pr, merge)
	want := []string{"app a moved from wave canary to prod", "app c removed (was in wave prod)", "app d added (wave canary)"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("planChanges = %q", got)
	}
}

// TestCheckRunGolden renders the check-runs of a rollout caught mid-way (production awaiting approval after a
// soak and a metric gate, one app failed within the threshold) and of its rollback.
func TestCheckRunGolden(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	maxv := 0.01
	pl := &plan.Plan{Policy: ".fleetwave.yaml", Waves: []plan.Wave{
		{Name: "canary", Gates: plan.Gates{Soak: plan.Duration(10 * time.Minute), OnFailure: plan.OnFailurePause}},
		{Name: "production", Gates: plan.Gates{ToleratedFailures: 1, OnFailure: plan.OnFailurePause,
			Approval: &plan.Approval{Required: true, Teams: []string{"org/sre"}},
			Metrics:  []plan.MetricGate{{Prometheus: &plan.PrometheusGate{URL: "http://prom:9090", Query: "sum(rate(http_5xx[5m]))", Max: &maxv, For: plan.Duration(5 * time.Minute)}}}}},
	}}
	sp := storedPlan{Plan: *pl, Execution: execution{PlanDigest: "sha256:aaaaaaaaaaaaaaaa", PRPlanDigest: "sha256:bbbbbbbbbbbbbbbb",
		PlanChanges: []string{"app web-prd-3 added (wave production)"}, AutomatedSync: plan.AutomatedSyncDisableDuringRollout}}
	raw, _ := json.Marshal(sp)
	r := store.Rollout{ID: 3, Repo: "org/gitops", PRNumber: 42, MergeSHA: revB, Plan: raw, State: store.RolloutAwaitingApproval,
		CheckRunID: 100, CreatedAt: t0, UpdatedAt: t0.Add(30 * time.Minute)}
	gs := gateState{SoakStartedAt: t0.Add(2 * time.Minute), SoakUntil: t0.Add(12 * time.Minute), SoakDone: true}
	gs2 := gateState{MetricsSince: t0.Add(20 * time.Minute), MetricsDone: true,
		Metrics: []metricEval{{Query: "sum(rate(http_5xx[5m]))", At: t0.Add(25 * time.Minute), OK: true, Result: "0.002"}}}
	waves := []store.Wave{
		{RolloutID: 3, Index: 0, Name: "canary", State: store.WaveSucceeded, CheckRunID: 101, GateState: gs.raw(), StartedAt: t0, FinishedAt: t0.Add(12 * time.Minute)},
		{RolloutID: 3, Index: 1, Name: "production", State: store.WaveAwaitingApproval, CheckRunID: 102, GateState: gs2.raw(), StartedAt: t0.Add(12 * time.Minute)},
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
	v := view{r: r, sp: &sp, waves: waves, steps: steps, waitedBy: []store.Rollout{{ID: 4, MergeSHA: revC}}}
	var b strings.Builder
	for _, cr := range []CheckRun{rolloutCheckRun(v), waveCheckRun(v, 0), waveCheckRun(v, 1)} {
		writeCheckRun(&b, cr)
	}
	// The same rollout rolled back.
	rb := v
	rb.r.State, rb.r.RollbackCheckRunID, rb.r.Message = store.RolloutRolledBack, 103, "rolled back"
	rb.waitedBy = nil
	rb.waves = []store.Wave{waves[0], waves[1]}
	rb.waves[0].State, rb.waves[1].State = store.WaveRolledBack, store.WaveRolledBack
	rb.steps = append([]store.AppStep(nil), steps...)
	for i := range rb.steps {
		if rb.steps[i].State == store.StepSynced || rb.steps[i].State == store.StepFailed {
			rb.steps[i].State, rb.steps[i].Op, rb.steps[i].Message = store.StepRolledBack, store.OpRollback, "applied 0a0a0a0a0a, Healthy"
		}
	}
	cr, ok := rollbackCheckRun(rb)
	if !ok {
		t.Fatal("no rollback check-run")
	}
	writeCheckRun(&b, cr)
	writeCheckRun(&b, rolloutCheckRun(rb))
	golden.Assert(t, "checkruns.golden.md", b.String())
}

func writeCheckRun(b *strings.Builder, cr CheckRun) {
	fmt.Fprintf(b, "# %s (id %d, external id %s)\n\nstatus: %s, conclusion: %s, started %s, completed %s\n\ntitle: %s\n\nactions:",
		cr.Name, cr.ID, cr.ExternalID, cr.Status, cr.Conclusion, hhmmss(cr.StartedAt), hhmmss(cr.CompletedAt), cr.Title)
	for _, a := range cr.Actions {
		fmt.Fprintf(b, " [%s: %s (%s)]", a.Label, a.Description, a.Identifier)
	}
	fmt.Fprintf(b, "\n\n## summary\n\n%s\n## text\n\n%s\n", cr.Summary, cr.Text)
}

func TestActionsFitGitHubLimits(t *testing.T) {
	for _, a := range []Action{actPause, actResume, actAbort, actApprove, actRollback} {
		if len(a.Label) > 20 || len(a.Description) > 40 || len(a.Identifier) > 20 {
			t.Errorf("action %+v exceeds GitHub's limits (label 20, description 40, identifier 20)", a)
		}
	}
}
