package helm

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sversion "k8s.io/apimachinery/pkg/util/version"

	"github.com/fleetwave/fleetwave/internal/kit/yamlcodec/manifestyaml"
	_ "github.com/fleetwave/fleetwave/internal/render/helm/helm3" // DefaultCapabilities' API versions: helm v3.19.4's
	"github.com/fleetwave/fleetwave/internal/render/helm/helmtemplate"
	"github.com/fleetwave/fleetwave/internal/render/outputcap"
)

// What the released helm v3.19.4 binary (the one Argo CD 3.2-3.4's image ships) has baked in by its Makefile's ldflags,
// and the SDK lacks: its version and the default Kubernetes version (client-go v0.34 -> 1.34) used without
// --kube-version.
const (
	helmCLIVersion      = "v3.19.4"
	helmCLIGitCommit    = "7cfb6e486dac026202556836bb910c37d847793e"
	helmCLIDefaultKubeV = "v1.34.0"
)

// helmTemplate is `helm template . <flags>` as util/helm/cmd.go template runs it from the chart directory
// (helm's cmd/helm/template.go + install.go runInstall + pkg/action/install.go RunWithContext in client-only
// dry-run mode + action.go renderResources), with reposerver/repository/repository.go helmTemplate's retry
// after `helm dependency build` when a dependency is missing; its stdout is split into objects with
// gitops-engine kube.SplitYAML, as helmTemplate does. Results are cached by chart content and inputs.
func (e *Engine) helmTemplate(ctx context.Context, in Input, appPath string, o *templateOpts) ([]*unstructured.Unstructured, error) {
	// cmd/helm/template.go: --kube-version through chartutil.ParseKubeVersion.
	var kubeVersion *chartutil.KubeVersion
	if o.kubeVersion != "" {
		kv, err := chartutil.ParseKubeVersion(o.kubeVersion)
		if err != nil {
			return nil, fmt.Errorf("invalid kube version '%s': %s", o.kubeVersion, err)
		}
		kubeVersion = kv
	}
	// --api-versions is a StringSlice flag: each value is split as CSV.
	var apiVersions []string
	for _, v := range o.apiVersions {
		parts, err := readAsCSV(v)
		if err != nil {
			return nil, fmt.Errorf("invalid argument %q for \"-a, --api-versions\" flag: %w", v, err)
		}
		apiVersions = append(apiVersions, parts...)
	}
	// install.go NameAndChart: --name-template is a template.
	name, err := templateName(o.name)
	if err != nil {
		return nil, err
	}
	// runInstall: values are merged before the chart is loaded.
	vals, err := mergeValues(in, appPath, o)
	if err != nil {
		return nil, err
	}
	ch, cf, err := e.loadChecked(ctx, in, appPath)
	if err != nil {
		return nil, err
	}
	namespace := o.namespace
	if namespace == "" {
		// settings.Namespace() without --namespace: the kubeconfig's, "default" outside a cluster.
		namespace = "default"
	}
	ro := renderOpts{
		name: name, namespace: namespace, kubeVersion: kubeVersion, kubeVersionFlag: o.kubeVersion, apiVersions: apiVersions,
		includeCrds: !o.skipCrds, skipSchemaValidation: o.skipSchemaValidation, skipTests: o.skipTests,
		helmCLI: in.Target.HelmCLI(), output: in.Output,
	}
	key, cacheable := outputKey(cf.hash, vals, ro)
	if cacheable {
		if objs, err, ok := e.outputs.get(key); ok {
			return objs, err
		}
	}

	type result struct {
		objs []*unstructured.Unstructured
		size int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		var out []byte
		var err error
		if in.Target.Helm4() {
			out, err = e.renderChart4(ctx, ch, cf, vals, ro)
		} else {
			out, err = renderChart(copyChart(ch), vals, ro)
		}
		if err != nil {
			done <- result{err: err}
			return
		}
		objs, err := manifestyaml.Split(out) // kube.SplitYAML's results, cheaper
		done <- result{objs, len(out), err}
	}()
	select {
	case r := <-done:
		// A render the context ended may have stopped early (helm 4's engine watches it): not cached.
		if cacheable && ctx.Err() == nil {
			e.outputs.put(key, r.objs, r.err, r.size) // stores its own copy
		}
		return r.objs, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// loadChecked loads the chart in the app path and checks it as runInstall does (installable type, dependencies
// present); a missing dependency triggers the offline `helm dependency build` and one more attempt. It returns
// the chart (shared: copy before rendering) and its files (after the build, when there was one). Helm 3 and
// Helm 4 read charts alike (pkg/chart/loader, the v2 chart API), so both use this.
func (e *Engine) loadChecked(ctx context.Context, in Input, appPath string) (*chart.Chart, *chartFiles, error) {
	cf, err := readChartDir(in.FS, appPath, e.limits)
	if err != nil {
		return nil, nil, err
	}
	ch, err := e.load(cf)
	if err != nil {
		return nil, nil, err
	}
	if err := checkIfInstallable(ch); err != nil {
		return nil, nil, err
	}
	if ch.Metadata.Dependencies == nil {
		return ch, cf, nil
	}
	if err := checkDependencies(ch); err == nil {
		return ch, cf, nil
	}
	built, err := e.buildDependencies(ctx, in, appPath, ch, cf)
	if err != nil {
		return nil, nil, fmt.Errorf("error building helm chart dependencies: %w", err)
	}
	if ch, err = e.load(built); err != nil {
		return nil, nil, err
	}
	if err := checkIfInstallable(ch); err != nil {
		return nil, nil, err
	}
	if err := checkDependencies(ch); err != nil {
		return nil, nil, &markedError{msg: err.Error() + " (after building dependencies offline)", marks: []error{ErrMissingDependency}}
	}
	return ch, built, nil
}

// checkIfInstallable is cmd/helm/install.go checkIfInstallable.
func checkIfInstallable(ch *chart.Chart) error {
	switch ch.Metadata.Type {
	case "", "application":
		return nil
	}
	return fmt.Errorf("%s charts are not installable", ch.Metadata.Type)
}

// templateName is pkg/action/install.go TemplateName, minus sprig's env and expandenv: helm's chart engine
// removes them (pkg/engine/funcs.go) but --name-template keeps them, and a release name must not be able to
// read the bot's environment.
func templateName(nameTemplate string) (string, error) {
	if nameTemplate == "" {
		return "", nil
	}
	funcs := sprig.TxtFuncMap()
	delete(funcs, "env")
	delete(funcs, "expandenv")
	t, err := template.New("name-template").Funcs(funcs).Parse(nameTemplate)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, nil); err != nil {
		return "", err
	}
	return b.String(), nil
}

// readAsCSV is spf13/pflag's, behind StringSlice flags.
func readAsCSV(val string) ([]string, error) {
	if val == "" {
		return []string{}, nil
	}
	return csv.NewReader(strings.NewReader(val)).Read()
}

type renderOpts struct {
	name, namespace      string
	kubeVersion          *chartutil.KubeVersion // Helm 3's parse of kubeVersionFlag
	kubeVersionFlag      string                 // --kube-version, "" = the helm binary's default
	helmCLI              string                 // the helm release rendering: Input.Target.HelmCLI()
	apiVersions          []string
	includeCrds          bool
	skipSchemaValidation bool
	skipTests            bool
	output               outputcap.Limits // checked on the engine's output (Input.Output)
}

// capabilities are pkg/action/install.go RunWithContext's client-only ones: DefaultCapabilities (its API
// versions the released helm v3.19.4's, internal/render/helm/helm3), the
// --kube-version, the --api-versions appended; plus what the released binary's ldflags set (see constants).
func capabilities(o renderOpts) *chartutil.Capabilities {
	caps := chartutil.DefaultCapabilities.Copy()
	caps.HelmVersion.Version = helmCLIVersion
	caps.HelmVersion.GitCommit = helmCLIGitCommit
	caps.HelmVersion.GitTreeState = "clean"
	if o.kubeVersion != nil {
		caps.KubeVersion = *o.kubeVersion
	} else {
		kv := k8sversion.MustParseGeneric(helmCLIDefaultKubeV)
		caps.KubeVersion = chartutil.KubeVersion{Version: helmCLIDefaultKubeV,
			Major: strconv.FormatUint(uint64(kv.Major()), 10), Minor: strconv.FormatUint(uint64(kv.Minor()), 10)}
	}
	// A fresh slice: helm appends to the shared default set, which is not safe across goroutines.
	apis := make(chartutil.VersionSet, 0, len(caps.APIVersions)+len(o.apiVersions))
	apis = append(apis, caps.APIVersions...)
	caps.APIVersions = append(apis, o.apiVersions...)
	return caps
}

// renderChart is pkg/action/install.go RunWithContext (client-only dry run, as `helm template` sets it up) with
// action.go renderResources, then cmd/helm/template.go's assembly of stdout: the release manifest (CRDs first with
// --include-crds, then manifests in InstallOrder), then every hook (test hooks dropped with --skip-tests).
func renderChart(ch *chart.Chart, vals map[string]interface{}, o renderOpts) ([]byte, error) {
	if err := chartutil.ValidateReleaseName(o.name); err != nil {
		return nil, fmt.Errorf("release name %q: %w", o.name, err)
	}
	if err := chartutil.ProcessDependenciesWithMerge(ch, vals); err != nil {
		return nil, err
	}
	caps := capabilities(o)
	options := chartutil.ReleaseOptions{Name: o.name, Namespace: o.namespace, Revision: 1, IsInstall: true}
	// Schema validation is done by validateAgainstSchema, which refuses remote references.
	valuesToRender, err := chartutil.ToRenderValuesWithSchemaValidation(ch, vals, options, caps, true)
	if err != nil {
		return nil, err
	}
	if !o.skipSchemaValidation {
		coalesced, _ := valuesToRender["Values"].(chartutil.Values)
		if err := validateAgainstSchema(ch, coalesced); err != nil {
			var remote *remoteRefError
			if errors.As(err, &remote) {
				return nil, err
			}
			return nil, fmt.Errorf("values don't meet the specifications of the schema(s) in the following chart(s):\n%s", err.Error())
		}
	}

	// renderResources.
	if ch.Metadata.KubeVersion != "" && !chartutil.IsCompatibleRange(ch.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return nil, fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", ch.Metadata.KubeVersion, caps.KubeVersion.String())
	}
	var eng engine.Engine // no cluster: lookup returns empty; EnableDNS false: getHostByName returns ""
	files, err := eng.Render(ch, valuesToRender)
	if err != nil {
		return nil, err
	}
	helmtemplate.DropNotes(files)
	// The output caps, on the templates as the engine returns them (helm.sh/helm/v3@v3.19.4 pkg/engine/engine.go
	// render: a strings.Builder per template, no hook while it writes): refused here, an output bomb is not
	// sorted, assembled into stdout and split into objects, each a copy or more.
	if err := o.output.Texts(files); err != nil {
		return nil, err
	}
	hooks, manifests, err := sortManifests(files) // SortManifests(files, nil, InstallOrder), faster: sortmanifests.go
	if err != nil {
		return nil, err
	}
	var out helmtemplate.Output
	if o.includeCrds {
		for _, crd := range ch.CRDObjects() {
			out.Resource(crd.Filename, string(crd.File.Data))
		}
	}
	for _, m := range manifests {
		out.Resource(m.Name, m.Content)
	}
	for _, h := range hooks {
		if !o.skipTests || !helmtemplate.IsTestHook(h.Events) {
			out.Hook(h.Path, h.Manifest)
		}
	}
	return out.Bytes(), nil
}
