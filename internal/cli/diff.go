package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fleetwave/fleetwave/internal/config"
	"github.com/fleetwave/fleetwave/internal/discover"
	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/instances"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/livediff"
	"github.com/fleetwave/fleetwave/internal/edge/github"
	"github.com/fleetwave/fleetwave/internal/edge/source"
	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/preview"
	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/report"
)

// previewFlags are the flags `diff` and `plan` share.
type previewFlags struct {
	repo, base, head, output   string
	clustersFile, settingsFile string
	markdownOut                string
	repositories               string
	argocdVersion              string
	repoURLs                   []string
	exitCode                   bool
	worktree                   bool
	concurrency                int
	// Live-state comparison (internal/edge/argocd/livediff); off without --argocd.
	argocdURL, argocdToken string
	argocdInsecure         bool
	argocdCM               string
	// Several Argo CD instances (--argocd-instances): the file, and its content once read.
	argocdInstancesFile string
	instances           *instances.Set
}

func (f *previewFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.repo, "repo", ".", "the GitOps repository: a directory of a git working copy (its top level is found as git does), or a bare repository")
	fl.StringVar(&f.base, "base", "", "base revision: the branch the change goes into (required)")
	fl.StringVar(&f.head, "head", "HEAD", "head revision: the change")
	fl.StringVarP(&f.output, "output", "o", "text", "output format: text, markdown or json")
	fl.StringVar(&f.clustersFile, "clusters", "", "destination clusters: a YAML stream of Argo CD cluster Secrets, or a list under 'clusters:' (default: the cluster Secrets in the repository)")
	fl.StringArrayVar(&f.repoURLs, "repo-url", nil, "a URL (or owner/name) under which Applications name this repository, in addition to its origin remote; repeatable")
	fl.StringVar(&f.settingsFile, "settings", "", "render settings file (keys of render-env.yaml: kubeVersion, apiVersions, appLabelKey, trackingMethod, argocdVersion, ...)")
	fl.StringVar(&f.markdownOut, "markdown-out", "", "also write the pull-request comment (markdown) to this file, as the App posts it: over GitHub's size limit, part 1 here and parts 2.. in numbered files next to it (<name>.part2.md, ...)")
	fl.BoolVar(&f.exitCode, "exit-code", false, "exit 1 when the change alters any app's manifests, or an app it affects could not be rendered")
	fl.BoolVar(&f.worktree, "worktree", false, "the head is the working tree: HEAD plus the uncommitted changes of tracked files and staged new files (not with --head)")
	fl.IntVar(&f.concurrency, "concurrency", 0, "concurrent renders (default: number of CPUs)")
	registerRepositories(fl, &f.repositories)
	registerArgoCDVersion(fl, &f.argocdVersion)
	fl.StringVar(&f.argocdURL, "argocd", "", "also compare each affected app with its live state in this Argo CD (managed resources): what a sync would change, and drift from the base render")
	fl.StringVar(&f.argocdToken, "argocd-token", "", "Argo CD token for --argocd (default $FLEETWAVE_ARGOCD_TOKEN, preferred: a flag shows in the process list)")
	fl.BoolVar(&f.argocdInsecure, "argocd-insecure", false, "skip TLS verification of --argocd (local test servers only)")
	registerArgoCDInstances(fl, &f.argocdInstancesFile, "")
	fl.StringVar(&f.argocdCM, "argocd-cm", "", "with --argocd: Argo CD's argocd-cm ConfigMap (YAML) whose resource.customizations.ignoreDifferences.* and resource.compareoptions the live comparison applies (default: read from Argo CD's settings API)")
}

// argoCD returns the preview's Argo CD ports of --argocd (none without it).
func (f *previewFlags) argoCD(deps *Deps) (preview.ArgoCD, error) {
	if f.argocdURL == "" {
		return preview.ArgoCD{}, nil
	}
	token := f.argocdToken
	if token == "" {
		env, err := config.LoadCLI(deps.Getenv)
		if err != nil {
			return preview.ArgoCD{}, err
		}
		token = env.ArgoCDToken.Reveal()
	}
	client, err := argocd.New(argocd.Options{BaseURL: f.argocdURL, Token: token, Insecure: f.argocdInsecure})
	if err != nil {
		return preview.ArgoCD{}, err
	}
	opts := livediff.Options{Server: f.argocdURL}
	if f.argocdCM != "" {
		sys, err := livediff.LoadArgoCDCM(f.argocdCM)
		if err != nil {
			return preview.ArgoCD{}, fmt.Errorf("--argocd-cm: %w", err)
		}
		opts.System = &sys
	}
	return livediff.New(client, opts).Ports(), nil
}

