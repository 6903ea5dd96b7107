package fleetview

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/store"
)

const testToken = "fleet-view-token-0123456789"

// fixture is a store with one rollout: canary synced, production awaiting approval (teams), one app failed in a
// finished rollout; a person paused and resumed.
type fixture struct {
	st        *store.Store
	srv       *httptest.Server
	soakUntil time.Time
	rollout   store.Rollout
	steps     map[string]store.AppStep
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "fleetwave.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	plan := `{"waves":[{"name":"canary","gates":{"soak":"10m"}},` +
		`{"name":"production","gates":{"approval":{"required":true,"when":"before","approvers":"write permission, and membership of example/sre"}}}]}`
	ro, _, err := st.CreateRollout(ctx, store.NewRollout{Repo: "example/fleet", PRNumber: 7, MergeSHA: "0123456789abcdef0123456789abcdef01234567",
		BaseSHA: "fedcba9876543210fedcba9876543210fedcba98", Plan: json.RawMessage(plan), Waves: []store.NewWave{
			{Name: "canary", Steps: []store.NewStep{{App: store.AppKey{Namespace: "argocd", Name: "web-canary"}, Cluster: "stg-eu-1"}}},
			{Name: "production", Steps: []store.NewStep{
				{App: store.AppKey{Namespace: "argocd", Name: "web-eu"}, Cluster: "prd-eu-1"},
				{App: store.AppKey{Namespace: "argocd", Name: "web-us"}, Cluster: "prd-us-1", Batch: 1},
			}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	steps := map[string]store.AppStep{}
	all, err := st.ListSteps(ctx, ro.ID, store.StepFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		steps[s.App.Name] = s
	}
	// canary synced, its soak running; production awaiting approval.
	c := steps["web-canary"]
	c, err = st.RecordIntent(ctx, store.Intent{StepID: c.ID, Version: c.Version, PreviousRevision: "old"})
	if err != nil {
		t.Fatal(err)
	}
	if c, err = st.RecordOutcome(ctx, store.Outcome{StepID: c.ID, Version: c.Version, State: store.StepSynced, Health: "Healthy", Message: "synced"}); err != nil {
		t.Fatal(err)
	}
	steps["web-canary"] = c
	waves, _ := st.ListWaves(ctx, ro.ID)
	w0 := waves[0]
	soakUntil := time.Now().Add(7 * time.Minute).UTC().Truncate(time.Second)
	w0.State, w0.GateState = store.WaveGating, json.RawMessage(`{"soakUntil":"`+soakUntil.Format(time.RFC3339)+`"}`)
	if _, err := st.UpdateWave(ctx, w0); err != nil {
		t.Fatal(err)
	}
	w1 := waves[1]
	w1.State = store.WaveAwaitingApproval
	if _, err := st.UpdateWave(ctx, w1); err != nil {
		t.Fatal(err)
	}
	ro.State = store.RolloutAwaitingApproval
	if ro, err = st.UpdateRollout(ctx, ro); err != nil {
		t.Fatal(err)
	}
	for _, e := range []store.Event{{RolloutID: ro.ID, Actor: "octocat", Action: "pause", Result: "ok"},
		{RolloutID: ro.ID, Actor: "octocat", Action: "resume", Result: "ok"}, {RolloutID: ro.ID, Actor: "fleetwave", Action: "wave-started", Target: "canary"}} {
		if _, err := st.AppendEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	// Plain HTTP (httptest.NewServer), whose cookie jar keeps no Secure cookie: the development opt-out.
	h, err := New(st, Options{Token: testToken, ArgoCDURL: "https://argocd.example.com", Poll: 20 * time.Millisecond, InsecureCookie: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &fixture{st: st, srv: srv, rollout: ro, steps: steps, soakUntil: soakUntil}
}

func get(t *testing.T, c *http.Client, u string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func noRedirect() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func TestAccessNeedsTheToken(t *testing.T) {
	f := newFixture(t)
	page := f.srv.URL + "/fleet/rollouts/" + itoa(f.rollout.ID)
	tests := []struct {
		name     string
		url      string
		header   map[string]string
		code     int
		location string
	}{
		{"page without token: to the login form", page, nil, 303, "/fleet/login?next=%2Ffleet%2Frollouts%2F" + itoa(f.rollout.ID)},
		{"stream without token", page + "/live", map[string]string{"Accept": "text/event-stream"}, 401, ""},
		{"fragment without token", page + "?fragment=1", nil, 401, ""},
		{"wrong bearer", page, map[string]string{"Authorization": "Bearer nope"}, 303, ""},
		{"bearer", page, map[string]string{"Authorization": "Bearer " + testToken}, 200, ""},
		{"static files are public", f.srv.URL + "/fleet/static/live.js", nil, 200, ""},
		{"unknown rollout", f.srv.URL + "/fleet/rollouts/999", map[string]string{"Authorization": "Bearer " + testToken}, 404, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, _ := get(t, noRedirect(), tc.url, tc.header)
			if resp.StatusCode != tc.code || (tc.location != "" && resp.Header.Get("Location") != tc.location) {
				t.Errorf("%d %q, want %d %q", resp.StatusCode, resp.Header.Get("Location"), tc.code, tc.location)
			}
			csp := resp.Header.Get("Content-Security-Policy")
			if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || resp.Header.Get("X-Frame-Options") != "DENY" ||
				resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Referrer-Policy") != "no-referrer" {
				t.Errorf("headers: %v", resp.Header)
			}
		})
	}

	// The login form: a wrong token is refused, the right one sets an HttpOnly, SameSite=Strict cookie that is not
	// the token, and "next" cannot leave the view.
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	post := func(token, next string) *http.Response {
		resp, err := noRedirectJar(jar).PostForm(f.srv.URL+"/fleet/login", url.Values{"token": {token}, "next": {next}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := post("wrong", "/fleet/"); resp.StatusCode != 303 || !strings.Contains(resp.Header.Get("Location"), "failed=1") {
		t.Errorf("wrong token: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp := post(testToken, "//evil.example/")
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "/fleet/" {
		t.Errorf("open redirect: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	cookie := resp.Header.Get("Set-Cookie")
	if !strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "SameSite=Strict") || strings.Contains(cookie, testToken) {
		t.Errorf("cookie %q", cookie)
	}
	if resp, body := get(t, c, page, nil); resp.StatusCode != 200 || !strings.Contains(body, "web-eu") {
		t.Errorf("with the cookie: %d\n%s", resp.StatusCode, body)
	}
	if _, err := New(f.st, Options{Token: "short"}); err == nil {
		t.Error("a short token was accepted")
	}
}

func noRedirectJar(jar http.CookieJar) *http.Client {
	c := noRedirect()
	c.Jar = jar
	return c
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }

func TestRolloutPageShowsWhereTheFleetStands(t *testing.T) {
	f := newFixture(t)
	auth := map[string]string{"Authorization": "Bearer " + testToken}
	_, body := get(t, http.DefaultClient, f.srv.URL+"/fleet/rollouts/"+itoa(f.rollout.ID), auth)
	for _, want := range []string{
		`<a href="https://github.com/example/fleet/pull/7">pull request #7</a>`,
		`awaiting-approval`,
		`1 of 3 apps (33%)`,
		`Wave 1: canary`, `1 synced, 0 in flight, 0 waiting, 0 failed`,
		`Soak 10m: ends ` + f.soakUntil.Format("2006-01-02 15:04:05 UTC") + `, in <span data-until="` + f.soakUntil.Format(time.RFC3339) + `">`,
		`Wave 2: production`, `0 synced, 0 in flight, 2 waiting, 0 failed`,
		`<strong>Approval pending</strong>: write permission, and membership of example/sre may approve`,
		`<a href="https://argocd.example.com/applications/argocd/web-eu">web-eu</a>`,
		`<td>octocat</td><td>pause</td>`,
		`data-live="/fleet/rollouts/` + itoa(f.rollout.ID) + `/live"`,
		`<script src="/fleet/static/live.js" defer></script>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(body, ">Instance<") {
		t.Error("a one-instance rollout shows an instance column")
	}
	if strings.Contains(body, "wave-started") {
		t.Error("the bot's own events are listed among people's actions")
	}
	if strings.Contains(body, "<script>") || strings.Contains(body, "onclick=") || strings.Contains(body, testToken) {
		t.Error("inline script, handler or the token in the page")
	}
	_, index := get(t, http.DefaultClient, f.srv.URL+"/fleet/", auth)
	if !strings.Contains(index, `<a href="/fleet/rollouts/`+itoa(f.rollout.ID)+`">`) || !strings.Contains(index, "Rollouts in progress") {
		t.Errorf("index:\n%s", index)
	}
}

// The stream says "change" when a row of the rollout moves, and not before.
func TestLiveStreamSignalsChanges(t *testing.T) {
	f := newFixture(t)
	req, _ := http.NewRequest("GET", f.srv.URL+"/fleet/rollouts/"+itoa(f.rollout.ID)+"/live", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Accept", "text/event-stream")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case l := <-lines:
		t.Fatalf("stream spoke before any change: %q", l)
	case <-time.After(200 * time.Millisecond):
	}
	s := f.steps["web-eu"]
	if _, err := f.st.RecordIntent(context.Background(), store.Intent{StepID: s.ID, Version: s.Version}); err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-lines:
		if l != "event: change" {
			t.Fatalf("got %q, want event: change", l)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no change event after a step moved")
	}
}
