package fleetview

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
	"sync"
	"time"
)

// sessions are the fleet view's sign-ins: a random id per sign-in (the cookie), kept on the server until it
// expires. The ids themselves are not kept, only their SHA-256, so the table reveals no cookie.
type sessions struct {
	ttl time.Duration
	max int

	mu      sync.Mutex
	expires map[[sha256.Size]byte]time.Time
}

func newSessions(ttl time.Duration, limit int) *sessions {
	return &sessions{ttl: ttl, max: limit, expires: map[[sha256.Size]byte]time.Time{}}
}

// start makes a session and returns its id: 32 random bytes, hex.
func (s *sessions) start(now time.Time) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	id := hex.EncodeToString(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, exp := range s.expires {
		if !now.Before(exp) {
			delete(s.expires, k)
		}
	}
	for len(s.expires) >= s.max { // the one expiring first goes
		var oldest [sha256.Size]byte
		var at time.Time
		for k, exp := range s.expires {
			if at.IsZero() || exp.Before(at) {
				oldest, at = k, exp
			}
		}
		delete(s.expires, oldest)
	}
	s.expires[sha256.Sum256([]byte(id))] = now.Add(s.ttl)
	return id, nil
}

// valid reports whether id is a session that has not expired.
func (s *sessions) valid(id string, now time.Time) bool {
	if len(id) != 64 {
		return false
	}
	k := sha256.Sum256([]byte(id))
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.expires[k]
	if ok && !now.Before(exp) {
		delete(s.expires, k)
		return false
	}
	return ok
}

// Failed sign-ins back off per client address: the first freeFailures are free, then each failure bars the
// address for twice as long as the one before (1 s, 2 s, 4 s, ... up to maxBackoff). A success clears the
// address. At most maxAddresses are remembered; when full, the one seen longest ago is forgotten.
const (
	freeFailures = 3
	maxBackoff   = 5 * time.Minute
	maxAddresses = 4096
)

type throttle struct {
	mu    sync.Mutex
	addrs map[string]*failures
}

type failures struct {
	n     int
	until time.Time // no attempt before
	last  time.Time
}

func newThrottle() *throttle { return &throttle{addrs: map[string]*failures{}} }

// wait is how long addr must still wait before its next attempt (0: it may try now).
func (t *throttle) wait(addr string, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if f, ok := t.addrs[addr]; ok && now.Before(f.until) {
		return f.until.Sub(now)
	}
	return 0
}

func (t *throttle) failed(addr string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f, ok := t.addrs[addr]
	if !ok {
		if len(t.addrs) >= maxAddresses {
			t.forgetOldest(now)
		}
		f = &failures{}
		t.addrs[addr] = f
	}
	f.n++
	f.last = now
	if f.n > freeFailures {
		d := time.Second << min(f.n-freeFailures-1, 16)
		f.until = now.Add(min(d, maxBackoff))
	}
}

func (t *throttle) succeeded(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.addrs, addr)
}

// forgetOldest drops every address quiet for longer than maxBackoff past its bar, or else the one seen longest
// ago. Called with t.mu held.
func (t *throttle) forgetOldest(now time.Time) {
	var oldest string
	var at time.Time
	for a, f := range t.addrs {
		if now.Sub(f.last) > maxBackoff && !now.Before(f.until) {
			delete(t.addrs, a)
			continue
		}
		if at.IsZero() || f.last.Before(at) {
			oldest, at = a, f.last
		}
	}
	if len(t.addrs) >= maxAddresses {
		delete(t.addrs, oldest)
	}
}

// clientAddr is the request's peer address without its port. Headers such as X-Forwarded-For are not read: a
// client could write any; behind a proxy every client shares the proxy's address.
func clientAddr(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}
