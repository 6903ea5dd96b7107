package kustomize

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/kio"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/kustomize/kyaml/yaml/merge2"
	"sigs.k8s.io/yaml"

	_ "github.com/fleetwave/fleetwave/internal/render/helm/helm3" // DefaultCapabilities' API versions: helm v3.19.4's
	"github.com/fleetwave/fleetwave/internal/render/helm/helm4"
	"github.com/fleetwave/fleetwave/internal/render/helm/helmtemplate"
	"github.com/fleetwave/fleetwave/internal/render/helm/helmvalues"
	"github.com/fleetwave/fleetwave/internal/render/outputcap"
	"github.com/fleetwave/fleetwave/internal/render/repofs"
)

// kustLoader reproduces the parts of kustomize's FileLoader (api@v0.21.1 internal/loader/fileloader.go) the Helm
// generator relies on: Load of a file relative to the kustomization root under the load restrictor.
type kustLoader struct {
	fs   *buildFS
	root filesys.ConfirmedDir
	lr   types.LoadRestrictions
}

func (l kustLoader) Load(p string) ([]byte, error) {
	if isRemote(p) {
		return nil, &repofs.Refusal{Rule: RuleRemote, Path: p, Detail: "remote files are not downloaded"}
	}
	if !filepath.IsAbs(p) {
		p = l.root.Join(p)
	}
	if l.lr == types.LoadRestrictionsRootOnly { // loader.RestrictionRootOnly
		d, f, err := l.fs.CleanedAbs(p)
		if err != nil {
			return nil, err
		}
		if f == "" {
			return nil, fmt.Errorf("'%s' must resolve to a file", p)
		}
		if !d.HasPrefix(l.root) {
			return nil, fmt.Errorf("security; file '%s' is not in or below '%s'", p, l.root)
		}
		p = d.Join(f)
	}
	return l.fs.ReadFile(p)
}

// helmRun is one helmCharts entry to inflate, with everything kustomize would hand its generator.
type helmRun struct {
	chart   types.HelmChart
	globals types.HelmGlobals
	ldr     kustLoader
	cfg     helmConfig
	// apiVersions is the plugin's ApiVersions after Config (see walker.renderCharts), read at generation.
	apiVersions []string
}

// inflate reproduces HelmChartInflationGeneratorPlugin (api@v0.21.1 internal/builtins/
// HelmChartInflationGenerator.go: Config, validateArgs, Generate) with `helm template` run in-process through the
// Helm SDK instead of the helm binary. It returns the generated resources, each marked with kustomize's
// helm-generated annotation exactly as markHelmGeneratedResources does.
func (h *helmRun) inflate(ctx context.Context, rmf *resmap.Factory, now func() time.Time) (resmap.ResMap, error) {
	p := h.chart
	// Config: the CLI's --helm-kube-version/--helm-api-versions are set first, then the plugin configuration is
	// unmarshalled over them, so a chart's own kubeVersion/apiVersions win.
	if p.KubeVersion == "" {
		p.KubeVersion = h.cfg.kubeVersion
	}
	p.ApiVersions = h.apiVersions
	// validateArgs
	if p.Name == "" {
		return nil, errors.New("chart name cannot be empty")
	}
	globals := h.globals
	if globals.ChartHome == "" {
		globals.ChartHome = types.HelmDefaultHome
	}
	absChartHome := globals.ChartHome
	if !filepath.IsAbs(absChartHome) {
		absChartHome = filepath.Join(h.ldr.root.String(), absChartHome)
	}
	if p.Version != "" && p.Repo != "" {
		absChartHome = filepath.Join(absChartHome, fmt.Sprintf("%s-%s", p.Name, p.Version))
	}
	if p.ValuesFile == "" {
		p.ValuesFile = filepath.Join(absChartHome, p.Name, "values.yaml")
	}
	additional := make([]string, len(p.AdditionalValuesFiles))
	for i, file := range p.AdditionalValuesFiles {
		if _, err := h.ldr.Load(file); err != nil {
			return nil, fmt.Errorf("could not load additionalValuesFile: %w", err)
		}
		additional[i] = filepath.Join(h.ldr.root.String(), file)
	}
	switch p.ValuesMerge {
	case "":
		p.ValuesMerge = "override"
	case "merge", "override", "replace":
	default:
		return nil, fmt.Errorf("valuesMerge must be one of %v", []string{"merge", "override", "replace"})
	}

	// Generate
	chartDir := filepath.Join(absChartHome, p.Name)
	if !h.ldr.fs.IsDir(chartDir) { // chartExistsLocally
		if p.Repo == "" {
			return nil, fmt.Errorf("no repo specified for pull, no chart found at '%s'", "")
		}
		return nil, &repofs.Refusal{Rule: RuleHelmPull, Path: chartDir,
			Detail: fmt.Sprintf("chart %s is not vendored; pulling it from %s is not supported", p.Name, p.Repo)}
	}
	var values []byte
	var err error
	if len(p.ValuesInline) > 0 {
		values, err = h.mergedValues(p)
	} else {
		values, err = h.ldr.Load(p.ValuesFile)
	}
	if err != nil {
		return nil, err
	}
	out, err := h.template(ctx, p, chartDir, values, additional, now)
	if err != nil {
		return nil, err
	}

	rm, resMapErr := rmf.NewResMapFromBytes(out)
	if resMapErr != nil {
		// helm may print text before the first document: read the documents kio can find
		nodes, err := (&kio.ByteReader{Reader: bytes.NewBuffer(out), OmitReaderAnnotations: true}).Read()
		if err != nil {
			return nil, fmt.Errorf("error reading helm output: %w", err)
		}
		if len(nodes) == 0 {
			return nil, fmt.Errorf("could not parse bytes into resource map: %w", resMapErr)
		}
		rm, err = rmf.NewResMapFromRNodeSlice(nodes)
		if err != nil {
			return nil, fmt.Errorf("could not parse rnode slice into resource map: %w", err)
		}
	}
	for _, r := range rm.Resources() {
		if err := r.RNode.PipeE(kyaml.SetAnnotation(konfig.HelmGeneratedAnnotation, "true")); err != nil {
			return nil, fmt.Errorf("failed to set helm annotation: %w", err)
		}
	}
	return rm, nil
}

