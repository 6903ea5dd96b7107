package fleetview

import (
	"context"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/store"
)

// Store is what the view reads: internal/edge/store's Store.
type Store interface {
	ListRollouts(ctx context.Context, f store.RolloutFilter) ([]store.Rollout, error)
	GetRollout(ctx context.Context, id int64) (store.Rollout, error)
	ListWaves(ctx context.Context, rolloutID int64) ([]store.Wave, error)
	ListSteps(ctx context.Context, rolloutID int64, f store.StepFilter) ([]store.AppStep, error)
	ListEvents(ctx context.Context, rolloutID, afterID int64, limit int) ([]store.Event, error)
}

// Options configure the view.
type Options struct {
	// Token is required: requests must present it (login form cookie or Authorization: Bearer).
	Token string
	// ArgoCDURL and GitHubURL make links (GitHubURL default https://github.com).
	ArgoCDURL, GitHubURL string
	// InstanceURLs are the UI addresses of the Argo CD instances beside ArgoCDURL's ("" ) in a fleet of
	// several, for the apps' links; an app of an instance not listed has none.
	InstanceURLs map[string]string
	// Poll is how often a live page's stream looks for changes (default 1s); Now is the clock (default time.Now).
	Poll time.Duration
	Now  func() time.Time
	// Recent is how many finished rollouts the index lists (default 20).
	Recent int
	// InsecureCookie leaves the session cookie without Secure, for plain-HTTP development only (serve's
	// FLEETWAVE_FLEET_VIEW_INSECURE_COOKIE; `rollout --ui`, which serves loopback over HTTP). By default the
	// cookie is Secure whatever the request looked like: a proxy that terminates TLS need not say so.
	InsecureCookie bool
	// SessionTTL is how long a sign-in lasts, on the server (default 12h); MaxSessions bounds the sessions kept
	// (default 1000; the oldest goes first).
	SessionTTL  time.Duration
	MaxSessions int
	// Inventory is what runs where, shown at /fleet/apps (apps.go); nil: the page says the inventory is not
	// configured. DriftAfter marks and counts there the apps OutOfSync or Degraded for that long or longer
	// (0: no mark); AppsPageSize is how many apps a page of it lists (default 200).
	Inventory    Inventory
	DriftAfter   time.Duration
	AppsPageSize int
	// History, when set, is served at Prefix+"api/history" behind the view's sign-in: the audit trail
	// (internal/audit.Handler). An API answers 401 to a request without the token, never the sign-in form.
	History http.Handler
}

// Prefix is where the view is mounted.
const Prefix = "/fleet/"

//go:embed static
var static embed.FS

// New returns the view's handler, to be mounted at Prefix.
func New(st Store, opts Options) (http.Handler, error) {
	if len(opts.Token) < 16 {
		return nil, errors.New("fleet view: the token must be at least 16 characters")
	}
	if opts.GitHubURL == "" {
		opts.GitHubURL = "https://github.com"
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Recent <= 0 {
		opts.Recent = 20
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = 12 * time.Hour
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 1000
	}
	if opts.AppsPageSize <= 0 {
		opts.AppsPageSize = defaultAppsPageSize
	}
	v := &view{st: st, opts: opts, sessions: newSessions(opts.SessionTTL, opts.MaxSessions), throttle: newThrottle()}
	sub, _ := fs.Sub(static, "static")
	mux := http.NewServeMux()
	mux.Handle("GET "+Prefix+"static/", http.StripPrefix(Prefix+"static/", http.FileServerFS(sub)))
	mux.HandleFunc("GET "+Prefix+"login", v.loginForm)
	mux.HandleFunc("POST "+Prefix+"login", v.login)
	mux.Handle("GET "+Prefix+"{$}", v.auth(v.index))
	mux.Handle("GET "+Prefix+"rollouts/{id}", v.auth(v.rollout))
	mux.Handle("GET "+Prefix+"rollouts/{id}/live", v.auth(v.live))
	mux.Handle("GET "+Prefix+"apps", v.auth(v.apps))
	mux.Handle("GET "+Prefix+"apps/live", v.auth(v.appsLive))
	if opts.History != nil {
		mux.Handle("GET "+Prefix+"api/history", v.auth(opts.History.ServeHTTP))
	}
	return headers(mux), nil
}

type view struct {
	st       Store
	opts     Options
	sessions *sessions
	throttle *throttle
}

const cookieName = "fleetwave_view"

// tokenOK compares a presented token with the configured one in constant time. A wrong one is a failed sign-in
// of the client's address (throttle).
func (v *view) tokenOK(r *http.Request, token string) bool {
	if subtle.ConstantTimeCompare([]byte(token), []byte(v.opts.Token)) == 1 {
		v.throttle.succeeded(clientAddr(r))
		return true
	}
	v.throttle.failed(clientAddr(r), v.opts.Now())
	return false
}

// authorized reports whether r presents the token (Authorization: Bearer) or a live session cookie.
func (v *view) authorized(r *http.Request) bool {
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		return v.tokenOK(r, strings.TrimPrefix(h, "Bearer "))
	}
	c, err := r.Cookie(cookieName)
	return err == nil && v.sessions.valid(c.Value, v.opts.Now())
}

