package config

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/edge/github/fakegithub"
)

const (
	webhookSecret = "whsec-do-not-print-me"
	argoToken     = "argo-token-do-not-print-me"
	pgPassword    = "pg-password-do-not-print-me"
)

var (
	rsaPEM = func() string {
		_, pemKey := fakegithub.AppKey()
		return string(pemKey)
	}()
	ecPEM = func() string {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		b, _ := x509.MarshalPKCS8PrivateKey(k)
		return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: b}))
	}()
)

// files is an in-memory file system for readFile.
type files map[string]string

func (f files) read(name string) ([]byte, error) {
	if v, ok := f[name]; ok {
		return []byte(v), nil
	}
	return nil, fmt.Errorf("open %s: %w", name, fs.ErrNotExist)
}

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

var minimal = []string{
	EnvAppID, "12345", EnvPrivateKeyFile, "/keys/app.pem", EnvWebhookSecret, webhookSecret,
}

func with(extra ...string) []string { return append(append([]string(nil), minimal...), extra...) }

func TestLoadServeDefaults(t *testing.T) {
	fsys := files{"/keys/app.pem": rsaPEM}
	c, err := LoadServe(env(minimal...), "", fsys.read)
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != ":8080" || c.AppID != 12345 || c.GitHubAPIURL != "https://api.github.com/" || c.Store.Reveal() != DefaultStore ||
		c.ArgoCDURL != "" || c.WebhookSecret.Reveal() != webhookSecret || c.PrivateKey.Reveal() != rsaPEM || c.PrivateKeySource != "/keys/app.pem" {
		t.Errorf("%#v", c)
	}
}

func TestLoadServeProblems(t *testing.T) {
	fsys := files{"/keys/app.pem": rsaPEM, "/keys/ec.pem": ecPEM, "/keys/junk.pem": "hunter2", "/etc/clusters.yaml": "clusters: []",
		"/etc/repos.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {labels: {argocd.argoproj.io/secret-type: repository}}\nstringData: {password: s3cret}\n"}
	tests := []struct {
		name string
		env  []string
		want []string // one entry per expected problem
	}{
		{"nothing set", nil, []string{
			"FLEETWAVE_GITHUB_APP_ID: required",
			"FLEETWAVE_GITHUB_PRIVATE_KEY_FILE or FLEETWAVE_GITHUB_PRIVATE_KEY: required",
			"FLEETWAVE_WEBHOOK_SECRET: required",
		}},
		{"bad app id", with(EnvAppID, "my-app"), []string{`FLEETWAVE_GITHUB_APP_ID: App ID "my-app" is not a positive number`}},
		{"unreadable key", with(EnvPrivateKeyFile, "/keys/missing.pem"), []string{"FLEETWAVE_GITHUB_PRIVATE_KEY_FILE: reading the private key: open /keys/missing.pem: file does not exist"}},
		{"key not PEM", with(EnvPrivateKeyFile, "/keys/junk.pem"), []string{"FLEETWAVE_GITHUB_PRIVATE_KEY_FILE: private key /keys/junk.pem: not PEM"}},
		{"key not RSA", with(EnvPrivateKeyFile, "/keys/ec.pem"), []string{"holds a *ecdsa.PrivateKey, GitHub Apps use RSA"}},
		{"two keys", with(EnvPrivateKey, rsaPEM), []string{"FLEETWAVE_GITHUB_PRIVATE_KEY: set either"}},
		{"bad addr", with(EnvAddr, "8080"), []string{`FLEETWAVE_ADDR: listen address "8080": want host:port or :port`}},
		{"bad port", with(EnvAddr, ":http-alt"), []string{"port must be 0-65535"}},
		{"bad api url", with(EnvAPIURL, "github.example.com"), []string{`FLEETWAVE_GITHUB_API_URL: "github.example.com": want http(s)://host[/path]`}},
		{"api url with credentials", with(EnvAPIURL, "https://bob:s3cret@ghe.example.com/api/v3"), []string{"credentials do not belong in the URL"}},
		{"argocd token alone", with(EnvArgoCDToken, argoToken), []string{"FLEETWAVE_ARGOCD_TOKEN: set, but FLEETWAVE_ARGOCD_URL is not"}},
		{"argocd url", with(EnvArgoCDURL, "argocd.example.com"), []string{"FLEETWAVE_ARGOCD_URL:"}},
		{"insecure", with(EnvArgoCDURL, "https://argocd", EnvArgoCDInsecure, "maybe"), []string{`FLEETWAVE_ARGOCD_INSECURE: "maybe" is not true or false`}},
		{"store", with(EnvStore, "mysql://u:"+pgPassword+"@db/fleetwave"), []string{"FLEETWAVE_STORE: store \"mysql://u:xxxxx@db/fleetwave\""}},
		{"clusters", with(EnvClustersFile, "/etc/nope.yaml"), []string{"FLEETWAVE_CLUSTERS_FILE: reading the clusters file"}},
		{"repositories missing", with(EnvRepositoriesFile, "/etc/nope.yaml"), []string{"FLEETWAVE_REPOSITORIES_FILE: reading the repositories file"}},
		{"repositories not Secrets", with(EnvRepositoriesFile, "/etc/repos.yaml"), []string{"FLEETWAVE_REPOSITORIES_FILE: /etc/repos.yaml: document 1: no url"}},
		{"allowed owners not accounts", with(EnvAllowedOwners, "acme, evil/org,-x"), []string{
			`FLEETWAVE_ALLOWED_OWNERS: "evil/org" is not a GitHub account name`, `FLEETWAVE_ALLOWED_OWNERS: "-x" is not a GitHub account name`}},
		{"allowed owners empty list", with(EnvAllowedOwners, " , "), []string{"FLEETWAVE_ALLOWED_OWNERS: lists no account"}},
		{"several at once", with(EnvAddr, "x", EnvArgoCDInsecure, "2"), []string{"FLEETWAVE_ADDR", "FLEETWAVE_ARGOCD_INSECURE"}},
		{"render, writes and fleet view at once", with(EnvRenderTimeout, "soon", EnvRenderWorkers, "many", EnvRenderMemory, "lots",
			EnvRenderShare, "0", EnvRenderChangeOutput, "-1", EnvRenderBudget, "0", EnvGitHubWrites, "60/m", EnvFleetViewInsecure, "maybe"), []string{
			`FLEETWAVE_RENDER_TIMEOUT="soon": want a duration such as 60s`,
			`FLEETWAVE_RENDER_WORKERS="many": want a number of processes (0: render in-process)`,
			`FLEETWAVE_RENDER_MEMORY: "lots" is not a size`,
			`FLEETWAVE_RENDER_SHARE="0": want the number of render workers one installation may hold at once (at least 1)`,
			`FLEETWAVE_RENDER_CHANGE_OUTPUT: "-1" is not a size`,
			`FLEETWAVE_RENDER_BUDGET="0": want a duration such as 10m (negative: no budget)`,
			`FLEETWAVE_GITHUB_WRITES_PER_MINUTE="60/m": want a positive number of requests a minute, such as 60`,
			`FLEETWAVE_FLEET_VIEW_INSECURE_COOKIE: "maybe" is not true or false`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadServe(env(tt.env...), "", fsys.read)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if len(ce.Problems) != len(tt.want) {
				t.Fatalf("problems %q, want %d", ce.Problems, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(ce.Problems[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, ce.Problems[i], w)
				}
			}
			for _, secret := range []string{webhookSecret, argoToken, pgPassword, "s3cret", "hunter2", "BEGIN", "MII"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error reveals %q: %v", secret, err)
				}
			}
		})
	}
}

