// Package diff compares two renders of one application (base and head) resource by resource and produces a
// reviewable, safe model of the change.
//
// # Model
//
// A render is a list of Kubernetes objects. Compare keys every object by group, kind, namespace and name, sorts
// the keys, and for each key present on either side yields a Resource with its change (added, removed,
// modified) and a unified diff of the two objects serialised as YAML with sorted keys (sergi/go-diff in line
// mode, with context). Unchanged resources yield nothing; the Summary counts every class.
//
// Sync hooks (gitops-engine pkg/sync/hook IsHook: an argocd.argoproj.io/hook annotation, or a Helm hook other
// than crd-install) never count toward sync status in Argo CD; they are listed apart, as the hooks that will run,
// each with its own change and diff.
//
// Secrets are masked before anything is serialised: as gitops-engine's NormalizeSecret does, stringData is folded
// into data; then every value of data is replaced by a marker that says only how that key changed:
//
//	<unchanged>        same value on both sides
//	<previous value>   (base side) and <changed> (head side) when the value changed
//	<added>, <removed> a key (or a whole Secret) that appears or disappears
//
// The kubectl.kubernetes.io/last-applied-configuration annotation of a Secret is masked the same way, as a
// whole. Values are compared decoded, so base64 in data and plain text in stringData compare equal. No value,
// length or hash of a Secret's data is ever part of the output (gitops-engine's HideSecretData keeps the length
// of its "+" runs; this package does not).
package diff
