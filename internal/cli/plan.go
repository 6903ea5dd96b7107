package cli

import (
	"github.com/spf13/cobra"
)

func newPlanCmd(deps *Deps) *cobra.Command {
	var f previewFlags
	cmd := &cobra.Command{
		Use:   "plan --repo <dir> --base <rev> [--head <rev>] [--clusters <file>]",
		Short: "Diff a change and plan its rollout in waves from the repository's release policy",
		Long: `plan does everything diff does, then plans the rollout of the changed and added apps with the release
policy at the head revision (.fleetwave.yaml at the repository root; without one, the default policy: one canary
app, then batches of at most 25% with at most one cluster per region). Destination-cluster labels come from
--clusters or from the cluster Secrets in the repository.

A plan that cannot place an app of the change (it failed to render) says it is incomplete and names the app.
An invalid policy does not hide the diff: it is printed, and the plan part gives the policy's errors at their lines.

Exit status: 0 when the plan follows the policy; 1 when it breaks it or is incomplete (or, with --exit-code, when
manifests changed); 2 on bad input, an invalid policy, an app that failed to render, or no app taking a source
from this repository (see diff --help).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPreview(cmd, deps, &f, true)
		},
	}
	f.register(cmd)
	return cmd
}
