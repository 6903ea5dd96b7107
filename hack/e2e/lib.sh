# Shared settings and helpers of hack/e2e/{up,down,test}.sh (sourced; needs ROOT and versions.sh).
NS=${FLEETWAVE_E2E_NETNS:-fleetwave-e2e}
BIN=$ROOT/.cache/e2e/bin
RUN=$ROOT/.cache/e2e/run
LOGS=$RUN/logs
PIDS=$RUN/pids
PKI=$RUN/pki
ENV_FILE=$RUN/env
KUBECONFIG_FILE=$RUN/admin.kubeconfig
KBIN=$BIN/kubernetes-$K8S_VERSION
ABIN=$BIN/argocd-$ARGOCD_VERSION
EBIN=$BIN/etcd-$ETCD_VERSION
KWOKBIN=$BIN/kwok-$KWOK_VERSION
TOOLPATH=$BIN/repo-server-path
# Fake clusters: name, address (all reach the one kube-apiserver), env and region labels.
CLUSTERS=("prod-eu-1 127.0.0.2 prod eu" "prod-us-1 127.0.0.3 prod us" "staging-eu-1 127.0.0.4 staging eu")
NODES=3

die() {
	echo "e2e: $*" >&2
	exit 1
}

# nsx runs a command inside the network namespace.
nsx() { ip netns exec "$NS" "$@"; }

# k runs the kubectl built by build.sh as cluster admin, inside the namespace.
k() { nsx "$KBIN/kubectl" --kubeconfig "$KUBECONFIG_FILE" "$@"; }

# start <name> <command...>: runs the command in the namespace, in its own session (it outlives this script), logging
# to $LOGS/<name>.log; its pid (setsid and ip netns exec both exec, so it is the process itself) goes to $PIDS.
start() {
	local name=$1
	shift
	setsid ip netns exec "$NS" "$@" >"$LOGS/$name.log" 2>&1 </dev/null &
	echo $! >"$PIDS/$name.pid"
}

# wait_for <what> <seconds> <command...>: retries the command every 0.2s; on timeout shows the logs' tails.
wait_for() {
	local what=$1 secs=$2
	shift 2
	local end=$(($(date +%s) + secs))
	until "$@" >/dev/null 2>&1; do
		if (($(date +%s) >= end)); then
			for f in "$LOGS"/*.log; do
				echo "--- ${f#"$ROOT"/} (tail)" >&2
				tail -n 5 "$f" >&2
			done
			die "timed out after ${secs}s waiting for $what"
		fi
		for f in "$PIDS"/*.pid; do
			kill -0 "$(cat "$f")" 2>/dev/null || {
				tail -n 20 "$LOGS/$(basename "$f" .pid).log" >&2
				die "$(basename "$f" .pid) exited while waiting for $what"
			}
		done
		sleep 0.2
	done
}

# mark <event>: records the time since up.sh started (T0).
mark() {
	local t
	t=$(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	echo "$1: ${t}s" >>"$RUN/timings.txt"
	printf '[up %6ss] %s\n' "$t" "$1"
}
