package drift

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/fleetwave/fleetwave/internal/inventory"
	"github.com/fleetwave/fleetwave/internal/kit/markdown"
	"github.com/fleetwave/fleetwave/internal/kit/text"
)

// stamp writes a time as the reports do: to the minute, in UTC.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// render is the title and body of an alert's report, and its digest: what, when it changes, is worth an edit
// (the states, sync and health, revision, last operation; not the time, which moves on its own).
func (r *Reporter) render(al Alert) (title, body, digest string) {
	a := al.App
	name := keyString(a.Key)
	states := strings.Join(al.States, " and ")
	title = fmt.Sprintf("Drift: %s is %s", name, states)

	var b strings.Builder
	b.WriteString(marker(a.Key) + "\n")
	fmt.Fprintf(&b, "**%s** has been **%s** since %s, longer than the drift threshold (%s), and no fleetwave rollout is about to sync it.\n\n",
		markdown.Escape(name), states, stamp(al.Since), al.After)
	b.WriteString("| | |\n|---|---|\n")
	row := func(k, v string) { fmt.Fprintf(&b, "| %s | %s |\n", k, v) }
	if a.Instance != "" {
		row("Argo CD instance", markdown.EscapeLine(a.Instance))
	}
	row("Project", markdown.EscapeLine(a.Project))
	cluster := a.Cluster
	if a.ClusterName != "" && a.ClusterName != a.Cluster {
		cluster = a.ClusterName + " (" + a.Cluster + ")"
	}
	row("Cluster", markdown.EscapeLine(cluster))
	row("Sync", fmt.Sprintf("%s since %s", markdown.EscapeLine(a.Sync), stamp(a.SyncSince)))
	row("Health", fmt.Sprintf("%s since %s", markdown.EscapeLine(a.Health), stamp(a.HealthSince)))
	if a.Revision != "" {
		row("Revision", "`"+strings.ReplaceAll(text.ShortRev(a.Revision), "`", "")+"`")
	}
	op := "none"
	if o := a.Operation; o != nil {
		op = o.Phase
		if o.By != "" {
			op += " by " + o.By
		}
		if o.Revision != "" {
			op += " at " + text.ShortRev(o.Revision)
		}
		if !o.StartedAt.IsZero() {
			op += ", started " + stamp(o.StartedAt)
		}
		if !o.FinishedAt.IsZero() {
			op += ", finished " + stamp(o.FinishedAt)
		}
		if msg := text.OneLine(r.o.Redact(o.Message)); msg != "" {
			if len(msg) > 300 {
				msg = strings.ToValidUTF8(msg[:300], "") + "…"
			}
			op += ": " + msg
		}
		op = markdown.EscapeLine(op)
	}
	row("Last operation", op)
	if ro := a.Rollout; ro != nil {
		reached := "not reached"
		if ro.Reached {
			reached = "reached"
		}
		row("Last fleetwave rollout", markdown.EscapeLine(fmt.Sprintf("%s, to %s: %s", ro.ID, text.ShortRev(ro.Revision), reached)))
	}
	if base := r.o.ArgoCDURL(a.Instance); base != "" {
		fmt.Fprintf(&b, "\n[Open %s in Argo CD](%s)\n", markdown.Escape(name), appLink(base, a.Key))
	}
	b.WriteString("\nfleetwave edits this issue when the app's state changes and closes it when the app converges.\n")

	digest = strings.Join([]string{states, a.Sync, a.Health, a.Revision, opDigest(a.Operation)}, "|")
	return title, b.String(), digest
}

func opDigest(o *inventory.Operation) string {
	if o == nil {
		return ""
	}
	return o.Phase + " " + o.Revision + " " + o.FinishedAt.UTC().Format(time.RFC3339)
}

// closing is the comment that closes the report of k: why it is no longer in lasting drift.
func (r *Reporter) closing(k inventory.Key, a inventory.App, present bool, d Decision) string {
	name := markdown.Escape(keyString(k))
	switch {
	case !present:
		return fmt.Sprintf("Closed by fleetwave: %s is no longer in Argo CD (%s).", name, stamp(d.At))
	case d.AboutToSync[k]:
		return fmt.Sprintf("Closed by fleetwave: a fleetwave rollout is about to sync %s (%s); its state is the rollout's business now.", name, stamp(d.At))
	}
	return fmt.Sprintf("Converged (%s): %s is %s and %s, at revision %s. Closed by fleetwave.", stamp(d.At), name,
		markdown.EscapeLine(a.Sync), markdown.EscapeLine(a.Health), markdown.EscapeLine(orNone(text.ShortRev(a.Revision))))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// appLink is the app's page in the Argo CD web UI of base (Argo CD's UI route
// /applications/{namespace}/{name}, as the fleet view links it).
func appLink(base string, k inventory.Key) string {
	return strings.TrimRight(base, "/") + "/applications/" + url.PathEscape(k.Namespace) + "/" + url.PathEscape(k.Name)
}
