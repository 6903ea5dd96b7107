package e2e_test

import (
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/argocd"
	"github.com/fleetwave/fleetwave/internal/argocd/contract"
)

// TestContractAgainstRealArgoCD runs the Argo CD contract suite (the one the simulator passes in the fast suite)
// against the real Argo CD of hack/e2e: when the simulator passes and this fails, the simulator is wrong.
func TestContractAgainstRealArgoCD(t *testing.T) {
	e := loadEnv(t)
	contract.Run(t, func(t *testing.T) contract.Target {
		return contract.Target{
			Options:     argocd.Options{BaseURL: e.ArgoCDURL, Token: e.Token, UserAgent: "fleetwave-e2e"},
			ManualApp:   "guestbook",
			AutoApp:     "guestbook-auto",
			SlowApp:     "guestbook-slow",
			OldRevision: e.OldRevision,
			NewRevision: e.NewRevision,
			Selector:    "suite=contract",
			Timeout:     2 * time.Minute,
		}
	})
}
