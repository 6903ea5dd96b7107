package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fleetwave/fleetwave/internal/audit"
	"github.com/fleetwave/fleetwave/internal/config"
	"github.com/fleetwave/fleetwave/internal/edge/store"
)

// historyOptions are rollout history's own flags; --store, --output and --id are rollout's.
type historyOptions struct {
	since, repo, server, gitHubURL string
	after                          int64
}

// newRolloutHistoryCmd is `fleetwave rollout history`: the audit trail out of the store (docs/audit.md).
func newRolloutHistoryCmd(deps *Deps, o *rolloutOptions) *cobra.Command {
	h := &historyOptions{}
	c := &cobra.Command{
		Use:   "history [--since <time|age>] [--repo owner/name] [--id N] [--output text|json] [--store DSN | --server URL]",
		Short: "Print every rollout's audit trail: who merged, waves, gates, approvals, pauses, rollbacks, each app's result",
		Long: `history prints the audit trail of the rollouts in a store, one event per line, oldest first: who merged, the
plan, each wave's start and end, the gates passed, approvals, pauses, resumes, aborts and rollbacks with who and
when, each app's result with its instance, namespace, name and cluster, and the rollout's pull request and
check-runs. --output json prints the stable record of docs/audit.md (schema fleetwave.audit/v1), one JSON
object per line.

It reads the store: --store when given, else $FLEETWAVE_STORE (the store serve writes), else the terminal's
rollout store (./` + defaultRolloutStore + `). With --server it reads a running serve's /fleet/api/history
instead, page by page, signed in with the fleet view's token from $FLEETWAVE_FLEET_VIEW_TOKEN (never a flag).

--since takes a time (2026-03-14T15:00:00Z), a date (2026-03-14) or an age (24h, 90d); --id one rollout (all by
default); --after resumes after an event id, the "id" of the last record read.`,
		Example: `  fleetwave rollout history --since 7d
  FLEETWAVE_STORE=postgres://fleetwave@db/fleetwave fleetwave rollout history --repo octo/fleet --output json
  FLEETWAVE_FLEET_VIEW_TOKEN=... fleetwave rollout history --server https://fleetwave.example.com --id 42`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRolloutHistory(cmd.Context(), deps, o, h, cmd.Flags().Changed("store"))
		},
	}
	f := c.Flags()
	f.StringVar(&h.since, "since", "", "only events at or after this time, date or age (24h, 90d)")
	f.StringVar(&h.repo, "repo", "", "only the rollouts of this repository, owner/name")
	f.Int64Var(&h.after, "after", 0, "only events after this event id (resume an export)")
	f.StringVar(&h.server, "server", "", "read from a running serve at this URL (token: $FLEETWAVE_FLEET_VIEW_TOKEN)")
	f.StringVar(&h.gitHubURL, "github-url", "https://github.com", "GitHub's web address, for the links to pull requests and check-runs (GitHub Enterprise Server: https://HOST)")
	return c
}

func runRolloutHistory(ctx context.Context, deps *Deps, o *rolloutOptions, h *historyOptions, storeSet bool) error {
	var emit func(audit.Record) error
	switch o.output {
	case "text":
		emit = audit.TextLines(deps.Stdout)
	case "json":
		emit = audit.JSONLines(deps.Stdout)
	default:
		return usageErr(fmt.Errorf("--output %q: want text or json", o.output))
	}
	env, err := config.LoadCLI(deps.Getenv)
	if err != nil {
		return usageErr(err)
	}
	if h.server != "" {
		if storeSet {
			return usageErr(errors.New("--store and --server: give one"))
		}
		return historyFromServer(ctx, deps, o, h, env.FleetViewToken.Reveal())
	}
	f := store.HistoryFilter{Repo: h.repo, RolloutID: o.id, AfterID: h.after}
	if h.since != "" {
		if f.Since, err = audit.ParseSince(h.since, time.Now()); err != nil {
			return usageErr(err)
		}
	}
	dsn := o.storeDSN
	if !storeSet && env.Store.IsSet() {
		dsn = env.Store.Reveal()
	}
	st, err := openRolloutStore(ctx, dsn)
	if err != nil {
		return fmt.Errorf("opening the store %s: %w", config.RedactDSN(dsn), err)
	}
	defer st.Close()
	_, err = audit.Export(ctx, st, f, audit.Options{GitHubURL: h.gitHubURL}, emit)
	return err
}

// historyFromServer reads serve's /fleet/api/history page by page (after the last id read) until a short page.
func historyFromServer(ctx context.Context, deps *Deps, o *rolloutOptions, h *historyOptions, token string) error {
	if token == "" {
		return usageErr(fmt.Errorf("--server needs the fleet view's token in $%s", config.EnvFleetViewToken))
	}
	base, err := url.Parse(strings.TrimRight(h.server, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return usageErr(fmt.Errorf("--server %q: want http(s)://host[:port]", h.server))
	}
	q := url.Values{}
	if h.since != "" {
		q.Set("since", h.since)
	}
	if h.repo != "" {
		q.Set("repo", h.repo)
	}
	if o.id != 0 {
		q.Set("id", strconv.FormatInt(o.id, 10))
	}
	q.Set("limit", strconv.Itoa(audit.DefaultPage))
	client := &http.Client{Timeout: 5 * time.Minute}
	after := h.after
	for {
		q.Set("after", strconv.FormatInt(after, 10))
		u := *base
		u.Path += audit.Path
		u.RawQuery = q.Encode()
		n, last, err := historyPage(ctx, client, u.String(), token, deps.Stdout, o.output)
		if err != nil {
			return err
		}
		if n < audit.DefaultPage {
			return nil
		}
		after = last
	}
}

// historyPage reads one page and prints it: JSON lines as the server sent them, or text.
func historyPage(ctx context.Context, client *http.Client, u, token string, out io.Writer, output string) (n int, last int64, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("reading the history from %s: %w", redactedURL(req.URL), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, 0, fmt.Errorf("reading the history from %s: %s: %s", redactedURL(req.URL), resp.Status, strings.TrimSpace(string(msg)))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20) // a created record carries its plan
	for sc.Scan() {
		var rec audit.Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return n, last, fmt.Errorf("reading the history from %s: record %d: %w", redactedURL(req.URL), n+1, err)
		}
		if output == "json" {
			_, err = out.Write(append(sc.Bytes(), '\n'))
		} else {
			_, err = io.WriteString(out, audit.Text(rec)+"\n")
		}
		if err != nil {
			return n, last, err
		}
		n, last = n+1, rec.ID
	}
	if err := sc.Err(); err != nil {
		return n, last, fmt.Errorf("reading the history from %s: cut off after %d records (resume with --after %d): %w", redactedURL(req.URL), n, last, err)
	}
	return n, last, nil
}

// redactedURL is u without credentials and query.
func redactedURL(u *url.URL) string {
	c := *u
	c.User, c.RawQuery = nil, ""
	return c.String()
}
