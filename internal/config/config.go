package config

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/fleetwave/fleetwave/internal/edge/repocreds"
)

// Defaults.
const (
	DefaultAddr   = ":8080"
	DefaultAPIURL = "https://api.github.com/"
	DefaultStore  = "sqlite://./fleetwave.db"
)

// maxFileBytes bounds what is read from a config, key or clusters file.
const maxFileBytes = 1 << 20

// Secret holds a credential. Every way of printing it (fmt, slog, JSON) shows "[redacted]"; Reveal returns
// the value for the one place that needs it.
type Secret struct{ value string }

// NewSecret wraps v.
func NewSecret(v string) Secret { return Secret{value: v} }

// Reveal returns the secret value.
func (s Secret) Reveal() string { return s.value }

// IsSet reports whether the secret is non-empty.
func (s Secret) IsSet() bool { return s.value != "" }

func (s Secret) String() string {
	if s.value == "" {
		return ""
	}
	return "[redacted]"
}

// GoString implements fmt.GoStringer (%#v).
func (s Secret) GoString() string { return strconv.Quote(s.String()) }

// LogValue implements slog.LogValuer.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalJSON never reveals the value.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(strconv.Quote(s.String())), nil }

// MarshalText never reveals the value.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Serve is the validated configuration of `fleetwave serve`.
type Serve struct {
	// Addr is the listen address; webhooks arrive at /webhooks/github.
	Addr string
	// AppID and PrivateKey identify the GitHub App. PrivateKeySource says where the key came from (a file
	// path, or the variable name), for messages.
	AppID            int64
	PrivateKey       Secret // PEM
	PrivateKeySource string
	// WebhookSecret verifies X-Hub-Signature-256.
	WebhookSecret Secret
	// GitHubAPIURL is the REST API base URL, with a trailing slash.
	GitHubAPIURL string
	// ArgoCDURL is empty when no Argo CD is configured (the bot then diffs base against head only).
	ArgoCDURL      string
	ArgoCDToken    Secret
	ArgoCDInsecure bool
	// ArgoCDInstancesFile is the instances file of several Argo CD instances ("": none; never with ArgoCDURL).
	// It is checked readable here; its content is read by internal/edge/argocd/instances (LoadWith), which this package
	// may not import: internal/edge/argocd sits above it (its livediff adapter reaches internal/config through
	// preview), and docs/architecture_test.go keeps the folders a layering.
	ArgoCDInstancesFile string
	// Store is the state store DSN: sqlite://… or postgres://….
	Store Secret
	// ClustersFile lists cluster labels when there is no Argo CD.
	ClustersFile string
	// RepositoriesFile holds the Argo CD repository Secrets of the chart repositories charts may be fetched from
	// ("" = none: chart sources are not rendered in process). Repositories is its content.
	RepositoriesFile string
	Repositories     *repocreds.Set
	// AllowedOwners are the accounts whose installations are served (nil: every installation).
	AllowedOwners []string
	// ArgoCDRenderHeadRepos are the repositories ("owner/name"; "*": all) whose pull-request heads may be
	// rendered through Argo CD (never a fork's).
	ArgoCDRenderHeadRepos []string
	// CacheDir holds the clones, charts and git mirrors ("": next to the SQLite store, else the user cache).
	CacheDir string
	// RenderSettingsFile is a render-env.yaml whose settings win over what Argo CD reports ("": none).
	RenderSettingsFile string
	// Render configures the render pool shared by the installations.
	Render Render
	// GitHubWritesPerMinute is each installation's budget of content-creating requests (0: the default, 60).
	GitHubWritesPerMinute int
	// ReplicaName is this replica's name in rollout leases ("": hostname-pid).
	ReplicaName string
	// FleetViewToken turns the fleet view on and is its sign-in token; FleetViewInsecureCookie leaves its
	// session cookie without Secure (plain-HTTP development).
	FleetViewToken          Secret
	FleetViewInsecureCookie bool
	// DriftAfter is how long an app stays OutOfSync or Degraded before it is in lasting drift (0: drift alerts
	// off); DriftReportRepo ("owner/name", "": none) is where each such app gets a GitHub issue.
	DriftAfter      time.Duration
	DriftReportRepo string
	// HistoryRetention is how long a finished rollout's record is kept (0: forever).
	HistoryRetention time.Duration
	// File is the config file read, if any.
	File string
}

