#!/usr/bin/env bash
# fleetwave demo: turns examples/fleet into a real git history — the fleet as the base commit, and the
# pull-request-like change of examples/fleet-change on a branch — then runs `fleetwave diff` and `fleetwave plan`
# on it, prints both, writes the pull-request comment the GitHub App would post, and rolls the change out wave by
# wave against the Argo CD simulator (DEMO_ROLLOUT=0 skips that part).
#
# No credentials, no network: the repository is local, and its origin URL (https://github.com/example/fleet.git,
# the repoURL of the example's Applications) is never fetched. The vendor charts the fleet installs from outside it
# (examples/vendor-charts: ingress-nginx from a Helm repository, cert-manager from an OCI registry) are served for
# the run by hack/chartserve on 127.0.0.1, reached as charts.fleet.example and registry.fleet.example through its
# proxy (HTTPS_PROXY), and allowed by the repositories file it writes (--repositories).
#
# Environment:
#   DEMO_OUT   where the outputs go (default: bin/demo in the repository)
#   FLEETWAVE  a fleetwave binary to use instead of building ./cmd/bot
set -euo pipefail
# go.mod asks for Go 1.27 (argo-cd v3.6 declares it): the toolchain it names, fetched from the module proxy when the
# installed go is older (GOTOOLCHAIN=local would refuse instead).
export GOTOOLCHAIN=go1.27.4

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${DEMO_OUT:-$root/bin/demo}
work=$(mktemp -d "${TMPDIR:-/tmp}/fleetwave-demo.XXXXXX")
charts_pid=
sims=() # the Argo CD simulators of the rollout
trap 'for p in $charts_pid "${sims[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
mkdir -p "$out"
rm -f "$out/rollout.txt" # written again by this run's rollout (unless DEMO_ROLLOUT=0)

bold() { if [ -t 1 ]; then printf '\n\033[1m%s\033[0m\n' "$*"; else printf '\n%s\n' "$*"; fi; }

# first_line FILE LOG WHAT: the first line a server started in the background writes to FILE (its URL), waiting
# up to 10 s; else the demo ends with WHAT and the server's LOG.
first_line() {
	for _ in $(seq 1 100); do [ -s "$1" ] && break; sleep 0.1; done
	local line
	line=$(head -n 1 "$1")
	if [ -z "$line" ]; then
		echo "demo: $3 did not start:" >&2
		cat "$2" >&2
		exit 1
	fi
	printf '%s\n' "$line"
}

# 1. The fleet repository: base commit on main, the change on a branch, as a pull request would have them.
repo=$work/fleet
cp -R "$root/examples/fleet" "$repo"
git_() {
	GIT_AUTHOR_NAME="fleetwave demo" GIT_AUTHOR_EMAIL=demo@example.com \
	GIT_COMMITTER_NAME="fleetwave demo" GIT_COMMITTER_EMAIL=demo@example.com \
	GIT_AUTHOR_DATE=2025-01-01T00:00:00Z GIT_COMMITTER_DATE=2025-01-01T00:00:00Z \
		git -C "$repo" -c core.hooksPath=/dev/null -c commit.gpgsign=false "$@"
}
git_ init -q -b main
git_ remote add origin https://github.com/example/fleet.git
git_ add -A
git_ commit -q -m "Example fleet: 9 clusters, web (Helm), api (Kustomize), tenants, payments, status page, vendor charts"
git_ checkout -q -b change
(cd "$root/examples/fleet-change" && tar --exclude=./README.md -cf - .) | (cd "$repo" && tar -xf -)
git_ add -A
git_ commit -q -m "Roll out web 1.5.0, add an API readiness probe, rotate the payments DB password, onboard team-c, ingress-nginx 4.11.0"

bold "The change under review (git diff --stat main...change):"
git_ --no-pager diff --stat main...change

