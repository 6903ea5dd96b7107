// Package instances is fleetwave's configuration of several Argo CD instances (issue #36): the instances file,
// each instance's API URL, credential, TLS options and sync budget, and the rules saying which of the
// repository's Applications it holds.
//
// The file (docs/instances.md) is read strictly with yaml.v3 nodes: every problem is reported at once, one line
// each, "file:line:col: message (hint: …)" as the release policy's (internal/plan Diagnostic), and unknown keys
// are errors, so a typo never silently owns nothing. A token comes from an environment variable or a file;
// errors name the variable or the file, never the value. A file's token is re-read when the file changes (a
// projected service-account token, a rotated Secret): TokenSource stats it on every request.
//
// Which instance holds an app: an instance owns an app when any of its rules matches it (OR), and a rule
// matches when every field it gives matches (AND): paths (doublestar globs over the Application file's path in
// the repository), labels (equal values), projects and destinations (globs as Argo CD's AppProject matches
// them: gobwas/glob without separators, so `*` also matches `/`). Resolve wants exactly one owner; none or two
// is an error the plan check shows.
//
// Single is the configuration of old (FLEETWAVE_ARGOCD_URL, --argocd): one instance named "" that owns every
// app, so a fleet of one keeps its outputs byte-for-byte.
package instances
