#!/usr/bin/env bash
# make e2e: starts the environment (up.sh), runs the end-to-end tests inside its network namespace, and always
# stops it (down.sh), even on failure. Set FLEETWAVE_E2E_KEEP=1 to leave it running for debugging.
# Extra arguments go to the test binary (e.g. -test.run 'TestContractAgainstRealArgoCD/Terminate').
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
source hack/e2e/versions.sh
source hack/e2e/lib.sh

GO=${GO:-go}
cleanup() {
	if [[ ${FLEETWAVE_E2E_KEEP:-} == 1 ]]; then
		echo "e2e: FLEETWAVE_E2E_KEEP=1, leaving the environment running (make e2e-down stops it)"
	else
		bash "$ROOT/hack/e2e/down.sh"
	fi
}
trap cleanup EXIT

# Compile outside the namespace (it has no network, should the build need the module proxy), run inside it from
# the package directory, as go test does.
mkdir -p .cache/e2e
"$GO" test -c -o .cache/e2e/e2e.test ./test/e2e/
"$GO" build -o .cache/e2e/fleetwave ./cmd/bot # the App, run as its own process by the flow test
bash hack/e2e/up.sh
cd test/e2e
ip netns exec "$NS" env FLEETWAVE_E2E_ENV="$ENV_FILE" FLEETWAVE_E2E_BOT="$ROOT/.cache/e2e/fleetwave" "$ROOT/.cache/e2e/e2e.test" -test.count=1 -test.v -test.timeout 30m "$@"
