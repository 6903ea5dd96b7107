package rollout

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/plan"
)

// Change is a change planned for a rollout, as the App (a merge, through internal/app/executor) and the terminal
// (`fleetwave rollout`) hand it over; NewRequest turns it into the rollout's Request, the same for both.
type Change struct {
	Repo           string // owner/name
	PRNumber       int    // 0 for a direct push or the terminal
	MergeSHA       string // the revision every app is synced to
	BaseSHA        string
	InstallationID int64 // the GitHub App installation (0: the terminal)
	// Plan is the plan of the change at MergeSHA (preview.Result.Plan), the one executed.
	Plan *plan.Plan
	// Policy is the release policy the plan was made with (preview.Result.Policy): its execution settings go
	// with the rollout. Nil when it is not known (a plan read from a file): see NewRequest.
	Policy       *plan.Policy
	PRPlanDigest string // the digest of the plan shown on the pull request ("" when none)
	RepoURL      string // the GitOps repository's URL
	Branch       string // the branch MergeSHA is the tip of ("": the terminal's rollouts check nothing)
	// Prune is the operator's own request to prune (the terminal's --prune), whatever the policy says.
	Prune bool
	// MergedBy is who merged or pushed the change (the webhook's sender; "" when not known): the actor of the
	// rollout's "merged" audit event.
	MergedBy string
}

// NewRequest is the rollout request of a planned change: the change's revisions and plan, with the execution
// settings of its release policy (automated sync, conflicts, out-of-plan syncs, prune; the operator's Prune
// adds to the policy's). Without a policy, only the automated sync mode is known, from the plan itself: a plan
// of a policy file that passed its check with apps whose automated sync is on was made under
// disable-during-rollout, so the executor switches it off for the rollout and back on after, as it would have.
func NewRequest(c Change) Request {
	req := Request{
		Repo: c.Repo, PRNumber: c.PRNumber, MergeSHA: c.MergeSHA, BaseSHA: c.BaseSHA, InstallationID: c.InstallationID,
		Plan: c.Plan, PRPlanDigest: c.PRPlanDigest, RepoURL: c.RepoURL, Branch: c.Branch, Prune: c.Prune,
		MergedBy: c.MergedBy,
	}
	if p := c.Policy; p != nil {
		req.AutomatedSync = p.AutomatedSync
		req.OnConflict = ConflictPolicy(p.OnConflict)
		req.OutOfPlanSync = p.OutOfPlanSync
		req.Prune = req.Prune || p.Prune
		return req
	}
	if pl := c.Plan; pl != nil && plan.IsPolicyFile(pl.Policy) && pl.OK() && planHasAutomatedSync(pl) {
		req.AutomatedSync = plan.AutomatedSyncDisableDuringRollout
	}
	return req
}

func planHasAutomatedSync(pl *plan.Plan) bool {
	for _, w := range pl.Waves {
		for _, b := range w.Batches {
			for _, a := range b.Apps {
				if a.AutomatedSync {
					return true
				}
			}
		}
	}
	return false
}

// SelectorPlan is the plan of a rollout of the apps a label selector matched (the terminal's --selector): one
// wave of one batch (the executor's concurrency bounds the syncs at once), whose first failure fails the wave,
// which pauses the rollout.
func SelectorPlan(selector string, apps []v1alpha1.Application) *plan.Plan {
	b := plan.Batch{}
	clusters := map[string]bool{}
	for _, a := range apps {
		cluster := a.Spec.Destination.Name
		if cluster == "" {
			cluster = a.Spec.Destination.Server
		}
		if !clusters[cluster] {
			clusters[cluster] = true
			b.Clusters = append(b.Clusters, cluster)
		}
		b.Apps = append(b.Apps, plan.PlannedApp{Name: a.Name, Namespace: a.Namespace, Project: a.Spec.Project, Cluster: cluster,
			Server: a.Spec.Destination.Server, ClusterLabels: map[string]string{}, Labels: nonNilLabels(a.Labels),
			AutomatedSync: a.Spec.SyncPolicy != nil && a.Spec.SyncPolicy.IsAutomatedSyncEnabled()})
	}
	slices.Sort(b.Clusters)
	slices.SortFunc(b.Apps, func(x, y plan.PlannedApp) int { return strings.Compare(x.Name, y.Name) })
	return &plan.Plan{Policy: "selector " + selector, Violations: []plan.Violation{}, Waves: []plan.Wave{{
		Name: "selector", Limits: plan.Limits{MaxClusters: len(b.Clusters)},
		Gates:   plan.Gates{OnFailure: plan.OnFailurePause},
		Batches: []plan.Batch{b},
	}}}
}

func nonNilLabels(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// StatedApprover is who approves wave of rollout r from a terminal, as the audit log and the check-run record it.
// The App lets only members of a wave's approval.teams approve it (plan.Policy.Allowed, with membership read from
// GitHub); a terminal cannot read GitHub teams, so for such a wave it refuses unless the user states, as memberOf,
// one of those teams, and records the statement as such.
func StatedApprover(r store.Rollout, wave, user, memberOf string) (string, error) {
	var p plan.Plan
	if err := json.Unmarshal(r.Plan, &p); err != nil {
		return "", fmt.Errorf("rollout approve: reading the plan of rollout #%d: %w", r.ID, err)
	}
	var teams, names []string
	found := false
	for _, w := range p.Waves {
		names = append(names, w.Name)
		// As the executor finds the wave (Executor.Approve): by name, case-insensitively.
		if strings.EqualFold(w.Name, wave) {
			found = true
			wave = w.Name
			if w.Gates.Approval != nil {
				teams = w.Gates.Approval.Teams
			}
		}
	}
	if !found {
		return "", fmt.Errorf("rollout #%d has no wave %q (waves: %s)", r.ID, wave, strings.Join(names, ", "))
	}
	if len(teams) == 0 {
		if memberOf != "" {
			return "", fmt.Errorf("rollout approve: --member-of %s: wave %s names no approval team", memberOf, wave)
		}
		return user, nil
	}
	if memberOf == "" {
		return "", fmt.Errorf("rollout approve: wave %s may only be approved by members of %s, and the terminal cannot check GitHub team membership: approve it on the pull request (/approve %s) or its check-run, or state your team with --member-of %s (recorded as stated, not checked)",
			wave, strings.Join(teams, " or "), wave, teams[0])
	}
	for _, t := range teams {
		if strings.EqualFold(t, memberOf) {
			return fmt.Sprintf("%s (stated member of %s, not checked)", user, t), nil
		}
	}
	return "", fmt.Errorf("rollout approve: --member-of %s is not one of the approval teams of wave %s (%s)", memberOf, wave, strings.Join(teams, ", "))
}
