#!/usr/bin/env bash
# Runs the fidelity corpus's own comparison tool on bin/fleetwave render.
# Usage: hack/fidelity.sh [expected file name: expected-helm3.yaml (default) | expected.yaml (Helm 4 reference)]
set -euo pipefail
cd "$(dirname "$0")/.."
corpus="${FLEETWAVE_FIDELITY_DIR:-$(cd .. && pwd)/shared/fidelity}"
expected="${1:-expected-helm3.yaml}"
if [ ! -d "$corpus/cases" ]; then
  echo "fidelity: corpus not found at $corpus (set FLEETWAVE_FIDELITY_DIR): skipped"
  exit 0
fi
mkdir -p .cache/bin
(cd "$corpus/compare" && go build -o "$OLDPWD/.cache/bin/fidelity-compare" .)
bin="$(pwd)/bin/fleetwave"
.cache/bin/fidelity-compare -cases "$corpus/cases" -expected "$expected" -- "$bin render --app {app} --repo-root {root} --settings {env}"