// String shows the configuration with every secret redacted (and the store DSN's password masked).
func (c *Serve) String() string {
	argo := "none"
	if c.ArgoCDURL != "" {
		argo = c.ArgoCDURL
		if c.ArgoCDToken.IsSet() {
			argo += " (token [redacted])"
		}
		if c.ArgoCDInsecure {
			argo += " (TLS not verified)"
		}
	}
	if c.ArgoCDInstancesFile != "" {
		argo = "instances file " + c.ArgoCDInstancesFile
	}
	clusters := c.ClustersFile
	if clusters == "" {
		clusters = "none"
	}
	repos := "none"
	if c.RepositoriesFile != "" {
		repos = fmt.Sprintf("%s (%d entries, credentials [redacted])", c.RepositoriesFile, c.Repositories.Len())
	}
	owners := "any"
	if len(c.AllowedOwners) > 0 {
		owners = strings.Join(c.AllowedOwners, ",")
	}
	s := fmt.Sprintf("addr=%s github-app=%d private-key=[redacted] (%s) webhook-secret=[redacted] github-api=%s argocd=%s store=%s clusters=%s repositories=%s allowed-owners=%s",
		c.Addr, c.AppID, c.PrivateKeySource, c.GitHubAPIURL, argo, RedactDSN(c.Store.Reveal()), clusters, repos, owners)
	if c.FleetViewToken.IsSet() {
		s += " fleet-view=on (token [redacted])"
	}
	if c.DriftAfter > 0 {
		s += " drift-after=" + c.DriftAfter.String()
		if c.DriftReportRepo != "" {
			s += " drift-reports=" + c.DriftReportRepo
		}
	}
	return s
}

// GoString implements fmt.GoStringer so that %#v does not print the fields.
func (c *Serve) GoString() string { return "config.Serve{" + c.String() + "}" }

// LogValue implements slog.LogValuer.
func (c *Serve) LogValue() slog.Value { return slog.StringValue(c.String()) }

// RedactDSN masks a password in a store DSN (Redact, and key=value connection strings as a whole).
func RedactDSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		return Redact(dsn)
	}
	if strings.Contains(dsn, "password=") { // key=value connection strings
		return "[redacted connection string]"
	}
	return dsn
}

// Error lists every problem found in the configuration, one per line.
type Error struct {
	Problems []string
	// Of is what was read: "" for serve's configuration, whose message says so; "environment" for the other
	// commands', whose single problem is the whole message.
	Of string
}

func (e *Error) Error() string {
	if e.Of != "" {
		if len(e.Problems) == 1 {
			return e.Problems[0]
		}
		return fmt.Sprintf("invalid %s (%d problems): %s", e.Of, len(e.Problems), strings.Join(e.Problems, "; "))
	}
	if len(e.Problems) == 1 {
		return "invalid serve configuration: " + e.Problems[0]
	}
	return fmt.Sprintf("invalid serve configuration (%d problems): %s", len(e.Problems), strings.Join(e.Problems, "; "))
}

// setting is one raw value and where it came from.
type setting struct {
	value  string
	origin string // "FLEETWAVE_ADDR" or "config.yaml:3 FLEETWAVE_ADDR"
}

// LoadServe reads the serve configuration: file (when not empty; else $FLEETWAVE_CONFIG when set) overlaid by
// the environment (getenv; a variable set to the empty string counts as unset), then validates it, reporting
// every problem at once. readFile reads the config, key and clusters files (os.ReadFile when nil).
func LoadServe(getenv func(string) string, file string, readFile func(string) ([]byte, error)) (*Serve, error) {
	if readFile == nil {
		readFile = readLimited
	}
	if file == "" {
		file = getenv(EnvConfigFile)
	}
	raw := map[string]setting{}
	if file != "" {
		data, err := readFile(file)
		if err != nil {
			return nil, &Error{Problems: []string{fmt.Sprintf("config file: %v", err)}}
		}
		fromFile, problems := parseFile(file, data)
		if len(problems) > 0 {
			return nil, &Error{Problems: problems}
		}
		raw = fromFile
	}
	for _, k := range fileKeys() {
		if v := getenv(k); v != "" {
			raw[k] = setting{value: v, origin: k}
		}
	}
	c, problems := validate(raw, readFile)
	c.File = file
	if len(problems) > 0 {
		return nil, &Error{Problems: problems}
	}
	return c, nil
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxFileBytes)
	}
	return data, nil
}

