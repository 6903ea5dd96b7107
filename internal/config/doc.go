// Package config reads and validates the configuration of `fleetwave serve`.
//
// The settings are environment variables (FLEETWAVE_ADDR, FLEETWAVE_GITHUB_APP_ID,
// FLEETWAVE_GITHUB_PRIVATE_KEY_FILE or FLEETWAVE_GITHUB_PRIVATE_KEY, FLEETWAVE_WEBHOOK_SECRET,
// FLEETWAVE_GITHUB_API_URL, FLEETWAVE_ARGOCD_URL/TOKEN/INSECURE, FLEETWAVE_STORE, FLEETWAVE_CLUSTERS_FILE,
// FLEETWAVE_REPOSITORIES_FILE, FLEETWAVE_ALLOWED_OWNERS).
// A YAML file (--config or $FLEETWAVE_CONFIG) may set the same keys:
//
//	FLEETWAVE_GITHUB_APP_ID: 123456
//	FLEETWAVE_GITHUB_PRIVATE_KEY_FILE: /etc/fleetwave/app.pem
//	FLEETWAVE_STORE: postgres://fleetwave@db:5432/fleetwave
//
// The file is read strictly (unknown or repeated keys are errors with their line); the environment wins over
// it. LoadServe validates everything at once and returns an *Error listing one problem per line, each named
// by its variable (or file:line and key): the App ID, a readable PEM RSA private key, a webhook secret, URLs,
// booleans, the store scheme, the clusters file, the repositories file (Argo CD repository Secrets, read by
// internal/repocreds; its credentials are never printed).
//
// Secrets (private key, webhook secret, Argo CD token, store DSN) are held in Secret, which prints as
// "[redacted]" through fmt, slog and JSON; Serve.String shows the whole configuration with them redacted.
package config
