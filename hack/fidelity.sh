#!/usr/bin/env bash
# Runs the fidelity corpus's own comparison tool on bin/fleetwave render, once per reference toolchain, each
# rendered as the Argo CD release it belongs to: expected.yaml (Argo CD 3.5 + helm 4) as 3.5, and
# expected-helm3.yaml (the Argo CD 3.4 toolchain, helm 3.19.4) as 3.4.
# Usage: hack/fidelity.sh [expected.yaml | expected-helm3.yaml]   (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
# go.mod asks for Go 1.27 (argo-cd v3.6 declares it): the toolchain it names, fetched from the module proxy when the
# installed go is older (GOTOOLCHAIN=local would refuse instead).
export GOTOOLCHAIN=go1.27.4
corpus="${FLEETWAVE_FIDELITY_DIR:-$(cd .. && pwd)/shared/fidelity}"
if [ ! -d "$corpus/cases" ]; then
  echo "fidelity: corpus not found at $corpus (set FLEETWAVE_FIDELITY_DIR): skipped"
  exit 0
fi
mkdir -p .cache/bin
(cd "$corpus/compare" && go build -o "$OLDPWD/.cache/bin/fidelity-compare" .)
bin="$(pwd)/bin/fleetwave"
refs=("${1:-expected.yaml}")
[ $# -eq 0 ] && refs=(expected.yaml expected-helm3.yaml)
for expected in "${refs[@]}"; do
  case "$expected" in
    expected.yaml) version=3.5 ;;
    expected-helm3.yaml) version=3.4 ;;
    *) echo "fidelity: unknown reference $expected (expected.yaml or expected-helm3.yaml)" >&2; exit 2 ;;
  esac
  echo "fidelity: $expected as Argo CD $version"
  .cache/bin/fidelity-compare -cases "$corpus/cases" -expected "$expected" -- \
    "$bin render --app {app} --repo-root {root} --settings {env} --argocd-version $version"
done
