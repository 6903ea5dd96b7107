package plan

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetwave/fleetwave/internal/kit/markdown"
	"github.com/fleetwave/fleetwave/internal/kit/text"
)

// Caps for the markdown form, which goes into PR comments and check-runs: the JSON form has everything.
const (
	mdMaxBatchesPerWave   = 20
	mdMaxAppsPerBatch     = 10
	mdMaxClustersPerBatch = 20
	mdMaxViolations       = 100
)

func (p *Plan) clusterCount() int {
	seen := map[string]struct{}{}
	for i := range p.Waves {
		for _, b := range p.Waves[i].Batches {
			for _, c := range b.Clusters {
				seen[c] = struct{}{}
			}
		}
	}
	return len(seen)
}

// summary is one line: "12 apps on 7 clusters in 3 waves (policy .fleetwave.yaml)".
func (p *Plan) summary() string {
	return fmt.Sprintf("%s on %s in %s (policy %s)", text.Plural(p.AppCount(), "app"), text.Plural(p.clusterCount(), "cluster"),
		text.Plural(len(p.Waves), "wave"), p.Policy)
}

// gateParts describes a wave's gates in the order they hold it; detailed adds metric queries.
func (g *Gates) gateParts(detailed bool) []string {
	var parts []string
	if g.Approval.Before() {
		parts = append(parts, g.Approval.Describe())
	}
	if g.Soak > 0 {
		parts = append(parts, "soak "+g.Soak.String())
	}
	if detailed {
		for _, m := range g.Metrics {
			if m.Prometheus != nil {
				parts = append(parts, m.Prometheus.describe())
			}
		}
	} else if n := len(g.Metrics); n > 0 {
		parts = append(parts, text.Plural(n, "metric gate"))
	}
	if g.Approval.After() {
		parts = append(parts, g.Approval.Describe())
	}
	if g.ToleratedFailures > 0 {
		parts = append(parts, fmt.Sprintf("tolerates %s (%s)", text.Plural(g.ToleratedFailures, "failed app"), g.FailureThreshold))
	}
	parts = append(parts, "on failure "+string(g.OnFailure))
	return parts
}

func (g *PrometheusGate) describe() string {
	var cond []string
	if g.Min != nil {
		cond = append(cond, ">= "+strconv.FormatFloat(*g.Min, 'g', -1, 64))
	}
	if g.Max != nil {
		cond = append(cond, "<= "+strconv.FormatFloat(*g.Max, 'g', -1, 64))
	}
	s := fmt.Sprintf("prometheus %s: %s %s", g.URL, g.Query, strings.Join(cond, " and "))
	if g.For > 0 {
		s += " for " + g.For.String()
	}
	return s
}