func TestInlineKeyAndValidValues(t *testing.T) {
	oneLine := strings.ReplaceAll(rsaPEM, "\n", `\n`) // as it survives in a .env file
	c, err := LoadServe(env(EnvAppID, "7", EnvPrivateKey, oneLine, EnvWebhookSecret, webhookSecret,
		EnvAddr, "127.0.0.1:9000", EnvAPIURL, "https://ghe.example.com/api/v3", EnvArgoCDURL, "https://argocd.example.com/",
		EnvArgoCDToken, argoToken, EnvArgoCDInsecure, "true", EnvStore, "postgres://fw:"+pgPassword+"@db:5432/fw"), "", files{}.read)
	if err != nil {
		t.Fatal(err)
	}
	if c.PrivateKey.Reveal() != rsaPEM || c.PrivateKeySource != EnvPrivateKey || c.GitHubAPIURL != "https://ghe.example.com/api/v3/" ||
		c.ArgoCDURL != "https://argocd.example.com" || !c.ArgoCDInsecure || c.ArgoCDToken.Reveal() != argoToken {
		t.Errorf("%s", c)
	}
	// No way of printing the configuration reveals a secret.
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("config", "serve", c, "secret", c.WebhookSecret)
	js, _ := json.Marshal(c)
	outputs := []string{c.String(), fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), fmt.Sprintf("%v", *c),
		fmt.Sprintf("%+v", *c), fmt.Sprint(c.WebhookSecret), logs.String(), string(js)}
	for i, out := range outputs {
		for _, secret := range []string{webhookSecret, argoToken, pgPassword, "BEGIN RSA PRIVATE KEY", "MII"} {
			if strings.Contains(out, secret) {
				t.Errorf("output %d reveals %q: %s", i, secret, out)
			}
		}
	}
	if !strings.Contains(c.String(), "store=postgres://fw:xxxxx@db:5432/fw") || !strings.Contains(c.String(), "argocd=https://argocd.example.com (token [redacted]) (TLS not verified)") {
		t.Errorf("String() = %s", c)
	}
}