// mergedValues mirrors createNewMergedValuesFile/replaceValuesInline.
func (h *helmRun) mergedValues(p types.HelmChart) ([]byte, error) {
	inline := p.ValuesInline
	if p.ValuesMerge == "merge" || p.ValuesMerge == "override" {
		pValues, err := h.ldr.Load(p.ValuesFile)
		if err != nil {
			return nil, err
		}
		chValues, err := kyaml.Parse(string(pValues))
		if err != nil {
			return nil, fmt.Errorf("could not parse values file into rnode: %w", err)
		}
		inlineValues, err := kyaml.FromMap(p.ValuesInline)
		if err != nil {
			return nil, fmt.Errorf("could not parse values inline into rnode: %w", err)
		}
		var outValues *kyaml.RNode
		if p.ValuesMerge == "override" {
			outValues, err = merge2.Merge(inlineValues, chValues.Copy(), kyaml.MergeOptions{})
		} else {
			outValues, err = merge2.Merge(chValues, inlineValues.Copy(), kyaml.MergeOptions{})
		}
		if err != nil {
			return nil, fmt.Errorf("could not merge values: %w", err)
		}
		inline, err = outValues.Map()
		if err != nil {
			return nil, fmt.Errorf("could not parse merged values into map: %w", err)
		}
	}
	return yaml.Marshal(inline)
}