# 2. fleetwave, built once (the same as `go run ./cmd/bot`, without compiling twice).
bin=${FLEETWAVE:-}
if [ -z "$bin" ]; then
	bin=$work/fleetwave
	bold "Building fleetwave (go build ./cmd/bot): the first build compiles about 1,700 packages (Argo CD, Helm, Kustomize, Kubernetes), about 7 minutes on 2 cores; later builds take seconds."
	t0=$(date +%s)
	(cd "$root" && go build -o "$bin" ./cmd/bot) &
	pid=$!
	n=0
	while kill -0 "$pid" 2>/dev/null; do
		sleep 1
		n=$((n + 1))
		if [ $((n % 20)) -eq 0 ] && kill -0 "$pid" 2>/dev/null; then
			echo "  ... still compiling ($((n))s)"
		fi
	done
	wait "$pid"
	echo "  built in $(($(date +%s) - t0))s: $(du -m "$bin" | cut -f1) MB"
fi

# The vendor charts, served for the run (hack/chartserve): a Helm repository and an OCI registry on 127.0.0.1.
bold "Serving the vendor charts (hack/chartserve): https://charts.fleet.example (Helm repository) and registry.fleet.example/charts (OCI), on 127.0.0.1"
(cd "$root" && go build -o "$work/chartserve" ./hack/chartserve)
"$work/chartserve" --charts "$root/examples/vendor-charts" --repositories "$work/repositories.yaml" >"$work/charts.url" 2>"$work/charts.log" &
charts_pid=$!
proxy=$(first_line "$work/charts.url" "$work/charts.log" "the chart server")
export HTTPS_PROXY=$proxy                   # only charts.fleet.example and registry.fleet.example are tunnelled
export FLEETWAVE_CACHE_DIR=$work/cache      # the chart cache of this run, not the user's
repos=(--repositories "$work/repositories.yaml")

status=0
bold "\$ fleetwave diff --repo <fleet> --base main --head change --repositories <repositories.yaml>"
"$bin" diff --repo "$repo" --base main --head change "${repos[@]}" | tee "$out/diff.txt" || status=$?

bold "\$ fleetwave plan --repo <fleet> --base main --head change --markdown-out $out/comment.md"
"$bin" plan --repo "$repo" --base main --head change "${repos[@]}" --markdown-out "$out/comment.md" --output text \
	| sed -n '/^plan:/,$p' | tee "$out/plan.txt" || status=$?
"$bin" plan --repo "$repo" --base main --head change "${repos[@]}" --output json >"$out/plan.json" || status=$?