func TestConfigFile(t *testing.T) {
	fsys := files{
		"/etc/fleetwave.yaml": "FLEETWAVE_GITHUB_APP_ID: 99\nFLEETWAVE_GITHUB_PRIVATE_KEY_FILE: /keys/app.pem\n" +
			"FLEETWAVE_WEBHOOK_SECRET: from-file\nFLEETWAVE_ADDR: \":9090\"\nFLEETWAVE_ARGOCD_INSECURE: true\n",
		"/keys/app.pem": rsaPEM,
		"/etc/bad.yaml": "FLEETWAVE_ADDR: :1\nFLEETWAVE_WEBHOOK_SECRETS: typo\nFLEETWAVE_STORE:\n  url: sqlite://x\nFLEETWAVE_ADDR: :2\n",
	}
	c, err := LoadServe(env(EnvWebhookSecret, "from-env", EnvConfigFile, "/etc/fleetwave.yaml"), "", fsys.read)
	if err != nil {
		t.Fatal(err)
	}
	if c.AppID != 99 || c.Addr != ":9090" || c.WebhookSecret.Reveal() != "from-env" || !c.ArgoCDInsecure || c.File != "/etc/fleetwave.yaml" {
		t.Errorf("env must win over the file: %s secret=%q", c, c.WebhookSecret.Reveal())
	}
	_, err = LoadServe(env(), "/etc/bad.yaml", fsys.read)
	var ce *Error
	if !errors.As(err, &ce) || len(ce.Problems) != 3 {
		t.Fatalf("%v", err)
	}
	for i, want := range []string{`/etc/bad.yaml:2: unknown key "FLEETWAVE_WEBHOOK_SECRETS"`, "/etc/bad.yaml:3 FLEETWAVE_STORE: want a single value",
		"/etc/bad.yaml:5 FLEETWAVE_ADDR: set twice"} {
		if !strings.Contains(ce.Problems[i], want) {
			t.Errorf("problem %d = %q, want %q", i, ce.Problems[i], want)
		}
	}
	// A file value with a problem is named by file and line.
	fsys["/etc/port.yaml"] = "FLEETWAVE_GITHUB_APP_ID: 1\nFLEETWAVE_ADDR: nope\n"
	_, err = LoadServe(env(with()...), "/etc/port.yaml", fsys.read)
	if err == nil || !strings.Contains(err.Error(), "/etc/port.yaml:2 FLEETWAVE_ADDR: listen address") {
		t.Errorf("%v", err)
	}
	if _, err := LoadServe(env(), "/etc/missing.yaml", fsys.read); err == nil || !strings.Contains(err.Error(), "config file: open /etc/missing.yaml") {
		t.Errorf("%v", err)
	}
}

func TestLoadServeRepositories(t *testing.T) {
	fsys := files{"/keys/app.pem": rsaPEM, "/etc/repos.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: charts\n  labels: {argocd.argoproj.io/secret-type: repository}\n" +
		"stringData: {type: helm, url: 'https://charts.example.com', username: bot, password: chart-pass-1}\n"}
	c, err := LoadServe(env(with(EnvRepositoriesFile, "/etc/repos.yaml")...), "", fsys.read)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := c.Repositories.Lookup("https://charts.example.com"); !ok || r.Password != "chart-pass-1" {
		t.Errorf("Lookup = %+v, %v", r, ok)
	}
	s := c.String()
	if !strings.Contains(s, "repositories=/etc/repos.yaml (1 entries, credentials [redacted])") || strings.Contains(s, "chart-pass-1") {
		t.Errorf("String() = %s", s)
	}
}

func TestLoadServeAllowedOwners(t *testing.T) {
	fsys := files{"/keys/app.pem": rsaPEM}
	c, err := LoadServe(env(with(EnvAllowedOwners, " acme-corp,Platform ")...), "", fsys.read)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.AllowedOwners, "|") != "acme-corp|Platform" || !strings.Contains(c.String(), "allowed-owners=acme-corp,Platform") {
		t.Errorf("allowed owners %q; %s", c.AllowedOwners, c)
	}
	c, err = LoadServe(env(minimal...), "", fsys.read)
	if err != nil || c.AllowedOwners != nil || !strings.Contains(c.String(), "allowed-owners=any") {
		t.Errorf("unset: %q, %v", c.AllowedOwners, err)
	}
}

