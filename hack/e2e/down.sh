#!/usr/bin/env bash
# Stops every process up.sh started (by the pids it recorded, then any left in the network namespace) and deletes
# the namespace. Logs stay in .cache/e2e/run/logs until the next up.sh.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/hack/e2e/versions.sh"
source "$ROOT/hack/e2e/lib.sh"

pids=()
for f in "$PIDS"/*.pid; do
	[[ -f $f ]] || continue
	p=$(cat "$f")
	kill -0 "$p" 2>/dev/null && pids+=("$p")
done
# Whatever else still runs inside the namespace was started there by up.sh or the tests.
if ip netns list | grep -qw "^$NS"; then
	for p in $(ip netns pids "$NS" 2>/dev/null); do
		[[ " ${pids[*]} " == *" $p "* ]] || pids+=("$p")
	done
fi
if ((${#pids[@]})); then
	kill -TERM "${pids[@]}" 2>/dev/null
	for _ in $(seq 1 50); do
		alive=()
		for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive+=("$p"); done
		((${#alive[@]})) || break
		sleep 0.2
	done
	((${#alive[@]})) && kill -KILL "${alive[@]}" 2>/dev/null
fi
rm -f "$PIDS"/*.pid
if ip netns list | grep -qw "^$NS"; then
	ip netns del "$NS"
fi
echo "e2e: stopped ${#pids[@]} processes, namespace $NS deleted"
