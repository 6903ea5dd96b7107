package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/plan"
)

// ConflictPolicy says what a new rollout does about an unfinished older one touching some of the same apps.
type ConflictPolicy string

const (
	// ConflictWait (the default) queues the new rollout until the older one is finished.
	ConflictWait ConflictPolicy = "wait"
	// ConflictSupersede asks the older one to stop (its syncs in flight finish, it ends as superseded), then
	// starts.
	ConflictSupersede ConflictPolicy = "supersede"
)

// Request is a merge to carry across the fleet.
type Request struct {
	Repo     string // owner/name
	PRNumber int    // 0 for a direct push
	MergeSHA string // the revision every app is synced to
	BaseSHA  string
	// InstallationID is the GitHub App installation the merge came through, stored with the rollout for its
	// Reporter (0: none, e.g. the terminal).
	InstallationID int64
	// Plan is the plan recomputed at the merge commit: the one executed.
	Plan *plan.Plan
	// PRPlan is the plan shown on the PR, or only its digest in PRPlanDigest; a difference is reported on the
	// rollout check-run (with the apps that moved when PRPlan is given).
	PRPlan       *plan.Plan
	PRPlanDigest string
	// AutomatedSync is the policy's mode: with AutomatedSyncDisableDuringRollout the executor switches automated
	// sync off for the plan's apps before the rollout and back on after it succeeds.
	AutomatedSync plan.AutomatedSyncMode
	// OnConflict: what to do about an unfinished older rollout touching the same apps (default wait).
	OnConflict ConflictPolicy
	// OutOfPlanSync: what to do when an app is synced to the merge outside the plan (default pause).
	OutOfPlanSync plan.OutOfPlanSyncMode
	// RepoURL is the GitOps repository's URL, needed for multi-source apps (the sources from it get MergeSHA).
	RepoURL string
	// Prune is passed to the syncs.
	Prune bool
	// Branch is the branch MergeSHA is the tip of (the repository's default branch). When set, an app is synced
	// only when its targetRevision (of its sources from RepoURL) resolves there — empty, HEAD or Branch; one that
	// tracks another branch, a tag or a fixed commit is skipped, "not rolled out: tracks <rev>, not <Branch>"
	// (argosync.Options.Branch). "" (the terminal's rollouts) checks nothing.
	Branch string
	// MergedBy is who merged or pushed (the GitHub login; "" when not known): recorded as the actor of the
	// rollout's first audit event, "merged", when the rollout is created.
	MergedBy string
}

// execution is what the executor needs besides the plan to resume a rollout; it is stored with the plan.
type execution struct {
	AutomatedSync plan.AutomatedSyncMode `json:"automatedSync,omitempty"`
	OnConflict    ConflictPolicy         `json:"onConflict,omitempty"`
	OutOfPlanSync plan.OutOfPlanSyncMode `json:"outOfPlanSync,omitempty"`
	RepoURL       string                 `json:"repoURL,omitempty"`
	Prune         bool                   `json:"prune,omitempty"`
	PlanDigest    string                 `json:"planDigest"`
	PRPlanDigest  string                 `json:"prPlanDigest,omitempty"`
	PlanChanges   []string               `json:"planChanges,omitempty"`
	Branch        string                 `json:"branch,omitempty"`
}

// storedPlan is what the store keeps as a rollout's plan: the plan's own JSON (so any reader of the plan
// contract can read it) with one more key holding the execution settings.
type storedPlan struct {
	plan.Plan
	Execution execution `json:"fleetwaveExecution"`
}

func parseStoredPlan(b []byte) (*storedPlan, error) {
	var sp storedPlan
	if err := json.Unmarshal(b, &sp); err != nil {
		return nil, fmt.Errorf("reading the rollout's plan: %w", err)
	}
	return &sp, nil
}

// planKeys are the apps of a stored plan, as its steps name them (Submit creates a step per app of the plan).
func (e *Executor) planKeys(sp *storedPlan) []store.AppKey {
	var keys []store.AppKey
	for _, w := range sp.Waves {
		for _, b := range w.Batches {
			for _, a := range b.Apps {
				keys = append(keys, e.appKey(a))
			}
		}
	}
	return keys
}

