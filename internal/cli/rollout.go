package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/fleetwave/fleetwave/internal/config"
	"github.com/fleetwave/fleetwave/internal/discover"
	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/instances"
	"github.com/fleetwave/fleetwave/internal/edge/source"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/fleetview"
	"github.com/fleetwave/fleetwave/internal/inventory"
	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/preview"
	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/render/target"
	"github.com/fleetwave/fleetwave/internal/rollout"
)

// Exit codes of `fleetwave rollout` besides 0 (succeeded), 1 (failed, aborted, rolled back, superseded, or a
// wave failed and its onFailure paused the rollout) and 2 (bad input, nothing synced).
const (
	exitPaused      = 3   // paused (first Ctrl-C, or `rollout pause`): rerun the command or `rollout resume`
	exitInterrupted = 130 // stopped by a second Ctrl-C or SIGTERM before the rollout paused: rerun to continue
)

// interruptDebounce is how soon after the first interrupt a second one counts as the same: `timeout -s INT`
// signals the child and then its process group at once, which would otherwise read as two Ctrl-Cs.
const interruptDebounce = 500 * time.Millisecond

// interruptActor is the actor of the pause a Ctrl-C makes; a rerun of the same command resumes such a pause.
const interruptActor = "interrupt"

type rolloutOptions struct {
	// Argo CD.
	server, token, caFile string
	insecure              bool
	// Several Argo CD instances (--argocd-instances, not with --argocd): the file, and its content once read.
	instancesFile string
	instances     *instances.Set
	fleet         *fleet // its clients, once connected
	// What to roll out: a plan computed from the repository, a plan file, or a selector.
	repo, base, head, clustersFile, settingsFile string
	repoURLs                                     []string
	repoName                                     string
	planFile                                     string
	repositories                                 string
	argocdVersion                                string
	selector, revision                           string
	projects                                     []string
	// How.
	storeDSN     string
	concurrency  int
	prune        bool
	dryRun       bool
	timeout      time.Duration
	clockSkew    time.Duration
	drainTimeout time.Duration
	output       string
	ui           string // address of the fleet view while the rollout runs ("" = none)
	// Subcommands.
	id int64
	// memberOf: the approver states membership of this team (approve of a wave whose approval names teams).
	memberOf string
	// keepAutomatedOff: abort leaves the apps' automated sync switched off (default: restored).
	keepAutomatedOff bool
	// Hidden, for tests: how long a killed run's claim on its rollout lasts, and how long a sync request may
	// take to show in Argo CD.
	leaseTTL, intentGrace time.Duration

	// Unused, kept so that scripts of the selector-only command keep working.
	resolveTimeout  time.Duration
	requireResolved bool
}

const defaultRolloutStore = "fleetwave-rollout.db"