// parseFile reads a YAML mapping of the same keys as the environment, strictly: unknown keys, nested values
// and duplicates are problems, each with its line.
func parseFile(name string, data []byte) (map[string]setting, []string) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, []string{fmt.Sprintf("%s: %v", name, err)}
	}
	out := map[string]setting{}
	if len(doc.Content) == 0 {
		return out, nil
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return nil, []string{fmt.Sprintf("%s:%d: want a mapping of %s… keys", name, m.Line, "FLEETWAVE_")}
	}
	keys := fileKeys()
	known := map[string]bool{}
	for _, k := range keys {
		known[k] = true
	}
	var problems []string
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		origin := fmt.Sprintf("%s:%d %s", name, k.Line, k.Value)
		switch {
		case !known[k.Value]:
			problems = append(problems, fmt.Sprintf("%s:%d: unknown key %q (known: %s)", name, k.Line, k.Value, strings.Join(keys, ", ")))
		case v.Kind != yaml.ScalarNode:
			problems = append(problems, fmt.Sprintf("%s: want a single value", origin))
		case out[k.Value].origin != "":
			problems = append(problems, fmt.Sprintf("%s: set twice", origin))
		default:
			out[k.Value] = setting{value: v.Value, origin: origin}
		}
	}
	return out, problems
}

