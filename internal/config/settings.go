package config

// The environment variables fleetwave reads, every one of them: serve's (which a config file may set too) and
// the other commands'. Settings lists them with their documentation; docs/configuration.md's table is generated
// from it (TestConfigurationTable), and no other package reads a FLEETWAVE_* variable (TestNoSettingOutsideConfig).
const (
	EnvConfigFile     = "FLEETWAVE_CONFIG"
	EnvAddr           = "FLEETWAVE_ADDR"
	EnvAppID          = "FLEETWAVE_GITHUB_APP_ID"
	EnvPrivateKeyFile = "FLEETWAVE_GITHUB_PRIVATE_KEY_FILE"
	EnvPrivateKey     = "FLEETWAVE_GITHUB_PRIVATE_KEY"
	EnvWebhookSecret  = "FLEETWAVE_WEBHOOK_SECRET"
	EnvAPIURL         = "FLEETWAVE_GITHUB_API_URL"
	EnvArgoCDURL      = "FLEETWAVE_ARGOCD_URL"
	EnvArgoCDToken    = "FLEETWAVE_ARGOCD_TOKEN"
	EnvArgoCDInsecure = "FLEETWAVE_ARGOCD_INSECURE"
	EnvStore          = "FLEETWAVE_STORE"
	EnvClustersFile   = "FLEETWAVE_CLUSTERS_FILE"
	// EnvRepositoriesFile names the allowed chart repositories: Argo CD repository and repo-creds Secrets.
	EnvRepositoriesFile = "FLEETWAVE_REPOSITORIES_FILE"
	// EnvAllowedOwners lists the accounts (organisations or users) whose installations the App serves,
	// comma-separated; events from any other installation are ignored. Unset: every installation.
	EnvAllowedOwners = "FLEETWAVE_ALLOWED_OWNERS"

	EnvCacheDir              = "FLEETWAVE_CACHE_DIR"
	EnvRenderSettings        = "FLEETWAVE_RENDER_SETTINGS"
	EnvRenderWorkers         = "FLEETWAVE_RENDER_WORKERS"
	EnvRenderMemory          = "FLEETWAVE_RENDER_MEMORY"
	EnvRenderTimeout         = "FLEETWAVE_RENDER_TIMEOUT"
	EnvRenderShare           = "FLEETWAVE_RENDER_SHARE"
	EnvRenderBudget          = "FLEETWAVE_RENDER_BUDGET"
	EnvRenderChangeOutput    = "FLEETWAVE_RENDER_CHANGE_OUTPUT"
	EnvGitHubWrites          = "FLEETWAVE_GITHUB_WRITES_PER_MINUTE"
	EnvReplicaName           = "FLEETWAVE_REPLICA_NAME"
	EnvFleetViewToken        = "FLEETWAVE_FLEET_VIEW_TOKEN"
	EnvFleetViewInsecure     = "FLEETWAVE_FLEET_VIEW_INSECURE_COOKIE"
	EnvArgoCDRenderHeadRepos = "FLEETWAVE_ARGOCD_RENDER_HEAD_REPOS"

	// EnvDriftAfter is how long an app stays OutOfSync or Degraded before it is in lasting drift (internal/drift);
	// EnvDriftReportRepo the repository (owner/name) where each such app gets a GitHub issue.
	EnvDriftAfter      = "FLEETWAVE_DRIFT_AFTER"
	EnvDriftReportRepo = "FLEETWAVE_DRIFT_REPORT_REPO"

	// EnvArgoCDInstances names the instances file: several Argo CD instances (internal/edge/argocd/instances).
	EnvArgoCDInstances = "FLEETWAVE_ARGOCD_INSTANCES_FILE"

	// EnvHistoryRetention is how long serve keeps a finished rollout's record (the audit trail).
	EnvHistoryRetention = "FLEETWAVE_HISTORY_RETENTION"
)

// Who reads a setting.
const (
	ForServe = 1 << iota // fleetwave serve (and its config file, but for FLEETWAVE_CONFIG itself)
	ForCLI               // the other commands: diff, plan, render, render-all, rollout
)

// Setting documents one variable.
type Setting struct {
	Name    string
	For     int    // ForServe, ForCLI or both
	Default string // "" when unset means off or none
	Secret  bool   // a credential: never printed, redacted from the CLI's output
	Doc     string // one sentence or two, markdown
}

