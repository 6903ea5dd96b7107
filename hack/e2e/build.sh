#!/usr/bin/env bash
# Builds everything the end-to-end environment runs (hack/e2e/README.md), from the Go module proxy, into
# .cache/e2e/bin/<piece>-<version>/. Anything already built is skipped, so a warm run takes seconds.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
source hack/e2e/versions.sh

GO=${GO:-go}
BIN=$ROOT/.cache/e2e/bin
LOGS=$ROOT/.cache/e2e/build-logs
mkdir -p "$BIN" "$LOGS"
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"

t0=$(date +%s)
say() { printf '[build %4ds] %s\n' $(($(date +%s) - t0)) "$*"; }

# --- system packages -------------------------------------------------------------------------------
need=()
command -v redis-server >/dev/null || need+=(redis-server)
command -v ip >/dev/null || need+=(iproute2)
command -v openssl >/dev/null || need+=(openssl)
command -v git >/dev/null || need+=(git)
command -v curl >/dev/null || need+=(curl)
if ((${#need[@]})); then
	say "apt-get install ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >"$LOGS/apt.log" 2>&1 || true
	apt-get install -y -qq --no-install-recommends "${need[@]}" >>"$LOGS/apt.log" 2>&1
fi

# build <name> <dir> <module dir> <go build args...>: builds into a temp dir, moved into place when complete.
build() {
	local name=$1 dir=$2 mod=$3
	shift 3
	if [[ -f $dir/.complete ]]; then
		say "$name: cached in ${dir#"$ROOT"/}"
		return
	fi
	local tmp=$dir.tmp s=$(date +%s)
	rm -rf "$tmp" && mkdir -p "$tmp"
	say "$name: building (log: ${LOGS#"$ROOT"/}/$name.log)"
	if ! (cd "$mod" && "$GO" build -o "$tmp/" "$@") >"$LOGS/$name.log" 2>&1; then
		tail -n 30 "$LOGS/$name.log"
		say "$name: FAILED"
		exit 1
	fi
	touch "$tmp/.complete"
	rm -rf "$dir" && mv "$tmp" "$dir"
	say "$name: built in $(($(date +%s) - s))s"
}

MODS=$ROOT/hack/e2e/modules
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)

# --- Kubernetes: kube-apiserver, kube-controller-manager, kube-scheduler, kubectl ---------------------
kv=k8s.io/component-base/version
cv=k8s.io/client-go/pkg/version
minor=${K8S_VERSION#v*.}
minor=${minor%%.*}
major=${K8S_VERSION#v}
major=${major%%.*}
kldflags="-s -w"
for p in $kv $cv; do
	kldflags+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=$major -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=$now"
done
build kubernetes "$BIN/kubernetes-$K8S_VERSION" "$MODS/kubernetes" -ldflags "$kldflags" \
	k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
	k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl

# --- Argo CD: one binary, the components are symlinks (it dispatches on its name) -------------------
ap=github.com/argoproj/argo-cd/v3/common
GOTOOLCHAIN=$ARGOCD_GOTOOLCHAIN build argocd "$BIN/argocd-$ARGOCD_VERSION" "$MODS/argocd" \
	-ldflags "-s -w -X $ap.version=${ARGOCD_VERSION#v} -X $ap.buildDate=$now -X $ap.gitTreeState=clean -X $ap.gitTag=$ARGOCD_VERSION" \
	github.com/argoproj/argo-cd/v3/cmd
ad=$BIN/argocd-$ARGOCD_VERSION
[[ -f $ad/cmd ]] && mv "$ad/cmd" "$ad/argocd"
for n in argocd-server argocd-repo-server argocd-application-controller; do
	ln -sfn argocd "$ad/$n"
done

# --- etcd ---------------------------------------------------------------------------------------------
build etcd "$BIN/etcd-$ETCD_VERSION" "$MODS/etcd" -ldflags "-s -w" .
[[ -f $BIN/etcd-$ETCD_VERSION/etcd ]] || mv "$BIN/etcd-$ETCD_VERSION/e2e" "$BIN/etcd-$ETCD_VERSION/etcd" 2>/dev/null || true

# --- kwok (a plain go install works) -----------------------------------------------------------------
kd=$BIN/kwok-$KWOK_VERSION
if [[ -f $kd/.complete ]]; then
	say "kwok: cached in ${kd#"$ROOT"/}"
else
	s=$(date +%s)
	say "kwok: building"
	rm -rf "$kd.tmp" && mkdir -p "$kd.tmp"
	GOBIN=$kd.tmp "$GO" install -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" >"$LOGS/kwok.log" 2>&1 || {
		tail -n 30 "$LOGS/kwok.log"
		exit 1
	}
	touch "$kd.tmp/.complete" && rm -rf "$kd" && mv "$kd.tmp" "$kd"
	say "kwok: built in $(($(date +%s) - s))s"
fi

# --- helm and kustomize for the repo-server's PATH: the versions argo-cd pins (hack/tool-versions.sh) ----
# helm: the Makefile's rule (go install, cached in .cache/bin). kustomize v5.8.3 cannot be go-installed (a
# dependency the module proxy refuses, modules/kustomize/go.mod), so it builds from its wrapper module; the binary
# still says v5.8.3 (`kustomize version` reads it from the build info), which Argo CD checks before passing
# --helm-kube-version/--helm-api-versions (util/kustomize/kustomize.go Build, >= v5.3.0).
make -s -C "$ROOT" ".cache/bin/helm-$HELM_VERSION"
GOTOOLCHAIN=$ARGOCD_GOTOOLCHAIN build kustomize "$BIN/kustomize-$KUSTOMIZE_VERSION" "$MODS/kustomize" -ldflags "-s -w" \
	sigs.k8s.io/kustomize/kustomize/v5
kud=$BIN/kustomize-$KUSTOMIZE_VERSION
[[ -f $kud/kustomize ]] || mv "$kud/v5" "$kud/kustomize"
td=$BIN/repo-server-path
mkdir -p "$td"
ln -sfn "$ROOT/.cache/bin/helm-$HELM_VERSION" "$td/helm"
ln -sfn "$kud/kustomize" "$td/kustomize"
# Argo CD's image puts its git and gpg wrappers on PATH (Dockerfile: COPY hack/gpg-wrapper.sh
# hack/git-verify-wrapper.sh /usr/local/bin/). Since v3.6 the repo-server runs git-verify-wrapper.sh for every git
# source, GPG enabled or not (reposerver/repository/repository.go runRepoOperation, util/git/client.go
# VerifyCommitSignature), and answers "permission denied" when it cannot. Copied (the module cache is read-only, 0444).
ad_src=$(cd "$MODS/argocd" && GOTOOLCHAIN=$ARGOCD_GOTOOLCHAIN "$GO" list -m -f '{{.Dir}}' github.com/argoproj/argo-cd/v3)
install -m 0755 "$ad_src/hack/git-verify-wrapper.sh" "$ad_src/hack/gpg-wrapper.sh" "$td/"

say "done: $(du -sh "$BIN" | cut -f1) of binaries in ${BIN#"$ROOT"/}"