func validate(raw map[string]setting, readFile func(string) ([]byte, error)) (*Serve, []string) {
	c := &Serve{}
	var problems []string
	bad := func(s setting, format string, args ...any) {
		problems = append(problems, s.origin+": "+fmt.Sprintf(format, args...))
	}
	get := func(k, def string) setting {
		if s, ok := raw[k]; ok {
			s.value = strings.TrimSpace(s.value)
			return s
		}
		return setting{value: def, origin: k}
	}

	{
		s := get(EnvAddr, DefaultAddr)
		c.Addr = s.value
		if _, port, err := net.SplitHostPort(s.value); err != nil {
			bad(s, "listen address %q: want host:port or :port", s.value)
		} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > math.MaxUint16 {
			bad(s, "listen address %q: port must be 0-%d", s.value, math.MaxUint16)
		}
	}

	if s := get(EnvAppID, ""); s.value == "" {
		bad(s, "required: the GitHub App's ID (App settings → General → App ID)")
	} else if id, err := strconv.ParseInt(s.value, 10, 64); err != nil || id <= 0 {
		bad(s, "App ID %q is not a positive number", s.value)
	} else {
		c.AppID = id
	}

	keyFile, inline := get(EnvPrivateKeyFile, ""), raw[EnvPrivateKey]
	switch {
	case keyFile.value != "" && inline.value != "":
		bad(inline, "set either %s or %s, not both", EnvPrivateKeyFile, EnvPrivateKey)
	case keyFile.value != "":
		c.PrivateKeySource = keyFile.value
		data, err := readFile(keyFile.value)
		if err != nil {
			bad(keyFile, "reading the private key: %v", err)
		} else if err := checkRSAKey(data); err != nil {
			bad(keyFile, "private key %s: %v", keyFile.value, err)
		} else {
			c.PrivateKey = NewSecret(string(data))
		}
	case inline.value != "":
		c.PrivateKeySource = inline.origin
		pemText := inline.value
		if !strings.Contains(pemText, "\n") { // a PEM squeezed into one line of an env file
			pemText = strings.ReplaceAll(pemText, `\n`, "\n")
		}
		if err := checkRSAKey([]byte(pemText)); err != nil {
			bad(inline, "private key: %v", err)
		} else {
			c.PrivateKey = NewSecret(pemText)
		}
	default:
		problems = append(problems, fmt.Sprintf("%s or %s: required: the GitHub App's private key (PEM)", EnvPrivateKeyFile, EnvPrivateKey))
	}

	if s := get(EnvWebhookSecret, ""); s.value == "" {
		bad(s, "required: the webhook secret set in the GitHub App (the bot refuses unsigned webhooks)")
	} else {
		c.WebhookSecret = NewSecret(s.value)
	}

	{
		s := get(EnvAPIURL, DefaultAPIURL)
		if u, err := checkURL(s.value); err != nil {
			bad(s, "%v", err)
		} else {
			if !strings.HasSuffix(u.Path, "/") {
				u.Path += "/"
			}
			c.GitHubAPIURL = u.String()
		}
	}

	argoURL, argoToken := get(EnvArgoCDURL, ""), get(EnvArgoCDToken, "")
	if argoURL.value != "" {
		if u, err := checkURL(argoURL.value); err != nil {
			bad(argoURL, "%v", err)
		} else {
			c.ArgoCDURL = strings.TrimSuffix(u.String(), "/")
		}
	} else if argoToken.value != "" {
		bad(argoToken, "set, but %s is not", EnvArgoCDURL)
	}
	c.ArgoCDToken = NewSecret(argoToken.value)
	{
		s := get(EnvArgoCDInsecure, "false")
		b, err := strconv.ParseBool(s.value)
		if err != nil {
			bad(s, "%q is not true or false", s.value)
		}
		c.ArgoCDInsecure = b
	}

	if s := get(EnvArgoCDInstances, ""); s.value != "" {
		for _, other := range []string{EnvArgoCDURL, EnvArgoCDToken, EnvArgoCDInsecure} {
			o, ok := raw[other]
			if other == EnvArgoCDInsecure && !c.ArgoCDInsecure {
				continue // false (or invalid, said above) asks for nothing the file would ignore
			}
			if ok && strings.TrimSpace(o.value) != "" {
				bad(o, "set, and so is %s: the instances file gives each instance its URL, token and TLS options; set one of them", EnvArgoCDInstances)
			}
		}
		if _, err := readFile(s.value); err != nil {
			bad(s, "reading the instances file: %v", err)
		}
		c.ArgoCDInstancesFile = s.value
	}

	{
		s := get(EnvStore, DefaultStore)
		scheme, _, ok := strings.Cut(s.value, "://")
		switch strings.ToLower(scheme) {
		case "sqlite", "sqlite3", "postgres", "postgresql":
			if !ok {
				bad(s, "store %q: want sqlite:///path/fleetwave.db or postgres://…", RedactDSN(s.value))
			}
		default:
			bad(s, "store %q: want sqlite:///path/fleetwave.db or postgres://…", RedactDSN(s.value))
		}
		c.Store = NewSecret(s.value)
	}

	if s := get(EnvClustersFile, ""); s.value != "" {
		if _, err := readFile(s.value); err != nil {
			bad(s, "reading the clusters file: %v", err)
		}
		c.ClustersFile = s.value
	}
	if s := get(EnvRepositoriesFile, ""); s.value != "" {
		data, err := readFile(s.value)
		var set *repocreds.Set
		if err == nil {
			set, err = repocreds.Parse(s.value, data)
		} else {
			err = fmt.Errorf("reading the repositories file: %w", err)
		}
		if err != nil {
			bad(s, "%v", err)
		} else {
			c.RepositoriesFile, c.Repositories = s.value, set
		}
	}
	if s := get(EnvAllowedOwners, ""); s.value != "" {
		for _, o := range strings.Split(s.value, ",") {
			o = strings.TrimSpace(o)
			switch {
			case o == "":
			case !ownerName.MatchString(o):
				bad(s, "%q is not a GitHub account name", o)
			default:
				c.AllowedOwners = append(c.AllowedOwners, o)
			}
		}
		if len(c.AllowedOwners) == 0 {
			bad(s, "lists no account: unset it to serve every installation")
		}
	}
	for _, r := range strings.Split(get(EnvArgoCDRenderHeadRepos, "").value, ",") {
		if r = strings.TrimSpace(r); r != "" {
			c.ArgoCDRenderHeadRepos = append(c.ArgoCDRenderHeadRepos, r)
		}
	}
	c.CacheDir = get(EnvCacheDir, "").value
	c.RenderSettingsFile = get(EnvRenderSettings, "").value
	c.ReplicaName = get(EnvReplicaName, "").value
	c.Render = readRender(func(k string) (setting, bool) { s := get(k, ""); return s, s.value != "" }, ForServe,
		func(p string) { problems = append(problems, p) })
	if s := get(EnvGitHubWrites, ""); s.value != "" {
		if n, err := strconv.Atoi(s.value); err != nil || n <= 0 || n > 100000 {
			problems = append(problems, fmt.Sprintf("%s=%q: want a positive number of requests a minute, such as 60", s.origin, s.value))
		} else {
			c.GitHubWritesPerMinute = n
		}
	}
	if s := get(EnvFleetViewToken, ""); s.value != "" {
		c.FleetViewToken = NewSecret(s.value)
	}
	if s := get(EnvFleetViewInsecure, ""); s.value != "" {
		b, err := strconv.ParseBool(s.value)
		if err != nil {
			bad(s, "%q is not true or false", s.value)
		}
		c.FleetViewInsecureCookie = b
	}
	readDrift(c, get, bad)
	if s := get(EnvHistoryRetention, ""); s.value != "" {
		d, err := ParseAge(s.value)
		if err != nil || d < 0 {
			bad(s, "%q: want a duration such as 90d or 2160h (0: keep forever)", s.value)
		}
		c.HistoryRetention = d
	}
	return c, problems
}

