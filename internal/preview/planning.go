package preview

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/discover"
	"github.com/fleetwave/fleetwave/internal/edge/source"
	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/report"
)

// headPolicy is the release policy at head, read once: for the diff settings, the plan and the Result.
type headPolicy struct {
	policy *plan.Policy // nil when err is set
	file   string       // "" when there is none
	err    error        // an *InputError: unreadable, or invalid (a *plan.PolicyError)
}

// planned makes the wave plan when asked (stage 7) and places the apps for the comment; an invalid policy
// returns the result with its error.
func (p *pipeline) planned(ctx context.Context, in Input, rep *report.Report, pol headPolicy) (*Result, error) {
	res := &Result{Report: rep, Policy: pol.policy, PolicyFile: pol.file}
	place := p.place
	if in.PlanOnly {
		place = func(*report.Report, *plan.Policy, string, *plan.Plan) {} // the comment's presentation
	}
	if !in.Plan {
		place(rep, plan.DefaultPolicy(), "", nil)
		return res, nil
	}
	var pe *plan.PolicyError
	if err := pol.err; errors.As(err, &pe) {
		place(rep, plan.DefaultPolicy(), "", nil)
		if f := rep.Footer; f != nil {
			// The file is there, and invalid: not "no policy"; the commands are listed, who may run them is
			// the file's to say.
			f.PolicyFile, f.PolicyInvalid = pe.File, true
			for _, c := range []string{"approve", "pause", "resume", "abort", "rollback"} {
				f.Commands = append(f.Commands, report.CommandHelp{Command: c})
			}
		}
		// The diff does not depend on the policy: it is returned with the error, saying why no plan.
		for _, d := range pe.Diagnostics {
			rep.PolicyErrors = append(rep.PolicyErrors, d.String())
		}
		if len(pe.Diagnostics) == 0 {
			rep.PolicyErrors = []string{pe.Error()}
		}
		return res, err
	}
	if pol.err != nil {
		return nil, pol.err
	}
	pl := p.plan(pol.policy, p.head.inv, rep)
	if p.instances.windows() {
		holdWaves(ctx, p.instances.windowReader, pl, p.head.inv, time.Now())
	}
	rep.Plan = pl
	res.Plan = pl
	rep.Summary.Waves = len(pl.Waves)
	place(rep, pol.policy, pol.file, pl)
	return res, nil
}

// apps it cannot place make it incomplete, and removed apps are listed apart.
func (p *pipeline) plan(policy *plan.Policy, headInv *discover.Inventory, rep *report.Report) *plan.Plan {
	var apps []plan.App
	var unplaced, removed, pinned []plan.Unplaced
	var refused []plan.Violation
	for _, ra := range rep.Apps {
		if ra.PinnedRevision != "" && ra.Status != report.StatusUnchanged && ra.Status != report.StatusRemoved &&
			(ra.Status != report.StatusSkipped || len(ra.AffectedBy) > 0) {
			reason := "pinned to " + ra.PinnedRevision + ": Argo CD syncs it to that revision, not to the merge"
			if ra.Error != "" {
				reason += " (" + ra.Error + ")"
			}
			pinned = append(pinned, plan.Unplaced{App: ra.Name, Namespace: ra.Namespace, Instance: ra.Instance, Cluster: ra.Cluster, Reason: reason})
			continue
		}
		// An app that failed to render, or that the change affects but could not be rendered, may roll out
		// too: the plan cannot place it, and says so.
		if ra.Status == report.StatusError || ra.Status == report.StatusSkipped && len(ra.AffectedBy) > 0 {
			unplaced = append(unplaced, plan.Unplaced{App: ra.Name, Namespace: ra.Namespace, Instance: ra.Instance, Cluster: ra.Cluster, Reason: ra.Error})
			continue
		}
		if ra.Status == report.StatusRemoved && ra.Removal != nil {
			removed = append(removed, plan.Unplaced{App: ra.Name, Namespace: ra.Namespace, Instance: ra.Instance, Cluster: ra.Cluster, Reason: ra.Removal.Detail})
			continue
		}
		if ra.Status != report.StatusChanged && ra.Status != report.StatusAdded {
			continue
		}
		a, ok := headInv.Get(ra.Namespace + "/" + ra.Name)
		if !ok {
			continue
		}
		if msg := destinationProblem(a, headInv, p.instances.of(a).clusters); msg != "" {
			refused = append(refused, plan.Violation{App: a.App.Name, Namespace: a.App.Namespace, Cluster: ra.Cluster, Rule: plan.RuleDestination, Message: msg})
			continue
		}
		pa := PlanApp(a)
		pa.Risks = planRisks(&ra)
		apps = append(apps, pa)
	}
	pl := plan.Build(policy, apps)
	if len(refused) > 0 {
		pl.Violations = append(refused, pl.Violations...)
	}
	pl.SetUnplaced(unplaced)
	pl.SetUnreadable(rep.Problems)
	pl.Removed = removed
	pl.Pinned = pinned
	return pl
}