// refuseThrottled answers 429 when r's address is backing off after failed sign-ins, and reports whether it did.
func (v *view) refuseThrottled(w http.ResponseWriter, r *http.Request) bool {
	wait := v.throttle.wait(clientAddr(r), v.opts.Now())
	if wait <= 0 {
		return false
	}
	w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
	http.Error(w, "too many failed sign-ins from this address: try again later", http.StatusTooManyRequests)
	return true
}

func (v *view) auth(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") && v.refuseThrottled(w, r) {
			return
		}
		if !v.authorized(r) {
			if r.Header.Get("Accept") == "text/event-stream" || r.URL.Query().Get("fragment") != "" || strings.HasPrefix(r.URL.Path, Prefix+"api/") {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			http.Redirect(w, r, Prefix+"login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		next(w, r)
	})
}

func (v *view) loginForm(w http.ResponseWriter, r *http.Request) {
	render(w, loginTmpl, map[string]any{"Next": safeNext(r.URL.Query().Get("next")), "Failed": r.URL.Query().Get("failed") != ""})
}

func (v *view) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	next := safeNext(r.PostForm.Get("next"))
	if v.refuseThrottled(w, r) {
		return
	}
	if !v.tokenOK(r, r.PostForm.Get("token")) {
		http.Redirect(w, r, Prefix+"login?failed=1&next="+url.QueryEscape(next), http.StatusSeeOther)
		return
	}
	id, err := v.sessions.start(v.opts.Now())
	if err != nil {
		http.Error(w, "cannot start a session", http.StatusInternalServerError)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: id, Path: Prefix, HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: !v.opts.InsecureCookie, MaxAge: int(v.opts.SessionTTL / time.Second)})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// safeNext keeps a redirect target inside the view (no open redirect).
func safeNext(next string) string {
	if !strings.HasPrefix(next, Prefix) || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return Prefix
	}
	return next
}

// headers sets the security headers on every answer.
func headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "+
			"form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

func (v *view) index(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	active, err := v.st.ListRollouts(ctx, store.RolloutFilter{Unfinished: true})
	if err != nil {
		v.fail(w, err)
		return
	}
	recent, err := v.st.ListRollouts(ctx, store.RolloutFilter{Limit: v.opts.Recent + len(active)})
	if err != nil {
		v.fail(w, err)
		return
	}
	var done []store.Rollout
	for _, ro := range recent {
		if ro.State.Terminal() && len(done) < v.opts.Recent {
			done = append(done, ro)
		}
	}
	render(w, indexTmpl, map[string]any{"Active": v.rows(active), "Recent": v.rows(done), "Now": v.opts.Now()})
}

type rolloutRow struct {
	store.Rollout
	Link, PRLink string
}

func (v *view) rows(rs []store.Rollout) []rolloutRow {
	out := make([]rolloutRow, len(rs))
	for i, ro := range rs {
		out[i] = rolloutRow{Rollout: ro, Link: Prefix + "rollouts/" + strconv.FormatInt(ro.ID, 10), PRLink: v.prLink(ro)}
	}
	return out
}

