package argocdsim

import (
	"context"
	"fmt"
	"net"
	"net/http"

	"google.golang.org/grpc/codes"
)

// Outage is what the API server does instead of answering (SetOutage). The application controller goes on
// meanwhile, as Argo CD's does when only argocd-server is gone: operations in flight finish and are recorded.
type Outage int

// The outages.
const (
	// Up: the server answers.
	Up Outage = iota
	// Unreachable: nothing answers. The in-process transport (RoundTripper) fails every request as a refused
	// connection; served over HTTP (Handler), every request gets 503 Unavailable. Open streams end.
	Unreachable
	// Unauthorized: every request is answered 401 Unauthenticated, as when the instance refuses the token (an
	// expired or rotated credential). Open streams end.
	Unauthorized
	// Hanging: connections are accepted and nothing is answered, as when argocd-server is frozen or a network
	// path drops packets: every request waits until its own context ends (the client's timeout) or the outage
	// does. Open streams end.
	Hanging
)

// SetOutage puts the API server in an outage (Up ends it). The streams open when it begins are ended.
func (s *Server) SetOutage(o Outage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setOutageLocked(o)
}

func (s *Server) setOutageLocked(o Outage) {
	s.outage = o
	s.outageGen++
	if s.outageEnded != nil {
		close(s.outageEnded) // the requests hanging in the previous outage go on
	}
	s.outageEnded = make(chan struct{})
	if o == Up {
		return
	}
	for sub := range s.subs {
		close(sub.overflow) // the stream's handler returns: the client sees its connection end
		delete(s.subs, sub)
	}
}

func (s *Server) currentOutage() Outage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.outage
}

// hang waits, in a Hanging outage, until it ends or ctx does: false when ctx ended first (the caller gives up).
func (s *Server) hang(ctx context.Context) bool {
	s.mu.Lock()
	o, ended := s.outage, s.outageEnded
	s.mu.Unlock()
	if o != Hanging {
		return true
	}
	select {
	case <-ended:
		return true
	case <-ctx.Done():
		return false
	}
}

// refusedDial is the error a client gets from a server that does not listen.
func refusedDial() error {
	return &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080},
		Err: fmt.Errorf("connect: connection refused")}
}

// serveOutage answers a request during an outage; false when there is none.
func (s *Server) serveOutage(w http.ResponseWriter) bool {
	switch s.currentOutage() {
	case Unreachable:
		writeError(w, codes.Unavailable, "argocd-server is not answering (simulated outage)")
		return true
	case Unauthorized:
		writeError(w, codes.Unauthenticated, "invalid session: token is expired")
		return true
	}
	return false
}
