// Package livediff compares the renders of a change with the live state Argo CD reports for each affected app
// (`fleetwave diff --argocd`).
//
// # Model
//
// For each affected app that exists in Argo CD (matched by namespace and name in one list call), the package
// reads GET /api/v1/applications/{name}/managed-resources and, resource by resource, compares Argo CD's
// normalizedLiveState (liveState when absent; the JSON string "null" is no live object) with:
//
//   - the head render: what a sync of the change would alter in the cluster (LiveDiff, live → head);
//   - the base render: DRIFT, when live differs from what the base revision renders (someone changed the
//     cluster, or the app is out of sync with its base).
//
// Each comparison is gitops-engine's pkg/diff.Diff(config, live) — the same three-way diff (two-way without a
// last-applied annotation) the application controller runs (argo-cd util/argo/diff/diff.go StateDiffs) — with
// the normaliser Argo CD builds from the Application's spec.ignoreDifferences (jsonPointers,
// jqPathExpressions, managed by name/namespace/group/kind globs) plus its known-types normaliser
// (argo-cd util/argo/normalizers, as util/argo/diff/normalize.go newDiffNormalizer composes them). The
// ignoreDifferences used are those of the Application at head (what will be in force after the merge); those
// of the Application in Argo CD are used when the head has none. Resource overrides from argocd-cm
// (resource.customizations.ignoreDifferences.*) and managedFieldsManagers are not applied.
//
// The controller adds tracking metadata (argocd.argoproj.io/tracking-id, app.kubernetes.io/instance) to
// target objects before it diffs; here the live object's values are copied onto the render instead of being
// recomputed from the tracking settings.
//
// Keys: head and base objects without a namespace get the app's destination namespace (cluster-scoped kinds
// lose theirs), as internal/diff does; sync hooks are left out on both sides, as Argo CD leaves them out of
// sync status. A resource live but not in the head render shows as removed (a sync with prune deletes it); one
// in the head render but not live as added.
//
// # Secrets
//
// Diff text is built with internal/diff's masking (MaskSecretPair): every value of a Secret's data (and its
// last-applied annotation) becomes a marker such as <changed>; no live value is ever printed. A real Argo CD
// already replaces live Secret values with runs of "+" (gitops-engine HideSecretData); when it did, values
// cannot be compared, so Secret data values are blanked on both sides and only keys and metadata are compared
// (a note says so).
//
// # Errors
//
// The first call (the list) failing means Argo CD is unreachable or refuses the token: CompareLive returns an
// error and the command exits 2. An app missing from Argo CD is reported as Missing; a failing managed-resources
// call for one app is that app's Error.
package livediff