// newRolloutCmd is `fleetwave rollout`: a merge carried across the fleet by the same durable executor the App
// runs (internal/rollout), with a terminal in place of check-runs.
func newRolloutCmd(deps *Deps) *cobra.Command {
	o := &rolloutOptions{}
	cmd := &cobra.Command{
		Use:   "rollout --argocd <url> (--base <rev> [--repo <dir>] [--head <rev>] | --plan <plan.json> | --selector <labels> --revision <sha>)",
		Short: "Roll a change out through Argo CD wave by wave, as the App does: durable, resumable, with gates and approvals",
		Long: `rollout carries a change across the fleet with the same executor as the GitHub App: the wave plan of the
release policy (.fleetwave.yaml), batch by batch, with its limits, soak, metric gates, approvals and failure
policy, every step recorded in a store so that the rollout survives Ctrl-C, a crash or kill -9.

What is rolled out (one of):
  --base <rev> [--repo <dir>] [--head <rev>]   the plan computed exactly as 'fleetwave plan' computes it (the
                                               changed and added apps, the policy at --head); cluster labels come
                                               from --clusters, else from Argo CD's clusters; apps are synced to
                                               the head commit
  --plan <plan.json>                           the output of 'fleetwave plan --output json' (its head commit)
  --selector <labels> --revision <sha>         every app matching the selector, in one wave, to the revision (a
                                               full commit SHA), --concurrency at a time; the first failure stops
                                               new syncs and pauses the rollout

The store is a SQLite file (--store, default ./` + defaultRolloutStore + `) or postgres://… (it can be the App's).
Running the same command again continues the same rollout (one per repository and commit): nothing is synced
twice, nothing skipped. Per app, an app already Synced and Healthy at the revision is skipped; done means Argo CD
shows the revision applied by an operation started after the request, reconciled after it, and Healthy.

Ctrl-C once pauses: syncs in flight finish (they are named), none starts, and the command exits 3 when they are
done — at once when Argo CD is unreachable, as they cannot report: the next run checks them with Argo CD first.
Ctrl-C again (or SIGTERM) stops at once, leaving the store consistent (exit 130); a second interrupt within
500 ms of the first is the same one (timeout -s INT signals the process and its group at once). Rerunning the
command resumes a rollout Ctrl-C paused; 'fleetwave rollout resume|approve <wave>|rollback [wave]|abort|pause|status'
act on the latest rollout of the store (--id for another). A rollout whose process is gone (killed, its claim
on the rollout expired) shows in status as "running (its process is gone since …)"; resume --argocd, or the
rollout command again, takes it over.

When Argo CD stops answering, the command says so within seconds ("Argo CD at <url> unreachable since
<time>, retrying", again each minute, and when it answers again) and keeps retrying; an app still not done at
--timeout fails.

Output: one line per event (wave started, app synced/skipped/failed with Argo CD's message, gates, approvals
with the command to run, soak, wave and rollout states), then a summary: synced, skipped (already synced and
healthy), failed (with Argo CD's message and the resources it failed on), in flight, not started. --output json: one JSON object per line
(fields time, event, rollout, wave, batch, app, instance, cluster, state, revision, health, until, command, apps,
message, summary), the events: rollout-submitted, rollout-found (a rerun), rollout (its state), interrupted, command,
argocd-unreachable, argocd-reachable, instance-unreachable, instance-reachable (one Argo CD instance of several: its
apps wait),
wave-awaiting-approval, wave-approved, wave-started, wave-held (an Argo CD sync window refuses its apps' syncs:
until when, which window), wave-released, wave-retried, app-syncing, app-synced, app-skipped,
app-failed, app-rolling-back, app-rolled-back, wave-gating, soak-started, soak-passed, metrics-passed,
wave-succeeded, wave-failed, wave-cancelled, wave-rolling-back, wave-rolled-back; the last line is
{"event":"summary"}. On a terminal a status line under the events shows the wave, the apps in flight and the
soak's or sync window's countdown.

Exit status: 0 succeeded (or nothing to roll out); 1 failed, aborted, rolled back or superseded, or a wave failed
and the rollout is paused by its onFailure; 2 bad input (nothing was synced); 3 paused; 130 stopped by a second
interrupt (rerun to continue).

The token is read from FLEETWAVE_ARGOCD_TOKEN (preferred: a flag shows in the process list) or --token.`,
		Example: `  export FLEETWAVE_ARGOCD_TOKEN=...
  fleetwave rollout --argocd https://argocd.example.com --repo . --base origin/main~1 --head origin/main
  fleetwave plan --repo . --base main --head feature -o json > plan.json && fleetwave rollout --argocd https://argocd.example.com --plan plan.json
  fleetwave rollout --argocd https://argocd.example.com --selector 'env=prd,region in (eu-1,eu-2)' \
    --revision 4f1c9e0b2a7d3c5e8f6a1b0d9c2e4f7a3b5d8c1e --concurrency 20
  fleetwave rollout approve production --argocd https://argocd.example.com`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRollout(cmd.Context(), deps, o)
		},
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.server, "argocd", "", "Argo CD server URL, with its scheme (default $FLEETWAVE_ARGOCD_URL)")
	pf.StringVar(&o.token, "token", "", "Argo CD token (default $FLEETWAVE_ARGOCD_TOKEN)")
	pf.BoolVar(&o.insecure, "insecure", false, "skip TLS verification (default $FLEETWAVE_ARGOCD_INSECURE)")
	registerArgoCDInstances(pf, &o.instancesFile, " (default $FLEETWAVE_ARGOCD_INSTANCES_FILE)")
	pf.StringVar(&o.caFile, "ca-file", "", "PEM file of CAs to trust for the Argo CD server")
	pf.StringVar(&o.storeDSN, "store", defaultRolloutStore, "the rollout store: a SQLite file path, sqlite:///path or postgres://…")
	pf.IntVar(&o.concurrency, "concurrency", 10, "apps synced at the same time")
	pf.DurationVar(&o.timeout, "timeout", 15*time.Minute, "limit per app")
	pf.DurationVar(&o.clockSkew, "clock-skew", 2*time.Second, "allowed difference between this machine's clock and Argo CD's")
	pf.DurationVar(&o.drainTimeout, "drain-timeout", 30*time.Second, "after a second interrupt, how long syncs in flight may take to be recorded")
	pf.StringVarP(&o.output, "output", "o", "text", "text or json (one JSON object per line per event)")
	pf.Int64Var(&o.id, "id", 0, "the rollout to act on (default: the latest in the store)")
	pf.DurationVar(&o.leaseTTL, "lease-ttl", 10*time.Second, "how long a killed run's claim on its rollout lasts: a rerun takes over after it")
	pf.DurationVar(&o.intentGrace, "intent-grace", 15*time.Second, "how long a sync request may take to show in Argo CD")
	_ = pf.MarkHidden("lease-ttl")
	_ = pf.MarkHidden("intent-grace")

	f := cmd.Flags()
	registerChangeFlags(f, o, "head revision: the change rolled out (apps are synced to its commit)",
		"a URL under which Applications name the repository (default its origin remote); the first is also given to multi-source syncs; repeatable",
		"the repository's name in the store, owner/name (default: from its origin remote, local/plan for --plan); one rollout per name and commit")
	f.StringVar(&o.selector, "selector", "", "label selector of the applications, e.g. 'env=prd,region in (eu-1)'")
	f.StringVar(&o.revision, "revision", "", "with --selector: the commit SHA (or chart version) to roll out")
	f.StringSliceVar(&o.projects, "project", nil, "with --selector: only apps of these Argo CD projects")
	f.BoolVar(&o.prune, "prune", false, "prune resources no longer in Git (default: the policy's prune)")
	f.BoolVar(&o.dryRun, "dry-run", false, "print the plan that would run and change nothing")
	f.StringVar(&o.ui, "ui", "", "serve the fleet view of the rollout on this address while it runs, e.g. 127.0.0.1:8081 (sign in with $FLEETWAVE_FLEET_VIEW_TOKEN, or the token printed)")
	f.DurationVar(&o.resolveTimeout, "resolve-timeout", 2*time.Minute, "unused")
	f.BoolVar(&o.requireResolved, "require-resolved", false, "unused")
	_ = f.MarkDeprecated("resolve-timeout", "the rollout executor decides how long to wait for a revision to resolve")
	_ = f.MarkDeprecated("require-resolved", "the rollout executor syncs to the revision explicitly when it does not resolve")

	for _, sub := range []struct {
		verb, use, short string
		args             cobra.PositionalArgs
		drive            bool
	}{
		{"resume", "resume", "Resume the latest rollout (paused by Ctrl-C, a command or a failed wave) and run it to the end", cobra.NoArgs, true},
		{"approve", "approve <wave>", "Approve a wave of the latest rollout and run it to the end", cobra.ExactArgs(1), true},
		{"rollback", "rollback [wave|all]", "Roll the latest rollout back (every wave by default) and run the rollback to the end", cobra.MaximumNArgs(1), true},
		{"abort", "abort", "Abort the latest rollout: syncs in flight finish, none starts, it ends aborted", cobra.NoArgs, false},
		{"pause", "pause", "Pause the latest rollout (run by another process): syncs in flight finish, none starts", cobra.NoArgs, false},
		{"status", "status", "Print the latest rollout's state and summary", cobra.NoArgs, false},
	} {
		sub := sub
		long := sub.short + `.

The rollout is the latest one of --store (or --id). With --argocd (or $FLEETWAVE_ARGOCD_URL), resume, approve and
rollback also run it here until it ends or pauses, printing its events as 'fleetwave rollout' does; without it,
the command is recorded and whichever process runs the rollout carries it out.

The terminal checks no GitHub permission: whoever can write the store (and reach Argo CD) steers the rollout,
and the audit log records $USER.`
		if sub.verb == "approve" {
			long += ` A wave whose approval names teams (approval.teams) may only be approved by their members, which
only the App can check (GitHub team membership): the terminal refuses unless --member-of names one of those teams,
and records the approval as stated, not checked ("alice (stated member of org/sre, not checked)").`
		}
		c := &cobra.Command{
			Use: sub.use, Short: sub.short, Args: sub.args, Long: long,
			RunE: func(cmd *cobra.Command, args []string) error {
				return runRolloutCommand(cmd.Context(), deps, o, sub.verb, args, sub.drive)
			},
		}
		if sub.verb == "abort" {
			c.Flags().BoolVar(&o.keepAutomatedOff, "keep-automated-off", false, "leave the apps' Argo CD automated sync switched off (default: restored as it was, with --argocd)")
		}
		if sub.verb == "approve" {
			c.Flags().StringVar(&o.memberOf, "member-of", "", "state that you are a member of this team (org/team), one of the wave's approval teams; recorded as stated, not checked")
		}
		cmd.AddCommand(c)
	}
	cmd.AddCommand(newRolloutPrepareCmd(deps, o), newRolloutReleaseCmd(deps, o), newRolloutHistoryCmd(deps, o))
	return cmd
}

// shortSHA matches an abbreviated commit SHA, which Argo CD never reports.
var shortSHA = regexp.MustCompile(`^[0-9a-f]{7,39}$`)

