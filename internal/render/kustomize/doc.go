// Package kustomize builds Kustomize application sources in-process, producing what Argo CD's repo-server
// produces (argo-cd v3.5.7 util/kustomize/kustomize.go Build, with kustomize v5.8.1 = sigs.k8s.io/kustomize/api
// v0.21.1), without running kustomize, helm or git and without writing anything.
//
// A build has four steps.
//
//  1. Edits. Argo CD runs `kustomize edit` commands on the checkout before building (namePrefix, nameSuffix,
//     images with envsubst, replicas, commonLabels with --force/--without-selector/--include-templates,
//     commonAnnotations with optional envsubst, namespace, patches appended, components honouring
//     ignoreMissingComponents). edit.go reproduces each command on types.Kustomization, and kustfile.go ports
//     kustomize's read/modify/write cycle (field order, comments), so the edited file is the one Argo CD builds.
//     The result lives in an in-memory overlay; the checkout is never written.
//
//  2. Options. argocd-cm's kustomize.buildOptions are parsed like `kustomize build` parses its flags, with the
//     --helm-kube-version/--helm-api-versions Argo CD appends under --enable-helm (options.go). Builtin plugins
//     only: exec, container and Go plugins stay off whatever the options say; --output is refused.
//
//  3. Pre-walk (walk.go). The kustomization tree is walked the way kustomize's KustTarget traverses it. Every
//     entry kustomize would hand to its loader is vetted: a remote base (resources, bases, components naming an
//     https git repository, in the forms api@v0.21.1 internal/git/repospec.go reads) is fetched through Input.Remote
//     (the allowed git repositories) and mounted read-only in the build's view (mount.go), the kustomization
//     rewritten in the overlay to name the mounted directory, as kustomize names its clone's; other remote
//     locations (downloads, ssh, other schemes, or any remote without Input.Remote) and paths leaving the checkout
//     are refused with the kustomization file, field and rule named.
//     Plugin configurations are scanned for remote paths. helmCharts are rendered in-process (helm.go, with the
//     Helm SDK, reproducing HelmChartInflationGenerator: values file and valuesInline merging, additional values
//     files, namespace inheritance, release name, CRDs, hooks, tests, kube/API versions) from vendored charts
//     only; the rendered resources, carrying kustomize's helm-generated annotation, replace the helmCharts field
//     as a resource file in the overlay, so kustomize treats them as it treats generator output.
//
//  4. Build. krusty runs on buildFS (fs.go), a kyaml filesys.FileSystem over repofs: paths appear under a
//     virtual root, reads are confined and recorded, the overlay shadows the checkout, and each kustomization
//     file read is vetted again before kustomize sees it. Every file read (kustomizations, resources, patches,
//     generator inputs, rendered charts) is refused when its YAML aliases expand too far (repofs.CheckYAMLAliases:
//     the YAML libraries' excessive-aliasing rule over the whole file, and a budget over the build), since kyaml
//     expands aliases without any limit. Any confinement refusal met during the build fails it.
//
// Proof: TestFidelity (the shared corpus), TestGoldens (testdata/diff cases whose goldens come from Argo CD's own
// util/kustomize Build run with the pinned kustomize and helm binaries by the opt-in TestDifferential, build tag
// "differential"), and hostile-input tests and FuzzBuild behind tripwires that catch any program run or
// connection attempt.
//
// kustomize keeps its OpenAPI schema in process-wide state; builds whose tree sets `openapi` run alone and reset
// it afterwards, all others run concurrently. Engine is safe for concurrent use.
//
// kustomize writes deprecation warnings to the process's standard error; they cannot be silenced from here.
//
// Known differences from Argo CD: a generator input (configMapGenerator/secretGenerator file) with excessive YAML
// aliasing is refused, where kustomize would embed it as text; with sortOptions fifo, rendered charts come before configMapGenerator and
// secretGenerator output instead of after it; a kustomization with helmCharts reached from parents with
// different namespaces is refused; Argo CD's --generate-name release names are time-based on both sides.
package kustomize
