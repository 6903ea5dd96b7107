// Package livediff compares the renders of a change with the live state Argo CD reports for each affected app
// (`fleetwave diff --argocd`). Its Comparer is the preview's Argo CD adapter: Comparer.Ports serves the four
// preview.ArgoCD ports (live comparison, rendering through Argo CD, live ApplicationSet generators, sync windows).
//
// # Model
//
// For each affected app that exists in Argo CD (matched by namespace and name in one list call), the package
// reads GET /api/v1/applications/{name}/managed-resources and, resource by resource, compares Argo CD's
// liveState (the object as the cluster holds it, managed fields included; normalizedLiveState when absent; the
// JSON string "null" is no live object) with:
//
//   - the head render: what a sync of the change would alter in the cluster (LiveDiff, live → head);
//   - the base render: DRIFT, when live differs from what the base revision renders (someone changed the
//     cluster, or the app is out of sync with its base).
//
// Each comparison is Argo CD's own: argo-cd util/argo/diff StateDiff with the DiffConfig the application
// controller builds (controller/state.go CompareAppState: NewDiffConfigBuilder().WithDiffSettings(...)
// .WithTracking(...).WithManager("argocd-controller"), here WithNoCache and no cluster). That applies, in
// Argo CD's order, the tracking normalisation, managedFieldsManagers (util/argo/managedfields: fields a trusted
// manager owns are removed from both sides), the ignoreDifferences normaliser (jsonPointers, jqPathExpressions)
// with argocd-cm's resource overrides, the known-types normaliser, then gitops-engine's pkg/diff.Diff (three-way
// with a last-applied annotation, else two-way). Server-side diff is not done (it needs the cluster); apps
// that sync with ServerSideApply get a note.
//
// The ignoreDifferences used are those of the Application at head (what will be in force after the merge);
// those of the Application in Argo CD are used when the head has none. The system-wide settings (System) are
// argocd-cm's resource.customizations (the YAML key and the resource.customizations.ignoreDifferences.<group_kind>
// and .all keys) with the status ignoring of resource.compareoptions ignoreResourceStatusField (default: the
// status of every kind is ignored). They come from GET /api/v1/settings (resourceOverrides, status ignoring
// included), or from an argocd-cm file (LoadArgoCDCM, `fleetwave diff --argocd-cm`), parsed as argo-cd
// util/settings GetResourceOverrides does; when the settings cannot be read, Argo CD's defaults are used and a
// note says so.
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
// # Extraneous resources
//
// A live resource in no base render is drift, and also Extraneous when Argo CD's status.resources marks it
// requiresPruning (a sync with prune deletes it). One carrying the compare option IgnoreExtraneous
// (argocd.argoproj.io/compare-options) is IgnoredExtraneous instead, not drift: Argo CD marks it OutOfSync but
// does not count it against the app's sync status (controller/state.go). Both get a note.
//
// # Secrets
//
// Diff text is built with internal/diff's masking (MaskSecretPair): every value of a Secret's data (and its
// last-applied annotation) becomes a marker such as <changed>; no live value is ever printed. A real Argo CD
// replaces Secret values in managed resources with runs of "+" (gitops-engine pkg/diff HideSecretData), masking
// target (its render) and live together: per key, the target's value is "++++++++", a live value equal to it
// the same run, a different one a longer run. So a rendered value equal to the base render's takes the mask of
// Argo CD's target (Argo CD's render at the revision it syncs, taken to be the base), any other one a value no
// mask equals; a value changed live is thus drift of that key (DriftSecretKeys, names only) and a changed key in
// the live diff. Without a masked targetState to read the masks by, values cannot be compared: Secret data
// values are blanked on both sides and only keys and metadata are compared (a note says so).
//
// # Errors
//
// The first call (the list) failing means Argo CD is unreachable or refuses the token: CompareLive returns an
// error and the command exits 2. An app missing from Argo CD is reported as Missing; a failing managed-resources
// call for one app is that app's Error.
package livediff
