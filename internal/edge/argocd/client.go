package argocd

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// Options configure a Client. Only BaseURL is required.
type Options struct {
	// BaseURL is the Argo CD server, e.g. https://argocd.example.com or http://127.0.0.1:8080/argo-cd
	// (a root path is kept as a prefix of /api/v1/...).
	BaseURL string
	// Token is an account token or a project-role JWT, sent as "Authorization: Bearer". Never logged.
	Token string
	// TokenSource, when set, is asked for the token before every request (and every watch stream opened) and wins
	// over Token: a credential that rotates, such as a projected service-account token re-read from its file
	// (internal/edge/argocd/instances). An error fails that request, unretried; it must not carry the token. Never logged.
	TokenSource func() (string, error)
	// CAFile is a PEM bundle trusted in addition to the system roots.
	CAFile string
	// Insecure skips TLS verification (local test servers only).
	Insecure bool
	// HTTPClient replaces the client built from CAFile/Insecure (tests, the in-process simulator). Its Timeout
	// must be zero: the watch stream is long-lived; unary calls get Timeout below through their context.
	HTTPClient *http.Client
	// WrapTransport, when set, wraps the transport of the client (metrics: internal/edge/metrics Transport).
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// Timeout bounds each attempt of a unary call (default 60s; a GET with refresh waits for a reconcile).
	Timeout time.Duration
	// MaxRetries is how many times a call is retried after a 5xx, a 429 or a connection error (default 4;
	// negative disables retries). A 4xx is never retried, nor a sync or rollback whose connection was lost after
	// it was sent (it may have started an operation: the error goes to the caller).
	MaxRetries int
	// RetryInitialInterval and RetryMaxInterval shape the jittered exponential backoff (defaults 250ms, 5s).
	RetryInitialInterval time.Duration
	RetryMaxInterval     time.Duration
	// StreamFormat selects the watch stream's encoding (default SSE, whose keepalives let a dead connection be
	// detected).
	StreamFormat StreamFormat
	// StreamIdleTimeout closes and reopens a watch stream that delivered nothing for this long (default 60s for
	// SSE, whose server sends a keepalive every 15s; 0 for NDJSON, which has no keepalive).
	StreamIdleTimeout time.Duration
	// UserAgent is sent with every request (default "fleetwave").
	UserAgent string
}

// StreamFormat is the encoding of GET /api/v1/stream/applications.
type StreamFormat int

const (
	// StreamSSE asks for server-sent events (Accept: text/event-stream): "data: {...}" lines, ":" keepalives.
	StreamSSE StreamFormat = iota
	// StreamNDJSON takes the server's default: one JSON object per line.
	StreamNDJSON
)

// Client calls Argo CD's REST API (the grpc-gateway in front of argocd-server). It is safe for concurrent use.
type Client struct {
	base *url.URL
	hc   *http.Client
	opts Options
}

