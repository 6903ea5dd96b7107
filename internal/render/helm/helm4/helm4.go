// Package helm4 is `helm template` of Helm 4 (helm.sh/helm/v4) on a chart held in memory: what Argo CD 3.5 and
// later run for Helm sources and for Kustomize's helmCharts, since their repo-server image ships helm 4 only.
// It is the Helm 4 half of internal/render/helm; everything before the helm call (Argo CD's options, value
// files, values merging, chart reading, dependency build, schema validation) stays shared there.
package helm4

import (
	"context"
	"fmt"

	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"

	"github.com/fleetwave/fleetwave/internal/render/helm/helmtemplate"
	"github.com/fleetwave/fleetwave/internal/render/helm/helmvalues"
	"github.com/fleetwave/fleetwave/internal/render/outputcap"
)

// CLI is what a released helm 4 binary has baked in and the SDK does not: its version and commit (Makefile
// ldflags), and the Kubernetes version and API versions it assumes without --kube-version (pkg/chart/common/
// capabilities.go makeDefaultCapabilities and DefaultVersionSet derive them from the k8s.io/client-go module the
// binary was built with, client-go v0.36.1 for helm v4.2.x: Kubernetes v1.36.0; this program links another
// client-go, so the SDK's own values would be wrong).
type CLI struct {
	Version, GitCommit string
	DefaultKubeVersion string
	DefaultAPIVersions []string
	KubeClientVersion  string // "v1.36" for client-go v0.36 (internal/version Get)
}

// CLIs are the helm 4 releases Argo CD's repo-server images ship (hack/tool-versions.sh): v4.2.1 in 3.5,
// v4.3.1 in 3.6.1 (v4.2.4 was the main branch's at 3.6's branch point). Commits are the release tags' (github.com/helm/helm); v4.3.1's is not
// known here (the module proxy does not record it and no clone of helm here has the tag), so
// .Capabilities.HelmVersion.GitCommit is empty for it, as in the helm `make e2e` builds from the module proxy.
var CLIs = map[string]CLI{
	"v4.2.1": {Version: "v4.2.1", GitCommit: "d591a19b953bd9cfdf7d9ddd83c2f4ffdaeafb29", DefaultKubeVersion: "v1.36.0", KubeClientVersion: "v1.36", DefaultAPIVersions: defaultAPIVersions0361},
	"v4.2.4": {Version: "v4.2.4", GitCommit: "3900f434fd3ef2b84065dc04508df48f288dba00", DefaultKubeVersion: "v1.36.0", KubeClientVersion: "v1.36", DefaultAPIVersions: defaultAPIVersions0361},
	"v4.3.1": {Version: "v4.3.1", DefaultKubeVersion: "v1.37.0", KubeClientVersion: "v1.37", DefaultAPIVersions: defaultAPIVersions0370},
}

// File is one file of a chart directory, path relative to the chart root ("templates/x.yaml",
// "charts/sub/Chart.yaml", "charts/sub-1.0.0.tgz").
type File struct {
	Name string
	Data []byte
}

// Options are the `helm template` flags Argo CD and Kustomize pass.
type Options struct {
	ReleaseName, Namespace string
	KubeVersion            string   // --kube-version; "" = CLI.DefaultKubeVersion
	APIVersions            []string // --api-versions, already split
	IncludeCRDs            bool     // --include-crds
	SkipTests              bool     // --skip-tests
	DisableHooks           bool     // --no-hooks (Kustomize's skipHooks)
	// ValidateValues, when set, checks the coalesced values against the chart's values.schema.json files in
	// place of Helm's validation (which reads file: and http(s): references); nil skips validation
	// (--skip-schema-validation).
	ValidateValues func(values map[string]any) error
	// Output caps the rendered templates, checked as the engine returns them (zero: no cap).
	Output outputcap.Limits
}

// Load parses chart files (loader.LoadFiles) and orders subcharts by name and version: Helm's loader adds them
// ranging over a map, so its order (visible in the order of subchart CRDs) is random.
func Load(files []File) (*chart.Chart, error) {
	in := make([]*archive.BufferedFile, len(files))
	for i, f := range files {
		in[i] = &archive.BufferedFile{Name: f.Name, Data: f.Data}
	}
	ch, err := loader.LoadFiles(in)
	if err != nil {
		return nil, err
	}
	helmtemplate.SortDependencies(ch, func(c *chart.Chart) string { return c.Metadata.Version })
	return ch, nil
}