// complete fills the Argo CD settings from the environment and checks what needs no network.
func (o *rolloutOptions) complete(getenv func(string) string) error {
	env, err := config.LoadCLI(getenv)
	if err != nil {
		return err
	}
	if o.server == "" && o.instancesFile == "" { // a flag wins over either variable
		o.server, o.instancesFile = env.ArgoCDURL, env.ArgoCDInstancesFile
	}
	if o.instances, err = loadInstances(&Deps{Getenv: getenv}, o.instancesFile, o.server); err != nil {
		return err
	}
	if o.token == "" {
		o.token = env.ArgoCDToken.Reveal()
	}
	if !o.insecure {
		o.insecure = env.ArgoCDInsecure
	}
	switch {
	case o.output != "text" && o.output != "json":
		return fmt.Errorf("--output must be text or json, got %q", o.output)
	case o.concurrency < 1:
		return fmt.Errorf("--concurrency must be at least 1, got %d", o.concurrency)
	case o.storeDSN == "":
		return errors.New("--store is empty")
	}
	return nil
}

// checkServer checks the Argo CD URL and token flags (no network).
func (o *rolloutOptions) checkServer() error {
	switch {
	case o.instances != nil:
		return nil
	case o.server == "":
		return errors.New("rollout needs --argocd (or FLEETWAVE_ARGOCD_URL)")
	case !strings.Contains(o.server, "://"):
		return fmt.Errorf("--argocd %q has no scheme: write https://%s (http:// only for a local test server)", o.server, o.server)
	case !strings.HasPrefix(o.server, "https://") && !strings.HasPrefix(o.server, "http://"):
		return fmt.Errorf("--argocd %q: the scheme must be https:// (or http:// for a local test server)", o.server)
	case o.token == "":
		return errors.New("rollout needs an Argo CD token: set FLEETWAVE_ARGOCD_TOKEN (or --token)")
	}
	return nil
}

// checkMode checks the flags that say what to roll out.
func (o *rolloutOptions) checkMode() error {
	modes := 0
	for _, set := range []bool{o.base != "", o.planFile != "", o.selector != "" || o.revision != ""} {
		if set {
			modes++
		}
	}
	switch {
	case modes == 0:
		return errors.New("rollout needs what to roll out: --base <rev> [--repo <dir>] [--head <rev>], --plan <plan.json>, or --selector <labels> --revision <sha>")
	case modes > 1:
		return errors.New("give one of --base, --plan and --selector/--revision")
	case o.selector == "" && o.revision != "":
		return errors.New("rollout needs --selector with --revision: rolling out every application is not an accident to allow")
	case o.selector != "" && o.revision == "":
		return errors.New("rollout needs --revision with --selector")
	case o.revision != "" && shortSHA.MatchString(o.revision):
		return fmt.Errorf("--revision %s looks like an abbreviated commit SHA: give the full SHA, which Argo CD reports", o.revision)
	}
	if o.selector != "" {
		if _, err := labels.Parse(o.selector); err != nil {
			return fmt.Errorf("--selector %q is not a label selector Argo CD accepts: %v", o.selector, err)
		}
	}
	return nil
}

// connect builds a client per Argo CD instance of --argocd-instances (nothing without it).
func (o *rolloutOptions) connect() error {
	if o.instances == nil || o.fleet != nil {
		return nil
	}
	fl, err := newFleet(o.instances, nil)
	if err != nil {
		return fmt.Errorf("--%s: %w", argocdInstancesFlag, err)
	}
	o.fleet = fl
	return nil
}

func (o *rolloutOptions) client() (*argocd.Client, error) {
	return argocd.New(argocd.Options{BaseURL: o.server, Token: o.token, Insecure: o.insecure, CAFile: o.caFile})
}

// argoErr says plainly what an Argo CD answer to the first call means.
func (o *rolloutOptions) argoErr(what string, err error) error {
	switch {
	case errors.Is(err, argocd.ErrUnauthenticated):
		return usageErr(fmt.Errorf("the token was rejected by Argo CD at %s (401 Unauthenticated) while %s: check FLEETWAVE_ARGOCD_TOKEN", o.server, what))
	case errors.Is(err, argocd.ErrPermissionDenied):
		return usageErr(fmt.Errorf("the token was refused by Argo CD at %s (403 PermissionDenied) while %s: its account lacks the RBAC permission", o.server, what))
	}
	return usageErr(fmt.Errorf("asking Argo CD at %s: %s: %w", o.server, what, err))
}

