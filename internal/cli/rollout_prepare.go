package cli

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fleetwave/fleetwave/internal/autosync"
	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/source"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/rollout"
)

// newRolloutPrepareCmd is `fleetwave rollout prepare`: the hold before the merge, from the terminal.
func newRolloutPrepareCmd(deps *Deps, o *rolloutOptions) *cobra.Command {
	c := &cobra.Command{
		Use:   "prepare --argocd <url> (--base <rev> [--repo <dir>] [--head <rev>] | --plan <plan.json>)",
		Short: "Before merging: switch Argo CD automated sync off for the apps the change will roll out (automatedSync: disable-during-rollout)",
		Long: `prepare computes the plan exactly as 'fleetwave rollout' does (same flags) and, for the apps it rolls out
whose Argo CD automated sync is on, switches it off now — before the merge lands. Run it before merging: with a
Git webhook, Argo CD syncs every app with automated sync to the merge within a second of the push, before any
rollout could switch it off. The hold is recorded in the store (--store): 'fleetwave rollout' of the same head
takes it over and restores automated sync when the rollout ends; 'fleetwave rollout release' (printed) undoes it
if the change is not merged.

The patch on each Application: spec.syncPolicy.automated removed, the original kept in the annotation
` + autosync.Annotation + `, the label ` + autosync.Label + ` set (docs/policy.md). Self-heal is off with it
while the hold lasts.

Exit status: 0 held (or nothing to hold); 1 an app could not be switched off, or the plan breaks the release
policy; 2 bad input.`,
		Example: `  fleetwave rollout prepare --argocd https://argocd.example.com --repo . --base origin/main --head feature
  git push origin feature:main   # merge
  fleetwave rollout --argocd https://argocd.example.com --repo . --base origin/main~1 --head origin/main`,
		Args: cobra.NoArgs,
	}
	// The change's flags are the rollout's, bound to a copy (a flag's default is written when it is defined, so
	// binding rollout's own fields again would change the rollout's defaults) and copied over when it runs.
	var p rolloutOptions
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		o.repo, o.base, o.head, o.clustersFile, o.settingsFile = p.repo, p.base, p.head, p.clustersFile, p.settingsFile
		o.repositories, o.argocdVersion, o.repoURLs, o.repoName, o.planFile = p.repositories, p.argocdVersion, p.repoURLs, p.repoName, p.planFile
		return runRolloutPrepare(cmd.Context(), deps, o)
	}
	registerChangeFlags(c.Flags(), &p, "head revision: the change to be merged",
		"a URL under which Applications name the repository (default its origin remote); repeatable",
		"the repository's name in the store, owner/name (default: from its origin remote, local/plan for --plan)")
	return c
}

// newRolloutReleaseCmd is `fleetwave rollout release`: automated sync back on, as it was.
func newRolloutReleaseCmd(deps *Deps, o *rolloutOptions) *cobra.Command {
	c := &cobra.Command{
		Use:   "release --argocd <url> (--repo-name <owner/name> --head <sha> | --id <rollout>)",
		Short: "Switch Argo CD automated sync back on, as it was, for the apps of a prepare (--head) or of a finished rollout (--id)",
		Long: `release undoes what keeps the apps' automated sync off, as the Applications had it before:
  --repo-name <owner/name> --head <sha>   the hold 'fleetwave rollout prepare' recorded for that head (the change
                                          was not merged, or will not be rolled out from here)
  --id <rollout>                          a finished rollout's apps: one that failed or was rolled back keeps them
                                          off on purpose (restoring makes Argo CD sync the merge again) and prints
                                          this command; run it once Argo CD may sync them by itself again

An app another hold (an open pull request, another prepare) or an unfinished rollout still needs off stays off;
release names it.`,
		Args: cobra.NoArgs,
	}
	var p rolloutOptions // bound apart, as prepare's
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		o.repo, o.repoName, o.head = p.repo, p.repoName, p.head
		return runRolloutRelease(cmd.Context(), deps, o)
	}
	f := c.Flags()
	f.StringVar(&p.repo, "repo", ".", "the GitOps repository: its origin names it, and --head is resolved there when it is not a full SHA")
	f.StringVar(&p.repoName, "repo-name", "", "the repository's name in the store, owner/name (default: from --repo's origin remote)")
	f.StringVar(&p.head, "head", "", "the head commit 'rollout prepare' held")
	return c
}