// Copy copies what rendering modifies (ProcessDependencies rewrites the dependency lists, the Enabled and
// ImportValues of requirements, and chart values), so that renders of one parsed chart never share it; templates
// and files are read-only and shared. It is internal/render/helm's copyChart for helm 4's chart type.
func Copy(c *chart.Chart) *chart.Chart {
	n := *c
	if c.Metadata != nil {
		md := *c.Metadata
		if c.Metadata.Dependencies != nil {
			md.Dependencies = make([]*chart.Dependency, len(c.Metadata.Dependencies))
			for i, d := range c.Metadata.Dependencies {
				if d == nil {
					continue
				}
				dd := *d
				dd.Tags = append([]string(nil), d.Tags...)
				dd.ImportValues = append([]any(nil), d.ImportValues...)
				md.Dependencies[i] = &dd
			}
		}
		n.Metadata = &md
	}
	n.Values = helmvalues.Copy(c.Values)
	deps := make([]*chart.Chart, 0, len(c.Dependencies()))
	for _, d := range c.Dependencies() {
		deps = append(deps, Copy(d))
	}
	n.SetDependencies(deps...)
	return &n
}

// Template renders ch (which it modifies: render a Copy of a chart kept for reuse) with vals as `helm template` prints it:
// pkg/action/install.go RunWithContext in client-only dry-run mode, action.go renderResources, and
// pkg/cmd/template.go's assembly of stdout (the release manifest with CRDs first, then the hooks). DNS lookups
// stay disabled and `lookup` returns nothing, as in `helm template`.
func Template(ctx context.Context, cli CLI, ch *chart.Chart, vals map[string]any, o Options) ([]byte, error) {
	// pkg/cmd/template.go: --kube-version through common.ParseKubeVersion.
	kubeVersion := o.KubeVersion
	if kubeVersion == "" {
		kubeVersion = cli.DefaultKubeVersion
	}
	kv, err := common.ParseKubeVersion(kubeVersion)
	if err != nil {
		return nil, fmt.Errorf("invalid kube version '%s': %w", kubeVersion, err)
	}
	// install.go RunWithContext: availableName, then ProcessDependencies.
	if err := chartutil.ValidateReleaseName(o.ReleaseName); err != nil {
		return nil, fmt.Errorf("release name check failed: release name %q: %w", o.ReleaseName, err)
	}
	if err := chartutil.ProcessDependencies(ch, vals); err != nil {
		return nil, fmt.Errorf("chart dependencies processing failed: %w", err)
	}
	caps := capabilities(cli, kv, o.APIVersions)
	options := common.ReleaseOptions{Name: o.ReleaseName, Namespace: o.Namespace, Revision: 1, IsInstall: true}
	valuesToRender, err := commonutil.ToRenderValuesWithSchemaValidation(ch, vals, options, caps, true)
	if err != nil {
		return nil, err
	}
	if o.ValidateValues != nil {
		coalesced, _ := valuesToRender["Values"].(common.Values)
		if err := o.ValidateValues(coalesced); err != nil {
			return nil, err
		}
	}

	// action.go renderResources.
	if ch.Metadata.KubeVersion != "" && !chartutil.IsCompatibleRange(ch.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return nil, fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", ch.Metadata.KubeVersion, caps.KubeVersion.Version)
	}
	var eng engine.Engine
	files, err := eng.RenderWithContext(ctx, ch, valuesToRender)
	if err != nil {
		return nil, err
	}
	helmtemplate.DropNotes(files)
	// The output caps, on the templates as the engine returns them (helm.sh/helm/v4@v4.3.1 pkg/engine/engine.go
	// render: a strings.Builder per template, no hook while it writes), before SortManifests and the assembly
	// of stdout copy them.
	if err := o.Output.Texts(files); err != nil {
		return nil, err
	}
	hooks, manifests, err := sortManifests(files) // SortManifests(files, nil, InstallOrder), faster: sortmanifests.go
	if err != nil {
		return nil, err
	}
	var out helmtemplate.Output
	if o.IncludeCRDs {
		for _, crd := range ch.CRDObjects() {
			out.Resource(crd.Filename, string(crd.File.Data))
		}
	}
	for _, m := range manifests {
		out.Resource(m.Name, m.Content)
	}
	for _, h := range hooks {
		if !o.DisableHooks && (!o.SkipTests || !helmtemplate.IsTestHook(h.Events)) {
			out.Hook(h.Path, h.Manifest)
		}
	}
	return out.Bytes(), nil
}

// capabilities are install.go RunWithContext's client-only ones: the default capabilities (the released binary's,
// see CLI), the --kube-version, the --api-versions appended.
func capabilities(cli CLI, kv *common.KubeVersion, apiVersions []string) *common.Capabilities {
	caps := common.DefaultCapabilities.Copy()
	caps.HelmVersion.Version = cli.Version
	caps.HelmVersion.GitCommit = cli.GitCommit
	caps.HelmVersion.GitTreeState = "clean"
	caps.HelmVersion.KubeClientVersion = cli.KubeClientVersion
	caps.KubeVersion = *kv
	apis := make(common.VersionSet, 0, len(cli.DefaultAPIVersions)+len(apiVersions))
	apis = append(apis, cli.DefaultAPIVersions...)
	caps.APIVersions = append(apis, apiVersions...)
	return caps
}