func runRollout(ctx context.Context, deps *Deps, o *rolloutOptions) error {
	if err := o.complete(deps.Getenv); err != nil {
		return usageErr(err)
	}
	client, req, err := o.plannedRequest(ctx, deps, "rollout", "roll out", "synced")
	if err != nil || req.Plan == nil {
		return err
	}
	if o.dryRun {
		if o.output == "json" {
			b, err := json.MarshalIndent(req.Plan, "", "  ")
			if err != nil {
				return err
			}
			_, err = deps.Stdout.Write(append(b, '\n'))
			return err
		}
		return req.Plan.WriteText(deps.Stdout)
	}

	st, err := openRolloutStore(ctx, o.storeDSN)
	if err != nil {
		return usageErr(err)
	}
	defer st.Close()
	rep := terminalReporter{wake: make(chan struct{}, 1)}
	var argo rollout.ArgoCD
	var reach *reachability
	if client != nil { // several instances: the executor holds the apps of one that stops answering
		reach = o.reachability(client)
		argo = reach
	}
	ex := o.executor(deps, st, argo, rep)
	bg := context.WithoutCancel(ctx)
	r, err := ex.Submit(bg, req)
	if err != nil {
		return fmt.Errorf("rollout: %w", err)
	}
	if o.ui != "" {
		// What runs where beside the rollout (#37): the rollout's instances followed while the command runs.
		clients := map[string]*argocd.Client{"": client}
		if o.fleet != nil {
			clients = o.fleet.clients
		}
		invCtx, stopInventory := context.WithCancel(bg)
		inv, waitInventory := startInventory(invCtx, clients, st, nil,
			slog.New(slog.NewTextHandler(deps.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
		defer func() { stopInventory(); waitInventory() }()
		stop, err := serveRolloutUI(deps, o, st, r.ID, inv)
		if err != nil {
			return usageErr(err)
		}
		defer stop()
	}
	sink := &eventSink{w: deps.Stdout, json: o.output == "json", tty: isTerminal(deps.Stdout)}
	sink.emit(rolloutEvent{Time: time.Now().UTC(), Event: "rollout-submitted", Rollout: r.ID,
		Message: fmt.Sprintf("%s at %s: %s in %s", req.Repo, text.ShortRev(req.MergeSHA), text.Plural(req.Plan.AppCount(), "app"), text.Plural(len(req.Plan.Waves), "wave"))})
	w := newWatcher(st, r.ID, sink, o.command)
	if r.State != store.RolloutPending {
		// A rerun: what happened before is summed up once; the events from here on are new.
		s, err := w.prime(bg)
		if err != nil {
			return fmt.Errorf("rollout: reading rollout #%d: %w", r.ID, err)
		}
		sum := summarize(s)
		w.emit(rolloutEvent{Event: "rollout-found", State: string(r.State), Message: fmt.Sprintf("found in the store; so far %d synced, %d skipped, %d failed, %d in flight, %d not started",
			len(sum.Synced), len(sum.Skipped), len(sum.Failed), len(sum.InFlight), len(sum.NotStarted))})
	}
	if l, err := st.GetLease(bg, r.ID); err == nil && l.Live && l.Owner != ex.Owner() && !r.State.Terminal() {
		w.emit(rolloutEvent{Event: "rollout", State: string(r.State), Message: fmt.Sprintf(
			"another run (%s) holds the rollout until %s: if it was killed, this one takes over then, else it follows it",
			l.Owner, l.ExpiresAt.Local().Format("15:04:05"))})
	}
	if r.State == store.RolloutPaused && r.Message == "paused by @"+interruptActor {
		if _, err := ex.Resume(bg, r.ID, interruptActor); err != nil && !errors.Is(err, rollout.ErrRefused) {
			return fmt.Errorf("rollout: resuming #%d: %w", r.ID, err)
		}
	}
	return o.drive(ctx, deps, w, st, ex, rep, reach, r.ID)
}

// registerChangeFlags registers into o the flags that name the change to plan: the repository and its revisions,
// clusters, render settings, allowed repositories, the Argo CD version, the repository's names, or a plan file.
// The rollout and its prepare word --head, --repo-url and --repo-name each their own way.
func registerChangeFlags(f *pflag.FlagSet, o *rolloutOptions, headUsage, repoURLUsage, repoNameUsage string) {
	f.StringVar(&o.repo, "repo", ".", "the GitOps repository (with --base)")
	f.StringVar(&o.base, "base", "", "base revision: the plan is computed as 'fleetwave plan --base' does")
	f.StringVar(&o.head, "head", "HEAD", headUsage)
	f.StringVar(&o.clustersFile, "clusters", "", "destination clusters file (default: Argo CD's clusters)")
	f.StringVar(&o.settingsFile, "settings", "", "render settings file (as for 'fleetwave plan')")
	registerRepositories(f, &o.repositories)
	f.StringVar(&o.argocdVersion, "argocd-version", "", argocdVersionUsage+"; without either, the release the Argo CD reports")
	f.StringArrayVar(&o.repoURLs, "repo-url", nil, repoURLUsage)
	f.StringVar(&o.repoName, "repo-name", "", repoNameUsage)
	f.StringVar(&o.planFile, "plan", "", "a plan file: the output of 'fleetwave plan --output json'")
}

// plannedRequest connects to Argo CD and builds the request of the change the flags name (--selector, --plan, or
// the repository's --base and --head), refusing a plan that breaks the release policy. A request without a plan
// (and no error) is a change that affects no app, said on stderr. cmd names the command in messages ("rollout",
// "rollout prepare"), nothing what it then has nothing to do ("roll out"), undone what a refusal leaves undone
// ("synced").
func (o *rolloutOptions) plannedRequest(ctx context.Context, deps *Deps, cmd, nothing, undone string) (*argocd.Client, rollout.Request, error) {
	if err := o.checkMode(); err != nil {
		return nil, rollout.Request{}, usageErr(err)
	}
	if err := o.checkServer(); err != nil {
		return nil, rollout.Request{}, usageErr(err)
	}
	var client *argocd.Client
	if err := o.connect(); err != nil {
		return nil, rollout.Request{}, usageErr(err)
	}
	if o.fleet == nil {
		c, err := o.client()
		if err != nil {
			return nil, rollout.Request{}, usageErr(err)
		}
		client = c
	}
	var req rollout.Request
	var err error
	switch {
	case o.selector != "":
		req, err = o.selectorRequest(ctx, client)
	case o.planFile != "":
		req, err = o.planFileRequest(ctx, client)
	default:
		req, err = o.repoRequest(ctx, deps, client)
	}
	if err != nil {
		return nil, rollout.Request{}, err
	}
	if req.Plan == nil {
		fmt.Fprintf(deps.Stderr, "fleetwave: %s: the change affects no app: nothing to %s\n", cmd, nothing)
		return client, req, nil
	}
	if !req.Plan.OK() {
		for _, v := range req.Plan.Violations {
			fmt.Fprintf(deps.Stderr, "fleetwave: %s: %s: %s (%s)\n", cmd, v.App, v.Message, v.Rule)
		}
		return nil, rollout.Request{}, &ExitError{Code: 1, Err: fmt.Errorf("%s: the plan breaks the release policy: nothing was %s", cmd, undone)}
	}
	return client, req, nil
}

// reachability wraps the Argo CD client so that the terminal says when Argo CD stops answering (rollout_reach.go);
// its probe is the cheapest call there is, a list that matches nothing.
func (o *rolloutOptions) reachability(client *argocd.Client) *reachability {
	return newReachability(client, func(ctx context.Context) error {
		_, err := client.ListApplications(ctx, argocd.ListQuery{Selector: "fleetwave.io/probe=none"})
		return err
	})
}

// serveRolloutUI serves the fleet view (internal/fleetview) of the store on o.ui while the rollout runs, and
// prints where. The token is $FLEETWAVE_FLEET_VIEW_TOKEN, else a random one printed once on standard error. inv is
// the inventory of the rollout's instances (what runs where), kept live while the rollout runs, for the page.
func serveRolloutUI(deps *Deps, o *rolloutOptions, st *store.Store, id int64, inv *inventory.Inventory) (stop func(), err error) {
	env, err := config.LoadCLI(deps.Getenv)
	if err != nil {
		return nil, err
	}
	token := env.FleetViewToken.Reveal()
	shown := "$" + config.EnvFleetViewToken
	if token == "" {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		token = hex.EncodeToString(b)
		shown = token
	}
	// Served over plain HTTP (the address printed below is http://), so its cookie cannot be Secure.
	opts := fleetview.Options{Token: token, ArgoCDURL: o.server, InstanceURLs: o.instances.URLs(), InsecureCookie: true}
	if inv != nil { // what runs where, at /fleet/apps, for the instances the rollout follows
		opts.Inventory = inv
	}
	view, err := fleetview.New(st, opts)
	if err != nil {
		return nil, fmt.Errorf("--ui: %w", err)
	}
	ln, err := net.Listen("tcp", o.ui)
	if err != nil {
		return nil, fmt.Errorf("--ui %s: %w", o.ui, err)
	}
	mux := http.NewServeMux()
	mux.Handle(fleetview.Prefix, view)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	fmt.Fprintf(deps.Stderr, "fleetwave: rollout: fleet view at http://%s%srollouts/%d (sign in with %s)\n", ln.Addr(), fleetview.Prefix, id, shown)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// executor builds the rollout executor of this process.
func (o *rolloutOptions) executor(deps *Deps, st *store.Store, client rollout.ArgoCD, rep rollout.Reporter) *rollout.Executor {
	host, _ := os.Hostname()
	log := slog.New(slog.NewTextHandler(deps.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	var more []rollout.Option
	if o.fleet != nil {
		// Each app synced through its own instance, never more syncs in flight there than its maxSyncs.
		more = o.fleet.executorOptions(nil)
	}
	return rollout.New(st, client, rep, append(more,
		// Each process its own owner: two processes on one store (a second terminal approving) never both drive a
		// rollout. A killed process's lease expires after the TTL; the rerun then takes the rollout over.
		rollout.WithOwner(fmt.Sprintf("fleetwave-cli@%s-%d", host, os.Getpid())),
		rollout.WithLeaseTTL(o.leaseTTL),
		rollout.WithIntentGrace(o.intentGrace),
		rollout.WithPollIntervals(time.Second, time.Second, 2*time.Second),
		rollout.WithConcurrency(o.concurrency),
		rollout.WithSyncTimeouts(o.timeout, 30*time.Second, o.clockSkew),
		rollout.WithLogger(log))...)
}

// openRolloutStore opens --store: a path is a SQLite file.
func openRolloutStore(ctx context.Context, dsn string) (*store.Store, error) {
	if !strings.Contains(dsn, "://") {
		abs, err := filepath.Abs(dsn)
		if err != nil {
			return nil, err
		}
		dsn = "sqlite://" + abs
	}
	return store.Open(ctx, dsn)
}

// command is the command line that acts on the rollout being run.
func (o *rolloutOptions) command(verb string, args ...string) string {
	parts := append([]string{"fleetwave", "rollout", verb}, args...)
	if o.storeDSN != defaultRolloutStore {
		parts = append(parts, "--store", o.storeDSN)
	}
	return strings.Join(parts, " ")
}

// drive runs the executor in this process and prints the rollout's events until it ends or pauses, then the
// summary. The first interrupt pauses it, the second stops the executor (draining for at most --drain-timeout),
// a third abandons the drain: in every case the store stays consistent and a rerun continues.
func (o *rolloutOptions) drive(ctx context.Context, deps *Deps, w *watcher, st *store.Store, ex *rollout.Executor,
	rep terminalReporter, reach *reachability, id int64) error {
	bg := context.WithoutCancel(ctx) // the process's own SIGINT handling cancels ctx: the interrupts are handled here
	sigs := deps.Signals
	if sigs == nil {
		ch := make(chan os.Signal, 4)
		signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(ch)
		sigs = ch
	}
	runCtx, cancelRun := context.WithCancel(bg)
	defer cancelRun()
	ran := make(chan error, 1)
	go func() { ran <- ex.Run(runCtx) }()
	if reach != nil {
		go reach.run(runCtx)
	}
	rr := &reachReport{server: o.server}
	running := true
	halt := func(drain time.Duration) {
		if !running {
			return
		}
		running = false
		dctx, cancel := context.WithTimeout(bg, drain)
		defer cancel()
		go func() {
			select {
			case <-sigs: // a third interrupt: abandon the drain, as a crash would
				cancel()
			case <-dctx.Done():
			}
		}()
		if err := ex.Stop(dctx); err != nil {
			fmt.Fprintln(deps.Stderr, "fleetwave: rollout: syncs still in flight were left to Argo CD; the next run reconciles them")
		}
		cancelRun()
		<-ran
	}
	stop := func() { halt(o.drainTimeout) }
	defer stop()

	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	interrupts := 0
	var firstInterrupt time.Time
	var s snapshot
	var err error
	for {
		if s, err = w.poll(bg); err != nil {
			return fmt.Errorf("rollout: reading rollout #%d: %w", id, err)
		}
		if s.r.State.Terminal() || (s.r.State == store.RolloutPaused && len(s.inFlight()) == 0) {
			break
		}
		ev, note := rr.check(reach, time.Now())
		if ev != nil {
			w.emit(*ev)
		}
		if interrupts > 0 && s.r.State == store.RolloutPaused && note != "" {
			// Paused by the interrupt, but the syncs in flight cannot report while Argo CD does not answer:
			// waiting for them would hold the terminal for as long as the outage lasts. They stay in the store as
			// they are (intent or triggered); the next run asks Argo CD what became of them before anything else.
			w.emit(rolloutEvent{Event: "interrupted", Apps: s.inFlight(),
				Message: "paused without waiting for the syncs in flight: Argo CD is unreachable, so they cannot report; the next run checks them with Argo CD first"})
			halt(time.Second)
			break
		}
		status := w.statusLine(s)
		if note != "" && status != "" {
			status += " · " + note
		}
		w.sink.setStatus(status)
		select {
		case <-rep.wake:
		case <-tick.C:
		case err := <-ran:
			running = false
			return fmt.Errorf("rollout: the executor stopped: %v", err)
		case sig := <-sigs:
			if sig == os.Interrupt && interrupts == 1 && time.Since(firstInterrupt) < interruptDebounce {
				// The same Ctrl-C seen twice: `timeout -s INT` (and a terminal's job control) signal the process
				// and then its group in the same instant. Only a second, deliberate interrupt stops.
				continue
			}
			interrupts++
			if interrupts == 1 && sig == os.Interrupt {
				firstInterrupt = time.Now()
				_, err := ex.Pause(bg, id, interruptActor)
				if err != nil && !errors.Is(err, rollout.ErrRefused) {
					return fmt.Errorf("rollout: pausing #%d: %w", id, err)
				}
				if s, err = w.read(bg); err == nil {
					w.emit(rolloutEvent{Event: "interrupted", Apps: s.inFlight(),
						Message: "pausing: the syncs in flight finish, none starts; interrupt again to exit now"})
				}
				continue
			}
			w.emit(rolloutEvent{Event: "interrupted", Message: "stopping: the syncs in flight are recorded, then the command exits; rerun it to continue"})
			stop()
			if s, err = w.poll(bg); err == nil {
				w.emit(rolloutEvent{Event: "summary", Summary: summarize(s), Message: "stopped; rerun the command to continue"})
			}
			return &ExitError{Code: exitInterrupted, Err: fmt.Errorf("rollout #%d stopped by an interrupt: rerun the command to continue", id)}
		}
	}
	stop()
	if s2, err := w.poll(bg); err == nil {
		s = s2
	}
	return finish(w, s, o)
}

// finish prints the summary and chooses the exit status.
func finish(w *watcher, s snapshot, o *rolloutOptions) error {
	sum := summarize(s)
	var err error
	msg := ""
	switch s.r.State {
	case store.RolloutSucceeded:
	case store.RolloutPaused:
		if anyWaveFailed(s) {
			msg = "a wave failed and the rollout is paused: " + o.command("resume") + " retries its failed apps; " +
				o.command("rollback") + " or " + o.command("abort") + " end it"
			err = &ExitError{Code: 1, Err: fmt.Errorf("rollout #%d: a wave failed; the rollout is paused", s.r.ID)}
		} else {
			msg = "paused: rerun the command or run " + o.command("resume") + " to continue"
			err = &ExitError{Code: exitPaused, Err: fmt.Errorf("rollout #%d paused", s.r.ID)}
		}
	default:
		err = &ExitError{Code: 1, Err: fmt.Errorf("rollout #%d %s: %d of %d apps failed", s.r.ID, s.r.State, len(sum.Failed), len(s.steps))}
	}
	msg = withAutomatedNote(msg, s.r)
	w.emit(rolloutEvent{Event: "summary", Summary: sum, Message: msg})
	return err
}

// runRolloutCommand runs `fleetwave rollout <verb>` on the latest rollout of the store (or --id).
func runRolloutCommand(ctx context.Context, deps *Deps, o *rolloutOptions, verb string, args []string, drive bool) error {
	if err := o.complete(deps.Getenv); err != nil {
		return usageErr(err)
	}
	var client *argocd.Client
	// abort restores the apps' automated sync (unless --keep-automated-off): with Argo CD at hand, here.
	if (drive || verb == "abort") && o.instances != nil {
		if err := o.connect(); err != nil {
			return usageErr(err)
		}
		if err := o.probeFleet(ctx); err != nil {
			return err
		}
	} else if (drive || verb == "abort") && o.server != "" {
		if err := o.checkServer(); err != nil {
			return usageErr(err)
		}
		c, err := o.client()
		if err != nil {
			return usageErr(err)
		}
		if _, err := c.ListApplications(ctx, argocd.ListQuery{Selector: "fleetwave.io/probe=none"}); err != nil {
			return o.argoErr("checking the token", err)
		}
		client = c
	}
	st, err := openRolloutStore(ctx, o.storeDSN)
	if err != nil {
		return usageErr(err)
	}
	defer st.Close()
	r, err := latestRollout(ctx, st, o.id)
	if err != nil {
		return usageErr(err)
	}
	rep := terminalReporter{wake: make(chan struct{}, 1)}
	var argo rollout.ArgoCD
	var reach *reachability
	if client != nil {
		reach = o.reachability(client)
		argo = reach
	}
	ex := o.executor(deps, st, argo, rep)
	argoAtHand := client != nil || o.fleet != nil
	actor := os.Getenv("USER")
	if deps.Getenv != nil {
		actor = deps.Getenv("USER")
	}
	if actor == "" {
		actor = "cli"
	}
	sink := &eventSink{w: deps.Stdout, json: o.output == "json", tty: isTerminal(deps.Stdout)}
	var reply string
	gone, goneSince := orphaned(ctx, st, r)
	switch verb {
	case "resume":
		if gone {
			// Its process was killed (kill -9, a closed terminal) or stopped before the rollout paused: nothing
			// runs it, and it is not paused. Taking it over is what a rerun of the rollout command does.
			if !argoAtHand {
				return &ExitError{Code: 1, Err: fmt.Errorf("rollout #%d is %s but its process is gone since %s: rerun the rollout command, or run %s, to take it over",
					r.ID, r.State, goneSince.Local().Format("15:04:05"), o.command("resume", "--argocd", "<url>"))}
			}
			reply = fmt.Sprintf("Taking over rollout #%d (merge %s, %s): its process is gone since %s; what it left in flight is checked with Argo CD first.",
				r.ID, text.ShortRev(r.MergeSHA), r.State, goneSince.Local().Format("15:04:05"))
			if _, err := st.AppendEvent(ctx, store.Event{RolloutID: r.ID, Actor: actor, Action: "take-over", Result: "ok",
				Message: "its process is gone since " + goneSince.UTC().Format(time.RFC3339)}); err != nil {
				return fmt.Errorf("rollout resume: recording the take-over: %w", err)
			}
			break
		}
		reply, err = ex.Resume(ctx, r.ID, actor)
	case "approve":
		who, aerr := rollout.StatedApprover(r, args[0], actor, o.memberOf)
		if aerr != nil {
			return &ExitError{Code: 1, Err: aerr}
		}
		reply, err = ex.Approve(ctx, r.ID, args[0], who)
	case "rollback":
		target := "all"
		if len(args) == 1 {
			target = args[0]
		}
		reply, err = ex.Rollback(ctx, r.ID, target, actor)
	case "abort":
		reply, err = ex.AbortWith(ctx, r.ID, actor, rollout.AbortOptions{KeepAutomatedOff: o.keepAutomatedOff})
	case "pause":
		reply, err = ex.Pause(ctx, r.ID, actor)
	case "status":
		w := newWatcher(st, r.ID, sink, o.command)
		s, err := w.read(ctx)
		if err != nil {
			return err
		}
		sum, msg := summarize(s), fmt.Sprintf("%s at %s", s.r.Repo, text.ShortRev(s.r.MergeSHA))
		if gone {
			sum.ProcessGoneSince = &goneSince
			msg += fmt.Sprintf("; nothing runs it: rerun the rollout command, or run %s, to take it over", o.command("resume", "--argocd", "<url>"))
		}
		w.emit(rolloutEvent{Event: "summary", Summary: sum, Message: withAutomatedNote(msg, s.r)})
		return nil
	}
	if errors.Is(err, rollout.ErrRefused) {
		return &ExitError{Code: 1, Err: err}
	}
	if err != nil {
		return fmt.Errorf("rollout %s: %w", verb, err)
	}
	owner, running := runningProcess(ctx, st, r.ID)
	if drive && !argoAtHand && !running && verb == "approve" {
		// The executor's reply says what happens next ("it starts now") as if a process ran the rollout.
		if i := strings.LastIndex(reply, ": "); i >= 0 {
			reply = reply[:i] + ": recorded, but no process runs the rollout, so nothing starts yet."
		}
	}
	sink.emit(rolloutEvent{Time: time.Now().UTC(), Event: "command", Rollout: r.ID, State: verb, Message: strings.ReplaceAll(reply, "`/", "`fleetwave rollout ")})
	if !drive {
		return nil
	}
	if !argoAtHand {
		if running {
			fmt.Fprintf(deps.Stderr, "fleetwave: rollout: no --argocd: the process running rollout #%d (%s) carries the command out\n", r.ID, owner)
		} else {
			fmt.Fprintf(deps.Stderr, "fleetwave: rollout: no --argocd, and no process runs rollout #%d: nothing carries the command out until you rerun the rollout command or run %s\n",
				r.ID, o.command("resume", "--argocd", "<url>"))
		}
		return nil
	}
	w := newWatcher(st, r.ID, sink, o.command)
	if _, err := w.prime(ctx); err != nil {
		return fmt.Errorf("rollout: reading rollout #%d: %w", r.ID, err)
	}
	return o.drive(ctx, deps, w, st, ex, rep, reach, r.ID)
}

// runningProcess reports whether a process runs rollout id now (holds its unexpired lease), and which.
func runningProcess(ctx context.Context, st *store.Store, id int64) (owner string, running bool) {
	l, err := st.GetLease(ctx, id)
	if err != nil || !l.Live {
		return "", false
	}
	return l.Owner, true
}

// orphaned reports whether r is left unfinished and not paused with no process running it — the process was
// killed (kill -9, a closed terminal: its lease expired; store.Lease) or stopped before the rollout paused (a
// second interrupt: it released the lease) — and since when: the lease's expiry, else the rollout's last change.
// A paused rollout waits for a command; it needs no process.
func orphaned(ctx context.Context, st *store.Store, r store.Rollout) (bool, time.Time) {
	if r.State.Terminal() || r.State == store.RolloutPaused {
		return false, time.Time{}
	}
	l, err := st.GetLease(ctx, r.ID)
	switch {
	case err == nil && l.Live:
		return false, time.Time{}
	case err == nil:
		return true, l.ExpiresAt
	case errors.Is(err, store.ErrNotFound):
		return true, r.UpdatedAt
	}
	return false, time.Time{}
}

func latestRollout(ctx context.Context, st *store.Store, id int64) (store.Rollout, error) {
	if id != 0 {
		r, err := st.GetRollout(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return r, fmt.Errorf("rollout #%d is not in the store", id)
		}
		return r, err
	}
	rs, err := st.ListRollouts(ctx, store.RolloutFilter{Limit: 1})
	if err != nil {
		return store.Rollout{}, err
	}
	if len(rs) == 0 {
		return store.Rollout{}, errors.New("the store holds no rollout")
	}
	return rs[0], nil
}

// selectorRequest is the one-wave plan of the apps matching --selector.
func (o *rolloutOptions) selectorRequest(ctx context.Context, client *argocd.Client) (rollout.Request, error) {
	if o.fleet != nil {
		return o.fleetSelectorRequest(ctx)
	}
	list, err := client.ListApplications(ctx, argocd.ListQuery{Selector: o.selector, Projects: o.projects})
	if err != nil {
		return rollout.Request{}, o.argoErr("listing the applications", err)
	}
	if len(list.Items) == 0 {
		return rollout.Request{}, usageErr(fmt.Errorf("no application matches selector %q", o.selector))
	}
	if err := o.checkRevision(ctx, client, list.Items); err != nil {
		return rollout.Request{}, err
	}
	// The store names a rollout by owner/name and revision: the selector is the "name" (its slashes escaped).
	return rollout.NewRequest(rollout.Change{Repo: o.selectorRepo(), MergeSHA: o.revision,
		Plan: rollout.SelectorPlan(o.selector, list.Items), RepoURL: o.repoURL(), Prune: o.prune}), nil
}

// selectorRepo is the "repository" a --selector rollout is stored under: the selector, its slashes escaped.
func (o *rolloutOptions) selectorRepo() string {
	return "selector/" + strings.ReplaceAll(o.selector, "/", "%2F")
}

// fleetSelectorRequest is selectorRequest across every instance: one wave of the apps matching --selector in
// each, every app with its instance.
func (o *rolloutOptions) fleetSelectorRequest(ctx context.Context) (rollout.Request, error) {
	var all *plan.Plan
	for _, name := range o.fleet.set.Names() {
		c := o.fleet.clients[name]
		list, err := c.ListApplications(ctx, argocd.ListQuery{Selector: o.selector, Projects: o.projects})
		if err != nil {
			return rollout.Request{}, o.instanceErr(name, "listing the applications", err)
		}
		if len(list.Items) == 0 {
			continue
		}
		if err := o.checkRevision(ctx, c, list.Items); err != nil {
			return rollout.Request{}, err
		}
		pl := rollout.SelectorPlan(o.selector, list.Items)
		b := &pl.Waves[0].Batches[0]
		for i := range b.Apps {
			b.Apps[i].Instance = name
		}
		if all == nil {
			all = pl
			continue
		}
		ab := &all.Waves[0].Batches[0]
		ab.Apps = append(ab.Apps, b.Apps...)
		for _, cl := range b.Clusters {
			if !slices.Contains(ab.Clusters, cl) {
				ab.Clusters = append(ab.Clusters, cl)
			}
		}
		slices.Sort(ab.Clusters)
		all.Waves[0].Limits.MaxClusters = len(ab.Clusters)
	}
	if all == nil {
		return rollout.Request{}, usageErr(fmt.Errorf("no application of any Argo CD instance (%s) matches selector %q", strings.Join(o.fleet.set.Names(), ", "), o.selector))
	}
	return rollout.NewRequest(rollout.Change{Repo: o.selectorRepo(), MergeSHA: o.revision, Plan: all, RepoURL: o.repoURL(), Prune: o.prune}), nil
}

// instanceErr is argoErr for one instance of several: it names the instance and its URL.
func (o *rolloutOptions) instanceErr(name, what string, err error) error {
	in, _ := o.fleet.set.Get(name)
	where := fmt.Sprintf("Argo CD instance %s (%s)", name, in.URL)
	switch {
	case errors.Is(err, argocd.ErrUnauthenticated):
		return usageErr(fmt.Errorf("the token was rejected by %s (401 Unauthenticated) while %s: check its token (%s)", where, what, in.TokenFrom()))
	case errors.Is(err, argocd.ErrPermissionDenied):
		return usageErr(fmt.Errorf("the token was refused by %s (403 PermissionDenied) while %s: its account lacks the RBAC permission", where, what))
	}
	return usageErr(fmt.Errorf("asking %s: %s: %w", where, what, err))
}

// probeFleet checks every instance's token (argoErr's message per instance).
func (o *rolloutOptions) probeFleet(ctx context.Context) error {
	for _, name := range o.fleet.set.Names() {
		if _, err := o.fleet.clients[name].ListApplications(ctx, argocd.ListQuery{Selector: "fleetwave.io/probe=none"}); err != nil {
			return o.instanceErr(name, "checking the token", err)
		}
	}
	return nil
}

// repoURL is the GitOps repository's URL the flags give (the first --repo-url), "" when none.
func (o *rolloutOptions) repoURL() string {
	if len(o.repoURLs) > 0 {
		return o.repoURLs[0]
	}
	return ""
}

// checkRevision asks Argo CD to render one app of each source repository at --revision before anything is synced:
// a revision that is not a commit, branch or tag of that repository (or a version of that chart) is one line
// here, not a failed sync per app later. Argo CD's repo-server resolves it as the sync would (GET
// .../manifests?revision=, server/application/application.go GetManifests). Multi-source apps are synced at
// their own revisions, so they are not asked.
func (o *rolloutOptions) checkRevision(ctx context.Context, client *argocd.Client, apps []v1alpha1.Application) error {
	if o.revision == "" {
		return nil
	}
	asked := map[string]bool{}
	for _, a := range apps {
		if a.Spec.HasMultipleSources() || a.Spec.Source == nil || asked[a.Spec.Source.RepoURL] {
			continue
		}
		asked[a.Spec.Source.RepoURL] = true
		_, err := client.Manifests(ctx, a.Namespace+"/"+a.Name, o.revision)
		switch {
		case err == nil:
		case errors.Is(err, argocd.ErrUnauthenticated), errors.Is(err, argocd.ErrPermissionDenied), errors.Is(err, argocd.ErrUnavailable):
			return o.argoErr("checking --revision", err)
		default:
			msg := err.Error()
			if i := strings.IndexAny(msg, "\r\n"); i >= 0 {
				msg = msg[:i]
			}
			if len(msg) > 300 {
				msg = msg[:300] + "…"
			}
			return usageErr(fmt.Errorf("--revision %q: Argo CD cannot render %s (source %s) at it, so nothing was synced: %s",
				o.revision, a.Name, a.Spec.Source.RepoURL, msg))
		}
	}
	return nil
}

// planFileRequest reads --plan (fleetwave plan --output json).
func (o *rolloutOptions) planFileRequest(ctx context.Context, client *argocd.Client) (rollout.Request, error) {
	data, err := os.ReadFile(o.planFile)
	if err != nil {
		return rollout.Request{}, usageErr(fmt.Errorf("reading the plan: %w", err))
	}
	var doc struct {
		Base  string          `json:"base"`
		Head  string          `json:"head"`
		Waves json.RawMessage `json:"waves"`
	}
	var pl plan.Plan
	if err := json.Unmarshal(data, &doc); err != nil {
		return rollout.Request{}, usageErr(fmt.Errorf("%s is not the JSON of 'fleetwave plan --output json': %v", o.planFile, err))
	}
	if len(doc.Waves) == 0 || string(doc.Waves) == "null" {
		return rollout.Request{}, usageErr(fmt.Errorf("%s has no waves: it must be the output of 'fleetwave plan --output json' (not diff)", o.planFile))
	}
	if err := json.Unmarshal(data, &pl); err != nil {
		return rollout.Request{}, usageErr(fmt.Errorf("%s: reading the plan: %v", o.planFile, err))
	}
	if !source.IsFullSHA(doc.Head) {
		return rollout.Request{}, usageErr(fmt.Errorf("%s names no head commit (\"head\": %q): it must be the output of 'fleetwave plan --output json'", o.planFile, doc.Head))
	}
	if o.fleet != nil {
		if err := o.probeFleet(ctx); err != nil {
			return rollout.Request{}, err
		}
	} else if _, err := client.ListApplications(ctx, argocd.ListQuery{Selector: "fleetwave.io/probe=none"}); err != nil {
		return rollout.Request{}, o.argoErr("checking the token", err)
	}
	name := o.repoName
	if name == "" {
		name = "local/plan"
	}
	// The plan does not carry its policy: rollout.NewRequest tells its automated sync mode from the plan.
	req := rollout.NewRequest(rollout.Change{Repo: name, MergeSHA: doc.Head, BaseSHA: doc.Base, Plan: &pl, RepoURL: o.repoURL(), Prune: o.prune})
	if pl.AppCount() == 0 {
		req.Plan = nil
	}
	return req, nil
}

// repoRequest computes the plan as `fleetwave plan` does, with the clusters of --clusters or Argo CD.
func (o *rolloutOptions) repoRequest(ctx context.Context, deps *Deps, client *argocd.Client) (rollout.Request, error) {
	in := preview.Input{RepoDir: o.repo, Base: o.base, Head: o.head, RepoURLs: o.repoURLs, Plan: true}
	if o.settingsFile != "" {
		s, err := render.LoadSettings(o.settingsFile)
		if err != nil {
			return rollout.Request{}, usageErr(fmt.Errorf("rollout: %w", err))
		}
		in.Settings = s
	}
	switch {
	case o.argocdVersion != "":
		if _, err := target.Parse(o.argocdVersion); err != nil {
			return rollout.Request{}, usageErr(fmt.Errorf("rollout: --argocd-version: %w", err))
		}
		in.Settings.ArgoCDVersion = o.argocdVersion
	case in.Settings.ArgoCDVersion == "" && client != nil:
		// The plan is rendered as the Argo CD that will sync it renders.
		in.Settings.ArgoCDVersion = detectArgoCDVersion(ctx, client, nil)
	}
	if o.fleet != nil {
		// Several instances: each app is planned as its own instance renders it, with its own clusters.
		if o.clustersFile != "" {
			data, err := os.ReadFile(o.clustersFile)
			if err != nil {
				return rollout.Request{}, usageErr(fmt.Errorf("rollout: reading clusters: %w", err))
			}
			if in.Clusters, err = discover.ParseClusters(o.clustersFile, data); err != nil {
				return rollout.Request{}, usageErr(fmt.Errorf("rollout: %w", err))
			}
		}
		if err := o.probeFleet(ctx); err != nil {
			return rollout.Request{}, err
		}
		insts, err := o.fleet.previewInstances(ctx, previewOptions{over: in.Settings, listClusters: o.clustersFile == ""})
		if err != nil {
			return rollout.Request{}, usageErr(fmt.Errorf("rollout: listing the clusters (their labels place apps in waves): %w", err))
		}
		in.InstanceOf, in.Instances = o.fleet.instanceOf(), insts
	} else if o.clustersFile != "" {
		data, err := os.ReadFile(o.clustersFile)
		if err != nil {
			return rollout.Request{}, usageErr(fmt.Errorf("rollout: reading clusters: %w", err))
		}
		if in.Clusters, err = discover.ParseClusters(o.clustersFile, data); err != nil {
			return rollout.Request{}, usageErr(fmt.Errorf("rollout: %w", err))
		}
		if _, err := client.ListApplications(ctx, argocd.ListQuery{Selector: "fleetwave.io/probe=none"}); err != nil {
			return rollout.Request{}, o.argoErr("checking the token", err)
		}
	} else {
		cs, err := argoClusters(client)(ctx)
		if err != nil {
			return rollout.Request{}, o.argoErr("listing the clusters (their labels place apps in waves)", err)
		}
		in.Clusters = cs
	}
	remote, err := fetchers(deps, o.repositories)
	if err != nil {
		return rollout.Request{}, usageErr(fmt.Errorf("rollout: %w", err))
	}
	r, closeRenderer, _, err := newRenderer(deps.Getenv, toolLog(deps.Stderr), remote, 0)
	if err != nil {
		return rollout.Request{}, usageErr(fmt.Errorf("rollout: %w", err))
	}
	res, err := preview.Run(ctx, r, in)
	closeRenderer()
	if err != nil {
		var ie *preview.InputError
		if errors.As(err, &ie) {
			return rollout.Request{}, usageErr(fmt.Errorf("rollout: %w", err))
		}
		return rollout.Request{}, &ExitError{Code: 2, Err: fmt.Errorf("rollout: %w", err)}
	}
	rep := res.Report
	for _, n := range rep.Notes {
		fmt.Fprintf(deps.Stderr, "fleetwave: rollout: note: %s\n", n)
	}
	if rep.HasErrors() {
		// As `plan`: an app that failed to render may be affected; the plan could miss it.
		return rollout.Request{}, previewExit(deps.Stderr, "rollout", rep, false)
	}
	pl := res.Plan
	if pl == nil {
		return rollout.Request{}, errors.New("rollout: the preview made no plan")
	}
	origin := ""
	if repo, err := source.Open(ctx, o.repo); err == nil {
		origin, _ = repo.OriginURL(ctx)
	}
	c := rollout.Change{Repo: o.repoName, MergeSHA: rep.Head, BaseSHA: rep.Base, Plan: pl, Policy: res.Policy, RepoURL: o.repoURL(), Prune: o.prune}
	if c.RepoURL == "" {
		c.RepoURL = origin
	}
	if c.Repo == "" {
		c.Repo = repoFullName(origin, o.repo)
	}
	// The policy the plan was made with (at the head side's tree): its execution settings go with the rollout.
	req := rollout.NewRequest(c)
	if pl.AppCount() == 0 {
		req.Plan = nil
	}
	return req, nil
}

// repoFullName is owner/name of a remote URL (https://host/owner/name.git, git@host:owner/name.git), else
// local/<directory name>.
func repoFullName(remote, dir string) string {
	u := strings.TrimSuffix(strings.TrimSuffix(remote, "/"), ".git")
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
	} else if i := strings.Index(u, ":"); i >= 0 {
		u = "host/" + u[i+1:]
	}
	parts := strings.Split(u, "/")
	if len(parts) >= 3 && parts[len(parts)-2] != "" && parts[len(parts)-1] != "" {
		return parts[len(parts)-2] + "/" + parts[len(parts)-1]
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	return "local/" + filepath.Base(abs)
}
