package contract

import (
	"strings"
	"testing"
)

// manifestsAtUnknownRevision: Argo CD refuses to render an app at a revision its repository does not have, naming
// the revision — what `fleetwave rollout --selector --revision` checks before it syncs anything.
func manifestsAtUnknownRevision(t *testing.T, s *suite) {
	_, err := s.c.Manifests(s.ctx(t), s.ManualApp, "fleetwave-no-such-branch")
	if err == nil {
		t.Fatal("Argo CD rendered the app at a branch its repository does not have")
	}
	if !strings.Contains(err.Error(), "fleetwave-no-such-branch") {
		t.Errorf("the refusal does not name the revision: %v", err)
	}
}
