package inventory

import (
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
)

// FromApplication is what the inventory keeps of an Application read from instance's API (a list or a stream
// event). Cluster labels and the rollout mark are not in the Application: the caller adds them.
func FromApplication(instance string, a *v1alpha1.Application) App {
	out := App{
		Key:     Key{Instance: instance, Namespace: a.Namespace, Name: a.Name},
		Project: a.Spec.Project,
		Labels:  a.Labels,
		Sync:    string(a.Status.Sync.Status),
		Health:  string(a.Status.Health.Status),
	}
	if d := a.Spec.Destination; d.Server != "" {
		out.Cluster = d.Server
		out.ClusterName = d.Name
	} else {
		out.Cluster = d.Name
		out.ClusterName = d.Name
	}
	if src := firstSource(&a.Spec); src != nil {
		out.Source = src.RepoURL
		switch {
		case src.Chart != "":
			out.Source += " " + src.Chart
		case src.Path != "":
			out.Source += " " + src.Path
		}
	}
	// What the cluster runs: for a Synced app the revision Argo CD compared it to; for any other, that is the
	// revision it should run, so the newest deployment of its history says what it runs (status.history, appended
	// by each sync: controller/state.go persistRevisionHistory, called when a sync operation succeeds).
	switch {
	case a.Status.Sync.Status == v1alpha1.SyncStatusCodeSynced:
		out.Revision = first(a.Status.Sync.Revision, a.Status.Sync.Revisions)
	case len(a.Status.History) > 0:
		h := a.Status.History.LastRevisionHistory()
		out.Revision = first(h.Revision, h.Revisions)
	} // else no deployment in its history: what runs is not known here (Apply may know it)
	if t := a.Status.Health.LastTransitionTime; t != nil {
		out.HealthSince = t.Time
	}
	if op := a.Status.OperationState; op != nil {
		o := &Operation{Phase: string(op.Phase), Message: op.Message, StartedAt: op.StartedAt.Time}
		if op.FinishedAt != nil {
			o.FinishedAt = op.FinishedAt.Time
		}
		switch by := op.Operation.InitiatedBy; {
		case by.Automated:
			o.By = "automated"
		default:
			o.By = by.Username
		}
		if op.SyncResult != nil {
			o.Revision = first(op.SyncResult.Revision, op.SyncResult.Revisions)
		} else if s := op.Operation.Sync; s != nil {
			o.Revision = s.Revision
		}
		out.Operation = o
	}
	return out
}

// firstSource is the Application's source, or the first of its sources (Spec.GetSource does the same, but
// also reads spec.sourceHydrator).
func firstSource(s *v1alpha1.ApplicationSpec) *v1alpha1.ApplicationSource {
	if s.Source != nil {
		return s.Source
	}
	if len(s.Sources) > 0 {
		return &s.Sources[0]
	}
	return nil
}

// first is a single-source revision, or the first of a multi-source app's revisions.
func first(rev string, revs []string) string {
	if rev == "" && len(revs) > 0 {
		return revs[0]
	}
	return rev
}
