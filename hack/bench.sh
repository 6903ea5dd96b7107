#!/usr/bin/env bash
# End-to-end figures for the README: Go benchmarks of each engine, and in-process render vs the helm/kustomize
# CLIs on the fidelity corpus (same inputs, same run). Called by `make bench` with the CLI paths in the environment.
set -euo pipefail
cd "$(dirname "$0")/.."
# go.mod asks for Go 1.27 (argo-cd v3.6 declares it): the toolchain it names, fetched from the module proxy when the
# installed go is older (GOTOOLCHAIN=local would refuse instead).
export GOTOOLCHAIN=go1.27.4
echo "== go test -bench (render, plan, diff)"
gobench=$(mktemp)
trap 'rm -f "$gobench"' EXIT
go test -run '^$' -bench . -benchmem -count 1 ./internal/render/... ./internal/plan/... ./internal/diff/... ./internal/preview/... 2>/dev/null >"$gobench" || true
grep -E '^(Benchmark|ok|PASS|FAIL)' "$gobench" || true

# What the risk classes cost (#34): the report of 500 apps with 50 changed and of 5,000 with 50 written without and
# with classification, alternately in one run (internal/report BenchmarkReportClassification), and the time the
# classes add as a share of the whole preview of the same fleet (BenchmarkScale above, cold). It fails when that
# share exceeds FLEETWAVE_BENCH_MAX_CLASSIFY_PCT (default 3: "a few percent" of the preview).
echo
echo "== risk classification: the report without and with classes (internal/report), and its share of the preview"
go test -run '^$' -bench 'ReportGrouping|ReportClassification' -benchtime 3s -benchmem -count 1 ./internal/report/ 2>/dev/null >>"$gobench" || true
grep -E '^BenchmarkReport(Grouping|Classification)' "$gobench" || true
awk -v max="${FLEETWAVE_BENCH_MAX_CLASSIFY_PCT:-3}" '
  function size(name) { sub(/^[^\/]*\//, "", name); sub(/-[0-9]+$/, "", name); return name }
  $1 ~ /^BenchmarkScale\// && $1 !~ /-warm/ { for (i = 2; i < NF; i++) if ($(i+1) == "ns/op") scale[size($1)] = $i }
  $1 ~ /^BenchmarkReportClassification\// {
    n = size($1); order[++k] = n
    for (i = 2; i < NF; i++) { u = $(i+1); if (u == "ns-plain/op") plain[n] = $i; if (u == "ns-classified/op") cls[n] = $i; if (u == "classified/plain") ratio[n] = $i }
  }
  END {
    bad = 0
    for (j = 1; j <= k; j++) {
      n = order[j]; added = cls[n] - plain[n]
      line = sprintf("%s: report %.1f ms without classes, %.1f ms with (x%.2f)", n, plain[n] / 1e6, cls[n] / 1e6, ratio[n])
      if (scale[n] > 0) {
        pct = 100 * added / scale[n]
        line = line sprintf("; %+.1f ms = %+.2f%% of the preview (BenchmarkScale %s: %.0f ms)", added / 1e6, pct, n, scale[n] / 1e6)
        if (pct > max) { line = line sprintf(" — over %s%%", max); bad = 1 }
      }
      print line
    }
    exit bad
  }' "$gobench"
corpus="${FLEETWAVE_FIDELITY_DIR:-$(cd .. && pwd)/shared/fidelity}"
if [ -d "$corpus/cases" ]; then
  echo
  echo "== in-process render vs helm/kustomize CLIs (fidelity corpus, median of 5 warm runs per case)"
  # With bin/fleetwave (make bench builds it): then one large chart, kube-prometheus-stack, as fresh processes,
  # `fleetwave render` side by side with `helm template`, 9 alternating runs (issue #21's figure; about 15 s). It
  # fails over FLEETWAVE_BENCH_MAX_LARGE_RATIO (default 1.25: the target is 1, the margin is this machine's noise).
  large=()
  if [ -x bin/fleetwave ]; then
    large=(-fleetwave "$PWD/bin/fleetwave" -large-runs 9 -max-large-ratio "${FLEETWAVE_BENCH_MAX_LARGE_RATIO:-1.25}")
  fi
  go run ./hack/benchrender -corpus "$corpus" -helm "${FLEETWAVE_HELM_BIN:?}" -kustomize "${FLEETWAVE_KUSTOMIZE_BIN:?}" -runs 5 "${large[@]}"
else
  echo "fidelity corpus not found at $corpus: CLI comparison skipped"
fi

# What a pull request costs on generated fleets (internal/testkit/fleetgen): `fleetwave diff` as a fresh process against the
# CLI floor (one helm template / kustomize build per affected app and revision), 3 alternating runs of 500/50,
# 5,000/50 and 5,000/500 (about 3 min), then `fleetwave render --all` of the 5,000-app fleet, 3 runs (about 3 min
# more). The warm figures (serve's discovery cache) are BenchmarkScale's *-warm lines above. It fails when 500/50
# falls under the gate (FLEETWAVE_BENCH_MIN_RATIO, default 2: see the README), or when a run peaks over
# FLEETWAVE_BENCH_MAX_RSS_MIB (default 300, issue #21's bound for 5,000/500 and render all).
echo
echo "== a pull request on generated fleets: fleetwave diff vs the CLI floor (hack/benchfleet)"
go run ./hack/benchfleet -fleetwave "$PWD/bin/fleetwave" -helm "${FLEETWAVE_HELM_BIN:?}" -kustomize "${FLEETWAVE_KUSTOMIZE_BIN:?}" \
  -runs 3 -min-ratio "${FLEETWAVE_BENCH_MIN_RATIO:-2}" -max-rss "${FLEETWAVE_BENCH_MAX_RSS_MIB:-300}"

# A rollout across Argo CD instances (issue #36): 10,000 apps over 4 simulated instances, budget 10 each, 200 ms
# syncs, the bot in its own process (about a minute and a half): wall time against the ideal from the budgets, the
# most operations in flight per instance (it fails over a budget), requests per app, the bot's CPU and memory.
echo
echo "== a rollout of 10,000 apps over 4 Argo CD instances (internal/rollout TestBenchmarkInstances10000Apps)"
FLEETWAVE_SLOW_TESTS=1 go test -count=1 -run '^TestBenchmarkInstances10000Apps$' -v ./internal/rollout/ |
  grep -E 'bench_instances_test|^(--- |ok|FAIL)' | sed -E 's/^ +bench_instances_test.go:[0-9]+: //'

# The inventory (issue #37): 10,000 apps on the simulator, in this process (about a minute): time to a consistent
# view from a cold start and after a restart, memory held, CPU at rest, a change to every app.
echo
echo "== the inventory of 10,000 apps (internal/inventory/follow TestBenchmarkInventory10000Apps)"
FLEETWAVE_SLOW_TESTS=1 go test -count=1 -run '^TestBenchmarkInventory10000Apps$' -v ./internal/inventory/follow/ |
  grep -E 'bench_test|^(--- |ok|FAIL)' | sed -E 's/^ +bench_test.go:[0-9]+: //'

# The binary a user builds first (make demo, make build): its size, and how long it takes with an empty build
# cache (modules already downloaded), in a throwaway GOCACHE. FLEETWAVE_BENCH_COLD=0 skips the cold build.
echo
echo "== build"
if [ -f bin/fleetwave ]; then
  echo "bin/fleetwave: $(du -m bin/fleetwave | cut -f1) MB, $(go list -deps ./cmd/bot | wc -l) packages"
fi
if [ "${FLEETWAVE_BENCH_COLD:-1}" != 0 ]; then
  cold=$(mktemp -d)
  t0=$(date +%s)
  GOCACHE="$cold" go build -trimpath -o "$cold/fleetwave" ./cmd/bot
  echo "cold build (empty GOCACHE, $(nproc) cores): $(( $(date +%s) - t0 )) s"
  rm -rf "$cold"
fi
