package argocdsim

import (
	"errors"
	"io"
	"net/http"
	"time"
)

// This file is a fault of the path between a client and argocd-server: a sync request that reached the server
// and started its operation, whose answer never came back — the connection closed after the request was sent
// (argocd-server restarted, a proxy or load balancer dropped the connection, a node went away). The client sees
// a connection error, not an HTTP status: it cannot tell whether the request was processed. Optionally the
// server then stays unreachable for a while, and the application controller, which goes on, finishes the
// operation meanwhile: the client that asks again once it answers finds it done.

// AnyApp, as LoseSyncAnswers' name, aims the fault at the next accepted syncs of whichever apps they are for.
const AnyApp = ""

// LoseSyncAnswers makes the next n accepted sync requests of the app (AnyApp: of any app; DropAll: every one;
// 0: none, the fault is cleared) lose their answer: the request is processed as any other — the operation set
// and started, counted in Counts.SyncsAccepted (or dropped, with DropSyncs) — and the connection is then closed
// without an answer (the in-process transport fails the request as a connection closed by the server; served
// over HTTP, the handler aborts and net/http closes the connection). Counts.SyncAnswersLost counts them. An
// app's own setting is used before AnyApp's.
//
// With unreachableFor > 0 the server also becomes Unreachable (SetOutage) for that long on its clock, from
// before the operation is written: the open streams end without carrying it, and a client learns what became of
// its request only once the server answers again. The controller goes on meanwhile, so an operation shorter
// than unreachableFor has finished by then. The outage ends by itself unless SetOutage changed it meanwhile.
func (s *Server) LoseSyncAnswers(name string, n int, unreachableFor time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lostAnswers == nil {
		s.lostAnswers = map[string]lostAnswers{}
	}
	if n == 0 {
		delete(s.lostAnswers, name)
		return
	}
	s.lostAnswers[name] = lostAnswers{n: n, unreachableFor: unreachableFor}
}

// lostAnswers is one LoseSyncAnswers setting.
type lostAnswers struct {
	n              int // DropAll: every one
	unreachableFor time.Duration
}

// loseAnswerLocked reports whether the answer to the app's accepted sync is to be lost (LoseSyncAnswers), and
// when it is, counts it off, counts the lost answer, and begins the outage that follows it, if any. It runs
// before the operation is written; the caller then writes it and aborts its answer.
func (s *Server) loseAnswerLocked(name string) bool {
	key := name
	la, ok := s.lostAnswers[key]
	if !ok {
		key = AnyApp
		if la, ok = s.lostAnswers[key]; !ok {
			return false
		}
	}
	switch {
	case la.n == DropAll:
	case la.n <= 1:
		delete(s.lostAnswers, key)
	default:
		la.n--
		s.lostAnswers[key] = la
	}
	s.countsLocked(name).SyncAnswersLost++
	s.totals.SyncAnswersLost++
	if la.unreachableFor <= 0 {
		return true
	}
	s.setOutageLocked(Unreachable)
	gen := s.outageGen
	s.afterLocked(la.unreachableFor, func() {
		if s.outageGen == gen {
			s.setOutageLocked(Up)
		}
	})
	return true
}

// errConnectionClosed is what the in-process transport answers for a request whose handler aborted: the
// connection closed before an answer, as net/http's transport reports it (EOF, TestLoseSyncAnswersOverHTTP).
var errConnectionClosed = io.EOF

// isAbort reports whether a handler's panic value is net/http's sentinel for an aborted answer.
func isAbort(v any) bool {
	err, ok := v.(error)
	return ok && errors.Is(err, http.ErrAbortHandler)
}