// readDrift reads the drift alerts' settings (internal/drift).
func readDrift(c *Serve, get func(k, def string) setting, bad func(s setting, format string, args ...any)) {
	if s := get(EnvDriftAfter, ""); s.value != "" && s.value != "0" {
		d, err := time.ParseDuration(s.value)
		switch {
		case err != nil:
			bad(s, "%q is not a duration such as 30m or 2h", s.value)
		case d < time.Minute:
			bad(s, "%s is shorter than a minute: drift that short is a sync in progress, not an alert (0 turns the alerts off)", d)
		default:
			c.DriftAfter = d
		}
	}
	if s := get(EnvDriftReportRepo, ""); s.value != "" {
		owner, name, ok := strings.Cut(s.value, "/")
		switch {
		case !ok || !ownerName.MatchString(owner) || !repoName.MatchString(name):
			bad(s, "%q is not a repository owner/name", s.value)
		case c.DriftAfter == 0:
			bad(s, "set, but %s is not: no app is ever in lasting drift", EnvDriftAfter)
		default:
			c.DriftReportRepo = s.value
		}
	}
}

// repoName is a GitHub repository name: letters, digits, '.', '-' and '_', at most 100, not "." or "..".
var repoName = regexp.MustCompile(`^(?:[A-Za-z0-9_.-]{3,100}|[A-Za-z0-9_-][A-Za-z0-9_.-]?)$`)

// ownerName is a GitHub account name: letters, digits and single hyphens, not at either end, at most 39.
var ownerName = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9]|-[A-Za-z0-9]){0,38}$`)

func checkURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%q is not a URL", raw)
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("%q: want http(s)://host[/path]", raw)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%q: credentials do not belong in the URL", u.Redacted())
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%q: no query or fragment allowed", raw)
	}
	return u, nil
}

// checkRSAKey checks a GitHub App private key: PEM, RSA, PKCS #1 (as GitHub issues it) or PKCS #8. Errors never
// quote the key.
func checkRSAKey(data []byte) error {
	block, _ := pem.Decode(data)
	if block == nil {
		return errors.New("not PEM (want the .pem file GitHub generated for the App)")
	}
	if _, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return fmt.Errorf("PEM block %q is not an RSA private key", block.Type)
	}
	if _, ok := k.(*rsa.PrivateKey); !ok {
		return fmt.Errorf("PEM block %q holds a %T, GitHub Apps use RSA", block.Type, k)
	}
	return nil
}
