package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/fleetwave/fleetwave/internal/plan"
)

// newValidateCmd builds `fleetwave validate [<policy file>]`: it checks a release policy and explains every
// error with its line. Exit 0 when valid (warnings included), 2 when the file is missing or invalid.
func newValidateCmd(deps *Deps) *cobra.Command {
	return &cobra.Command{
		Use:   "validate [<policy file>]",
		Short: "Check a release policy (" + plan.DefaultPolicyFile + ") and explain every error with its line",
		Long: "validate reads a release policy (default " + plan.DefaultPolicyFile + " in the current directory) " +
			"strictly and prints every error as file:line:col: message (hint: ...), then warnings about settings " +
			"that are valid but probably not meant. The format is described in docs/policy.md.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
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