func (v *view) prLink(ro store.Rollout) string {
	if ro.PRNumber == 0 {
		return ""
	}
	return v.opts.GitHubURL + "/" + ro.Repo + "/pull/" + strconv.Itoa(ro.PRNumber)
}

func (v *view) rollout(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	page, err := v.page(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		http.NotFound(w, r)
		return
	}
	if err != nil {
		v.fail(w, err)
		return
	}
	if r.URL.Query().Get("fragment") != "" {
		render(w, fragmentTmpl, page)
		return
	}
	render(w, rolloutTmpl, page)
}

func (v *view) fail(w http.ResponseWriter, err error) {
	// The store's errors name no secret (DSNs are redacted where the store is opened); keep the page short.
	http.Error(w, "the store did not answer: "+err.Error(), http.StatusServiceUnavailable)
}

// live streams "change" whenever the rollout's rows move, and a keepalive comment every 15 s.
func (v *view) live(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	last, _ := v.fingerprint(r.Context(), id)
	tick := time.NewTicker(v.opts.Poll)
	defer tick.Stop()
	idle := 0
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
		fp, err := v.fingerprint(r.Context(), id)
		switch {
		case err == nil && fp != last:
			last, idle = fp, 0
			fmt.Fprintf(w, "event: change\ndata: %s\n\n", fp)
		case time.Duration(idle)*v.opts.Poll >= 15*time.Second:
			idle = 0
			fmt.Fprint(w, ": keepalive\n\n")
		default:
			idle++
			continue
		}
		fl.Flush()
	}
}

// fingerprint changes whenever a row of the rollout changes: every row carries a version the store bumps on
// each update, and events only grow.
func (v *view) fingerprint(ctx context.Context, id int64) (string, error) {
	ro, err := v.st.GetRollout(ctx, id)
	if err != nil {
		return "", err
	}
	waves, err := v.st.ListWaves(ctx, id)
	if err != nil {
		return "", err
	}
	steps, err := v.st.ListSteps(ctx, id, store.StepFilter{})
	if err != nil {
		return "", err
	}
	var sum int64 = ro.Version
	for _, w := range waves {
		sum = sum*31 + w.Version
	}
	for _, s := range steps {
		sum = sum*31 + s.Version
	}
	return strconv.FormatInt(sum, 36), nil
}

// planWaves is the part of the stored plan (docs/contract.md, Plan fields) the view shows.
type planWaves struct {
	Waves []struct {
		Name  string `json:"name"`
		Gates struct {
			Soak     string `json:"soak"`
			Approval *struct {
				When      string `json:"when"`
				Approvers string `json:"approvers"`
			} `json:"approval"`
		} `json:"gates"`
	} `json:"waves"`
}

// gateState is the part of the executor's wave bookkeeping (internal/rollout gates.go gateState, stored as
// Wave.GateState) the view shows.
type gateState struct {
	SoakUntil time.Time `json:"soakUntil"`
	SoakDone  bool      `json:"soakDone"`
	Metrics   []struct {
		Query  string    `json:"query"`
		At     time.Time `json:"at"`
		OK     bool      `json:"ok"`
		Result string    `json:"result"`
	} `json:"metrics"`
	Window *struct {
		Count  int       `json:"count"`
		Reason string    `json:"reason"`
		Until  time.Time `json:"until"`
	} `json:"window"`
	// Unreachable are the Argo CD instances holding the wave's apps on them (internal/rollout unreachable.go).
	Unreachable []struct {
		Instance string    `json:"instance"`
		Since    time.Time `json:"since"`
		Why      string    `json:"why"`
	} `json:"unreachable"`
}

type wavePage struct {
	store.Wave
	Steps                                  []stepRow
	Synced, InFlight, Waiting, Failed, All int
	OutOfPlan                              int // synced to the merge by Argo CD's automated sync or a person
	Soak, Approvers, ApprovalWhen          string
	Gate                                   gateState
	AwaitingApproval                       bool
}

type stepRow struct {
	store.AppStep
	ArgoLink string
	Duration string
}

