package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/fleetwave/fleetwave/internal/argocd"
	"github.com/fleetwave/fleetwave/internal/argosync"
)

type rolloutOptions struct {
	server          string
	selector        string
	revision        string
	dryRun          bool
	concurrency     int
	token           string
	insecure        bool
	caFile          string
	projects        []string
	repoURL         string
	prune           bool
	timeout         time.Duration
	resolveTimeout  time.Duration
	requireResolved bool
	clockSkew       time.Duration
	output          string
}

// newRolloutCmd is `fleetwave rollout`: Fastly's orchestrator. Every app matching a selector is brought to one
// revision through Argo CD, a bounded number at a time, and declared done only once Argo CD shows the revision
// applied by an operation that started after the request, reconciled after it finished, and Healthy.
func newRolloutCmd(deps *Deps) *cobra.Command {
	o := rolloutOptions{}
	cmd := &cobra.Command{
		Use:   "rollout --argocd <url> --selector <labels> --revision <sha>",
		Short: "Sync the apps matching a selector to a revision through Argo CD and wait until each is Healthy",
		Long: `Sync every Argo CD application matching --selector to --revision, at most --concurrency at a time.

Per app: wait until its targetRevision resolves to the revision (or sync to it explicitly after
--resolve-timeout); skip it if already Synced and Healthy at the revision; wait for an operation already in
progress instead of starting another; otherwise sync and wait. An app is done only when Argo CD shows the
revision applied by an operation that started after fleetwave's request and succeeded, a reconcile after that
operation finished, and health Healthy. Degraded apps and failed operations fail the rollout (exit code 1).

The token is read from FLEETWAVE_ARGOCD_TOKEN (preferred: a flag shows in the process list) or --token.`,
		Example: `  FLEETWAVE_ARGOCD_TOKEN=... fleetwave rollout --argocd https://argocd.example.com \
    --selector 'env=prd,region in (eu-1,eu-2)' --revision 4f1c9e0b2a7d3c5e8f6a1b0d9c2e4f7a3b5d8c1e --concurrency 20`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRollout(cmd.Context(), deps, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.server, "argocd", "", "Argo CD server URL (default $FLEETWAVE_ARGOCD_URL)")
	f.StringVar(&o.selector, "selector", "", "label selector of the applications, e.g. 'env=prd,region in (eu-1)'")
	f.StringVar(&o.revision, "revision", "", "the commit SHA (or chart version) to roll out")
	f.BoolVar(&o.dryRun, "dry-run", false, "change nothing: say what would be done for each app")
	f.IntVar(&o.concurrency, "concurrency", 10, "apps synced at the same time")
	f.StringVar(&o.token, "token", "", "Argo CD token (default $FLEETWAVE_ARGOCD_TOKEN)")
	f.BoolVar(&o.insecure, "insecure", false, "skip TLS verification (default $FLEETWAVE_ARGOCD_INSECURE)")
	f.StringVar(&o.caFile, "ca-file", "", "PEM file of CAs to trust for the Argo CD server")
	f.StringSliceVar(&o.projects, "project", nil, "only apps of these Argo CD projects")
	f.StringVar(&o.repoURL, "repo-url", "", "repository the revision belongs to (needed for multi-source apps)")
	f.BoolVar(&o.prune, "prune", false, "prune resources no longer in Git")
	f.DurationVar(&o.timeout, "timeout", 15*time.Minute, "limit per app")
	f.DurationVar(&o.resolveTimeout, "resolve-timeout", 2*time.Minute, "wait this long for an app's targetRevision to resolve to the revision")
	f.BoolVar(&o.requireResolved, "require-resolved", false, "fail apps whose targetRevision does not resolve to the revision instead of syncing to it explicitly")
	f.DurationVar(&o.clockSkew, "clock-skew", 2*time.Second, "allowed difference between this machine's clock and Argo CD's")
	f.StringVar(&o.output, "output", "text", "text or json")
	return cmd
}

// shortSHA matches an abbreviated commit SHA, which Argo CD never reports.
var shortSHA = regexp.MustCompile(`^[0-9a-f]{7,39}$`)

func (o *rolloutOptions) complete(getenv func(string) string) error {
	if o.server == "" {
		o.server = getenv("FLEETWAVE_ARGOCD_URL")
	}
	if o.token == "" {
		o.token = getenv("FLEETWAVE_ARGOCD_TOKEN")
	}
	if !o.insecure {
		if v := getenv("FLEETWAVE_ARGOCD_INSECURE"); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("FLEETWAVE_ARGOCD_INSECURE=%q is not a boolean", v)
			}
			o.insecure = b
		}
	}
	switch {
	case o.server == "":
		return errors.New("rollout needs --argocd (or FLEETWAVE_ARGOCD_URL)")
	case o.selector == "":
		return errors.New("rollout needs --selector: rolling out every application is not an accident to allow")
	case o.revision == "":
		return errors.New("rollout needs --revision")
	case shortSHA.MatchString(o.revision):
		return fmt.Errorf("--revision %s looks like an abbreviated commit SHA: give the full SHA, which Argo CD reports", o.revision)
	case o.concurrency < 1:
		return fmt.Errorf("--concurrency must be at least 1, got %d", o.concurrency)
	case o.output != "text" && o.output != "json":
		return fmt.Errorf("--output must be text or json, got %q", o.output)
	}
	return nil
}

