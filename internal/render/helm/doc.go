// Package helm renders a Helm source of an Argo CD Application in-process, producing exactly what Argo CD's
// repo-server produces with the helm CLI.
//
// The model follows Argo CD's own two layers (argo-cd v3.5.7, the version the fidelity corpus was made with;
// go.mod's v3.6.1 provides the API types), rendering as the Argo CD release Input.Target names
// (internal/render/target): helm 4 for 3.5 and later, helm 3.19.4 before, and the rules that changed between
// releases (value-file globs, the accepted helm.version values):
//
//   - options.go is reposerver/repository/repository.go helmTemplate up to the CLI call: release name (the
//     name part of the instance name, or helm.releaseName), namespace, kube version (parseKubeVersion), value
//     files (getResolvedValueFiles: envsubst, "$ref/..." against ref sources, doublestar globs in lexical order,
//     explicit entries keep their position, duplicates dropped, ignoreMissingValueFiles), values/valuesObject
//     as the last value file, parameters (forceString, envsubst) and fileParameters, with
//     util/io/path/resolved.go ResolveValueFilePathOrUrl's rules on confined checkouts (repofs).
//   - values.go and template.go are `helm template . --name-template N --namespace NS --kube-version V --set ...
//     --set-string ... --set-file ... --values ... --api-versions ... [--include-crds] [--skip-schema-validation]
//     [--skip-tests]` (util/helm/cmd.go template) as helm v3.19.4 runs it (engine4.go and helm4/: as helm 4 runs
//     it, on the same chart files, values and flags): pkg/cli/values MergeValues (commas
//     escaped as cleanSetParameters does), pkg/action Install in client-only dry-run mode, renderResources and
//     cmd/helm/template.go's stdout (CRDs, manifests in install order, then hooks). That text is split into
//     objects with gitops-engine kube.SplitYAML, as Argo CD does.
//   - chartload.go is loader.LoadDir over repofs (.helmignore, symlinks followed inside the checkout), feeding
//     loader.LoadFiles (vendored subcharts as directories or archives).
//   - deps.go is the `helm dependency build` Argo CD runs when Chart.yaml names a dependency missing from charts/,
//     file:// dependencies are packaged from the checkout, vendored archives stand in for downloads, and
//     dependencies from chart repositories are downloaded through Input.Charts (internal/edge/chartfetch: the
//     operator's allowed repositories only); anything else fails with ErrMissingDependency.
//
// Differences from Argo CD, all deliberate: parameters are applied in sorted key order (Argo CD ranges over a
// Go map, so its order is random); subcharts are ordered by name (helm's loader ranges over a map);
// values.schema.json references to file:, http: and https: URLs are refused (ErrRemote) instead of read or
// fetched; remote value files are refused (ErrRemote) whether or not the operator allows remote sources; --name-template has no env/expandenv functions (helm's chart engine has none either, but its
// name template would read the process environment); without --namespace, the release namespace is "default"
// (helm outside a cluster). Without a kube version the released helm binary's defaults are used (Kubernetes
// v1.34.0 for helm v3.19.4, v1.36.0 for helm v4.2.x). Helm 4 keeps its own parse of the same files in a second
// parsed-chart cache under the same hash; the output cache key includes the helm release. DNS lookups in templates stay disabled and `lookup` returns nothing, as in
// `helm template`.
//
// Caching, two levels, both bounded LRUs: a parsed chart is kept under the SHA-256 of its files (names and
// bytes, after .helmignore), so a render reads and hashes the files (which also records them) but does not
// parse them again; and a rendered result (objects or error) is kept under the chart hash plus every other
// input of the render (merged values, release name and namespace, kube version, API versions, flags), so an
// unchanged app costs a read of its files and a copy. Rendering mutates charts (dependency processing), so a
// render works on a copy of the cached chart's mutable parts; callers get their own copies of the objects.
// Charts that call rand*/uuid*/now get the first render's values on a cache hit (like Argo CD's manifest
// cache for a revision).
//
// Affected-app detection: every chart file read and directory listed goes through repofs and is recorded;
// value files skipped because they are missing (ignoreMissingValueFiles) are recorded too, since creating one
// changes the output.
//
// Errors are one line and start with "helm template <app path>:"; template `fail` errors pass through.
package helm
