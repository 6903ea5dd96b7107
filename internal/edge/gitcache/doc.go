// Package gitcache keeps a local clone cache of the GitOps repositories the App previews: one bare mirror per
// repository under a cache directory, brought up to date with only the refs and commits a use case needs.
//
// # Model
//
// A Cache owns a directory. Each repository (named by its clone URL) gets a bare repository there,
// "<owner>-<name>-<hash>.git", whose "origin" remote is the clone URL as given — never with credentials in it.
// Fetch makes a set of commits present in that mirror:
//
//  1. commits already present cost nothing (no network);
//  2. otherwise the wanted refs (e.g. "refs/pull/7/head", "refs/heads/main") are fetched into
//     "refs/fleetwave/…" of the mirror, so what a preview reads stays reachable and is not garbage-collected;
//  3. commits still missing are fetched by id (GitHub serves any reachable commit: a force-pushed base
//     branch still has its old tip reachable from the pull request);
//  4. a commit still missing is an error naming it.
//
// Pull requests from forks are fetched through the base repository's "refs/pull/N/head": the fork's URL is
// never contacted, and nothing from a fork is executed — the mirror only stores objects.
//
// # Credentials
//
// For https URLs the installation token (Credentials, asked per fetch: tokens expire) is handed to git as an
// "Authorization: Basic" http.extraHeader scoped to the URL's scheme and host, passed through the
// GIT_CONFIG_COUNT/GIT_CONFIG_KEY_n/GIT_CONFIG_VALUE_n environment — not on the command line (visible in ps),
// not in the remote URL, not in the mirror's config, not in logs or errors. file:// URLs (tests, local
// experiments) are fetched without credentials. Other schemes are refused: ssh would need keys the App does not
// have, plain http would send the token in clear.
//
// The operator's other repositories (FetchRemote, LsRemote: internal/edge/gitfetch) are fetched the same way with their
// own credentials (a Remote: the repositories file's username/password), https only, with redirects not followed
// and a low-speed cutoff, and into the same kind of mirror.
//
// # Safety
//
// git runs with an environment scrubbed of GIT_* variables and of the user's and system's configuration
// (HOME and XDG_CONFIG_HOME point into the cache, GIT_CONFIG_NOSYSTEM), hooks off (core.hooksPath=/dev/null),
// no terminal prompts, no credential helpers, only the https and file protocols, no tags, no submodules.
//
// # Concurrency
//
// Fetches of one mirror are serialised by a per-repository lock (in the process: one Cache per cache directory
// and process); fetches of different repositories run in parallel. Readers of a mirror (previews) need no lock:
// a fetch only adds objects and moves fleetwave's own refs.
package gitcache