// Submit records a rollout for a merge (idempotent per repo and merge SHA: the pull_request and push events of
// one merge make one rollout) and wakes the executor, which runs it when no older rollout touching the same
// apps is unfinished (or supersedes it, per OnConflict). A plan that breaks the policy is recorded as failed
// and never runs.
func (e *Executor) Submit(ctx context.Context, req Request) (store.Rollout, error) {
	if req.Plan == nil || req.Repo == "" || req.MergeSHA == "" {
		return store.Rollout{}, errors.New("submitting a rollout: a repository, a merge SHA and a plan are needed")
	}
	if req.OnConflict == "" {
		req.OnConflict = ConflictWait
	}
	if req.OnConflict != ConflictWait && req.OnConflict != ConflictSupersede {
		return store.Rollout{}, fmt.Errorf("submitting the rollout of %s: unknown conflict policy %q", text.ShortRev(req.MergeSHA), req.OnConflict)
	}
	if req.OutOfPlanSync != "" && req.OutOfPlanSync != plan.OutOfPlanSyncPause && req.OutOfPlanSync != plan.OutOfPlanSyncContinue {
		return store.Rollout{}, fmt.Errorf("submitting the rollout of %s: unknown out-of-plan sync policy %q", text.ShortRev(req.MergeSHA), req.OutOfPlanSync)
	}
	ex := execution{AutomatedSync: req.AutomatedSync, OnConflict: req.OnConflict, OutOfPlanSync: req.OutOfPlanSync, RepoURL: req.RepoURL, Prune: req.Prune,
		PlanDigest: req.Plan.Digest(), PRPlanDigest: req.PRPlanDigest, Branch: req.Branch}
	if req.PRPlan != nil {
		ex.PRPlanDigest = req.PRPlan.Digest()
		if ex.PRPlanDigest != ex.PlanDigest {
			ex.PlanChanges = planChanges(req.PRPlan, req.Plan)
		}
	}
	raw, err := json.Marshal(storedPlan{Plan: *req.Plan, Execution: ex})
	if err != nil {
		return store.Rollout{}, fmt.Errorf("submitting the rollout of %s: encoding the plan: %w", text.ShortRev(req.MergeSHA), err)
	}
	n := store.NewRollout{Repo: req.Repo, PRNumber: req.PRNumber, MergeSHA: req.MergeSHA, BaseSHA: req.BaseSHA,
		InstallationID: req.InstallationID, Plan: raw}
	for _, w := range req.Plan.Waves {
		nw := store.NewWave{Name: w.Name}
		for bi, b := range w.Batches {
			for _, a := range b.Apps {
				nw.Steps = append(nw.Steps, store.NewStep{Batch: bi, App: e.appKey(a), Cluster: a.Cluster, TargetRevision: req.MergeSHA})
			}
		}
		n.Waves = append(n.Waves, nw)
	}
	violations := ""
	if !req.Plan.OK() {
		n.State = store.RolloutFailed
		var msgs []string
		for _, v := range req.Plan.Violations {
			msgs = append(msgs, fmt.Sprintf("%s: %s", v.App, v.Message))
		}
		sort.Strings(msgs)
		violations = "the plan at the merge commit breaks the release policy: " + strings.Join(msgs, "; ")
	}
	// Its first audit events are written with the rollout, in its transaction: a driver that picks the new
	// rollout up at once logs "started" after them, and a crash cannot keep the rollout and lose who merged it.
	if req.MergedBy != "" {
		merged := "pushed to the default branch"
		if req.PRNumber > 0 {
			merged = fmt.Sprintf("pull request #%d", req.PRNumber)
		}
		n.Events = append(n.Events, store.Event{Actor: req.MergedBy, Action: "merged", Target: text.ShortRev(req.MergeSHA), Result: "ok", Message: merged})
	}
	msg := fmt.Sprintf("%d apps in %d waves", req.Plan.AppCount(), len(req.Plan.Waves))
	if ex.PRPlanDigest != "" && ex.PRPlanDigest != ex.PlanDigest {
		msg += "; the plan differs from the one shown on the PR"
	}
	n.Events = append(n.Events, store.Event{Actor: "fleetwave", Action: "created", Target: text.ShortRev(req.MergeSHA), Result: "ok", Message: msg})
	r, created, err := e.st.CreateRollout(ctx, n)
	if err != nil {
		return r, fmt.Errorf("submitting the rollout of %s: %w", text.ShortRev(req.MergeSHA), err)
	}
	if created && violations != "" {
		if r, err = e.updateRollout(ctx, r.ID, func(x *store.Rollout) (bool, error) {
			x.Message = violations
			return true, nil
		}); err != nil {
			return r, fmt.Errorf("submitting the rollout of %s: %w", text.ShortRev(req.MergeSHA), err)
		}
	}
	if created {
		if r.State == store.RolloutFailed {
			// Nobody drives a finished rollout: publish its verdict now.
			e.publishFinished(ctx, r)
		}
	}
	e.nudge(r.ID)
	return r, nil
}

func (e *Executor) appKey(a plan.PlannedApp) store.AppKey {
	ns := a.Namespace
	if ns == "" {
		ns = e.o.namespace
	}
	return store.AppKey{Instance: a.Instance, Namespace: ns, Name: a.Name}
}

// planChanges lists how the executed plan differs from the PR's: apps added, removed or moved to another wave,
// waves whose gates changed.
func planChanges(pr, merge *plan.Plan) []string {
	where := func(p *plan.Plan) map[string]string {
		m := map[string]string{}
		for _, w := range p.Waves {
			for _, b := range w.Batches {
				for _, a := range b.Apps {
					m[a.Name] = w.Name
				}
			}
		}
		return m
	}
	before, after := where(pr), where(merge)
	var out []string
	for app, w := range after {
		switch bw, ok := before[app]; {
		case !ok:
			out = append(out, fmt.Sprintf("app %s added (wave %s)", app, w))
		case bw != w:
			out = append(out, fmt.Sprintf("app %s moved from wave %s to %s", app, bw, w))
		}
	}
	for app, w := range before {
		if _, ok := after[app]; !ok {
			out = append(out, fmt.Sprintf("app %s removed (was in wave %s)", app, w))
		}
	}
	gates := map[string]string{}
	for _, w := range pr.Waves {
		b, _ := json.Marshal(w.Gates)
		gates[w.Name] = string(b)
	}
	for _, w := range merge.Waves {
		b, _ := json.Marshal(w.Gates)
		if g, ok := gates[w.Name]; ok && g != string(b) {
			out = append(out, fmt.Sprintf("wave %s: gates changed", w.Name))
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		out = append(out, "same apps and waves; batches or limits changed")
	}
	return out
}

// Latest returns the newest rollout of a pull request (what a slash command on the PR acts on).
func (e *Executor) Latest(ctx context.Context, repo string, pr int) (store.Rollout, error) {
	rs, err := e.st.ListRollouts(ctx, store.RolloutFilter{Repo: repo, PRNumber: pr, Limit: 1})
	if err != nil {
		return store.Rollout{}, fmt.Errorf("finding the rollout of %s#%d: %w", repo, pr, err)
	}
	if len(rs) == 0 {
		return store.Rollout{}, fmt.Errorf("finding the rollout of %s#%d: %w", repo, pr, store.ErrNotFound)
	}
	return rs[0], nil
}
