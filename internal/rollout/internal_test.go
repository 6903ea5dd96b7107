package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/health"
	synccommon "github.com/argoproj/argo-cd/gitops-engine/v3/pkg/sync/common"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/plan"
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

// newSnapshot decodes what the store keeps as JSON (the plan with its execution settings, each wave's gate
// bookkeeping) into the plain values a Reporter shows.
func TestNewSnapshot(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	pl := plan.Plan{Policy: ".fleetwave.yaml", Waves: []plan.Wave{
		{Name: "canary", Gates: plan.Gates{Soak: plan.Duration(10 * time.Minute)}},
		{Name: "production", Gates: plan.Gates{ToleratedFailures: 1}},
	}}
	sp := storedPlan{Plan: pl, Execution: execution{PlanDigest: "sha256:aa", PRPlanDigest: "sha256:bb",
		PlanChanges: []string{"app x added (wave production)"}, AutomatedSync: plan.AutomatedSyncDisableDuringRollout,
		OnConflict: ConflictSupersede}}
	raw, _ := json.Marshal(sp)
	parsed, err := parseStoredPlan(raw)
	if err != nil {
		t.Fatal(err)
	}
	gs := gateState{SoakStartedAt: t0, SoakUntil: t0.Add(10 * time.Minute), SoakDone: true,
		Metrics: []metricEval{{Query: "up", At: t0, OK: true, Result: "1"}}}
	held := gateState{Window: &windowHold{Apps: []string{"web"}, Count: 1, Reason: "deny window '0 9 * * *' (1h)",
		Until: t0.Add(time.Hour), Since: t0}}
	waves := []store.Wave{{Index: 0, Name: "canary", GateState: gs.raw()}, {Index: 1, Name: "production", GateState: held.raw()},
		{Index: 2, Name: "extra"}}
	s := newSnapshot(store.Rollout{ID: 7}, parsed, waves, []store.AppStep{{ID: 1}})

	if s.Rollout.ID != 7 || s.Plan.Policy != ".fleetwave.yaml" || s.PlanDigest != "sha256:aa" || s.PRPlanDigest != "sha256:bb" ||
		!s.PlanDiffers() || len(s.PlanChanges) != 1 || s.AutomatedSync != plan.AutomatedSyncDisableDuringRollout ||
		s.OnConflict != ConflictSupersede || len(s.Steps) != 1 {
		t.Errorf("snapshot = %+v", s)
	}
	if len(s.Waves) != 3 {
		t.Fatalf("%d waves; want 3", len(s.Waves))
	}
	c := s.Waves[0]
	if c.Gates == nil || c.Gates.Soak != plan.Duration(10*time.Minute) || !c.SoakStartedAt.Equal(t0) || !c.SoakDone ||
		len(c.Metrics) != 1 || c.Metrics[0] != (MetricCheck{Query: "up", At: t0, OK: true, Result: "1"}) || c.Hold != nil {
		t.Errorf("canary = %+v", c)
	}
	h := s.Waves[1].Hold
	if h == nil || h.Reason != "deny window '0 9 * * *' (1h)" || !h.Until.Equal(t0.Add(time.Hour)) || !h.Since.Equal(t0) ||
		h.Description != "1 app (web) held by deny window '0 9 * * *' (1h) until 2026-05-01 13:00 UTC" {
		t.Errorf("production's hold = %+v", h)
	}
	if s.Waves[1].Gates.ToleratedFailures != 1 || s.Waves[2].Gates != nil {
		t.Errorf("gates: production %+v, a wave the plan lacks %+v; want production's, nil", s.Waves[1].Gates, s.Waves[2].Gates)
	}
	same := newSnapshot(store.Rollout{}, &storedPlan{Execution: execution{PlanDigest: "sha256:aa", PRPlanDigest: "sha256:aa"}}, nil, nil)
	if same.PlanDiffers() {
		t.Error("PlanDiffers with equal digests")
	}
}

// rows is a value fake of the store as a snapshot reads it: one rollout with its waves and steps, and the
// unfinished rollouts touching its apps.
type rows struct {
	r       store.Rollout
	waves   []store.Wave
	steps   []store.AppStep
	active  []store.Rollout
	touched int // ActiveRolloutsTouching calls
}

func (f *rows) GetRollout(_ context.Context, id int64) (store.Rollout, error) {
	if id != f.r.ID {
		return store.Rollout{}, store.ErrNotFound
	}
	return f.r, nil
}
func (f *rows) ListWaves(context.Context, int64) ([]store.Wave, error) { return f.waves, nil }
func (f *rows) ListSteps(context.Context, int64, store.StepFilter) ([]store.AppStep, error) {
	return f.steps, nil
}
func (f *rows) ActiveRolloutsTouching(_ context.Context, _ string, apps []store.AppKey) ([]store.Rollout, error) {
	f.touched++
	if len(apps) != len(f.steps) {
		return nil, fmt.Errorf("asked about %d apps; want the %d of the steps", len(apps), len(f.steps))
	}
	return f.active, nil
}

// A snapshot names the older rollouts a pending one waits for and the newer ones waiting for it; a finished
// rollout waits for nobody and nobody waits for it, so the store is not asked.
func TestReadSnapshot(t *testing.T) {
	raw, _ := json.Marshal(storedPlan{Plan: plan.Plan{Policy: "p.yaml", Waves: []plan.Wave{{Name: "all"}}}})
	older, newer := store.Rollout{ID: 3, MergeSHA: revA}, store.Rollout{ID: 9, MergeSHA: revC}
	for _, tt := range []struct {
		name              string
		state             store.RolloutState
		waitingFor, waits []int64
		asked             int
	}{
		{"pending", store.RolloutPending, []int64{3}, []int64{9}, 1},
		{"running", store.RolloutRunning, nil, []int64{9}, 1},
		{"succeeded", store.RolloutSucceeded, nil, nil, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &rows{r: store.Rollout{ID: 5, Plan: raw, State: tt.state}, waves: []store.Wave{{Index: 0, Name: "all"}},
				steps:  []store.AppStep{{ID: 1, App: store.AppKey{Namespace: "argocd", Name: "web"}}},
				active: []store.Rollout{older, {ID: 5}, newer}}
			s, err := readSnapshot(context.Background(), f, 5)
			if err != nil {
				t.Fatal(err)
			}
			ids := func(rs []store.Rollout) []int64 {
				var out []int64
				for _, r := range rs {
					out = append(out, r.ID)
				}
				return out
			}
			if fmt.Sprint(ids(s.WaitingFor)) != fmt.Sprint(tt.waitingFor) || fmt.Sprint(ids(s.WaitedBy)) != fmt.Sprint(tt.waits) ||
				f.touched != tt.asked {
				t.Errorf("waiting for %v, waited by %v, store asked %d times; want %v, %v, %d", ids(s.WaitingFor),
					ids(s.WaitedBy), f.touched, tt.waitingFor, tt.waits, tt.asked)
			}
			if s.Plan.Policy != "p.yaml" || len(s.Waves) != 1 || len(s.Steps) != 1 {
				t.Errorf("snapshot = %+v", s)
			}
		})
	}
	if _, err := readSnapshot(context.Background(), &rows{r: store.Rollout{ID: 5, Plan: []byte("{")}}, 5); err == nil {
		t.Error("an unreadable stored plan gave no error")
	}
}
