package argocdsim_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	synccommon "github.com/argoproj/argo-cd/gitops-engine/v3/pkg/sync/common"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
)

// TestDropSyncs: a dropped sync is answered as accepted (the operation set), then the operation vanishes without
// an operation state or a history entry of its own; the app shows its previous operation state again. The next
// sync, past the count, runs.
func TestDropSyncs(t *testing.T) {
	for _, delay := range []time.Duration{0, 2 * time.Second} {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, argocdsim.Config{OperationStartDelay: delay}, appSpec("web"))
			ctx := context.Background()
			// A first sync that runs, so that the app has an operation state to go back to.
			if _, err := e.c.Sync(ctx, "web", argocd.SyncRequest{Revision: oldRev}); err != nil {
				t.Fatal(err)
			}
			settle(10 * time.Second)
			before := e.app(t, "web")
			e.sim.DropSyncs("web", 1)
			answer, err := e.c.Sync(ctx, "web", argocd.SyncRequest{Revision: newRev})
			if err != nil {
				t.Fatalf("dropped sync: %v, want it accepted", err)
			}
			if answer.Operation == nil || answer.Status.OperationState != nil {
				t.Errorf("answer: operation %v, operation state %v; want the operation set and no state, as Argo CD answers", answer.Operation, answer.Status.OperationState)
			}
			settle(10 * time.Second)
			got := e.app(t, "web")
			if got.Operation != nil {
				t.Errorf("operation still set: %+v", got.Operation)
			}
			if os := got.Status.OperationState; os == nil || !os.StartedAt.Equal(&before.Status.OperationState.StartedAt) {
				t.Errorf("operation state %+v, want the one from before the request", os)
			}
			if len(got.Status.History) != len(before.Status.History) {
				t.Errorf("history has %d entries, want %d (nothing ran)", len(got.Status.History), len(before.Status.History))
			}
			// The next sync runs.
			if _, err := e.c.Sync(ctx, "web", argocd.SyncRequest{Revision: newRev}); err != nil {
				t.Fatal(err)
			}
			settle(10 * time.Second)
			got = e.app(t, "web")
			if os := got.Status.OperationState; os == nil || os.Phase != synccommon.OperationSucceeded || os.SyncResult.Revision != newRev {
				t.Errorf("after the second sync: operation state %+v, want Succeeded at %s", os, newRev)
			}
			c := e.sim.Counts("web")
			if c.Syncs != 3 || c.SyncsAccepted != 2 || c.SyncsDropped != 1 {
				t.Errorf("counts: %d syncs, %d accepted, %d dropped; want 3, 2, 1", c.Syncs, c.SyncsAccepted, c.SyncsDropped)
			}
		})
	}
}

// TestDropAllSyncs: DropAll drops every sync until DropSyncs(name, 0).
func TestDropAllSyncs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, argocdsim.Config{}, appSpec("web"))
		before := e.app(t, "web")
		e.sim.DropSyncs("web", argocdsim.DropAll)
		for range 3 {
			if _, err := e.c.Sync(context.Background(), "web", argocd.SyncRequest{Revision: newRev}); err != nil {
				t.Fatal(err)
			}
			settle(5 * time.Second)
		}
		if got := e.app(t, "web"); got.Operation != nil || len(got.Status.History) != len(before.Status.History) {
			t.Errorf("app after dropped syncs: operation %v, %d history entries; want none and %d", got.Operation, len(got.Status.History), len(before.Status.History))
		}
		e.sim.DropSyncs("web", 0)
		if _, err := e.c.Sync(context.Background(), "web", argocd.SyncRequest{Revision: newRev}); err != nil {
			t.Fatal(err)
		}
		settle(5 * time.Second)
		if c := e.sim.Counts("web"); c.SyncsDropped != 3 || c.SyncsAccepted != 1 {
			t.Errorf("counts: %d dropped, %d accepted; want 3, 1", c.SyncsDropped, c.SyncsAccepted)
		}
	})
}