// TestLoadServeEverySetting: the settings serve read ad hoc before (cache, render pool, write budget, replica,
// fleet view, heads rendered through Argo CD) are typed in Serve, from the environment or the file, and the fleet
// view's token is never printed.
func TestLoadServeEverySetting(t *testing.T) {
	const viewToken = "fleet-view-token-do-not-print"
	fsys := files{"/keys/app.pem": rsaPEM, "/etc/fleetwave.yaml": "FLEETWAVE_RENDER_WORKERS: 3\nFLEETWAVE_CACHE_DIR: /var/cache/fw\nFLEETWAVE_RENDER_BUDGET: 5m\n"}
	c, err := LoadServe(env(with(EnvRenderWorkers, "2", EnvRenderMemory, "512MiB", EnvRenderTimeout, "30s", EnvRenderShare, "1",
		EnvRenderChangeOutput, "2G", EnvRenderSettings, "/etc/render-env.yaml", EnvGitHubWrites, " 30 ", EnvReplicaName, "fleetwave-0",
		EnvFleetViewToken, viewToken, EnvFleetViewInsecure, "true", EnvArgoCDRenderHeadRepos, "acme/gitops, ,*")...), "/etc/fleetwave.yaml", fsys.read)
	if err != nil {
		t.Fatal(err)
	}
	want := Render{Workers: 2, MemoryBytes: 512 << 20, Timeout: 30e9, Share: 1, ChangeOutput: 2 << 30, Budget: 5 * 60e9}
	if c.Render != want {
		t.Errorf("Render = %+v, want %+v", c.Render, want)
	}
	if c.CacheDir != "/var/cache/fw" || c.RenderSettingsFile != "/etc/render-env.yaml" || c.GitHubWritesPerMinute != 30 ||
		c.ReplicaName != "fleetwave-0" || c.FleetViewToken.Reveal() != viewToken || !c.FleetViewInsecureCookie ||
		strings.Join(c.ArgoCDRenderHeadRepos, "|") != "acme/gitops|*" {
		t.Errorf("%+v", *c)
	}
	if s := fmt.Sprintf("%s %+v %#v", c, *c, c); strings.Contains(s, viewToken) || !strings.Contains(c.String(), "fleet-view=on (token [redacted])") {
		t.Errorf("the configuration prints as %s", s)
	}
	c, err = LoadServe(env(with(EnvRenderWorkers, "0")...), "", fsys.read)
	if err != nil || !c.Render.InProcess {
		t.Errorf("FLEETWAVE_RENDER_WORKERS=0: %+v, %v", c, err)
	}
}

// TestLoadCLI: the commands' environment, every problem at once; one problem is the whole message.
func TestLoadCLI(t *testing.T) {
	c, err := LoadCLI(env(EnvArgoCDURL, "https://argocd.example.com", EnvArgoCDToken, " "+argoToken+" ", EnvArgoCDInsecure, "true",
		EnvCacheDir, "/tmp/c", EnvRenderWorkers, "0", EnvRenderShare, "not read by the commands", EnvFleetViewToken, "view"))
	if err != nil {
		t.Fatal(err)
	}
	if c.ArgoCDURL != "https://argocd.example.com" || c.ArgoCDToken.Reveal() != argoToken || !c.ArgoCDInsecure || c.CacheDir != "/tmp/c" ||
		!c.Render.InProcess || c.Render.Share != 0 || c.FleetViewToken.Reveal() != "view" {
		t.Errorf("%+v", *c)
	}
	if c, err := LoadCLI(nil); err != nil || *c != (CLI{}) {
		t.Errorf("nothing set: %+v, %v", c, err)
	}
	_, err = LoadCLI(env(EnvArgoCDInsecure, "maybe"))
	if err == nil || err.Error() != `FLEETWAVE_ARGOCD_INSECURE="maybe" is not a boolean` {
		t.Errorf("one problem: %v", err)
	}
	_, err = LoadCLI(env(EnvArgoCDInsecure, "maybe", EnvRenderMemory, "lots", EnvArgoCDToken, argoToken))
	if err == nil || err.Error() != `invalid environment (2 problems): FLEETWAVE_ARGOCD_INSECURE="maybe" is not a boolean; FLEETWAVE_RENDER_MEMORY: "lots" is not a size (bytes, or a number with K, M or G)` {
		t.Errorf("two problems: %v", err)
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"1GiB": 1 << 30, "512MiB": 512 << 20, "1073741824": 1 << 30, "1.5G": 3 << 29, "64M": 64 << 20, " 2k ": 2048} {
		if n, err := ParseBytes(in); err != nil || n != want {
			t.Errorf("%q: %d, %v; want %d", in, n, err, want)
		}
	}
	for _, bad := range []string{"", "x", "-1", "1TB?", "0"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
