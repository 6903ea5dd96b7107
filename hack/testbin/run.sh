#!/usr/bin/env bash
# hack/testbin/run.sh KEPT TREE [test flags...]: runs every test binary hack/testbin/keep.sh kept in KEPT, each in
# the same package directory under TREE (a clone of the checkout they were built from), as go test would run it
# (its working directory, the flags given; as many at once as go test's -p default: the CPUs), and prints go test's
# output: each package's in turn, then "ok" or "FAIL" with its time. Exit status 1 when any failed. A package of
# TREE with tests but no kept binary (or the reverse) fails: the binaries must be TREE's.
set -uo pipefail
kept=$(cd "$1" && pwd)
tree=$(cd "$2" && pwd)
shift 2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
module=$(cd "$tree" && go list -m) || exit 1

# The packages with tests in TREE, as directories relative to it, against the binaries kept.
(cd "$tree" && go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.Dir}}{{end}}' ./...) >"$out/dirs" || exit 1
grep . "$out/dirs" | sed "s#^$tree/\{0,1\}##; s#^\$#.#" | sort >"$out/want"
(cd "$kept" && find . -name pkg.test -type f) | sed 's#^\./##; s#/\{0,1\}pkg\.test$##; s#^$#.#' | sort >"$out/have"
if ! diff -u "$out/want" "$out/have" >"$out/diff"; then
	echo "testbin: the kept test binaries are not those of $tree's packages (- without a binary, + without a package):" >&2
	grep -E '^[-+][^-+]' "$out/diff" >&2
	exit 1
fi

one() { # one <package dir> <flags...>: runs its binary, output and result in $out/<n>.
	local rel=$1 name s rc
	shift
	name=$(echo "$rel" | tr / _)
	s=$(date +%s.%N)
	(cd "$tree/$rel" && "$kept/$rel/pkg.test" "$@") >"$out/$name.log" 2>&1
	rc=$?
	awk -v a="$s" -v b="$(date +%s.%N)" -v rc=$rc 'BEGIN { printf "%d %.3f\n", rc, b - a }' >"$out/$name.rc"
}
export -f one
export kept tree out
xargs -a "$out/want" -P "$(nproc)" -I{} bash -c 'one "$@"' _ {} "$@"

failed=0
while read -r rel; do
	name=$(echo "$rel" | tr / _)
	pkg=$module
	[ "$rel" = . ] || pkg=$module/$rel
	cat "$out/$name.log"
	read -r rc secs <"$out/$name.rc" 2>/dev/null || { rc=1 secs=0; }
	if [ "$rc" = 0 ]; then
		printf 'ok  \t%s\t%ss\n' "$pkg" "$secs"
	else
		printf 'FAIL\t%s\t%ss\n' "$pkg" "$secs"
		failed=1
	fi
done <"$out/want"
exit $failed