// WriteText writes the plan for a terminal: every wave, batch and app, then the violations.
func (p *Plan) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "plan: %s\n", p.summary())
	for _, l := range p.trackLines(false) {
		fmt.Fprintf(bw, "track %s\n", l)
	}
	for i := range p.Waves {
		wv := &p.Waves[i]
		fmt.Fprintf(bw, "\nwave %d/%d %s: %s, %s, %s", i+1, len(p.Waves), wv.Name, text.Plural(wv.AppCount(), "app"),
			text.Plural(wv.ClusterCount(), "cluster"), text.Plural(len(wv.Batches), "batch"))
		if wv.Production {
			bw.WriteString(" (production)")
		}
		fmt.Fprintf(bw, "\n  limits: %s\n", wv.Limits.describe())
		fmt.Fprintf(bw, "  gates: %s\n", strings.Join(wv.Gates.gateParts(true), "; "))
		if len(wv.Tracks) > 0 {
			fmt.Fprintf(bw, "  tracks: %s\n", strings.Join(wv.Tracks, ", "))
		}
		if h := wv.HeldBySyncWindow; h != nil {
			fmt.Fprintf(bw, "  sync window: %s (Argo CD, at %s); the rollout holds the wave until then\n", h.Describe(), h.At.UTC().Format("15:04 MST"))
		}
		for j, b := range wv.Batches {
			fmt.Fprintf(bw, "  batch %d/%d: %s\n", j+1, len(wv.Batches), strings.Join(b.Clusters, ", "))
			for _, a := range b.Apps {
				fmt.Fprintf(bw, "    %s -> %s\n", a.ref(), onInstance(a.Instance, a.Cluster))
			}
		}
	}
	if len(p.SkippedWaves) > 0 {
		fmt.Fprintf(bw, "\nwaves without apps: %s\n", strings.Join(p.SkippedWaves, ", "))
	}
	writeOutsideText(bw, "removed by the change, outside the waves", p.Removed)
	writeOutsideText(bw, "pinned to another revision, outside the waves", p.Pinned)
	if len(p.Unplaced) > 0 {
		fmt.Fprintf(bw, "\nincomplete: %s of the change could not be rendered, so the plan does not place them:\n", text.Plural(len(p.Unplaced), "app"))
		for _, u := range p.Unplaced {
			fmt.Fprintf(bw, "  %s -> %s: %s\n", u.ref(), onInstance(u.Instance, u.Cluster), u.Reason)
		}
	}
	if len(p.Unreadable) > 0 {
		fmt.Fprintf(bw, "\nincomplete: %s, so the apps they declare are not known to the plan:\n", text.Plural(len(p.Unreadable), "repository problem"))
		for _, u := range p.Unreadable {
			fmt.Fprintf(bw, "  %s\n", u)
		}
	}
	switch {
	case p.OK() && !p.Complete() && p.AppCount() == 0:
		bw.WriteString("\nresult: incomplete\n")
	case p.OK() && !p.Complete():
		bw.WriteString("\nresult: incomplete; the apps it places follow the policy\n")
	case p.OK():
		bw.WriteString("\nresult: ok, the plan follows the policy\n")
	default:
		fmt.Fprintf(bw, "\nresult: %s\n", text.Plural(len(p.Violations), "violation"))
		for _, v := range p.Violations {
			fmt.Fprintf(bw, "  %s: %s\n", v.Rule, v.Message)
		}
	}
	return bw.Flush()
}

// ref is "name" or "namespace/name" when the namespace is not argocd's default.
// onInstance names a cluster as the plan identifies it: with its Argo CD instance when there is one
// ("eu/in-cluster", as App.clusterID), alone in a fleet of one Argo CD.
func onInstance(instance, cluster string) string {
	if instance == "" {
		return cluster
	}
	return instance + "/" + cluster
}

func (a *PlannedApp) ref() string {
	if a.Namespace != "" && a.Namespace != "argocd" {
		return a.Namespace + "/" + a.Name
	}
	return a.Name
}

func (l *Limits) describe() string {
	parts := []string{}
	switch {
	case l.MaxParallel == nil:
		parts = append(parts, "no maxParallel")
	case l.MaxClusters == 0:
		parts = append(parts, fmt.Sprintf("maxParallel %s admits no cluster (shown one at a time)", l.MaxParallel))
	default:
		parts = append(parts, fmt.Sprintf("maxParallel %s = %s per batch", l.MaxParallel, text.Plural(l.MaxClusters, "cluster")))
	}
	keys := make([]string, 0, len(l.MaxPerLabel))
	for k := range l.MaxPerLabel {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("at most %d per %s", l.MaxPerLabel[k], k))
	}
	return strings.Join(parts, ", ")
}