// template reproduces `helm template` (helm v3.19.4 cmd/helm/template.go and install.go runInstall) for the
// arguments HelmChart.AsHelmArgs builds, on the chart vendored at chartDir.
func (h *helmRun) template(ctx context.Context, p types.HelmChart, chartDir string, values []byte, additional []string, now func() time.Time) ([]byte, error) {
	client := action.NewInstall(&action.Configuration{Log: func(string, ...interface{}) {}})
	if p.KubeVersion != "" {
		kv, err := chartutil.ParseKubeVersion(p.KubeVersion)
		if err != nil {
			return nil, fmt.Errorf("invalid kube version '%s': %s", p.KubeVersion, err)
		}
		client.KubeVersion = kv
	}
	client.DryRunOption = "true"
	client.DryRun = true
	client.Replace = true
	client.ClientOnly = true
	client.APIVersions = chartutil.VersionSet(p.ApiVersions)
	client.IncludeCRDs = p.IncludeCRDs
	client.DisableHooks = p.SkipHooks
	client.NameTemplate = p.NameTemplate
	client.Namespace = p.Namespace
	if client.Namespace == "" {
		client.Namespace = "default" // no --namespace: helm's settings.Namespace() without a kubeconfig
	}

	// install.NameAndChart for `template [NAME] CHART`: AsHelmArgs passes the release name, or --generate-name.
	switch {
	case p.ReleaseName != "" && p.NameTemplate != "":
		return nil, errors.New("cannot set --name-template and also specify a name")
	case p.ReleaseName != "":
		client.ReleaseName = p.ReleaseName
	case p.NameTemplate != "":
		name, err := action.TemplateName(p.NameTemplate)
		if err != nil {
			return nil, err
		}
		client.ReleaseName = name
	default:
		base := filepath.Base(chartDir)
		if i := strings.Index(base, "."); i != -1 {
			base = base[:i]
		}
		client.ReleaseName = fmt.Sprintf("%s-%d", base, now().Unix())
	}

	// values: -f <kustomize's values file> then -f each additional file, merged in order (values.Options).
	vals := map[string]interface{}{}
	layers := [][]byte{values}
	names := []string{p.ValuesFile}
	for _, f := range additional {
		b, err := h.ldr.fs.ReadFile(f)
		if err != nil {
			return nil, err
		}
		layers = append(layers, b)
		names = append(names, f)
	}
	for i, b := range layers {
		cur := map[string]interface{}{}
		if err := yaml.Unmarshal(b, &cur); err != nil {
			return nil, fmt.Errorf("failed to parse %s: %w", names[i], err)
		}
		vals = helmvalues.Merge(vals, cur)
	}

	rel, err := h.ldr.fs.resolve(chartDir)
	if err != nil {
		return nil, err
	}
	chrt, err := loadChartDir(h.ldr.fs.repo, rel)
	if err != nil {
		return nil, err
	}
	switch chrt.Metadata.Type { // checkIfInstallable
	case "", "application":
	default:
		return nil, fmt.Errorf("%s charts are not installable", chrt.Metadata.Type)
	}
	if req := chrt.Metadata.Dependencies; req != nil {
		if err := action.CheckDependencies(chrt, req); err != nil {
			return nil, fmt.Errorf("an error occurred while checking for chart dependencies. You may need to run `helm dependency build` to fetch missing dependencies: %w", err)
		}
	}
	if h.cfg.helm4 != nil {
		return h.template4(ctx, chrt, client, p, vals)
	}
	relz, err := client.RunWithContext(ctx, chrt, vals)
	if err != nil {
		return nil, err
	}
	// The output caps, on the release as helm's SDK returns it (no hook while it renders), before it is
	// assembled and kustomize parses it; the ResMap is checked again once the whole build is done.
	m := outputcap.Meter{Limits: h.cfg.output}
	if err := m.AddText(relz.Manifest); err != nil {
		return nil, err
	}
	for _, hk := range relz.Hooks {
		if err := m.AddText(hk.Manifest); err != nil {
			return nil, err
		}
	}
	var out helmtemplate.Output
	out.Release(relz.Manifest)
	for _, h := range relz.Hooks {
		if !client.DisableHooks && (!p.SkipTests || !helmtemplate.IsTestHook(h.Events)) {
			out.Hook(h.Path, h.Manifest)
		}
	}
	return out.Bytes(), nil
}

// template4 is the end of template when the helm binary is helm 4 (Argo CD 3.5 and later): the same chart files
// and flags, rendered by internal/render/helm/helm4. Schema validation is helm 4's rules on the Helm 3 parse of
// the chart, as for Helm 3 above (helm's own, which also reads file: and http(s): references).
func (h *helmRun) template4(ctx context.Context, chrt *chart.Chart, client *action.Install, p types.HelmChart, vals map[string]interface{}) ([]byte, error) {
	files := make([]helm4.File, len(chrt.Raw))
	for i, f := range chrt.Raw {
		files[i] = helm4.File{Name: f.Name, Data: f.Data}
	}
	ch4, err := helm4.Load(files)
	if err != nil {
		return nil, err
	}
	kubeVersion := ""
	if client.KubeVersion != nil {
		kubeVersion = p.KubeVersion
	}
	o := helm4.Options{
		ReleaseName: client.ReleaseName, Namespace: client.Namespace, KubeVersion: kubeVersion,
		APIVersions: p.ApiVersions, IncludeCRDs: client.IncludeCRDs, SkipTests: p.SkipTests,
		DisableHooks: client.DisableHooks, Output: h.cfg.output,
		ValidateValues: func(coalesced map[string]any) error {
			c, err := loader.LoadFiles(bufferedFiles(chrt.Raw))
			if err != nil {
				return err
			}
			if err := chartutil.ProcessDependenciesWithMerge(c, vals); err != nil {
				return err
			}
			if err := chartutil.ValidateAgainstSchema(c, coalesced); err != nil {
				return fmt.Errorf("values don't meet the specifications of the schema(s) in the following chart(s):\n%s", err.Error())
			}
			return nil
		},
	}
	return helm4.Template(ctx, *h.cfg.helm4, ch4, vals, o)
}

func bufferedFiles(raw []*chart.File) []*loader.BufferedFile {
	out := make([]*loader.BufferedFile, len(raw))
	for i, f := range raw {
		out[i] = &loader.BufferedFile{Name: f.Name, Data: f.Data}
	}
	return out
}