type rolloutPage struct {
	Rollout rolloutRow
	// Instances: the rollout spans Argo CD instances (an app's instance is not ""): each app shows its own.
	Instances    bool
	Waves        []wavePage
	Events       []store.Event
	OnNew, Total int
	Percent      int
	Now          time.Time
	Live         string
	Fragment     string
	CommitLink   string
}

func (v *view) page(ctx context.Context, id int64) (*rolloutPage, error) {
	ro, err := v.st.GetRollout(ctx, id)
	if err != nil {
		return nil, err
	}
	waves, err := v.st.ListWaves(ctx, id)
	if err != nil {
		return nil, err
	}
	steps, err := v.st.ListSteps(ctx, id, store.StepFilter{})
	if err != nil {
		return nil, err
	}
	events, err := v.st.ListEvents(ctx, id, 0, 0)
	if err != nil {
		return nil, err
	}
	var pw planWaves
	_ = json.Unmarshal(ro.Plan, &pw) // the plan is fleetwave's own; an unreadable one just shows no gate details
	link := Prefix + "rollouts/" + strconv.FormatInt(id, 10)
	p := &rolloutPage{Rollout: rolloutRow{Rollout: ro, Link: link, PRLink: v.prLink(ro)}, Now: v.opts.Now(),
		Live: link + "/live", Fragment: link + "?fragment=1", CommitLink: v.opts.GitHubURL + "/" + ro.Repo + "/commit/" + ro.MergeSHA}
	for _, w := range waves {
		wp := wavePage{Wave: w, AwaitingApproval: w.State == store.WaveAwaitingApproval}
		if w.Index < len(pw.Waves) {
			g := pw.Waves[w.Index].Gates
			wp.Soak = g.Soak
			if g.Approval != nil {
				wp.Approvers, wp.ApprovalWhen = g.Approval.Approvers, g.Approval.When
			}
		}
		if len(w.GateState) > 0 {
			_ = json.Unmarshal(w.GateState, &wp.Gate)
		}
		p.Waves = append(p.Waves, wp)
	}
	for _, s := range steps {
		row := stepRow{AppStep: s, ArgoLink: v.argoLink(s.App.Instance, s.App.Namespace, s.App.Name)}
		if s.App.Instance != "" {
			p.Instances = true
		}
		if !s.OpFinishedAt.IsZero() && !s.IntentAt.IsZero() {
			row.Duration = s.OpFinishedAt.Sub(s.IntentAt).Round(time.Second).String()
		}
		p.Total++
		if s.State == store.StepSynced || s.State == store.StepSkipped || s.State == store.StepOutOfPlan {
			p.OnNew++
		}
		if s.Wave < len(p.Waves) {
			wp := &p.Waves[s.Wave]
			wp.Steps = append(wp.Steps, row)
			wp.All++
			switch {
			case s.State == store.StepSynced || s.State == store.StepSkipped:
				wp.Synced++
			case s.State == store.StepOutOfPlan:
				wp.OutOfPlan++
			case s.State.InFlight():
				wp.InFlight++
			case s.State == store.StepFailed:
				wp.Failed++
			default:
				wp.Waiting++
			}
		}
	}
	if p.Total > 0 {
		p.Percent = p.OnNew * 100 / p.Total
	}
	// People's actions (pause, resume, approve, abort, rollback), newest first; the bot's own are in the check-runs.
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Actor != "fleetwave" && events[i].Actor != "" {
			p.Events = append(p.Events, events[i])
		}
	}
	return p, nil
}

// argoLink is the address of an app in its Argo CD instance's UI ("" when the instance's URL is not known).
func (v *view) argoLink(instance, namespace, name string) string {
	base := v.opts.ArgoCDURL
	if instance != "" {
		base = v.opts.InstanceURLs[instance]
	}
	if base == "" {
		return ""
	}
	return strings.TrimRight(base, "/") + "/applications/" + url.PathEscape(namespace) + "/" + url.PathEscape(name)
}

func render(w http.ResponseWriter, t *template.Template, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := t.Execute(w, data); err != nil {
		// Headers are gone; the page ends where the error happened.
		fmt.Fprintf(w, "<p>rendering failed</p>")
	}
}
