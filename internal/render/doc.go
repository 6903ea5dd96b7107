// Package render turns one Argo CD Application at one revision of a repository into the manifests Argo CD's
// repo-server would produce for it, without Argo CD: the "render" stage of the pull-request path
// (discover → render → diff → plan → report).
//
// Renderer.Render takes a Request (the Application, the checked-out repository, the Settings of the Argo CD it
// renders as) and returns a Result: the objects in the order Argo CD applies them, each stamped with the app's
// tracking label or annotation as the instance's tracking method says (tracking.go, after Argo CD's
// util/argo/resource_tracking.go). What decides the output:
//
//   - the source type, detected as repo-server detects it (sourceType; reposerver/repository/repository.go
//     GetAppSourceType): Helm, Kustomize, plain directory or Jsonnet;
//   - the engine for that type, one package each: helm (Helm 3 below Argo CD 3.5, Helm 4 from 3.5, chosen by
//     Settings.Target), kustomize (sigs.k8s.io/kustomize/api with Argo CD's build options), directory (plain YAML
//     and Jsonnet);
//   - Settings (settings.go): the Argo CD version, Kubernetes version and API list, tracking method and instance
//     label key, installation ID, Kustomize build options — what the user's Argo CD and the app's destination
//     cluster pass to repo-server;
//   - remote inputs (remote.go): charts from Helm repositories and OCI registries and other git repositories,
//     fetched only from what the operator allows (ChartFetcher, GitFetcher; internal/edge/chartfetch, internal/edge/gitfetch).
//
// PR content is hostile: repofs confines every read to the checkout (no symlink out, no absolute path),
// outputcap bounds what a render may produce, and the isolate subpackage runs renders in worker processes with
// memory and time caps a template cannot outrun. The fidelity subpackage compares a render with Argo CD's own
// output, the measure every change here is held to (docs/fidelity.md).
package render