func runRollout(ctx context.Context, deps *Deps, o rolloutOptions) error {
	if err := o.complete(deps.Getenv); err != nil {
		return usageErr(err)
	}
	client, err := argocd.New(argocd.Options{BaseURL: o.server, Token: o.token, Insecure: o.insecure, CAFile: o.caFile})
	if err != nil {
		return usageErr(err)
	}
	list, err := client.ListApplications(ctx, argocd.ListQuery{Selector: o.selector, Projects: o.projects})
	if err != nil {
		return fmt.Errorf("rollout: %w", err)
	}
	if len(list.Items) == 0 {
		return usageErr(fmt.Errorf("no application matches selector %q", o.selector))
	}
	var mu sync.Mutex
	done := 0
	opts := argosync.Options{
		Concurrency: o.concurrency, DryRun: o.dryRun, Prune: o.prune, RepoURL: o.repoURL, Selector: o.selector,
		Timeout: o.timeout, ResolveTimeout: o.resolveTimeout, RequireResolved: o.requireResolved, ClockSkew: o.clockSkew,
		OnResult: func(r argosync.Result) {
			mu.Lock()
			defer mu.Unlock()
			done++
			fmt.Fprintf(deps.Stderr, "[%d/%d] %s %s (%s)\n", done, len(list.Items), r.App, r.Outcome, r.Duration().Round(100*time.Millisecond))
		},
	}
	start := time.Now()
	results := argosync.Run(ctx, client, list.Items, o.revision, opts)
	wall := time.Since(start)
	if o.output == "json" {
		err = writeRolloutJSON(deps.Stdout, o, results, wall)
	} else {
		err = writeRolloutTable(deps.Stdout, results, wall)
	}
	if err != nil {
		return fmt.Errorf("rollout: writing the report: %w", err)
	}
	if n := argosync.Summary(results)[argosync.OutcomeFailed]; n > 0 {
		return &ExitError{Code: 1, Err: fmt.Errorf("rollout of %s: %d of %d apps failed", o.revision, n, len(results))}
	}
	return nil
}

func writeRolloutTable(w io.Writer, results []argosync.Result, wall time.Duration) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "APP\tOUTCOME\tSYNC\tHEALTH\tDURATION\tCALLS\tMESSAGE")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", r.App, r.Outcome, dash(string(r.SyncStatus)), dash(string(r.Health)),
			r.Duration().Round(100*time.Millisecond), r.APICalls, r.Message)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d apps: %s (wall %s)\n", len(results), summaryLine(results), wall.Round(100*time.Millisecond))
	return err
}

func summaryLine(results []argosync.Result) string {
	s := argosync.Summary(results)
	var parts []string
	for _, o := range []argosync.Outcome{argosync.OutcomeSynced, argosync.OutcomeWaited, argosync.OutcomeSkipped, argosync.OutcomeDryRun, argosync.OutcomeFailed} {
		if s[o] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", s[o], o))
		}
	}
	return strings.Join(parts, ", ")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

type rolloutJSON struct {
	Revision string            `json:"revision"`
	Selector string            `json:"selector"`
	DryRun   bool              `json:"dryRun"`
	WallMS   int64             `json:"wallMs"`
	Summary  map[string]int    `json:"summary"`
	Apps     []rolloutJSONItem `json:"apps"`
}

type rolloutJSONItem struct {
	Name                string     `json:"name"`
	Outcome             string     `json:"outcome"`
	Message             string     `json:"message,omitempty"`
	SyncStatus          string     `json:"syncStatus,omitempty"`
	Health              string     `json:"health,omitempty"`
	DurationMS          int64      `json:"durationMs"`
	TriggeredAt         *time.Time `json:"triggeredAt,omitempty"`
	OperationStartedAt  *time.Time `json:"operationStartedAt,omitempty"`
	OperationFinishedAt *time.Time `json:"operationFinishedAt,omitempty"`
	APICalls            int        `json:"apiCalls"`
}

func writeRolloutJSON(w io.Writer, o rolloutOptions, results []argosync.Result, wall time.Duration) error {
	out := rolloutJSON{Revision: o.revision, Selector: o.selector, DryRun: o.dryRun, WallMS: wall.Milliseconds(), Summary: map[string]int{}}
	for k, v := range argosync.Summary(results) {
		out.Summary[string(k)] = v
	}
	for _, r := range results {
		out.Apps = append(out.Apps, rolloutJSONItem{
			Name: r.App, Outcome: string(r.Outcome), Message: r.Message, SyncStatus: string(r.SyncStatus), Health: string(r.Health),
			DurationMS: r.Duration().Milliseconds(), TriggeredAt: timePtr(r.TriggeredAt),
			OperationStartedAt: timePtr(r.OperationStartedAt), OperationFinishedAt: timePtr(r.OperationFinishedAt), APICalls: r.APICalls,
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
