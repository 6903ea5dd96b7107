package helm

import (
	"context"
	"errors"
	"fmt"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/fleetwave/fleetwave/internal/render/helm/helm4"
	"github.com/fleetwave/fleetwave/internal/render/helm/helmvalues"
)

// renderChart4 is renderChart for Argo CD 3.5 and later, whose repo-server runs helm 4 (internal/render/helm/
// helm4). The chart is read, its dependencies built and the values merged as for Helm 3 (shared code); helm 4
// parses the resulting files itself, once per content hash (e.cache4), and renders a copy (rendering modifies the
// chart). ch is the shared Helm 3 parse of the same files: schema validation runs on a copy of it after the same
// dependency processing, with helm 4's rules and messages (pkg/chart/common/util/jsonschema.go is helm 3's),
// remote references refused as for Helm 3.
func (e *Engine) renderChart4(ctx context.Context, ch *chart.Chart, cf *chartFiles, vals map[string]interface{}, o renderOpts) ([]byte, error) {
	cli, ok := helm4.CLIs[o.helmCLI]
	if !ok {
		return nil, fmt.Errorf("no helm 4 release %q known", o.helmCLI)
	}
	ch4, ok := e.cache4.get(cf.hash)
	if !ok {
		files := make([]helm4.File, len(cf.files))
		for i, f := range cf.files {
			files[i] = helm4.File{Name: f.Name, Data: f.Data}
		}
		var err error
		if ch4, err = helm4.Load(files); err != nil {
			return nil, err
		}
		e.cache4.put(cf.hash, ch4)
	}
	ho := helm4.Options{
		ReleaseName: o.name, Namespace: o.namespace, KubeVersion: o.kubeVersionFlag, APIVersions: o.apiVersions,
		IncludeCRDs: o.includeCrds, SkipTests: o.skipTests, Output: o.output,
	}
	if !o.skipSchemaValidation {
		ho.ValidateValues = func(coalesced map[string]any) error {
			c := copyChart(ch)
			if err := chartutil.ProcessDependenciesWithMerge(c, helmvalues.Copy(vals)); err != nil {
				return err
			}
			if err := validateAgainstSchema(c, coalesced); err != nil {
				var remote *remoteRefError
				if errors.As(err, &remote) {
					return err
				}
				return fmt.Errorf("values don't meet the specifications of the schema(s) in the following chart(s):\n%s", err.Error())
			}
			return nil
		}
	}
	return helm4.Template(ctx, cli, helm4.Copy(ch4), helmvalues.Copy(vals), ho)
}
