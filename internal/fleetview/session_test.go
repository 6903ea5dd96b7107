package fleetview

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a settable time for the view.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func signIn(t *testing.T, h http.Handler, addr, token string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, Prefix+"login", strings.NewReader(url.Values{"token": {token}, "next": {Prefix}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.RemoteAddr = addr
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func sessionCookie(t *testing.T, w *httptest.ResponseRecorder) *http.Cookie {
	t.Helper()
	for _, c := range w.Result().Cookies() {
		if c.Name == cookieName {
			return c
		}
	}
	t.Fatalf("no session cookie: %d %v", w.Code, w.Header())
	return nil
}

// Failed sign-ins back off per client address (issue 38 item 9): 200 wrong tokens in a row from one address are
// mostly refused unread (429), even the right token while barred; another address is not affected; the bar lifts.
func TestSignInBacksOff(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	h, err := New(newFixture(t).st, Options{Token: testToken, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	attacker, operator := "198.51.100.7:4711", "203.0.113.9:5000"
	refused := 0
	for range 200 {
		switch w := signIn(t, h, attacker, "wrong-token-guess"); w.Code {
		case http.StatusTooManyRequests:
			refused++
			if w.Header().Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
		case http.StatusSeeOther:
		default:
			t.Fatalf("wrong token: %d", w.Code)
		}
	}
	if refused < 190 {
		t.Fatalf("%d of 200 wrong tokens in a row refused by the back-off, want nearly all", refused)
	}
	if w := signIn(t, h, attacker, testToken); w.Code != http.StatusTooManyRequests {
		t.Errorf("the right token from a barred address: %d, want 429 until the bar lifts", w.Code)
	}
	// Bearer tokens count the same way.
	r := httptest.NewRequest(http.MethodGet, Prefix, nil)
	r.RemoteAddr, r.Header["Authorization"] = attacker, []string{"Bearer " + testToken}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusTooManyRequests {
		t.Errorf("bearer from a barred address: %d", w.Code)
	}
	if w := signIn(t, h, operator, testToken); w.Code != http.StatusSeeOther || sessionCookie(t, w) == nil {
		t.Errorf("another address: %d", w.Code)
	}
	c.add(maxBackoff + time.Second)
	if w := signIn(t, h, attacker, testToken); w.Code != http.StatusSeeOther {
		t.Errorf("after the bar: %d", w.Code)
	}
	// Memory stays bounded whatever the number of addresses.
	th := newThrottle()
	for i := range 3 * maxAddresses {
		th.failed("2001:db8::"+strings.Repeat("f", i%7)+url.QueryEscape(time.Duration(i).String()), c.now())
	}
	if len(th.addrs) > maxAddresses {
		t.Errorf("%d addresses remembered, cap %d", len(th.addrs), maxAddresses)
	}
}

// Sessions are random ids that expire on the server, and the cookie is Secure by default (issue 38 item 9).
func TestSessionsExpireAndCookieIsSecure(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	f := newFixture(t)
	h, err := New(f.st, Options{Token: testToken, Now: c.now, SessionTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	a, b := sessionCookie(t, signIn(t, h, "192.0.2.1:1", testToken)), sessionCookie(t, signIn(t, h, "192.0.2.1:1", testToken))
	if a.Value == b.Value || len(a.Value) != 64 || strings.Contains(a.Value, testToken) {
		t.Errorf("session ids %q and %q: want two random ids", a.Value, b.Value)
	}
	if !a.Secure || !a.HttpOnly || a.SameSite != http.SameSiteStrictMode {
		t.Errorf("cookie over plain HTTP without the opt-out: Secure %v HttpOnly %v SameSite %v; want all set", a.Secure, a.HttpOnly, a.SameSite)
	}
	rollout := f.rollout.ID
	fragment := func(ck *http.Cookie) int {
		r := httptest.NewRequest(http.MethodGet, Prefix+"rollouts/"+itoa(rollout)+"?fragment=1", nil)
		r.AddCookie(ck)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	if code := fragment(a); code != http.StatusOK {
		t.Fatalf("with a fresh session: %d", code)
	}
	// A cookie made the old way (a hash of the token), or any other value, is no session.
	if code := fragment(&http.Cookie{Name: cookieName, Value: strings.Repeat("ab", 32)}); code != http.StatusUnauthorized {
		t.Errorf("a made-up session: %d", code)
	}
	c.add(time.Hour)
	if code := fragment(a); code != http.StatusUnauthorized {
		t.Errorf("a session past its TTL: %d, want 401 (expired on the server, whatever the browser keeps)", code)
	}
	// The opt-out, for plain-HTTP development.
	dev, _ := New(f.st, Options{Token: testToken, InsecureCookie: true})
	if ck := sessionCookie(t, signIn(t, dev, "192.0.2.1:1", testToken)); ck.Secure {
		t.Error("InsecureCookie: the cookie is still Secure")
	}
	// At most MaxSessions are kept.
	s := newSessions(time.Hour, 3)
	for range 10 {
		if _, err := s.start(c.now()); err != nil {
			t.Fatal(err)
		}
	}
	if len(s.expires) != 3 {
		t.Errorf("%d sessions kept, cap 3", len(s.expires))
	}
}
