// Package discover finds the Argo CD Applications a GitOps repository declares at one revision, and decides which
// of them a change affects.
//
// # Inventory
//
// Discover walks a checkout for YAML/JSON files that declare Applications, ApplicationSets and Argo CD cluster
// Secrets (argocd.argoproj.io/secret-type: cluster). Helm chart directories (templates are not YAML until
// rendered), files a kustomization uses as patches, hidden directories and symbolic links are skipped. A broken
// file that mentions an argoproj.io kind is reported as one Problem line; other unparsable files are data and
// ignored.
//
// ApplicationSets are expanded offline by re-implementations of Argo CD's generators (applicationset/generators
// in argo-cd v3.2.11, each function cites its counterpart): list, clusters, git directories and files (reading
// the checkout of the revision being previewed, whatever the generator's revision says), matrix and merge, the
// generator post-selector, goTemplate (text/template with sprig minus env/expandenv/getHostByName, plus
// normalize, slugify, toYaml, fromYaml, fromYamlArray; goTemplateOptions such as missingkey=error) and the legacy
// {{param}} form, and templatePatch. Parameter names are Argo CD's: name, nameNormalized, server, project,
// metadata.labels.<k> / metadata.annotations.<k> (nested under .metadata with goTemplate), values.<k>, path,
// path.basename, path.basenameNormalized, path.filename, path.filenameNormalized, path[n] (legacy) and
// path.segments (goTemplate), with pathParamPrefix. SCM provider, pull request, cluster decision resource and
// plugin generators need live services: they are reported, not guessed.
//
// Destination clusters come from Options.Clusters (a --clusters file, in either form ParseClusters reads) or,
// when none are given, from the cluster Secrets the repository declares. The in-cluster destination
// (https://kubernetes.default.svc) is always known, as "in-cluster", and the cluster generator includes it only
// when it has no selector — as Argo CD does.
//
// Expand follows app-of-apps: each app is rendered (through a RenderFunc the caller supplies, called
// concurrently), and Applications and ApplicationSets found in its manifests join the inventory, level by level.
// An app seen again is not followed again, so cycles (a root app that manages itself) end; a rendered
// Application replaces a raw file of the same key, because the rendered one is what Argo CD applies.
//
// # Affected apps
//
// Affected applies, per app, the rules of issue 3 and says why (Reason) — see the Rule constants. With the
// argocd.argoproj.io/manifest-generate-paths annotation Argo CD's own functions decide
// (util/app/path/path.go GetSourceRefreshPaths and AppFilesHaveChanged, imported, not copied), because Argo CD
// reuses its cached manifests when no refresh path changed; if a file the render reads changed outside those
// paths the verdict carries a warning instead.
package discover