# 3. The rollout half: the same change carried across the fleet wave by wave, against two Argo CD simulators
#    (`fleetwave argocd-sim`, each seeded with the plan's apps its instance holds, live at main). The example
#    fleet runs two Argo CD instances (examples/rollout-demo/instances.yaml): the management cluster's own Argo CD
#    holds the platform add-ons (bootstrap/platform.yaml and what it applies), the workload Argo CD the storefront
#    (bootstrap/root.yaml and its apps). The demo's policy is the example's with soaks of seconds and no
#    Prometheus gate (examples/rollout-demo), committed on top of the change.
if [ "${DEMO_ROLLOUT:-1}" = 1 ]; then
	bold "Rollout: the change, wave by wave, through the Argo CD API of two instances, mgmt and workloads (simulators here; soaks of 3 s instead of 10m/30m/1h):"
	git_ checkout -q -b rollout-demo change
	cp "$root/examples/rollout-demo/.fleetwave.yaml" "$repo/.fleetwave.yaml"
	git_ commit -q -am "Demo policy: soaks of seconds, no Prometheus gate"
	"$bin" plan --repo "$repo" --base main --head rollout-demo "${repos[@]}" --output json >"$work/rollout-plan.json" || true
	export FLEETWAVE_DEMO_MGMT_TOKEN=demo-mgmt-token-not-a-secret
	export FLEETWAVE_DEMO_WORKLOADS_TOKEN=demo-workloads-token-not-a-secret
	instances=$root/examples/rollout-demo/instances.yaml
	cp "$instances" "$work/instances.yaml"
	for inst in mgmt workloads; do
		token=FLEETWAVE_DEMO_${inst^^}_TOKEN
		"$bin" argocd-sim --addr 127.0.0.1:0 --from-plan "$work/rollout-plan.json" --instance "$inst" --argocd-instances "$instances" \
			--token "${!token}" --sync-duration 700ms --reconcile-delay 50ms >"$work/sim-$inst.url" 2>"$work/sim-$inst.log" &
		sims+=($!)
		url=$(first_line "$work/sim-$inst.url" "$work/sim-$inst.log" "the Argo CD simulator of instance $inst")
		echo "  instance $inst: $url ($(tail -n 1 "$work/sim-$inst.log" | sed -n 's/^argocd-sim: \([0-9]*\) applications.*/\1 applications/p'))"
		sed -i "s|https://argocd-$inst.fleet.example|$url|" "$work/instances.yaml"
	done
	store=$work/rollout.db
	echo "\$ fleetwave rollout --argocd-instances <instances.yaml> --repo <fleet> --base main --head rollout-demo"
	t0=$(date +%s)
	: >"$out/rollout.txt" # exists before tail and grep below look at it
	"$bin" rollout --argocd-instances "$work/instances.yaml" --repo "$repo" --base main --head rollout-demo "${repos[@]}" --store "$store" --concurrency 10 \
		>"$out/rollout.txt" 2>&1 &
	ro=$!
	tail -n +1 -f "$out/rollout.txt" --pid "$ro" &
	tailer=$!
	approved=0
	while kill -0 "$ro" 2>/dev/null; do
		if [ "$approved" = 0 ] && grep -q "awaiting approval" "$out/rollout.txt"; then
			sleep 1
			echo "\$ fleetwave rollout approve production --member-of example/sre   # as a member of example/sre would, here or with /approve on the PR"
			"$bin" rollout approve production --store "$store" --member-of example/sre >"$work/approve.log" 2>&1 ||
				{ echo "demo: approve failed:" >&2; cat "$work/approve.log" >&2; }
			approved=1
		fi
		sleep 0.2
	done
	wait "$ro" || status=$?
	wait "$tailer" 2>/dev/null || true
	kill "${sims[@]}" 2>/dev/null || true
	wait "${sims[@]}" 2>/dev/null || true
	echo "  rollout took $(($(date +%s) - t0))s"
fi

# 4. The example's Secret values must appear nowhere in what fleetwave wrote.
# The same for the demo registry's password (hack/chartserve's repositories file) and the instances' tokens.
for secret in s3cr3t-demo-value pay-db-user-demo fake-psp-key-demo-123 placeholder-not-a-real-token demo-registry-password-not-a-secret \
	demo-mgmt-token-not-a-secret demo-workloads-token-not-a-secret; do
	encoded=$(printf %s "$secret" | base64)
	if grep -rqF -e "$secret" -e "$encoded" "$out"; then
		echo "demo: a Secret value leaked into $out" >&2
		exit 1
	fi
done

bold "Summary:"
head -n 1 "$out/diff.txt"
head -n 1 "$out/plan.txt"
tail -n 1 "$out/plan.txt"
if [ -f "$out/rollout.txt" ]; then
	grep -E '^[0-9:]+ rollout #[0-9]+ (succeeded|failed|paused|aborted)' "$out/rollout.txt" | tail -n 1 || true
fi

bold "Outputs:"
echo "  $out/diff.txt      the diff, as printed above"
echo "  $out/plan.txt      the wave plan"
echo "  $out/plan.json     diff + plan as JSON (the machine-readable contract)"
echo "  $out/comment.md    the pull-request comment the GitHub App posts"
[ -f "$out/rollout.txt" ] && echo "  $out/rollout.txt   the rollout's events against the Argo CD simulator"
if [ "$status" -ne 0 ]; then
	echo "demo: fleetwave exited with status $status" >&2
	exit "$status"
fi