// WriteMarkdown writes the plan for a PR comment or a check-run: a table (wave, apps, clusters, batches,
// gates), a Mermaid diagram GitHub renders, the batches collapsed, and the violations.
func (p *Plan) WriteMarkdown(w io.Writer) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("### Wave plan\n\n")
	fmt.Fprintf(bw, "%s.\n\n", markdown.EscapeLine(capitalize(p.summary())))
	if len(p.Tracks) > 0 {
		fmt.Fprintf(bw, "**Tracks**: %s.\n\n", strings.Join(p.trackLines(true), "; "))
	}
	if len(p.Waves) == 0 && len(p.Removed) > 0 {
		bw.WriteString("No app to sync: the change only removes apps.\n")
	} else if len(p.Waves) == 0 {
		bw.WriteString("No app to roll out.\n")
	} else {
		bw.WriteString("| Wave | Apps | Clusters | Batches | Gates |\n|---|---:|---:|---:|---|\n")
		for i := range p.Waves {
			wv := &p.Waves[i]
			name := fmt.Sprintf("%d. %s", i+1, wv.Name)
			if wv.Production {
				name += " (production)"
			}
			gates := markdown.EscapeLine(strings.Join(wv.Gates.gateParts(false), " · "))
			if h := wv.HeldBySyncWindow; h != nil {
				gates += " · ⏸️ " + markdown.EscapeLine("Argo CD sync window: "+h.Describe())
			}
			fmt.Fprintf(bw, "| %s | %d | %d | %d | %s |\n", markdown.EscapeLine(name), wv.AppCount(), wv.ClusterCount(),
				len(wv.Batches), gates)
		}
		if len(p.SkippedWaves) > 0 {
			fmt.Fprintf(bw, "\nWaves without apps: %s.\n", markdown.EscapeLine(strings.Join(p.SkippedWaves, ", ")))
		}
		p.writeMermaid(bw)
		p.writeBatches(bw)
	}
	bw.WriteString("\n")
	writeOutsideMarkdown(bw, "🗑️ **%s removed** by this change, outside the waves (the rollout has nothing of theirs to sync):", p.Removed)
	writeOutsideMarkdown(bw, "📌 **%s pinned** to another revision of the repository, outside the waves (Argo CD syncs them to that revision, not to the merge):", p.Pinned)
	if len(p.Unplaced) > 0 {
		refs := make([]string, 0, len(p.Unplaced))
		for _, u := range p.Unplaced {
			refs = append(refs, "`"+strings.ReplaceAll(u.ref(), "`", "")+"`")
		}
		fmt.Fprintf(bw, "❌ **The plan is incomplete**: %s of the change could not be rendered, so the plan does not place them: %s.\n\n",
			text.Plural(len(p.Unplaced), "app"), strings.Join(refs, ", "))
	}
	if len(p.Unreadable) > 0 {
		fmt.Fprintf(bw, "❌ **The plan is incomplete**: %s, so the apps they declare are not known to the plan (see Failed to render).\n\n",
			text.Plural(len(p.Unreadable), "repository problem"))
	}
	switch {
	case p.OK() && !p.Complete():
		if p.AppCount() > 0 {
			bw.WriteString("The apps it places follow the release policy.\n")
		}
	case p.OK():
		bw.WriteString("✅ The plan follows the release policy.\n")
	default:
		fmt.Fprintf(bw, "❌ **%s of the release policy** (the plan check fails):\n\n", capitalize(text.Plural(len(p.Violations), "violation")))
		bw.WriteString("| App | Cluster | Rule | Message |\n|---|---|---|---|\n")
		for i, v := range p.Violations {
			if i == mdMaxViolations {
				fmt.Fprintf(bw, "\n…and %d more (see the JSON output).\n", len(p.Violations)-mdMaxViolations)
				break
			}
			fmt.Fprintf(bw, "| %s | %s | `%s` | %s |\n", markdown.EscapeLine(v.App), markdown.EscapeLine(v.Cluster), v.Rule, markdown.EscapeLine(v.Message))
		}
	}
	return bw.Flush()
}

func (p *Plan) writeMermaid(bw *bufio.Writer) {
	bw.WriteString("\n```mermaid\nflowchart LR\n")
	for i := range p.Waves {
		wv := &p.Waves[i]
		fmt.Fprintf(bw, "  w%d[\"%d. %s<br/>%s · %s · %s\"]\n", i+1, i+1, mermaidEscape(wv.Name),
			text.Plural(wv.AppCount(), "app"), text.Plural(wv.ClusterCount(), "cluster"), text.Plural(len(wv.Batches), "batch"))
	}
	bw.WriteString("  done([\"done\"])\n")
	// An approval before a wave is a node in front of it: the arrow into the wave passes through it.
	entry := func(i int) string {
		if i == len(p.Waves) {
			return "done"
		}
		if p.Waves[i].Gates.Approval.Before() {
			return fmt.Sprintf("a%d", i+1)
		}
		return fmt.Sprintf("w%d", i+1)
	}
	for i := range p.Waves {
		if a := p.Waves[i].Gates.Approval; a.Before() {
			label := "approval"
			if len(a.Teams) > 0 {
				label += " by " + strings.Join(a.Teams, ", ")
			}
			fmt.Fprintf(bw, "  a%d{{\"%s\"}} --> w%d\n", i+1, mermaidEscape(label), i+1)
		}
	}
	for i := range p.Waves {
		wv := &p.Waves[i]
		next := entry(i + 1)
		var gates []string
		for _, part := range wv.Gates.gateParts(false) {
			if !strings.HasPrefix(part, "on failure") && !(wv.Gates.Approval.Before() && part == wv.Gates.Approval.Describe()) {
				gates = append(gates, part)
			}
		}
		if len(gates) == 0 {
			fmt.Fprintf(bw, "  w%d --> %s\n", i+1, next)
		} else {
			fmt.Fprintf(bw, "  w%d -->|\"%s\"| %s\n", i+1, mermaidEscape(strings.Join(gates, " · ")), next)
		}
	}
	bw.WriteString("```\n")
}

