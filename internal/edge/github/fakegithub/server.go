package fakegithub

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/fleetwave/fleetwave/internal/edge/github/limits"
	"github.com/fleetwave/fleetwave/internal/testkit/sharedtest"
)

// GitHub's limits the description does not state (internal/edge/github/limits, where they are stated once).
const (
	MaxCommentBody           = limits.CommentBody  // characters in an issue comment body
	MaxCheckRunText          = limits.CheckRunText // characters in a check-run output summary or text
	MaxAnnotationsPerRequest = limits.AnnotationsPerRequest
	MaxCheckRunActions       = limits.CheckRunActions
	maxPerPage               = 100
)

// Request is one request the fake received, as sent.
type Request struct {
	Method       string
	Path         string // without the API prefix
	Query        url.Values
	Header       http.Header
	Body         []byte
	Operation    string // GitHub's operationId, "" when the fake does not serve the path
	Installation int64  // whose token authenticated it (0 for App JWT requests)
	Status       int    // what the fake answered
	Invalid      string // why the request did not match GitHub's description, "" when it did (or was not checked)
}

// Server is a fake GitHub REST API. When GitHub's OpenAPI description is beside the repository, every request
// is checked against it (an invalid one is answered 422, as GitHub does, and fails the test unless
// AllowInvalidRequests) and every response it serves is checked too (an invalid one fails the test). Where the
// description is silent it behaves as GitHub does: size limits, check-run status rules, installation tokens
// that expire, secondary rate limits.
type Server struct {
	t    testing.TB
	desc *description // nil: GitHub's description is not there, nothing is validated
	srv  *httptest.Server
	o    options

	mu          sync.Mutex
	nextID      int64
	tokens      map[string]token
	pulls       map[string]*PullRequest // "owner/repo#n"
	issues      map[string]*Issue       // "owner/repo#n": issues that are not pull requests
	comments    map[int64]*Comment
	checkRuns   map[int64]*CheckRun
	reactions   map[int64][]Reaction // by comment id
	permissions map[string]string    // "owner/repo:user" → role
	teams       map[string]map[string]string
	requests    []Request
	rateLimited int
	retryAfter  time.Duration
	serverErrs  int
	latency     time.Duration
}

type token struct {
	installation int64
	expires      time.Time
}

type options struct {
	appID        int64
	appKey       *rsa.PublicKey
	appSlug      string
	tokenTTL     time.Duration
	now          func() time.Time
	prefix       string
	allowInvalid bool
	installs     map[string]int64 // lower-case "owner/repo" → installation id
}

// Option configures a Server.
type Option func(*options)

// WithApp makes the fake verify the App JWT of installation-token requests: RS256 signed by key, issuer id.
// Without it any well-formed JWT is accepted.
func WithApp(id int64, key *rsa.PublicKey) Option {
	return func(o *options) { o.appID, o.appKey = id, key }
}

// WithInstallation says the App is installed on repo ("owner/name") as installation id: GET
// /repos/{owner}/{repo}/installation answers it (404 for repositories without one).
func WithInstallation(repo string, id int64) Option {
	return func(o *options) {
		if o.installs == nil {
			o.installs = map[string]int64{}
		}
		o.installs[strings.ToLower(repo)] = id
	}
}

// WithAppSlug names the App; its bot user is "<slug>[bot]" (default "fleetwave").
func WithAppSlug(slug string) Option { return func(o *options) { o.appSlug = slug } }

// WithTokenTTL sets how long installation tokens live (default 1h, as on GitHub).
func WithTokenTTL(d time.Duration) Option { return func(o *options) { o.tokenTTL = d } }

// WithClock sets the fake's clock (default time.Now).
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithPathPrefix serves the API under a prefix, as GitHub Enterprise Server does ("/api/v3").
func WithPathPrefix(p string) Option {
	return func(o *options) { o.prefix = strings.TrimSuffix(p, "/") }
}

// AllowInvalidRequests stops invalid requests from failing the test (they are still answered 422 and
// recorded): for tests of the fake itself.
func AllowInvalidRequests() Option { return func(o *options) { o.allowInvalid = true } }

// New starts a fake GitHub; it is closed when the test ends.
//
// It finds GitHub's REST description in the shared folder beside the repository (internal/testkit/sharedtest) and
// validates every request and response against it. Without it the fake serves the same answers unchecked and
// says so in one line of the test's log, unless FLEETWAVE_REQUIRE_SHARED=1, where New fails the test. A
// description that is there but incomplete or unreadable fails the test too.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	var desc *description
	if dir, ok := sharedtest.Find(descriptionDir); ok {
		d, err := loadDescription(dir)
		if err != nil {
			t.Fatalf("fakegithub: %s: %v", dir, err)
		}
		desc = d
	} else if sharedtest.Required() {
		t.Fatalf("fakegithub: GitHub's REST description not found (%s in the shared folder; set %s): %s=1, it must be there",
			descriptionDir, sharedtest.EnvDir, sharedtest.EnvRequire)
	} else {
		t.Logf("fakegithub: GitHub's REST description not found (%s in the shared folder; set %s): requests and responses are not validated",
			descriptionDir, sharedtest.EnvDir)
	}
	s := &Server{
		t: t, desc: desc, o: options{appSlug: "fleetwave", tokenTTL: time.Hour, now: time.Now},
		nextID: 1000, tokens: map[string]token{}, pulls: map[string]*PullRequest{}, comments: map[int64]*Comment{},
		checkRuns: map[int64]*CheckRun{}, reactions: map[int64][]Reaction{}, permissions: map[string]string{},
		teams: map[string]map[string]string{}, issues: map[string]*Issue{},
	}
	for _, opt := range opts {
		opt(&s.o)
	}
	s.srv = httptest.NewServer(s)
	t.Cleanup(s.srv.Close)
	return s
}

