package argocdsim

import "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

// This file is a fault of an argocd-agent principal: a sync request accepted, then lost before the agent's
// application controller starts it.
//
// On a principal, a sync request sets .operation on the Application (in the agent's namespace) and is answered
// 200; the principal sends the operation to the agent as a SetOperation event (principal/callbacks.go
// updateAppCallback, since argocd-agent #834). A managed agent reports its Application back with StatusUpdate
// events (agent/outbound.go), which the principal writes over its copy, .operation included
// (internal/manager/application/application.go UpdateStatus: existing.Operation = incoming.Operation). A status
// update sent before the agent had the operation clears it: the sync never starts (argocd-agent #841, open; #809
// lost it while the agent was disconnected). What the principal then shows is the agent's status: the last
// operation state the agent ran, no operation, no new history entry.

// DropAll makes DropSyncs drop every sync request of the app.
const DropAll = -1

// DropSyncs drops the next n accepted sync requests of the app (DropAll: every one; 0: none) as a principal
// loses them: the request is answered 200 with the operation set and status.operationState cleared (the answer
// Argo CD gives, util/argo/argo.go SetAppOperation), then, in a write of its own, the operation is cleared and
// status.operationState is back to what it was before the request. No operation starts, no history entry is
// written. Counts.SyncsDropped counts them; Counts.SyncsAccepted counts only the syncs that started an
// operation.
func (s *Server) DropSyncs(name string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.drops == nil {
		s.drops = map[string]int{}
	}
	if n == 0 {
		delete(s.drops, name)
		return
	}
	s.drops[name] = n
}

// takeDropLocked reports whether the app's next accepted sync is to be dropped, and counts it off.
func (s *Server) takeDropLocked(name string) bool {
	n, ok := s.drops[name]
	switch {
	case !ok || n == 0:
		return false
	case n == DropAll:
		return true
	}
	if n == 1 {
		delete(s.drops, name)
	} else {
		s.drops[name] = n - 1
	}
	return true
}

// dropOperationLocked sets the operation as startOperationLocked does, answers with that write, and clears it
// again before the controller would pick it up (half of OperationStartDelay later; at once, as a write of its
// own, when there is none).
func (s *Server) dropOperationLocked(st *appState, op v1alpha1.Operation) ([]byte, error) {
	before := st.app.Status.OperationState.DeepCopy()
	st.app.Operation = &op
	st.app.Status.OperationState = nil
	st.opGen++
	gen := st.opGen
	s.commitLocked(st)
	answer, err := committedJSON(st)
	lose := func() {
		if !s.alive(st) || st.opGen != gen || st.app.Operation == nil {
			return
		}
		st.app.Operation = nil
		st.app.Status.OperationState = before
		st.opGen++
		s.commitLocked(st)
	}
	if s.cfg.OperationStartDelay == 0 {
		lose()
	} else {
		s.afterLocked(s.cfg.OperationStartDelay/2, lose)
	}
	return answer, err
}
