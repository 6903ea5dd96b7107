#!/usr/bin/env bash
# gitrepo.sh <bare repo path>: creates the git repository of the end-to-end test apps with two commits, "old" and
# "new" (HEAD). Authors and dates are fixed, so both SHAs are the same on every run.
#   apps/guestbook       ConfigMap + Deployment (manual sync)
#   apps/guestbook-auto  ConfigMap + Deployment (automated sync)
#   apps/guestbook-slow  ConfigMap + a PreSync hook Job whose pod can never be scheduled (its nodeSelector matches
#                        no node), so a sync runs until it is terminated.
set -euo pipefail

BARE=$1
SRC=$(cd "$(dirname "$0")" && pwd)/apps
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

export GIT_AUTHOR_NAME=fleetwave-e2e GIT_AUTHOR_EMAIL=e2e@fleetwave.invalid
export GIT_COMMITTER_NAME=fleetwave-e2e GIT_COMMITTER_EMAIL=e2e@fleetwave.invalid
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1

rm -rf "$BARE"
git init -q --bare -b main "$BARE"
git init -q -b main "$WORK"
render() { # render <revision label>: the apps at that revision
	rm -rf "$WORK/apps"
	cp -r "$SRC" "$WORK/apps"
	find "$WORK/apps" -name '*.yaml' -exec sed -i "s/@REVISION@/$1/g" {} +
}
n=0
for rev in old new; do
	n=$((n + 1))
	render "$rev"
	export GIT_AUTHOR_DATE="2026-01-0${n}T00:00:00Z" GIT_COMMITTER_DATE="2026-01-0${n}T00:00:00Z"
	git -C "$WORK" add -A
	git -C "$WORK" commit -q -m "test apps: $rev revision"
done
git -C "$WORK" push -q "$BARE" main
git --git-dir "$BARE" log --format='%H %s'