// Validating reports whether the fake checks requests and responses against GitHub's REST description (it is
// there) or serves them unchecked.
func (s *Server) Validating() bool { return s.desc != nil }

// URL is the API base URL, with a trailing slash (what FLEETWAVE_GITHUB_API_URL would be).
func (s *Server) URL() string { return s.srv.URL + s.o.prefix + "/" }

// Client returns an HTTP client for the fake.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// BotLogin is the login of the App's bot user, the author of what installation tokens create.
func (s *Server) BotLogin() string { return s.o.appSlug + "[bot]" }

// InstallationToken mints a token for installation id without the App JWT dance.
func (s *Server) InstallationToken(id int64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mintToken(id).Token
}

// InjectSecondaryRateLimit makes the next n requests answer 403 with Retry-After, as GitHub's secondary rate
// limit does.
func (s *Server) InjectSecondaryRateLimit(n int, retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rateLimited, s.retryAfter = n, retryAfter
}

// InjectServerErrors makes the next n requests answer 502.
func (s *Server) InjectServerErrors(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.serverErrs = n
}

// SetLatency delays every answer by d.
func (s *Server) SetLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency = d
}

// Requests returns every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	copy(out, s.requests)
	return out
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	path := strings.TrimPrefix(r.URL.EscapedPath(), s.o.prefix)
	s.mu.Lock()
	latency := s.latency
	idx := len(s.requests)
	s.requests = append(s.requests, Request{
		Method: r.Method, Path: path, Query: r.URL.Query(), Header: r.Header.Clone(), Body: body,
	})
	s.mu.Unlock()
	if latency > 0 {
		select {
		case <-time.After(latency):
		case <-r.Context().Done():
			return
		}
	}
	a := s.handle(r, path, body, idx)
	s.mu.Lock()
	s.requests[idx].Status = a.status
	s.mu.Unlock()
	a.write(w)
}

// answer is a response about to be written.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) write(w http.ResponseWriter) {
	for k, vs := range a.header {
		w.Header()[k] = vs
	}
	if a.body != nil {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
	}
	w.Header().Set("X-GitHub-Api-Version-Selected", "2022-11-28")
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}

func jsonAnswer(status int, v any) answer {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return answer{status: status, header: http.Header{}, body: b}
}

func message(status int, msg, doc string) answer {
	return jsonAnswer(status, map[string]any{"message": msg, "documentation_url": doc})
}

func (s *Server) handle(r *http.Request, path string, body []byte, idx int) answer {
	op, params, ok := findRoute(r.Method, path)
	if !ok {
		s.t.Errorf("fakegithub: %s %s is not one of the operations the fake serves (the ones the bot calls)", r.Method, path)
		return message(http.StatusNotFound, "Not Found", "https://docs.github.com/rest")
	}
	opID := op.id
	s.mu.Lock()
	s.requests[idx].Operation = opID
	s.mu.Unlock()

	inst, authErr := s.authenticate(r, opID)
	if authErr != nil {
		return message(http.StatusUnauthorized, "Bad credentials: "+authErr.Error(), "https://docs.github.com/rest")
	}
	s.mu.Lock()
	s.requests[idx].Installation = inst
	s.mu.Unlock()

	in, verr := s.validateRequest(r, op, params, body)
	if verr != nil {
		verr = errors.New(clip(verr.Error(), 2000))
		s.mu.Lock()
		s.requests[idx].Invalid = verr.Error()
		s.mu.Unlock()
		if !s.o.allowInvalid {
			s.t.Errorf("fakegithub: invalid request %s %s (%s): %v", r.Method, path, opID, verr)
		}
		return message(http.StatusUnprocessableEntity, "Invalid request.\n\n"+verr.Error(), op.doc)
	}

	s.mu.Lock()
	if s.rateLimited > 0 {
		s.rateLimited--
		retry := s.retryAfter
		s.mu.Unlock()
		a := message(http.StatusForbidden, "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
			"https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits")
		a.header.Set("Retry-After", strconv.Itoa(int(retry/time.Second)))
		return a
	}
	if s.serverErrs > 0 {
		s.serverErrs--
		s.mu.Unlock()
		return message(http.StatusBadGateway, "Server Error", "")
	}
	s.mu.Unlock()

	var payload map[string]any
	if len(bytes.TrimSpace(body)) > 0 && string(bytes.TrimSpace(body)) != "null" {
		if err := json.Unmarshal(body, &payload); err != nil {
			return message(http.StatusBadRequest, "Problems parsing JSON", op.doc)
		}
	}
	c := call{r: r, params: params, body: payload, installation: inst, op: op}
	s.mu.Lock()
	a := op.serve(s, c)
	s.mu.Unlock()
	s.validateResponse(in, a)
	return a
}

