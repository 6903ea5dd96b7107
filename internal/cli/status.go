package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/spf13/cobra"

	"github.com/fleetwave/fleetwave/internal/config"
	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/instances"
	"github.com/fleetwave/fleetwave/internal/inventory"
)

type statusOptions struct {
	server, token, caFile string
	insecure              bool
	instancesFile         string
	filter                inventory.Filter
	output                string
	timeout               time.Duration
}

// newStatusCmd is `fleetwave status`: what runs where, read once from every configured Argo CD instance (#37).
func newStatusCmd(deps *Deps) *cobra.Command {
	o := &statusOptions{}
	cmd := &cobra.Command{
		Use:   "status (--argocd <url> | --argocd-instances <file>) [--selector <labels>] [filters]",
		Short: "Print what runs where: every app of every Argo CD instance, grouped by what it deploys",
		Long: `Print what runs where: each app of each configured Argo CD instance (--argocd, or several with
--argocd-instances), grouped by what it deploys (its repository and path or chart), with its cluster, the
revision it runs, its sync and health status, how long it has been out of sync, and its last operation.
Each instance is read once (its applications and clusters). The filters are those of the fleet view's
/fleet/apps page; each takes one value or several separated by commas (any of them).

Argo CD does not date a change of sync status: for an OutOfSync app, "out of sync for" is an upper bound, the
time since its last successful operation ended (JSON: lastSynced). serve's fleet view, which follows the
instances, shows the exact time.

An instance that does not answer is one line on standard error, and the others are still printed; the exit code
is 2 only when every instance failed. --output json is a stable document (docs/cli.md, "fleetwave status").
The token is read from FLEETWAVE_ARGOCD_TOKEN (preferred: a flag shows in the process list) or --token.`,
		Example: `  fleetwave status --argocd https://argocd.example.com --cluster-label env=prd --sync OutOfSync
  fleetwave status --argocd-instances instances.yaml --selector team=web -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runStatus(cmd.Context(), deps, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.server, "argocd", "", "Argo CD server URL, with its scheme (default $FLEETWAVE_ARGOCD_URL)")
	f.StringVar(&o.token, "token", "", "Argo CD token (default $FLEETWAVE_ARGOCD_TOKEN)")
	f.BoolVar(&o.insecure, "insecure", false, "skip TLS verification (default $FLEETWAVE_ARGOCD_INSECURE)")
	f.StringVar(&o.caFile, "ca-file", "", "PEM file of CAs to trust for the Argo CD server")
	registerArgoCDInstances(f, &o.instancesFile, " (default $FLEETWAVE_ARGOCD_INSTANCES_FILE)")
	f.StringVarP(&o.filter.Selector, "selector", "l", "", "label selector over the Applications' labels, as Argo CD's (env=prd,region in (eu-1,eu-2))")
	f.StringVar(&o.filter.Instance, "instance", "", "only these Argo CD instances (names of the instances file)")
	f.StringVar(&o.filter.Project, "project", "", "only apps of these projects")
	f.StringVar(&o.filter.ClusterLabel, "cluster-label", "", "label selector over the destination clusters' labels (env=prd)")
	f.StringVar(&o.filter.Sync, "sync", "", "only apps of these sync statuses (Synced, OutOfSync, Unknown)")
	f.StringVar(&o.filter.Health, "health", "", "only apps of these health statuses (Healthy, Progressing, Degraded, Suspended, Missing, Unknown)")
	f.StringVar(&o.filter.Revision, "revision", "", "only apps whose revision starts with this (a short SHA, a tag)")
	f.StringVarP(&o.output, "output", "o", "text", "text or json")
	f.DurationVar(&o.timeout, "timeout", time.Minute, "how long to wait for each instance")
	return cmd
}

// statusInstance is what one instance answered.
type statusInstance struct {
	Name     string `json:"name"`
	Apps     int    `json:"apps"`
	Clusters int    `json:"clusters"`
	Error    string `json:"error,omitempty"`

	apps []statusApp
}

// statusApp is one app of the answer: the inventory's App, and for an OutOfSync app the end of its last
// successful operation (it has been out of sync at most since then: Argo CD does not date sync status).
type statusApp struct {
	inventory.App
	LastSynced time.Time `json:"lastSynced,omitzero"`
}

// statusDoc is status's JSON: the instances read, and the apps the filter kept, grouped by what they deploy.
type statusDoc struct {
	Instances []statusInstance `json:"instances"`
	Apps      int              `json:"apps"`
	Groups    []statusGroup    `json:"groups"`
}

type statusGroup struct {
	Key  string      `json:"key"`
	Apps []statusApp `json:"apps"`
}

func runStatus(ctx context.Context, deps *Deps, o *statusOptions) error {
	if o.output != "text" && o.output != "json" {
		return usageErr(fmt.Errorf("--output must be text or json, got %q", o.output))
	}
	m, err := o.filter.Compile()
	if err != nil {
		return usageErr(err)
	}
	set, err := o.instances(deps)
	if err != nil {
		return usageErr(err)
	}
	clients, err := set.Clients(nil)
	if err != nil {
		return usageErr(err)
	}
	now := time.Now
	if deps.Now != nil {
		now = deps.Now
	}
	// Every instance at once; each one's line on standard error as it answers.
	read := make([]statusInstance, set.Len())
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, in := range set.Instances() {
		wg.Go(func() {
			r := statusRead(ctx, clients[in.Name], in.Name, o.filter.Selector, o.timeout)
			read[i] = r
			mu.Lock()
			defer mu.Unlock()
			where := "Argo CD " + in.URL
			if in.Name != "" {
				where = "Argo CD instance " + in.Name
			}
			if r.Error != "" {
				fmt.Fprintf(deps.Stderr, "fleetwave: status: %s did not answer: %s\n", where, r.Error)
				return
			}
			fmt.Fprintf(deps.Stderr, "fleetwave: status: %s: %d apps, %d clusters\n", where, r.Apps, r.Clusters)
		})
	}
	wg.Wait()

	var all []inventory.App
	extra := map[inventory.Key]time.Time{}
	var failed []string
	for _, r := range read {
		if r.Error != "" {
			failed = append(failed, statusInstanceName(r.Name))
		}
		for _, a := range r.apps {
			all = append(all, a.App)
			extra[a.Key] = a.LastSynced
		}
	}
	if len(failed) == len(read) {
		if set.IsSingle() {
			return usageErr(errors.New("status: Argo CD did not answer"))
		}
		return usageErr(fmt.Errorf("status: no Argo CD instance answered (%s)", strings.Join(failed, ", ")))
	}
	doc := statusDoc{Instances: read, Groups: []statusGroup{}}
	for _, g := range inventory.Groups(m.Select(all)) {
		sg := statusGroup{Key: g.Key}
		for _, a := range g.Apps {
			sg.Apps = append(sg.Apps, statusApp{App: a, LastSynced: extra[a.Key]})
		}
		doc.Apps += len(sg.Apps)
		doc.Groups = append(doc.Groups, sg)
	}
	if o.output == "json" {
		enc := json.NewEncoder(deps.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	return statusText(deps.Stdout, doc, len(all), !set.IsSingle(), now())
}

func statusInstanceName(name string) string {
	if name == "" {
		return "(default)"
	}
	return name
}

// instances is the configured Argo CD: the instances file, or the one of --argocd.
func (o *statusOptions) instances(deps *Deps) (*instances.Set, error) {
	env, err := config.LoadCLI(deps.env)
	if err != nil {
		return nil, err
	}
	if o.server == "" && o.instancesFile == "" { // a flag wins over either variable
		o.server, o.instancesFile = env.ArgoCDURL, env.ArgoCDInstancesFile
	}
	set, err := loadInstances(deps, o.instancesFile, o.server)
	if err != nil || set != nil {
		return set, err
	}
	if o.token == "" {
		o.token = env.ArgoCDToken.Reveal()
	}
	switch {
	case o.server == "":
		return nil, errors.New("status needs --argocd (or FLEETWAVE_ARGOCD_URL), or --argocd-instances")
	case !strings.HasPrefix(o.server, "https://") && !strings.HasPrefix(o.server, "http://"):
		return nil, fmt.Errorf("--argocd %q: give its scheme, https:// (or http:// for a local test server)", o.server)
	case o.token == "":
		return nil, errors.New("status needs an Argo CD token: set FLEETWAVE_ARGOCD_TOKEN (or --token)")
	}
	return instances.Single(o.server, o.token, o.insecure || env.ArgoCDInsecure, o.caFile), nil
}

// statusClient is what status asks of an Argo CD instance.
type statusClient interface {
	ListApplications(ctx context.Context, q argocd.ListQuery) (*v1alpha1.ApplicationList, error)
	ListClusters(ctx context.Context) ([]v1alpha1.Cluster, error)
}

// statusRead lists an instance's applications (of the selector: Argo CD filters them) and clusters, and
// makes each application an inventory.App with its cluster's name and labels.
func statusRead(ctx context.Context, c statusClient, name, selector string, timeout time.Duration) statusInstance {
	out := statusInstance{Name: name}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	list, err := c.ListApplications(ctx, argocd.ListQuery{Selector: selector})
	if err != nil {
		out.Error = err.Error()
		return out
	}
	clusters, err := c.ListClusters(ctx)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	byServer, byName := map[string]*v1alpha1.Cluster{}, map[string]*v1alpha1.Cluster{}
	for i := range clusters {
		byServer[clusters[i].Server], byName[clusters[i].Name] = &clusters[i], &clusters[i]
	}
	out.Apps, out.Clusters = len(list.Items), len(clusters)
	for i := range list.Items {
		app := &list.Items[i]
		a := inventory.FromApplication(name, app)
		cl := byServer[app.Spec.Destination.Server]
		if cl == nil {
			cl = byName[app.Spec.Destination.Name]
		}
		if cl != nil {
			a.ClusterLabels = cl.Labels
			if a.ClusterName == "" {
				a.ClusterName = cl.Name
			}
		}
		sa := statusApp{App: a}
		if op := a.Operation; a.Sync == "OutOfSync" && op != nil && op.Phase == "Succeeded" && !op.FinishedAt.IsZero() {
			sa.LastSynced = op.FinishedAt
		}
		out.apps = append(out.apps, sa)
	}
	return out
}

// statusText prints the answer as a table per group: cluster (instance in a fleet of several), app, revision,
// sync, health, out of sync for, last operation; then the counts.
func statusText(w io.Writer, doc statusDoc, total int, several bool, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	outOfSync, degraded := 0, 0
	for i, g := range doc.Groups {
		if i > 0 {
			fmt.Fprintln(tw)
		}
		revs := map[string]bool{}
		for _, a := range g.Apps {
			revs[a.Revision] = true
		}
		fmt.Fprintf(tw, "%s (%s, %s)\n", g.Key, statusPlural(len(g.Apps), "app"), statusPlural(len(revs), "revision"))
		head := "  CLUSTER\t"
		if several {
			head += "INSTANCE\t"
		}
		fmt.Fprintln(tw, head+"APP\tREVISION\tSYNC\tHEALTH\tOUT OF SYNC FOR\tLAST OPERATION")
		for _, a := range g.Apps {
			if a.Sync == "OutOfSync" {
				outOfSync++
			}
			if a.Health == "Degraded" {
				degraded++
			}
			line := "  " + statusDash(a.ClusterShown()) + "\t"
			if several {
				line += statusInstanceName(a.Instance) + "\t"
			}
			since := ""
			switch {
			case a.Sync != "OutOfSync":
			case !a.SyncSince.IsZero():
				since = statusAgo(now.Sub(a.SyncSince))
			case !a.LastSynced.IsZero():
				since = "≤ " + statusAgo(now.Sub(a.LastSynced))
			default:
				since = "?"
			}
			fmt.Fprintln(tw, line+a.Name+"\t"+statusDash(statusRev(a.Revision))+"\t"+statusDash(a.Sync)+"\t"+statusDash(a.Health)+"\t"+statusDash(since)+"\t"+statusLastOp(a.Operation, now))
		}
	}
	if len(doc.Groups) > 0 {
		fmt.Fprintln(tw)
	}
	fmt.Fprintf(tw, "%d of %d apps, %d OutOfSync, %d Degraded\n", doc.Apps, total, outOfSync, degraded)
	return tw.Flush()
}

func statusPlural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func statusDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func statusRev(s string) string {
	if len(s) == 40 {
		return s[:7]
	}
	return s
}

// statusAgo is a duration to the minute (to the second under one): 42s, 5m, 2h7m, 3d4h.
func statusAgo(d time.Duration) string {
	s := int64(max(d, 0) / time.Second)
	switch dd, h, m := s/86400, s%86400/3600, s%3600/60; {
	case dd > 0:
		return fmt.Sprintf("%dd%dh", dd, h)
	case h > 0:
		return fmt.Sprintf("%dh%dm", h, m)
	case m > 0:
		return fmt.Sprintf("%dm", m)
	}
	return fmt.Sprintf("%ds", s)
}

func statusLastOp(o *inventory.Operation, now time.Time) string {
	if o == nil {
		return "-"
	}
	s := o.Phase
	if o.By != "" {
		s += " by " + o.By
	}
	if t := o.FinishedAt; !t.IsZero() {
		s += ", " + statusAgo(now.Sub(t)) + " ago"
	} else if t := o.StartedAt; !t.IsZero() {
		s += ", started " + statusAgo(now.Sub(t)) + " ago"
	}
	return s
}