func newDiffCmd(deps *Deps) *cobra.Command {
	var f previewFlags
	cmd := &cobra.Command{
		Use:   "diff --repo <dir> --base <rev> [--head <rev>]",
		Short: "Show how a change alters the rendered manifests of every Argo CD app it affects",
		Long: `diff finds the Applications and ApplicationSets of a GitOps repository (following app-of-apps), works
out which apps the change between --base and --head affects (from the exact files each app's render reads, its
source paths, value files, ref sources and manifest-generate-paths annotation), renders them at both revisions as
Argo CD's repo-server would, and prints the per-app diff. Secret values are never printed: changed keys show as
<changed>. Sources whose repoURL is not this repository (its origin remote or a --repo-url) are listed as external.

With --argocd, each affected app that exists in Argo CD is also compared with its live state (managed
resources, normalised as Argo CD does: the app's ignoreDifferences with managedFieldsManagers, and argocd-cm's
resource.customizations.ignoreDifferences.* and status ignoring, read from Argo CD's settings or --argocd-cm):
the live diff shows what a sync of the head would change, and drift is noted where live differs from the base
render; live resources in no render are noted as Argo CD would prune or ignore them (IgnoreExtraneous). Apps
missing in Argo CD get a note; an unreachable Argo CD is an error (exit 2). Apps whose source is a config-management plugin, which only Argo CD
can run, are rendered by Argo CD's repo-server at both revisions (the manifests endpoint) and diffed as well.

An app that could not be rendered here (a source outside the checkout) is listed as not rendered, never as
unchanged. When no app takes a source from this repository, typically a fork or a mirror whose origin is not the
URL the Applications use, nothing is rendered: diff says so and exits 2; pass that URL with --repo-url.

Exit status: 0 when every app rendered; 1 with --exit-code when some app's manifests changed; 2 on bad input,
when an app failed to render (the report still lists every other app), or when no app's source is this
repository.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPreview(cmd, deps, &f, false)
		},
	}
	f.register(cmd)
	return cmd
}

// runPreview runs `diff` (withPlan=false) or `plan` (withPlan=true).
func runPreview(cmd *cobra.Command, deps *Deps, f *previewFlags, withPlan bool) error {
	name := cmd.Name()
	switch f.output {
	case "text", "markdown", "json":
	default:
		return usageErr(fmt.Errorf("%s: --output %q: must be text, markdown or json", name, f.output))
	}
	if f.base == "" {
		return usageErr(fmt.Errorf("%s: --base is required", name))
	}
	limitBatchMemory(deps)
	in := preview.Input{RepoDir: f.repo, Base: f.base, Head: f.head, RepoURLs: f.repoURLs, Plan: withPlan, Concurrency: f.concurrency}
	if f.settingsFile != "" {
		s, err := render.LoadSettings(f.settingsFile)
		if err != nil {
			return usageErr(fmt.Errorf("%s: %w", name, err))
		}
		in.Settings = s
	}
	if err := applyArgoCDVersion(cmd.Flags(), &in.Settings, f.argocdVersion); err != nil {
		return usageErr(fmt.Errorf("%s: %w", name, err))
	}
	if f.clustersFile != "" {
		data, err := os.ReadFile(f.clustersFile)
		if err != nil {
			return usageErr(fmt.Errorf("%s: reading clusters: %w", name, err))
		}
		cs, err := discover.ParseClusters(f.clustersFile, data)
		if err != nil {
			return usageErr(fmt.Errorf("%s: %w", name, err))
		}
		in.Clusters = cs
	}
	if f.argocdCM != "" && f.argocdURL == "" {
		return usageErr(fmt.Errorf("%s: --argocd-cm needs --argocd", name))
	}
	set, err := loadInstances(deps, f.argocdInstancesFile, f.argocdURL)
	if err != nil {
		return usageErr(fmt.Errorf("%s: %w", name, err))
	}
	f.instances = set
	var fl *fleet
	if set != nil {
		// Several Argo CD instances: each app is previewed as its own instance renders it, and compared with its
		// live state there.
		var err error
		if fl, err = newFleet(set, nil); err != nil {
			return usageErr(fmt.Errorf("%s: --%s: %w", name, argocdInstancesFlag, err))
		}
		insts, err := fl.previewInstances(cmd.Context(), previewOptions{over: in.Settings, listClusters: f.clustersFile == "", log: toolLog(deps.Stderr)})
		if err != nil {
			return &ExitError{Code: 2, Err: fmt.Errorf("%s: %w", name, err)}
		}
		in.InstanceOf, in.Instances = fl.instanceOf(), insts
	} else {
		argo, err := f.argoCD(deps)
		if err != nil {
			return usageErr(fmt.Errorf("%s: --argocd: %w", name, err))
		}
		in.ArgoCD = argo
	}
	worktreeNote, err := f.workingTree(cmd, &in)
	if err != nil {
		return err
	}
	remote, err := fetchers(deps, f.repositories)
	if err != nil {
		return usageErr(fmt.Errorf("%s: %w", name, err))
	}
	// The PR's content renders in worker processes, as under serve (internal/render/isolate).
	r, closeRenderer, _, err := newRenderer(deps.Getenv, toolLog(deps.Stderr), remote, in.Concurrency)
	if err != nil {
		return usageErr(fmt.Errorf("%s: %w", name, err))
	}
	res, err := preview.Run(cmd.Context(), r, in)
	closeRenderer()
	var rep *report.Report
	if res != nil {
		rep = res.Report
	}
	if rep != nil && worktreeNote != "" {
		rep.Notes = append([]string{worktreeNote}, rep.Notes...)
	}
	var pe *plan.PolicyError
	if errors.As(err, &pe) && rep != nil {
		// A broken policy does not hide the diff: show it, then fail the plan part with the policy's errors.
		return policyFailed(deps, name, f, rep, pe)
	}
	if err != nil {
		var ie *preview.InputError
		if errors.As(err, &ie) {
			return usageErr(fmt.Errorf("%s: %w", name, err))
		}
		return &ExitError{Code: 2, Err: fmt.Errorf("%s: %w", name, err)}
	}
	if err := writePreview(deps.Stdout, rep, f.output); err != nil {
		return &ExitError{Code: 2, Err: fmt.Errorf("%s: writing output: %w", name, err)}
	}
	if f.markdownOut != "" {
		files, err := writeComment(f.markdownOut, rep)
		if err != nil {
			return &ExitError{Code: 2, Err: fmt.Errorf("%s: %w", name, err)}
		}
		if len(files) > 1 {
			fmt.Fprintf(deps.Stderr, "fleetwave: %s: the comment is over GitHub's limit of %d bytes: %d parts, as the App posts them: %s\n",
				name, github.MaxCommentBody, len(files), strings.Join(files, ", "))
		}
	}
	if fl != nil && withPlan && fl.onlyUnplaced(rep) {
		// Apps of no single Argo CD instance: each one's line, and the plan is incomplete (exit 1), not broken.
		_ = previewExit(deps.Stderr, name, rep, false)
		return &ExitError{Code: 1, Err: fmt.Errorf("%s: the plan is incomplete: %s of the change held by no single Argo CD instance, so the plan does not place them",
			name, text.Plural(rep.Summary.Failed, "app"))}
	}
	return previewExit(deps.Stderr, name, rep, f.exitCode)
}

// workingTree handles a working copy's uncommitted changes when the head is HEAD: with --worktree the head
// becomes a commit of them; without it the returned note says they are not previewed and how to include them
// (a local edit silently left out would read as "no change").
func (f *previewFlags) workingTree(cmd *cobra.Command, in *preview.Input) (string, error) {
	name := cmd.Name()
	if f.worktree && cmd.Flags().Changed("head") {
		return "", usageErr(fmt.Errorf("%s: --worktree and --head: the working tree is the head", name))
	}
	if f.head != "HEAD" {
		return "", nil
	}
	repo, err := source.Open(cmd.Context(), f.repo)
	if err != nil {
		return "", nil // preview.Run says so
	}
	commit, dirty, untracked, err := repo.WorkingTree(cmd.Context())
	if err != nil {
		return "", usageErr(fmt.Errorf("%s: %w", name, err))
	}
	switch {
	case !dirty:
		return "", nil
	case !f.worktree:
		return "the working tree has uncommitted changes, not previewed (the head is HEAD, its last commit): commit them, or pass --worktree to include them", nil
	}
	note := "the head is the working tree: HEAD and its uncommitted changes"
	if commit != "" {
		in.Head = commit
	}
	if untracked {
		note += "; untracked files are not included (git add them first)"
	}
	return note, nil
}

func writePreview(w io.Writer, rep *report.Report, output string) error {
	switch output {
	case "json":
		return rep.WriteJSON(w)
	case "markdown":
		_, err := io.WriteString(w, rep.Markdown())
		return err
	default:
		return rep.WriteText(w)
	}
}

// writeComment writes the pull-request comment to path as the App would post it: split into the same parts
// (report.MarkdownParts at github.MaxCommentPart), part 1 to path and parts 2.. to
// <path-without-ext>.part<N><ext>. It returns the files written, in order. Numbered files of an earlier, longer
// comment are removed, so the files on disk are the comment.
func writeComment(path string, rep *report.Report) ([]string, error) {
	parts := rep.MarkdownParts(github.MaxCommentPart)
	ext := filepath.Ext(path)
	stem := strings.TrimSuffix(path, ext)
	partName := func(n int) string { return fmt.Sprintf("%s.part%d%s", stem, n, ext) }
	files := make([]string, 0, len(parts))
	for i, p := range parts {
		name := path
		if i > 0 {
			name = partName(i + 1)
		}
		if err := os.WriteFile(name, []byte(p), 0o644); err != nil {
			return files, fmt.Errorf("writing %s: %w", name, err)
		}
		files = append(files, name)
	}
	for n := len(parts) + 1; ; n++ {
		if err := os.Remove(partName(n)); err != nil {
			break
		}
	}
	return files, nil
}

// policyFailed writes a report made without its plan because the release policy is invalid, prints each policy
// error on stderr and exits 2.
func policyFailed(deps *Deps, name string, f *previewFlags, rep *report.Report, pe *plan.PolicyError) error {
	if err := writePreview(deps.Stdout, rep, f.output); err != nil {
		return &ExitError{Code: 2, Err: fmt.Errorf("%s: writing output: %w", name, err)}
	}
	if f.markdownOut != "" {
		if _, err := writeComment(f.markdownOut, rep); err != nil {
			return &ExitError{Code: 2, Err: fmt.Errorf("%s: %w", name, err)}
		}
	}
	_ = previewExit(deps.Stderr, name, rep, false) // the apps' and repository's errors, one line each
	for _, e := range rep.PolicyErrors {
		fmt.Fprintf(deps.Stderr, "fleetwave: %s: %s\n", name, e)
	}
	return usageErr(fmt.Errorf("%s: invalid release policy %s (%s): no plan was made; the diff above is complete", name, pe.File, text.Plural(len(pe.Diagnostics), "error")))
}

// previewExit prints one line per problem to stderr and chooses the exit status: 2 when an app failed to render
// or the repository has problems, 1 when the plan breaks policy or (with --exit-code) something changed.
// noSourceInRepo is the one clear line of a run that rendered nothing because no app takes a source from the
// repository (a fork or a mirror under another URL): no all-clear, and how to fix it. urls are what the apps name.
func noSourceInRepo(urls []string) string {
	msg := "no app takes a source from this repository, so nothing was rendered"
	if len(urls) > 0 {
		msg += fmt.Sprintf(" (the apps name %s, not its origin remote)", strings.Join(urls, ", "))
	}
	hint := "<url>"
	if len(urls) == 1 {
		hint = urls[0]
	}
	return msg + ": if this checkout is a fork or mirror, give the URL the Applications use: --repo-url " + hint
}

// noAppsMessage is the one line of a repository that declares no Application or ApplicationSet at either side.
const noAppsMessage = "no Argo CD Application or ApplicationSet at either revision, so nothing was previewed: point --repo at the GitOps repository that declares the Applications (not the repository of the manifests they deploy)"

func previewExit(stderr io.Writer, name string, rep *report.Report, exitOnChange bool) error {
	for _, a := range rep.Apps {
		if a.Status == report.StatusError {
			fmt.Fprintf(stderr, "fleetwave: %s: app %s: %s\n", name, a.Key(), a.Error)
		}
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(stderr, "fleetwave: %s: %s\n", name, p)
	}
	for _, u := range rep.Unevaluated {
		if u.Changed {
			fmt.Fprintf(stderr, "fleetwave: %s: %s\n", name, u)
		}
	}
	if rep.NoSourceInRepo {
		return &ExitError{Code: 2, Err: errors.New(name + ": " + noSourceInRepo(rep.AppRepoURLs))}
	}
	if rep.HasErrors() {
		msg := fmt.Sprintf("%s: %d of %d apps failed to render, %s", name, rep.Summary.Failed, rep.Summary.Apps,
			text.Plural(len(rep.Problems), "repository problem"))
		if n := rep.UnevaluatedChanged(); n > 0 {
			msg += ", " + text.Plural(n, "changed ApplicationSet") + " not evaluated"
		}
		return &ExitError{Code: 2, Err: errors.New(msg)}
	}
	if rep.Plan != nil && !rep.Plan.OK() {
		return &ExitError{Code: 1, Err: fmt.Errorf("%s: the plan breaks the release policy", name)}
	}
	if rep.Plan != nil && !rep.Plan.Complete() {
		return &ExitError{Code: 1, Err: fmt.Errorf("%s: the plan is incomplete: some apps of the change could not be rendered, so they are not placed", name)}
	}
	if rep.NoApps {
		return &ExitError{Code: 2, Err: errors.New(name + ": " + noAppsMessage)}
	}
	if n := rep.UnrenderedAffected(); exitOnChange && n > 0 {
		// Not rendered is not unchanged: as plan's incomplete plan, exit 1.
		return &ExitError{Code: 1, Err: fmt.Errorf("%s: %s the change affects could not be rendered, so what it changes is not known: %s", name, text.Plural(n, "app"), rep.SummaryLine())}
	}
	if exitOnChange && rep.HasChanges() {
		return &ExitError{Code: 1, Err: fmt.Errorf("%s: %s", name, rep.SummaryLine())}
	}
	return nil
}