// Settings are every FLEETWAVE_* variable, in documentation order.
var Settings = []Setting{
	{Name: EnvConfigFile, For: ForServe, Doc: "a YAML file setting any of serve's other keys (`--config` wins over it; the environment wins over the file)"},
	{Name: EnvAddr, For: ForServe, Default: DefaultAddr, Doc: "listen address: webhooks at `/webhooks/github`, `/healthz`, `/readyz`, `/metrics`"},
	{Name: EnvAppID, For: ForServe, Doc: "the GitHub App's ID (required)"},
	{Name: EnvPrivateKeyFile, For: ForServe, Doc: "the App's private key, a PEM file (required, or the next one)"},
	{Name: EnvPrivateKey, For: ForServe, Secret: true, Doc: "the App's private key itself, PEM (`\\n` for line breaks in a one-line env file)"},
	{Name: EnvWebhookSecret, For: ForServe, Secret: true, Doc: "the App's webhook secret (required: unsigned or mis-signed deliveries are refused)"},
	{Name: EnvAPIURL, For: ForServe, Default: DefaultAPIURL, Doc: "GitHub's API base URL; GitHub Enterprise Server: `https://HOST/api/v3/`"},
	{Name: EnvArgoCDURL, For: ForServe | ForCLI, Doc: "Argo CD's API (rollout: the default of `--argocd`). Without it serve diffs base against head only and logs merges instead of rolling them out"},
	{Name: EnvArgoCDToken, For: ForServe | ForCLI, Secret: true, Doc: "an Argo CD token (account or project role) that may get, sync and patch the fleet's Applications and list clusters (rollout: `--token`'s default; diff: `--argocd-token`'s)"},
	{Name: EnvArgoCDInsecure, For: ForServe | ForCLI, Default: "false", Doc: "skip TLS verification of Argo CD (local test servers only)"},
	{Name: EnvArgoCDInstances, For: ForServe | ForCLI, Doc: "several Argo CD instances: a YAML file of each one's URL, token (from a variable or a file, re-read when it changes), TLS options, sync budget and the apps it holds ([instances.md](instances.md)); instead of `FLEETWAVE_ARGOCD_URL` (rollout: `--argocd-instances`' default)"},
	{Name: EnvArgoCDRenderHeadRepos, For: ForServe, Doc: "repositories (`owner/name`, comma-separated; `*` for all) whose pull-request heads may be rendered through Argo CD, plugins included; never a fork's ([security.md](security.md))"},
	{Name: EnvStore, For: ForServe | ForCLI, Default: DefaultStore, Doc: "the state store: `sqlite:///path/fleetwave.db`, or `postgres://…` for several replicas sharing the work (its password is never printed); `rollout history`: `--store`'s default"},
	{Name: EnvHistoryRetention, For: ForServe, Default: "0", Doc: "how long serve keeps a finished rollout's record, its audit trail included ([audit.md](audit.md)): a duration such as `90d` or `2160h`; `0` keeps every rollout forever. Applied hourly to finished rollouts only, never a running or paused one"},
	{Name: EnvReplicaName, For: ForServe, Default: "hostname-pid", Doc: "this replica's name in rollout leases: give each one a name that survives restarts (a StatefulSet pod name), so a restarted replica takes its rollouts back at once"},
	{Name: EnvClustersFile, For: ForServe, Doc: "cluster labels when there is no Argo CD: a YAML stream of Argo CD cluster Secrets"},
	{Name: EnvRepositoriesFile, For: ForServe, Doc: "the Helm repositories, OCI registries and other git repositories sources may be fetched from: Argo CD repository / repo-creds Secrets ([repositories.md](repositories.md)); without it such apps are `skipped`"},
	{Name: EnvAllowedOwners, For: ForServe, Doc: "the accounts (organisations or users, comma-separated) whose installations are served; events of any other are ignored (default: every installation)"},
	{Name: EnvCacheDir, For: ForServe | ForCLI, Doc: "clone, chart and git cache (default: `fleetwave-cache` next to the SQLite store, else the user cache directory)"},
	{Name: EnvRenderSettings, For: ForServe, Doc: "render settings file (render-env.yaml keys: kubeVersion, apiVersions, argocdVersion, …), over what Argo CD reports"},
	{Name: EnvRenderWorkers, For: ForServe | ForCLI, Default: "GOMAXPROCS", Doc: "render worker processes; `0` renders in-process ([isolation.md](isolation.md))"},
	{Name: EnvRenderMemory, For: ForServe | ForCLI, Default: "1GiB", Doc: "one render worker's memory cap: bytes, or with `K`/`M`/`G`"},
	{Name: EnvRenderTimeout, For: ForServe | ForCLI, Default: "60s", Doc: "one app's render time cap, when the command sets none"},
	{Name: EnvRenderShare, For: ForServe, Default: "all workers but one", Doc: "render workers one installation holds at once, so one installation's bombs never starve another"},
	{Name: EnvRenderBudget, For: ForServe, Default: "10m", Doc: "the time of all the renders of one change, base and head (negative: no budget)"},
	{Name: EnvRenderChangeOutput, For: ForServe, Default: "1GiB", Doc: "the manifests of all the renders of one change"},
	{Name: EnvGitHubWrites, For: ForServe, Default: "60", Doc: "content-creating GitHub requests per installation and minute, in bursts of a third, and 8 times as many an hour: under GitHub's secondary limits of 80 and 500"},
	{Name: EnvFleetViewToken, For: ForServe | ForCLI, Secret: true, Doc: "turns on serve's fleet view at `/fleet/` and is the token people sign in with (16 characters or more); `rollout --ui` prints a random one without it"},
	{Name: EnvFleetViewInsecure, For: ForServe, Default: "false", Doc: "`true` leaves the fleet view's session cookie without Secure: plain-HTTP development only"},
	{Name: EnvDriftAfter, For: ForServe, Doc: "how long an app may stay OutOfSync or Degraded, outside a rollout about to sync it, before it is in lasting drift: counted on `/metrics` and reported ([drift.md](drift.md)); a duration such as `30m`; unset or `0`: off"},
	{Name: EnvDriftReportRepo, For: ForServe, Doc: "a repository (`owner/name`) the App is installed on where each app in lasting drift gets one GitHub issue, edited as it changes and closed when it converges ([drift.md](drift.md)); needs `FLEETWAVE_DRIFT_AFTER`"},
}

// fileKeys are the settings a config file may set: serve's, but for the file's own name.
func fileKeys() []string {
	var out []string
	for _, s := range Settings {
		if s.For&ForServe != 0 && s.Name != EnvConfigFile {
			out = append(out, s.Name)
		}
	}
	return out
}

// SecretNames are the variables holding credentials, for redaction.
func SecretNames() []string {
	var out []string
	for _, s := range Settings {
		if s.Secret {
			out = append(out, s.Name)
		}
	}
	return out
}
