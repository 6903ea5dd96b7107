package github

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gh "github.com/google/go-github/v60/github"
)

// DefaultAPIURL is GitHub.com's REST API.
const DefaultAPIURL = "https://api.github.com/"

// AppConfig identifies the GitHub App and where its API is.
type AppConfig struct {
	AppID int64
	// PrivateKey is the App's PEM-encoded RSA private key.
	PrivateKey []byte
	// APIURL is the REST API base URL: DefaultAPIURL (when empty), "https://HOST/api/v3/" for GitHub
	// Enterprise Server, or a test server's URL.
	APIURL string
	// Transport carries the requests (default: a clone of http.DefaultTransport).
	Transport http.RoundTripper
	// Retry is the retry policy for every request, token requests included.
	Retry RetryPolicy
	// UserAgent is sent with every API request (default "fleetwave").
	UserAgent string
	// ClientOptions apply to every installation's Client (e.g. WithBotLogin).
	ClientOptions []ClientOption
	// WriteBudget, when set, paces each installation's content-creating requests (POST, PATCH, PUT, DELETE;
	// not the token requests) and is paused by GitHub's rate-limit answers (internal/edge/github/writebudget).
	WriteBudget WriteBudget
}

// WriteBudget paces an installation's content-creating requests. *writebudget.Budget satisfies it.
type WriteBudget interface {
	// Take waits until installation may make one more content-creating request.
	Take(ctx context.Context, installation int64) error
	// Pause holds the installation's requests for d (GitHub answered with a rate limit).
	Pause(installation int64, d time.Duration)
}

// App authenticates as the GitHub App (a JWT signed with its private key, by ghinstallation) and hands out
// one Client per installation, whose installation token ghinstallation caches and refreshes before expiry.
type App struct {
	appID     int64
	key       *rsa.PrivateKey
	transport *retryTransport
	budget    WriteBudget // nil: none
	apiURL    *url.URL
	userAgent string
	opts      []ClientOption

	mu            sync.Mutex
	installations map[int64]*installation
	appClient     *gh.Client // authenticated as the App (JWT), created on first use
}

type installation struct {
	tr     *ghinstallation.Transport
	client *Client
}

// NewApp checks cfg and returns an App. No request is made until a Client is used.
func NewApp(cfg AppConfig) (*App, error) {
	if cfg.AppID <= 0 {
		return nil, errors.New("creating GitHub App client: no App ID")
	}
	apiURL, err := ParseAPIURL(cfg.APIURL)
	if err != nil {
		return nil, fmt.Errorf("creating GitHub App client: %w", err)
	}
	base := cfg.Transport
	if base == nil {
		base = http.DefaultTransport.(*http.Transport).Clone()
	}
	key, err := ParsePrivateKey(cfg.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("creating GitHub App client: %w", err)
	}
	ua := cfg.UserAgent
	if ua == "" {
		ua = "fleetwave"
	}
	retry := newRetryTransport(base, cfg.Retry)
	retry.budget = cfg.WriteBudget
	return &App{
		appID: cfg.AppID, key: key, transport: retry, budget: cfg.WriteBudget, apiURL: apiURL, userAgent: ua,
		opts: cfg.ClientOptions, installations: map[int64]*installation{},
	}, nil
}

// ParsePrivateKey parses a GitHub App private key: PEM, RSA, PKCS #1 (as GitHub issues it) or PKCS #8.
func ParsePrivateKey(data []byte) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("private key is not PEM")
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("private key (PEM %q) is neither PKCS #1 nor PKCS #8: %w", block.Type, err)
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("private key is %T, GitHub Apps use RSA", k)
	}
	return rk, nil
}

// ParseAPIURL checks a REST API base URL ("" is DefaultAPIURL) and returns it with a trailing slash.
func ParseAPIURL(raw string) (*url.URL, error) {
	if raw == "" {
		raw = DefaultAPIURL
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("GitHub API URL %q: %w", raw, err)
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("GitHub API URL %q: want http(s)://host[/path]", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("GitHub API URL %q: no credentials, query or fragment allowed", raw)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	return u, nil
}

// Client returns the Client of installation id (created once, then shared).
func (a *App) Client(id int64) (*Client, error) {
	in, err := a.installation(id)
	if err != nil {
		return nil, err
	}
	return in.client, nil
}

func (a *App) installation(id int64) (*installation, error) {
	if id <= 0 {
		return nil, fmt.Errorf("GitHub installation id %d: the event carries no installation (is the webhook configured through the App?)", id)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if in, ok := a.installations[id]; ok {
		return in, nil
	}
	// One AppsTransport per installation: ghinstallation writes to it while refreshing a token.
	apps := ghinstallation.NewAppsTransportFromPrivateKey(a.transport, a.appID, a.key)
	apps.BaseURL = strings.TrimSuffix(a.apiURL.String(), "/")
	tr := ghinstallation.NewFromAppsTransport(apps, id)
	var api http.RoundTripper = &installationTransport{next: tr, id: id, budget: a.budget, retry: a.transport}
	c := gh.NewClient(&http.Client{Transport: api})
	c.BaseURL = a.apiURL
	c.UserAgent = a.userAgent
	in := &installation{tr: tr, client: NewClient(ServicesOf(c), a.opts...)}
	a.installations[id] = in
	return in, nil
}

// Token returns a valid installation access token (cached by ghinstallation until a minute before it expires).
func (a *App) Token(ctx context.Context, installationID int64) (string, error) {
	in, err := a.installation(installationID)
	if err != nil {
		return "", err
	}
	tok, err := in.tr.Token(ctx)
	if err != nil {
		return "", fmt.Errorf("getting a token for installation %d: %w", installationID, err)
	}
	return tok, nil
}

// GitCredentials returns HTTP basic-auth credentials for cloning the installation's repositories over https:
// user "x-access-token" and an installation token as password. The token expires (an hour at most): ask for
// credentials per clone or fetch, do not store them.
func (a *App) GitCredentials(ctx context.Context, installationID int64) (username, password string, err error) {
	tok, err := a.Token(ctx, installationID)
	if err != nil {
		return "", "", err
	}
	return "x-access-token", tok, nil
}

// TokenExpiry reports when the installation's current token expires (zero before the first token).
func (a *App) TokenExpiry(installationID int64) time.Time {
	in, err := a.installation(installationID)
	if err != nil {
		return time.Time{}
	}
	exp, _, err := in.tr.Expiry()
	if err != nil {
		return time.Time{}
	}
	return exp
}

// RepoInstallation finds the App's installation on repo ("owner/name"): GET /repos/{owner}/{repo}/installation,
// authenticated as the App (JWT). The error wraps ErrNotFound when the App is not installed there. The bot uses
// it for work that outlives the webhook that brought it (a rollout resumed after a restart publishes its
// check-runs before any new event from the repository arrives).
func (a *App) RepoInstallation(ctx context.Context, repo string) (int64, error) {
	owner, name, err := splitRepo(repo)
	if err != nil {
		return 0, err
	}
	a.mu.Lock()
	if a.appClient == nil {
		apps := ghinstallation.NewAppsTransportFromPrivateKey(a.transport, a.appID, a.key)
		c := gh.NewClient(&http.Client{Transport: apps})
		c.BaseURL = a.apiURL
		c.UserAgent = a.userAgent
		a.appClient = c
	}
	c := a.appClient
	a.mu.Unlock()
	in, resp, err := c.Apps.FindRepositoryInstallation(ctx, owner, name)
	if err != nil {
		return 0, apiErr("finding the App installation of "+repo, resp, err)
	}
	return in.GetID(), nil
}
