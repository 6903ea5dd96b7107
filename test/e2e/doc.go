// Package e2e holds the end-to-end tests that run against a real Argo CD syncing into a real Kubernetes API
// server (hack/e2e). They are skipped unless FLEETWAVE_E2E_ENV names the env file hack/e2e/up.sh writes (or its
// variables are set); `make e2e` builds and starts the environment, runs them inside its network namespace and
// stops it.
package e2e
