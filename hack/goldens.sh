#!/usr/bin/env bash
# Regenerates the expected outputs of the team's own render fixtures with Argo CD's own manifest generation
# (tools/oracle: reposerver/repository.GenerateManifests of argo-cd v3.6.1, with the helm CLI it ships, 4.3.1, and
# the pinned kustomize CLI on PATH). A fixture is a folder in the fidelity corpus's layout: app.yaml, render-env.yaml, src/...
# Where Argo CD refuses to render, expected-error.txt holds its message instead of expected.yaml.
#
# A fixture containing ORACLE-SKIP keeps its hand-written expectation; the file says why (e.g. a refusal that is
# fleetwave's own).
#
# Usage: hack/goldens.sh [fixture dir ...]   (default: every fixture of the repository)
set -euo pipefail
cd "$(dirname "$0")/.."
# go.mod asks for Go 1.27 (argo-cd v3.6 declares it): the toolchain it names, fetched from the module proxy when the
# installed go is older (GOTOOLCHAIN=local would refuse instead).
export GOTOOLCHAIN=go1.27.4
root=$(pwd)
: "${HELM_BIN:?}" "${KUSTOMIZE_BIN:?}"
path=$root/.cache/oracle-path
mkdir -p "$path" .cache/bin
ln -sf "$HELM_BIN" "$path/helm"
ln -sf "$KUSTOMIZE_BIN" "$path/kustomize"
(cd tools/oracle && go build -o "$root/.cache/bin/oracle" .)

if [ $# -eq 0 ]; then
	set -- $(ls -d testdata/fixtures/render/*/ internal/render/*/testdata/fixtures/*/ 2>/dev/null)
fi
for dir in "$@"; do
	dir=${dir%/}
	[ -f "$dir/app.yaml" ] || continue
	if [ -f "$dir/ORACLE-SKIP" ]; then
		echo "skip  $dir ($(head -n 1 "$dir/ORACLE-SKIP"))"
		continue
	fi
	env=()
	[ -f "$dir/render-env.yaml" ] && env=(--settings "$dir/render-env.yaml")
	if out=$(PATH="$path:$PATH" "$root/.cache/bin/oracle" --app "$dir/app.yaml" --repo-root "$dir" "${env[@]}" 2>"$dir/.oracle-stderr"); then
		printf '%s\n' "$out" >"$dir/expected.yaml"
		rm -f "$dir/expected-error.txt"
		echo "ok    $dir"
	else
		# Keep Argo CD's message, without the temp paths it contains.
		sed -E 's#/tmp/[^ ]*#<tmp>#g' "$dir/.oracle-stderr" | grep -v '^{' | tail -n 1 >"$dir/expected-error.txt"
		rm -f "$dir/expected.yaml"
		echo "error $dir: $(cat "$dir/expected-error.txt")"
	fi
	rm -f "$dir/.oracle-stderr"
done
