package preview

import (
	"context"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
)

// denyAll is a SyncWindowReader whose every project's windows refuse every sync for an hour.
type denyAll struct{}

func (denyAll) ProjectSyncWindows(context.Context, string) (ProjectWindows, error) {
	return denyAll{}, nil
}

func (denyAll) HoldAt(_ *v1alpha1.Application, now time.Time) WindowHold {
	return WindowHold{Blocked: true, Reason: "deny window '* * * * *' (1h)", Until: now.Add(time.Hour)}
}

// TestSyncWindowsWithoutLiveComparison: each Argo CD role is a port of its own, so the plan says which waves
// the sync windows hold with no live comparer at all (the windows were reached only through one before).
func TestSyncWindowsWithoutLiveComparison(t *testing.T) {
	res, err := Run(context.Background(), theRenderer(), Input{RepoDir: exampleRepo(t), Base: "main", Head: "change", Plan: true,
		ArgoCD: ArgoCD{Windows: denyAll{}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Plan.Waves) == 0 {
		t.Fatal("no wave planned: the test proves nothing")
	}
	for _, w := range res.Plan.Waves {
		if h := w.HeldBySyncWindow; h == nil || len(h.Apps) == 0 {
			t.Errorf("wave %s: held by sync window %+v, want every app held by the deny window", w.Name, h)
		}
	}
	for _, a := range res.Report.Apps {
		if a.Live != nil {
			t.Errorf("app %s compared with its live state, with no live comparer", a.Key())
		}
	}
}