func (p *Plan) writeBatches(bw *bufio.Writer) {
	bw.WriteString("\n<details><summary>Batches</summary>\n\n")
	for i := range p.Waves {
		wv := &p.Waves[i]
		fmt.Fprintf(bw, "**%d. %s** — %s\n\n", i+1, markdown.EscapeLine(wv.Name), markdown.EscapeLine(wv.Limits.describe()))
		for j, b := range wv.Batches {
			if j == mdMaxBatchesPerWave {
				fmt.Fprintf(bw, "- …and %s more\n", text.Plural(len(wv.Batches)-j, "batch"))
				break
			}
			names := make([]string, 0, min(len(b.Apps), mdMaxAppsPerBatch))
			for k, a := range b.Apps {
				if k == mdMaxAppsPerBatch {
					names = append(names, fmt.Sprintf("…and %d more", len(b.Apps)-k))
					break
				}
				names = append(names, a.ref())
			}
			clusters := b.Clusters
			if len(clusters) > mdMaxClustersPerBatch {
				clusters = append(slices.Clone(clusters[:mdMaxClustersPerBatch]), fmt.Sprintf("…and %d more", len(b.Clusters)-mdMaxClustersPerBatch))
			}
			fmt.Fprintf(bw, "- batch %d: %s: %s\n", j+1, markdown.EscapeLine(strings.Join(clusters, ", ")), markdown.EscapeLine(strings.Join(names, ", ")))
		}
		bw.WriteString("\n")
	}
	bw.WriteString("</details>\n")
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// mermaidEscape keeps text inside a quoted Mermaid label.
func mermaidEscape(s string) string {
	r := strings.NewReplacer("\"", "#quot;", "<", "#lt;", ">", "#gt;", "\n", " ")
	return r.Replace(s)
}

// writeOutsideText lists apps the plan leaves outside its waves (removed, pinned) under title, in text.
func writeOutsideText(bw *bufio.Writer, title string, apps []Unplaced) {
	if len(apps) == 0 {
		return
	}
	fmt.Fprintf(bw, "\n%s:\n", title)
	for _, r := range apps {
		fmt.Fprintf(bw, "  %s -> %s: %s\n", r.ref(), onInstance(r.Instance, r.Cluster), r.Reason)
	}
}

// writeOutsideMarkdown lists apps the plan leaves outside its waves in Markdown: heading is a format whose %s
// is the count ("2 apps"), then at most mdMaxViolations lines.
func writeOutsideMarkdown(bw *bufio.Writer, heading string, apps []Unplaced) {
	if len(apps) == 0 {
		return
	}
	fmt.Fprintf(bw, heading+"\n\n", capitalize(text.Plural(len(apps), "app")))
	for i, r := range apps {
		if i == mdMaxViolations {
			fmt.Fprintf(bw, "- …and %d more\n", len(apps)-i)
			break
		}
		fmt.Fprintf(bw, "- `%s` → %s: %s\n", strings.ReplaceAll(r.ref(), "`", ""), markdown.EscapeLine(onInstance(r.Instance, r.Cluster)), markdown.EscapeLine(r.Reason))
	}
	bw.WriteString("\n")
}