// call is a validated request handed to an operation.
type call struct {
	r            *http.Request
	params       map[string]string
	body         map[string]any
	installation int64
	op           *operation
}

func (c call) repo() string { return c.params["owner"] + "/" + c.params["repo"] }

// validateRequest checks a request against GitHub's description; without the description it checks nothing
// and returns a nil input.
func (s *Server) validateRequest(r *http.Request, op *operation, params map[string]string, body []byte) (*openapi3filter.RequestValidationInput, error) {
	if s.desc == nil {
		return nil, nil
	}
	route := s.desc.routes[op.id]
	req := r.Clone(r.Context())
	b := body
	// ghinstallation posts the literal body "null" for a token without restrictions; GitHub accepts it.
	if op.id == "apps/create-installation-access-token" && string(bytes.TrimSpace(b)) == "null" {
		b = nil
	}
	if len(b) == 0 {
		req.Body = http.NoBody
		req.ContentLength = 0
	} else {
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	in := &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true},
	}
	if err := openapi3filter.ValidateRequest(r.Context(), in); err != nil {
		return in, err
	}
	return in, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("… (%d bytes more)", len(s)-n)
}

// validateResponse fails the test when the fake is about to serve a response the description forbids.
// Statuses the operation does not describe (404 on checks/update, injected faults) are not checked. Without
// the description (in == nil) it checks nothing.
func (s *Server) validateResponse(in *openapi3filter.RequestValidationInput, a answer) {
	if in == nil {
		return
	}
	h := a.header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if a.body != nil {
		h.Set("Content-Type", "application/json; charset=utf-8")
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: a.status, Header: h, Body: io.NopCloser(bytes.NewReader(a.body)),
		Options: &openapi3filter.Options{MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		s.t.Errorf("fakegithub: would serve an invalid %d for %s %s: %s", a.status, in.Route.Method, in.Route.Path, clip(err.Error(), 2000))
	}
}

// authenticate checks the Authorization header: an App JWT for installation tokens, an installation token
// for everything else. It returns the installation.
func (s *Server) authenticate(r *http.Request, opID string) (int64, error) {
	auth := r.Header.Get("Authorization")
	scheme, cred, _ := strings.Cut(auth, " ")
	if opID == "apps/create-installation-access-token" || opID == "apps/get-repo-installation" {
		if !strings.EqualFold(scheme, "Bearer") {
			return 0, errors.New("an App JWT (Bearer) is required")
		}
		return 0, s.verifyJWT(cred)
	}
	if !strings.EqualFold(scheme, "token") && !strings.EqualFold(scheme, "Bearer") {
		return 0, errors.New("no installation token")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tok, ok := s.tokens[cred]
	if !ok {
		return 0, errors.New("unknown token")
	}
	if !s.o.now().Before(tok.expires) {
		return 0, errors.New("token expired")
	}
	return tok.installation, nil
}

func (s *Server) verifyJWT(jwt string) error {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return errors.New("malformed JWT")
	}
	var header struct{ Alg string }
	var claims struct {
		Iss any
		Iat int64
		Exp int64
	}
	if err := decodeSegment(parts[0], &header); err != nil || header.Alg != "RS256" {
		return fmt.Errorf("JWT header: alg %q, want RS256", header.Alg)
	}
	if err := decodeSegment(parts[1], &claims); err != nil {
		return fmt.Errorf("JWT claims: %w", err)
	}
	now := s.o.now().Unix()
	if claims.Exp <= now || claims.Exp > now+600 || claims.Iat > now+60 {
		return fmt.Errorf("JWT iat %d / exp %d outside GitHub's window at %d", claims.Iat, claims.Exp, now)
	}
	if s.o.appKey == nil {
		return nil
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return errors.New("JWT signature encoding")
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(s.o.appKey, crypto.SHA256, digest[:], sig); err != nil {
		return errors.New("JWT signature does not verify with the App's key")
	}
	if fmt.Sprint(claims.Iss) != strconv.FormatInt(s.o.appID, 10) {
		return fmt.Errorf("JWT issuer %v, want App %d", claims.Iss, s.o.appID)
	}
	return nil
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// mintToken issues an installation token; s.mu is held.
func (s *Server) mintToken(installation int64) struct {
	Token   string
	Expires time.Time
} {
	var b [18]byte
	_, _ = rand.Read(b[:])
	tok := "ghs_" + hex.EncodeToString(b[:])
	exp := s.o.now().Add(s.o.tokenTTL).UTC().Truncate(time.Second)
	s.tokens[tok] = token{installation: installation, expires: exp}
	return struct {
		Token   string
		Expires time.Time
	}{tok, exp}
}

func (s *Server) id() int64 {
	s.nextID++
	return s.nextID
}

func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339)
}
