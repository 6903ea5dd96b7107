package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/fleetwave/fleetwave/internal/edge/argocd/instances"
)

// argocdInstancesFlag is the flag naming an instances file (docs/instances.md), beside --argocd.
const argocdInstancesFlag = "argocd-instances"

func registerArgoCDInstances(fl *pflag.FlagSet, dst *string, dflt string) {
	fl.StringVar(dst, argocdInstancesFlag, "", "several Argo CD instances: a YAML file of each one's URL, token, TLS options and the apps it holds (docs/instances.md); not with --argocd"+dflt)
}

// loadInstances reads the instances file of --argocd-instances (nil, nil without one); server is --argocd's value,
// which may not be given with it. Token variables are read through deps.Getenv.
func loadInstances(deps *Deps, file, server string) (*instances.Set, error) {
	if file == "" {
		return nil, nil
	}
	if server != "" {
		return nil, errors.New("give --argocd (one Argo CD) or --argocd-instances (several), not both")
	}
	set, err := instances.LoadWith(file, instances.Options{Getenv: deps.env})
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", argocdInstancesFlag, err)
	}
	return set, nil
}