func runRolloutPrepare(ctx context.Context, deps *Deps, o *rolloutOptions) error {
	if err := o.complete(deps.Getenv); err != nil {
		return usageErr(err)
	}
	if o.selector != "" || o.revision != "" {
		return usageErr(errors.New("rollout prepare holds a change before its merge: give --base (or --plan), not --selector"))
	}
	client, req, err := o.plannedRequest(ctx, deps, "rollout prepare", "hold", "switched")
	if err != nil || req.Plan == nil {
		return err
	}
	apps := autosync.PlannedApps(req.Plan)
	if len(apps) == 0 || req.AutomatedSync != plan.AutomatedSyncDisableDuringRollout {
		fmt.Fprintf(deps.Stdout, "no app of the plan has automated sync: nothing to hold (%s in %s)\n",
			text.Plural(req.Plan.AppCount(), "app"), text.Plural(len(req.Plan.Waves), "wave"))
		return nil
	}
	st, err := openRolloutStore(ctx, o.storeDSN)
	if err != nil {
		return usageErr(err)
	}
	defer st.Close()
	h := &autosync.Holder{Argo: client, Store: st}
	if o.fleet != nil {
		h = o.fleet.holder(st) // each app held on its own instance
	}
	res, err := h.Hold(ctx, autosync.Owner{Repo: req.Repo, PR: 0, Head: req.MergeSHA}, apps)
	if err != nil {
		return fmt.Errorf("rollout prepare: %w", err)
	}
	for _, k := range res.Held {
		how := "was already off"
		if containsApp(res.Switched, k) {
			how = "switched off"
		}
		fmt.Fprintf(deps.Stdout, "held: %s (automated sync %s)\n", k, how)
	}
	undo := o.releaseCommand(req.Repo, req.MergeSHA)
	fmt.Fprintf(deps.Stdout, "automated sync held off for %s until the rollout of %s ends; to undo: %s\n",
		text.Plural(len(res.Held), "app"), text.ShortRev(req.MergeSHA), undo)
	if len(res.Failed) > 0 {
		for _, f := range res.Failed {
			fmt.Fprintf(deps.Stderr, "fleetwave: rollout prepare: %s\n", text.FirstLine(f.Error()))
		}
		return &ExitError{Code: 1, Err: fmt.Errorf("rollout prepare: automated sync could not be switched off for %s: do not merge yet (rerun prepare)",
			text.Plural(len(res.Failed), "app"))}
	}
	return nil
}

