# Versions of everything the end-to-end environment builds and runs (sourced by the hack/e2e scripts).
# The wrapper modules under hack/e2e/modules pin the same versions in their go.mod.
K8S_VERSION=v1.34.4
ETCD_VERSION=v3.6.16
ARGOCD_VERSION=v3.6.1
# argo-cd v3.6.1 and the kustomize it pins (v5.8.3) declare go 1.27.0: the toolchain their builds run on (the same
# as GOTOOLCHAIN below; the go command downloads it from the module proxy).
ARGOCD_GOTOOLCHAIN=go1.27.4
KWOK_VERSION=v0.8.0
# The repo-server's helm and kustomize: the versions argo-cd v3.6.1 pins in hack/tool-versions.sh (Argo CD 3.5+
# ship Helm 4). build.sh builds them: helm with the Makefile (.cache/bin/helm-<version>), kustomize from
# modules/kustomize (.cache/e2e/bin/kustomize-<version>).
HELM_VERSION=v4.3.1
KUSTOMIZE_VERSION=v5.8.3
# The Go toolchain of the root module's go.mod (Go 1.27, as argo-cd v3.6 declares), fetched from the module proxy when
# the installed go is older (GOTOOLCHAIN=local would refuse instead); the wrapper modules build with it too.
export GOTOOLCHAIN=go1.27.4
