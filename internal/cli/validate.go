package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fleetwave/fleetwave/internal/edge/argocd/instances"
	"github.com/fleetwave/fleetwave/internal/plan"
)

// newValidateCmd builds `fleetwave validate [<policy file>]`: it checks a release policy and explains every
// error with its line. Exit 0 when valid (warnings included), 2 when the file is missing or invalid.
func newValidateCmd(deps *Deps) *cobra.Command {
	var instancesFile string
	cmd := &cobra.Command{
		Use:   "validate [<policy file>]",
		Short: "Check a release policy (" + plan.DefaultPolicyFile + ") and explain every error with its line",
		Long: "validate reads a release policy (default " + plan.DefaultPolicyFile + " in the current directory) " +
			"strictly and prints every error as file:line:col: message (hint: ...), then warnings about settings " +
			"that are valid but probably not meant. The format is described in docs/policy.md. With --argocd-instances it " +
			"checks an instances file (docs/instances.md) the same way, its token variables and files included.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if instancesFile != "" {
				err := validateInstances(deps, instancesFile)
				if err != nil || len(args) == 0 {
					return err // the policy too only when named
				}
			}
			file := plan.DefaultPolicyFile
			if len(args) == 1 {
				file = args[0]
			}
			data, err := validateReadPolicy(file)
			if err != nil {
				return usageErr(err)
			}
			p, err := plan.ParsePolicy(file, data)
			if err != nil {
				var pe *plan.PolicyError
				if !errors.As(err, &pe) {
					return usageErr(fmt.Errorf("validating %s: %w", file, err))
				}
				for _, d := range pe.Diagnostics {
					fmt.Fprintln(deps.Stdout, d.String())
				}
				return usageErr(fmt.Errorf("invalid policy %s: %d %s", file, len(pe.Diagnostics),
					validatePlural(len(pe.Diagnostics), "error", "errors")))
			}
			for _, w := range p.Warnings {
				fmt.Fprintln(deps.Stdout, w.String())
			}
			fmt.Fprintf(deps.Stdout, "ok: %s: %d %s\n", file, len(p.Waves), validatePlural(len(p.Waves), "wave", "waves"))
			return nil
		},
	}
	cmd.Flags().StringVar(&instancesFile, argocdInstancesFlag, "", "check this instances file (docs/instances.md) instead of the policy (both when a policy file is named too): every error with its line, its token variables and files read")
	return cmd
}

// validateInstances checks an instances file as the policy is checked: every problem on its own line, then exit 2.
func validateInstances(deps *Deps, file string) error {
	set, err := instances.LoadWith(file, instances.Options{Getenv: deps.env})
	if err != nil {
		var ie *instances.Error
		if !errors.As(err, &ie) {
			return usageErr(fmt.Errorf("validating %s: %w", file, err))
		}
		for _, p := range ie.Problems {
			fmt.Fprintln(deps.Stdout, p.String())
		}
		return usageErr(fmt.Errorf("invalid instances file %s: %d %s", file, len(ie.Problems),
			validatePlural(len(ie.Problems), "error", "errors")))
	}
	fmt.Fprintf(deps.Stdout, "ok: %s: %d %s: %s\n", file, set.Len(), validatePlural(set.Len(), "instance", "instances"),
		strings.Join(set.Names(), ", "))
	return nil
}

// validateReadPolicy reads at most plan.MaxPolicyBytes (+1, so that ParsePolicy reports a file too large).
func validateReadPolicy(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("reading policy: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, plan.MaxPolicyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading policy %s: %w", file, err)
	}
	return data, nil
}

func validatePlural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