// New builds a Client.
func New(opts Options) (*Client, error) {
	if opts.BaseURL == "" {
		return nil, errors.New("creating argo cd client: no server URL")
	}
	u, err := url.Parse(opts.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("creating argo cd client: parsing server URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("creating argo cd client: server URL %q: scheme must be http or https", opts.BaseURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	if opts.Timeout <= 0 {
		opts.Timeout = 60 * time.Second
	}
	if opts.MaxRetries == 0 {
		opts.MaxRetries = 4
	}
	if opts.RetryInitialInterval <= 0 {
		opts.RetryInitialInterval = 250 * time.Millisecond
	}
	if opts.RetryMaxInterval <= 0 {
		opts.RetryMaxInterval = 5 * time.Second
	}
	if opts.StreamIdleTimeout == 0 && opts.StreamFormat == StreamSSE {
		opts.StreamIdleTimeout = 60 * time.Second
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "fleetwave"
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc, err = newHTTPClient(opts)
		if err != nil {
			return nil, err
		}
	}
	if opts.WrapTransport != nil {
		wrapped := *hc
		base := wrapped.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		wrapped.Transport = opts.WrapTransport(base)
		hc = &wrapped
	}
	return &Client{base: u, hc: hc, opts: opts}, nil
}

func newHTTPClient(opts Options) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	if opts.CAFile != "" {
		pem, err := os.ReadFile(opts.CAFile)
		if err != nil {
			return nil, fmt.Errorf("creating argo cd client: reading CA file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("creating argo cd client: CA file %s holds no PEM certificate", opts.CAFile)
		}
		tlsConf.RootCAs = pool
	}
	if opts.Insecure {
		tlsConf.InsecureSkipVerify = true //nolint:gosec // explicit opt-in (--insecure) for local servers
	}
	tr.TLSClientConfig = tlsConf
	tr.ResponseHeaderTimeout = 0 // the stream's headers may come late; unary calls are bounded by their context
	// A rollout runs as many calls at once against one server as its concurrency (hundreds for a large wave),
	// in bursts: at the start of a wave and as its operations finish. Argo CD's REST API speaks HTTP/1.1 only
	// (server/server.go offers http/1.1 first in ALPN; h2 is for gRPC clients), one call in flight per
	// connection, so connections beyond the idle limits would be closed after each burst and dialled (and TLS
	// handshaken) again for the next. Both limits: the default transport's MaxIdleConns (100 for all hosts) caps
	// the pool below the per-host one (TestBurstsReuseConnections).
	tr.MaxIdleConns = maxIdleConns
	tr.MaxIdleConnsPerHost = maxIdleConns
	return &http.Client{Transport: tr}, nil
}

// maxIdleConns is how many connections to the server the client's own transport keeps open between calls.
const maxIdleConns = 512

// request describes one API call.
type request struct {
	method string
	path   []string // segments below the base URL, unescaped, e.g. {"api","v1","applications",name}
	query  url.Values
	body   any
	// startsOperation marks a request that starts an operation (sync, rollback): sent again only when it
	// cannot have reached the server (the connection was never made) or the answer says it was not acted on
	// (APIError.unacted: a 429, a 503, Argo CD's own 5xx). A connection lost after the request was sent, an
	// attempt's timeout, or a proxy's 500, 502 or 504 is returned to the caller: Argo CD may have started the operation, and a second request after that operation finished would
	// start a second one. The caller looks for the operation's evidence before asking again (argosync).
	startsOperation bool
}

// call sends r, retrying transient failures with jittered exponential backoff, and decodes a 2xx answer into out
// (when out is not nil).
func (c *Client) call(ctx context.Context, r request, out any) error {
	var payload []byte
	if r.body != nil {
		var err error
		if payload, err = json.Marshal(r.body); err != nil {
			return fmt.Errorf("encoding request: %w", err)
		}
	}
	b := c.newBackOff()
	for {
		err, retry := c.attempt(ctx, r, payload, out)
		if err == nil || !retry {
			return err
		}
		var ae *APIError
		if r.startsOperation && !neverSent(err) && !(errors.As(err, &ae) && ae.unacted()) {
			return err
		}
		wait := b.NextBackOff()
		if wait == backoff.Stop {
			return err
		}
		if errors.As(err, &ae) && ae.retryAfter > wait {
			wait = min(ae.retryAfter, 30*time.Second)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// neverSent: the attempt failed before its request could reach the server (the connection was not made).
func neverSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// newBackOff returns the retry schedule of one call: exponential with ±50% jitter, at most MaxRetries retries.
func (c *Client) newBackOff() backoff.BackOff {
	if c.opts.MaxRetries < 0 {
		return &backoff.StopBackOff{}
	}
	exp := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(c.opts.RetryInitialInterval),
		backoff.WithMaxInterval(c.opts.RetryMaxInterval),
		backoff.WithRandomizationFactor(0.5),
		backoff.WithMultiplier(2),
		backoff.WithMaxElapsedTime(0),
	)
	return backoff.WithMaxRetries(exp, uint64(c.opts.MaxRetries))
}

// attempt sends one request; retry reports whether the failure is transient.
func (c *Client) attempt(ctx context.Context, r request, payload []byte, out any) (err error, retry bool) {
	actx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(actx, r.method, c.url(r.path, r.query), body)
	if err != nil {
		return fmt.Errorf("building request: %w", err), false
	}
	if err := c.setHeaders(req); err != nil {
		return err, false
	}
	req.Header.Set("Accept", "application/json")
	if r.method != http.MethodGet {
		// argocd-server refuses any other method without a JSON content type, body or not: 415 "Invalid content
		// type" (server/server.go enforceContentTypes, --api-content-types). DELETE .../operation has no body.
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err(), false
		}
		// A connection error or this attempt's timeout: transient.
		return fmt.Errorf("sending request: %w", redactURLError(err)), true
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		_ = resp.Body.Close()
	}()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		ae := parseAPIError(resp)
		ae.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"))
		return ae, ae.retryable()
	}
	if out == nil {
		return nil, false
	}
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err(), false
		}
		// A body cut short is a connection error.
		return fmt.Errorf("reading answer: %w", err), true
	}
	if err := decodeJSON(answer, out); err != nil {
		// A body cut short (the server closed the connection cleanly mid-answer) is a connection error too.
		return fmt.Errorf("decoding answer: %w", err), truncatedJSON(err)
	}
	return nil, false
}

func (c *Client) setHeaders(req *http.Request) error {
	token := c.opts.Token
	if c.opts.TokenSource != nil {
		t, err := c.opts.TokenSource()
		if err != nil {
			return fmt.Errorf("argo cd token: %w", err)
		}
		token = t
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("User-Agent", c.opts.UserAgent)
	return nil
}

func (c *Client) url(segments []string, q url.Values) string {
	esc := make([]string, len(segments))
	for i, s := range segments {
		esc[i] = url.PathEscape(s)
	}
	u := c.base.JoinPath(esc...)
	u.RawQuery = q.Encode()
	return u.String()
}

// parseRetryAfter reads a Retry-After header given in seconds (the HTTP-date form is ignored).
func parseRetryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}

// redactURLError drops the URL from a *url.Error: it holds no secret (the token travels in a header), but its
// query strings make errors long; the operation is named by the caller.
func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
