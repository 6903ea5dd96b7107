# Versions of everything the end-to-end environment builds and runs (sourced by the hack/e2e scripts).
# The wrapper modules under hack/e2e/modules pin the same versions in their go.mod.
K8S_VERSION=v1.34.4
ETCD_VERSION=v3.6.16
ARGOCD_VERSION=v3.2.11
KWOK_VERSION=v0.8.0
HELM_VERSION=v3.19.4
KUSTOMIZE_VERSION=v5.8.1
# The Go toolchain of the root module's go.mod (Go 1.27, as argo-cd v3.6 declares), fetched from the module proxy when
# the installed go is older (GOTOOLCHAIN=local would refuse instead); the wrapper modules build with it too.
export GOTOOLCHAIN=go1.27.4