// releaseCommand is the exact command that undoes a prepare of head.
func (o *rolloutOptions) releaseCommand(repo, head string) string {
	cmd := "fleetwave rollout release --argocd " + o.server
	if o.storeDSN != defaultRolloutStore {
		cmd += " --store " + shellQuote(o.storeDSN)
	}
	return cmd + " --repo-name " + shellQuote(repo) + " --head " + head
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == ':' || r == '@' || r == '+' || r == '=' ||
			('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func containsApp(keys []store.AppKey, k store.AppKey) bool {
	for _, x := range keys {
		if x == k {
			return true
		}
	}
	return false
}

func runRolloutRelease(ctx context.Context, deps *Deps, o *rolloutOptions) error {
	if err := o.complete(deps.Getenv); err != nil {
		return usageErr(err)
	}
	switch {
	case o.id != 0 && o.head != "":
		return usageErr(errors.New("rollout release: give --id (a finished rollout) or --head (a prepare), not both"))
	case o.id == 0 && o.head == "":
		return usageErr(errors.New("rollout release needs --head <sha> (what 'rollout prepare' held) or --id <rollout>"))
	}
	if err := o.checkServer(); err != nil {
		return usageErr(err)
	}
	var client *argocd.Client
	var argo rollout.ArgoCD
	holder := func(st autosync.Store) *autosync.Holder { return &autosync.Holder{Argo: client, Store: st} }
	if o.instances != nil {
		if err := o.connect(); err != nil {
			return usageErr(err)
		}
		if err := o.probeFleet(ctx); err != nil {
			return err
		}
		holder = o.fleet.holder
	} else {
		c, err := o.client()
		if err != nil {
			return usageErr(err)
		}
		if _, err := c.ListApplications(ctx, argocd.ListQuery{Selector: "fleetwave.io/probe=none"}); err != nil {
			return o.argoErr("checking the token", err)
		}
		client, argo = c, c
	}
	st, err := openRolloutStore(ctx, o.storeDSN)
	if err != nil {
		return usageErr(err)
	}
	defer st.Close()
	var restored, kept []store.AppKey
	var failed error
	if o.id != 0 {
		ex := o.executor(deps, st, argo, terminalReporter{wake: make(chan struct{}, 1)})
		restored, kept, err = ex.ReleaseAutomated(ctx, o.id)
		if errors.Is(err, rollout.ErrRefused) || errors.Is(err, store.ErrNotFound) {
			return &ExitError{Code: 1, Err: fmt.Errorf("rollout release: %w", err)}
		}
		if len(restored) == 0 && len(kept) == 0 && err != nil {
			return fmt.Errorf("rollout release: %w", err)
		}
		failed = err
	} else {
		head, name, err := o.releaseTarget(ctx)
		if err != nil {
			return usageErr(err)
		}
		res, err := holder(st).Release(ctx, name, 0, head)
		if err != nil {
			return fmt.Errorf("rollout release: %w", err)
		}
		restored, kept = res.Restored, res.Kept
		var errs []error
		for _, f := range res.Failed {
			errs = append(errs, f)
		}
		failed = errors.Join(errs...)
	}
	for _, k := range restored {
		fmt.Fprintf(deps.Stdout, "restored: %s (automated sync on, as it was)\n", k)
	}
	for _, k := range kept {
		fmt.Fprintf(deps.Stdout, "kept off: %s (another hold or an unfinished rollout needs it off)\n", k)
	}
	fmt.Fprintf(deps.Stdout, "automated sync restored for %s, %s kept off\n", text.Plural(len(restored), "app"), text.Plural(len(kept), "app"))
	if failed != nil {
		return &ExitError{Code: 1, Err: fmt.Errorf("rollout release: %s", text.FirstLine(failed.Error()))}
	}
	return nil
}

// releaseTarget is the head (a full SHA) and repository name of `release --head`.
func (o *rolloutOptions) releaseTarget(ctx context.Context) (head, name string, err error) {
	head = o.head
	if !source.IsFullSHA(head) {
		out, err := exec.CommandContext(ctx, "git", "-C", o.repo, "rev-parse", "--verify", head+"^{commit}").Output()
		if err != nil {
			return "", "", fmt.Errorf("--head %q is not a full commit SHA and not a commit of %s", head, o.repo)
		}
		head = strings.TrimSpace(string(out))
	}
	name = o.repoName
	if name == "" {
		origin := ""
		if repo, err := source.Open(ctx, o.repo); err == nil {
			origin, _ = repo.OriginURL(ctx)
		}
		name = repoFullName(origin, o.repo)
	}
	return head, name, nil
}

// withAutomatedNote adds to msg the line saying which apps a finished rollout left with automated sync off and
// the command that restores them (rollout.AutomatedSyncNote), when there is one.
func withAutomatedNote(msg string, r store.Rollout) string {
	note := rollout.AutomatedSyncNote(r)
	switch {
	case note == "":
		return msg
	case msg == "":
		return note
	}
	return msg + "; " + note
}
