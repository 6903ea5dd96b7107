#!/usr/bin/env bash
# Draws the PR comment as GitHub shows it, from the golden comments the tests keep current, into docs/pictures/
# (make comment-pictures). Needs Debian's chromium and `npm ci` here (make comment-deps).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
chromium=$(command -v chromium || command -v chromium-browser || true)
if [[ -z "$chromium" || ! -d "$here/node_modules/mermaid" ]]; then
  echo "comment-pictures: needs chromium and hack/commentshot/node_modules (make comment-deps)" >&2
  exit 2
fi
mkdir -p "$root/docs/pictures"
# The class summary: the head of the example's comment, up to its "Needs attention" list.
awk '/^\*\*Needs attention\*\*/ { exit } { print }' "$root/internal/preview/testdata/example-plan.md" >"$out/class-summary.md"
node "$here/render.mjs" "$out" "$root/internal/preview/testdata/example-plan.md" "$root/internal/preview/testdata/fleet-500-one-value.md" "$out/class-summary.md"
shot() { # page, picture, height
  "$chromium" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars \
    --user-data-dir="$out/profile" --virtual-time-budget=30000 --window-size=1040,"$3" \
    --screenshot="$2" "file://$out/$1.html" 2>/dev/null
  echo "wrote ${2#"$root"/} ($(du -k "$2" | cut -f1) KB)"
}
shot example-plan "$root/docs/pictures/comment-example.png" 1500
shot fleet-500-one-value "$root/docs/pictures/comment-fleet-500.png" 1100
shot class-summary "$root/docs/pictures/comment-classes.png" 800
