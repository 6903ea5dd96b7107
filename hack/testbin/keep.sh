#!/usr/bin/env bash
# go test -exec hack/testbin/keep.sh: runs each test binary as go test would (same process: exec), after keeping a
# hard link to it (a copy across file systems) in $FLEETWAVE_KEEP_TEST_BINARIES/<package directory>/pkg.test, so that
# hack/testbin/run.sh can run the same binaries again elsewhere without compiling or linking them (.ci/run's
# lone-clone run: ~40 CPU-s of linking per large race-enabled test binary). go test starts it in the package's
# directory: that names the binary.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
if [ -n "${FLEETWAVE_KEEP_TEST_BINARIES:-}" ]; then
	rel=${PWD#"$root"}
	rel=${rel#/}
	dir="$FLEETWAVE_KEEP_TEST_BINARIES/${rel:-.}"
	mkdir -p "$dir"
	ln -f "$1" "$dir/pkg.test" 2>/dev/null || cp "$1" "$dir/pkg.test"
fi
exec "$@"
