package kustomize

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"

	"github.com/fleetwave/fleetwave/internal/render/helm/helm4"
	"github.com/fleetwave/fleetwave/internal/render/outputcap"
)

// buildOptions is what `kustomize build` makes of its command line (kustomize v5.8.1 commands/build).
type buildOptions struct {
	loadRestrictions types.LoadRestrictions
	reorder          krusty.ReorderOption
	addManagedBy     bool
	helm             helmConfig
	alphaPlugins     bool // --enable-alpha-plugins: external plugins stay refused, Helm is enabled
}

// helmConfig is types.HelmConfig minus the command: charts are rendered in-process.
type helmConfig struct {
	enabled     bool
	kubeVersion string
	apiVersions []string
	helm4       *helm4.CLI // the helm 4 release to render with; nil: helm v3.19.4
	// output caps each chart's rendered text (Input.Output) as helm returns it, before kustomize parses it
	output outputcap.Limits
}

// buildArgs reproduces the argument list Argo CD passes to `kustomize build` (util/kustomize/kustomize.go,
// parseKustomizeBuildOptions): the application path, argocd-cm's kustomize.buildOptions split on white space
// and, on kustomize >= 5.3 with --enable-helm anywhere in the options, --helm-kube-version and one
// --helm-api-versions per API version.
func buildArgs(appPath, buildOpts, kubeVersion string, apiVersions []string) []string {
	args := append([]string{appPath}, strings.Fields(buildOpts)...)
	if strings.Contains(buildOpts, "--enable-helm") {
		if kubeVersion != "" {
			args = append(args, "--helm-kube-version", kubeVersion)
		}
		for _, v := range apiVersions {
			args = append(args, "--helm-api-versions", v)
		}
	}
	return args
}

// parseKubeVersion mirrors reposerver/repository/repository.go parseKubeVersion: "v1.30.0" becomes "1.30.0".
func parseKubeVersion(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	kv, err := version.ParseGeneric(v)
	if err != nil {
		return "", fmt.Errorf("could not parse kubernetes version %s: %w", v, err)
	}
	return kv.String(), nil
}

// parseBuildArgs parses args (without the leading "build") the way kustomize's build command does and
// validates them (build.Validate). Options that would run programs or write files are refused; options that only
// configure KRM functions, which never run here, are accepted and ignored.
func parseBuildArgs(args []string) (*buildOptions, error) {
	fs := pflag.NewFlagSet("build", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		output, loadRestrictor, reorder, helmCommand, helmKubeVersion, networkName string
		alphaPlugins, managedBy, enableHelm, helmDebug, network, asCurrentUser     bool
		enableExec                                                                 bool
		helmAPIVersions, mounts, env                                               []string
	)
	fs.StringVarP(&output, "output", "o", "", "")
	fs.BoolVar(&network, "network", false, "")
	fs.StringVar(&networkName, "network-name", "bridge", "")
	fs.StringArrayVar(&mounts, "mount", nil, "")
	fs.StringArrayVarP(&env, "env", "e", nil, "")
	fs.BoolVar(&asCurrentUser, "as-current-user", false, "")
	fs.StringVar(&loadRestrictor, "load-restrictor", types.LoadRestrictionsRootOnly.String(), "")
	fs.BoolVar(&alphaPlugins, "enable-alpha-plugins", false, "")
	fs.StringVar(&reorder, "reorder", string(krusty.ReorderOptionLegacy), "")
	fs.BoolVar(&managedBy, "enable-managedby-label", false, "")
	fs.BoolVar(&enableHelm, "enable-helm", false, "")
	fs.StringVar(&helmCommand, "helm-command", "helm", "")
	fs.StringArrayVar(&helmAPIVersions, "helm-api-versions", nil, "")
	fs.StringVar(&helmKubeVersion, "helm-kube-version", "", "")
	fs.BoolVar(&helmDebug, "helm-debug", false, "")
	fs.BoolVar(&enableExec, "enable-exec", false, "")
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("kustomize build options: %w", err)
	}
	if fs.NArg() > 1 {
		return nil, errors.New("kustomize build options: specify one path to kustomization.yaml")
	}
	if output != "" {
		return nil, errors.New("kustomize build options: --output is not supported (the build never writes files)")
	}
	switch loadRestrictor {
	case types.LoadRestrictionsRootOnly.String(), types.LoadRestrictionsNone.String(), "":
	default:
		return nil, fmt.Errorf("kustomize build options: illegal flag value --load-restrictor %s; legal values: %v",
			loadRestrictor, []string{types.LoadRestrictionsRootOnly.String(), types.LoadRestrictionsNone.String()})
	}
	switch reorder {
	case string(krusty.ReorderOptionNone), string(krusty.ReorderOptionLegacy):
	default:
		return nil, fmt.Errorf("kustomize build options: illegal flag value --reorder %s; legal values: %v",
			reorder, []string{string(krusty.ReorderOptionLegacy), string(krusty.ReorderOptionNone)})
	}
	o := &buildOptions{
		loadRestrictions: types.LoadRestrictionsRootOnly,
		reorder:          krusty.ReorderOptionUnspecified,
		addManagedBy:     managedBy,
		alphaPlugins:     alphaPlugins,
		helm: helmConfig{
			// build.HonorKustomizeFlags: EnabledPluginConfig turns Helm on; otherwise --enable-helm does.
			enabled:     alphaPlugins || enableHelm,
			kubeVersion: helmKubeVersion,
			apiVersions: helmAPIVersions,
		},
	}
	if loadRestrictor == types.LoadRestrictionsNone.String() {
		o.loadRestrictions = types.LoadRestrictionsNone
	}
	if fs.Changed("reorder") { // getFlagReorderOutput
		o.reorder = krusty.ReorderOption(reorder)
	}
	return o, nil
}
