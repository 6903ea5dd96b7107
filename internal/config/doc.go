// Package config is the one home of fleetwave's settings: every FLEETWAVE_* environment variable is named,
// documented (Settings, from which docs/configuration.md's table is generated), read and validated here, and no
// other package reads one. LoadServe reads `fleetwave serve`'s; LoadCLI the other commands' (Argo CD access, the
// cache directory, the render pool, the fleet view's token), whose flags win over them; LoadRender the render
// pool's alone.
//
// A YAML file (--config or $FLEETWAVE_CONFIG) may set the same keys as serve's environment:
//
//	FLEETWAVE_GITHUB_APP_ID: 123456
//	FLEETWAVE_GITHUB_PRIVATE_KEY_FILE: /etc/fleetwave/app.pem
//	FLEETWAVE_STORE: postgres://fleetwave@db:5432/fleetwave
//
// The file is read strictly (unknown or repeated keys are errors with their line); the environment wins over
// it. LoadServe validates everything at once and returns an *Error listing one problem per line, each named
// by its variable (or file:line and key): the App ID, a readable PEM RSA private key, a webhook secret, URLs,
// booleans, the store scheme, the clusters file, the repositories file (Argo CD repository Secrets, read by
// internal/edge/repocreds; its credentials are never printed), the instances file of several Argo CD instances
// (readable, never with FLEETWAVE_ARGOCD_URL; its content is internal/edge/argocd/instances' to read).
//
// Secrets (private key, webhook secret, Argo CD token, fleet view token, store DSN) are held in Secret, which prints as
// "[redacted]" through fmt, slog and JSON; Serve.String shows the whole configuration with them redacted.
package config