// destinationProblem says, in one line naming the app, why Argo CD refuses its destination: none at all, or a
// cluster no cluster Secret declares (argo-cd v3.6.1 util/argo/argo.go GetDestinationCluster). A cluster is
// unknown only when the fleet declares some: without cluster Secrets or --clusters, the destination is taken as
// it is written; an app of an instance with its own cluster list (Instance.Clusters) is checked against it.
// "" when the destination is valid.
func destinationProblem(a *discover.App, inv *discover.Inventory, instanceClusters bool) string {
	d := a.App.Spec.Destination
	switch {
	case d.Server == "" && d.Name == "":
		return fmt.Sprintf("app %s has no destination (neither server nor name): Argo CD refuses to sync it", a.Key)
	case !a.ClusterKnown && (instanceClusters || len(inv.Clusters.Declared()) > 0):
		what := "cluster " + d.Name
		if d.Server != "" {
			what = "server " + d.Server
		}
		if instanceClusters && a.Instance != "" {
			return fmt.Sprintf("app %s: destination %s is not a cluster of Argo CD instance %s: Argo CD refuses to sync it", a.Key, what, a.Instance)
		}
		return fmt.Sprintf("app %s: destination %s is not a cluster any cluster Secret declares: Argo CD refuses to sync it", a.Key, what)
	}
	return ""
}

// readPolicy reads the release policy at the head checkout's root (plan.Load): the default policy and "" when
// there is none. Every error is an *InputError: an unreadable file (a symbolic link) says which.
func readPolicy(head *source.Checkout) headPolicy {
	policy, file, err := plan.Load(func(name string) ([]byte, error) {
		data, err := head.ReadFile(name)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			err = fmt.Errorf("reading %s: %w", name, err)
		}
		return data, err
	})
	if err != nil {
		return headPolicy{err: inputErr(err)}
	}
	return headPolicy{policy: policy, file: file}
}

// place records, on each app of the report, its kind (what the grouped comment names it by) and, with a plan,
// its wave and batch (the comment reads in rollout order); and sets the footer.
func (p *pipeline) place(rep *report.Report, policy *plan.Policy, policyFile string, pl *plan.Plan) {
	type spot struct {
		wave         string
		index, batch int
	}
	spots := map[string]spot{}
	if pl != nil {
		for wi, w := range pl.Waves {
			for bi, b := range w.Batches {
				for _, a := range b.Apps {
					spots[a.Namespace+"/"+a.Name] = spot{w.Name, wi + 1, bi + 1}
				}
			}
		}
	}
	for i := range rep.Apps {
		ra := &rep.Apps[i]
		a, ok := p.head.inv.Get(ra.Key())
		if !ok {
			a, ok = p.base.inv.Get(ra.Key())
		}
		if ok {
			pa := PlanApp(a)
			ra.Kind = policy.AppKind(&pa)
		}
		if s, ok := spots[ra.Key()]; ok {
			ra.Wave, ra.WaveIndex, ra.Batch = s.wave, s.index, s.batch
		}
	}
	f := &report.Footer{PolicyFile: policyFile}
	if pl != nil {
		for _, c := range []string{"approve", "pause", "resume", "abort", "rollback"} {
			f.Commands = append(f.Commands, report.CommandHelp{Command: c, Who: policy.Who(c)})
		}
		f.Reproduce = fmt.Sprintf("fleetwave plan --base %s --head %s", text.Short(rep.Base, 7), text.Short(rep.Head, 7))
	} else {
		f.Reproduce = fmt.Sprintf("fleetwave diff --base %s --head %s", text.Short(rep.Base, 7), text.Short(rep.Head, 7))
	}
	rep.Footer = f
}

// PlanApp is how the planner sees a discovered app.
func PlanApp(a *discover.App) plan.App {
	pa := plan.App{
		Name: a.App.Name, Namespace: a.App.Namespace, Project: a.App.Spec.Project, Instance: a.Instance,
		Cluster: a.Cluster.Name, Server: a.Cluster.Server,
		ClusterLabels: a.Cluster.Labels, Labels: a.App.Labels,
		AutomatedSync: a.App.Spec.SyncPolicy != nil && a.App.Spec.SyncPolicy.IsAutomatedSyncEnabled(),
		Source:        a.File,
	}
	if pa.Server == "" {
		pa.Server = a.App.Spec.Destination.Server
	}
	if a.AppSet != "" {
		pa.Source = "appset:" + a.AppSet
	}
	if a.Parent != "" && pa.Source == "" {
		pa.Source = "app:" + a.Parent
	}
	if st := a.Strategy; st != nil && st.Type == "RollingSync" && st.RollingSync != nil {
		pa.RollingSyncSteps = rollingSteps(st.RollingSync.Steps)
	}
	return pa
}

func rollingSteps(steps []v1alpha1.ApplicationSetRolloutStep) []plan.RollingSyncStep {
	out := make([]plan.RollingSyncStep, 0, len(steps))
	for _, s := range steps {
		var st plan.RollingSyncStep
		for _, e := range s.MatchExpressions {
			st.MatchExpressions = append(st.MatchExpressions, plan.Requirement{Key: e.Key, Operator: plan.Operator(e.Operator), Values: e.Values})
		}
		if s.MaxUpdate != nil {
			st.MaxUpdate = s.MaxUpdate.String()
		}
		out = append(out, st)
	}
	return out
}

// unevaluated lists the ApplicationSets the head side could not generate, and those of the base the change
