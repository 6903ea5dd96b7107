package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"slices"
	"strings"

	"github.com/fleetwave/fleetwave/internal/diff"
	"github.com/fleetwave/fleetwave/internal/edge/github/limits"
	"github.com/fleetwave/fleetwave/internal/kit/markdown"
	"github.com/fleetwave/fleetwave/internal/kit/text"
)

// SummaryLine is the one-line summary: apps changed / unchanged / failed, resources +added ~changed -removed,
// and waves when there is a plan.
func (r *Report) SummaryLine() string {
	s := r.Summary
	parts := []string{fmt.Sprintf("%d changed", s.Changed)}
	if s.Added > 0 {
		parts = append(parts, fmt.Sprintf("%d added", s.Added))
	}
	if s.Removed > 0 {
		parts = append(parts, fmt.Sprintf("%d removed", s.Removed))
	}
	parts = append(parts, fmt.Sprintf("%d unchanged", s.Unchanged))
	parts = append(parts, fmt.Sprintf("%d failed to render", s.Failed))
	if s.Skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d not rendered (external)", s.Skipped))
	}
	line := fmt.Sprintf("%s: %s; resources +%d ~%d -%d", text.Plural(s.Apps, "app"), strings.Join(parts, ", "),
		s.ResourcesAdded, s.ResourcesModified, s.ResourcesRemoved)
	if r.Plan != nil {
		line += "; " + text.Plural(s.Waves, "wave")
	}
	if alarms := r.alarms(); len(alarms) > 0 {
		line = strings.Join(alarms, ", ") + " — " + line
	}
	return line
}

// alarms are what makes the preview no all-clear, most serious first, for the head of its first line: an
// incomplete or refused plan, apps not rendered, no app at all.
func (r *Report) alarms() []string {
	var out []string
	if r.NoApps {
		out = append(out, "NO APPS: no Application or ApplicationSet at either revision")
	}
	if len(r.PolicyErrors) > 0 {
		out = append(out, "NO PLAN: the release policy is invalid")
	}
	if r.Plan != nil && !r.Plan.OK() {
		out = append(out, "PLAN REFUSED: it breaks the release policy")
	}
	if r.Plan != nil && !r.Plan.Complete() {
		out = append(out, "PLAN INCOMPLETE")
	}
	if n := r.Summary.Failed; n > 0 {
		out = append(out, text.Plural(n, "app")+" failed to render")
	}
	if n := len(r.Problems); n > 0 {
		out = append(out, text.Plural(n, "repository problem"))
	}
	if n := r.Summary.Skipped; n > 0 {
		out = append(out, text.Plural(n, "app")+" not rendered")
	}
	return out
}

// shown reports whether an app gets a section of its own in text and markdown output.
func shown(a *App) bool {
	return a.Status != StatusUnchanged || len(a.Hooks) > 0 && hasChangedHook(a) || a.Warning != "" || a.Live.Drifted()
}

func hasChangedHook(a *App) bool {
	for _, h := range a.Hooks {
		if h.Change != diff.Unchanged {
			return true
		}
	}
	return false
}

// onInstance names a cluster with its Argo CD instance when there is one ("eu/in-cluster").
func onInstance(instance, cluster string) string {
	if instance == "" {
		return cluster
	}
	return instance + "/" + cluster
}

func (a *App) headline() string {
	s := fmt.Sprintf("%s → %s: %s", a.Key(), a.cluster(), a.Status)
	switch {
	case a.Status == StatusRemoved && a.Removal != nil && (a.Removal.Effect == RemovalKept || a.Removal.Effect == RemovalOrphan):
		s += " (its resources stay in the cluster)"
	case a.Status == StatusChanged || a.Status == StatusAdded || a.Status == StatusRemoved:
		s += fmt.Sprintf(" (+%d ~%d -%d)", a.Counts.Added, a.Counts.Modified, a.Counts.Removed)
	}
	if a.PinnedRevision != "" {
		s += " (pinned to " + a.PinnedRevision + ")"
	}
	return s
}

// WriteText writes the report for a terminal.
func (r *Report) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "fleetwave diff %s..%s: %s\n", text.Short(r.Base, 7), text.Short(r.Head, 7), r.SummaryLine())
	for _, n := range r.Notes {
		fmt.Fprintf(bw, "note: %s\n", n)
	}
	groups := r.groups()
	var att strings.Builder
	writeAttentionText(&att, attention(groups))
	bw.WriteString(att.String())
	for i := range r.Apps {
		if a := &r.Apps[i]; a.Status == StatusError {
			fmt.Fprintf(bw, "\n=== %s\nerror: %s\n", a.headline(), a.Error)
		}
	}
	for i := range groups {
		writeGroupText(bw, &groups[i], r.FoldChartLabels)
	}
	if len(r.Problems) > 0 {
		bw.WriteString("\nproblems:\n")
		for _, p := range r.Problems {
			fmt.Fprintf(bw, "  %s\n", p)
		}
	}
	if len(r.Unevaluated) > 0 {
		bw.WriteString("\nnot evaluated (their apps are not in this diff):\n")
		for _, u := range r.Unevaluated {
			mark := ""
			if u.Changed {
				mark = " [changed by this change]"
			}
			fmt.Fprintf(bw, "  %s%s\n", u, mark)
		}
	}
	if len(r.PolicyErrors) > 0 {
		bw.WriteString("\nplan: not made, the release policy is invalid:\n")
		for _, e := range r.PolicyErrors {
			fmt.Fprintf(bw, "  %s\n", e)
		}
	}
	if r.Plan != nil {
		bw.WriteString("\n")
		if err := bw.Flush(); err != nil {
			return err
		}
		if err := r.Plan.WriteText(w); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// writeGroupText writes one group: its apps, then the change once.
func writeGroupText(bw *bufio.Writer, g *Group, fold bool) {
	a := g.first()
	if len(g.own) > 0 { // the group alone: its apps' values where they agree
		a = mapApp(a, func(s string) string { return restore(s, g.own) })
	}
	fmt.Fprintf(bw, "\n=== %s\n", sectionSummary([]*Group{g}, len(g.members)))
	if len(g.members) > 1 {
		bw.WriteString("apps:")
		for i, m := range g.members {
			if i > 0 {
				bw.WriteString(",")
			}
			fmt.Fprintf(bw, " %s → %s", m.Key(), m.cluster())
			if m.Wave != "" {
				fmt.Fprintf(bw, " (%s)", m.Wave)
			}
		}
		bw.WriteString("\n")
	}
	if l := legendOf(placeholdersIn(a)); l != "" {
		fmt.Fprintf(bw, "%s\n", strings.ReplaceAll(l, "`", ""))
	}
	if a.Error != "" {
		fmt.Fprintf(bw, "not rendered: %s\n", a.Error)
	}
	if a.Removal != nil {
		fmt.Fprintf(bw, "removed: %s\n", a.Removal.Detail)
	}
	if a.Warning != "" {
		fmt.Fprintf(bw, "warning: %s\n", a.Warning)
	}
	resources, folded := foldResources(a.Resources, fold)
	hooks, hooksFolded := foldResources(a.Hooks, fold)
	for _, res := range resources {
		bw.WriteString(res.Diff)
	}
	if n := folded + hooksFolded; n > 0 {
		fmt.Fprintf(bw, "(%s only changing the helm.sh/chart label folded)\n", text.Plural(n, "hunk"))
	}
	if a.Ignored > 0 {
		fmt.Fprintf(bw, "(fields named by the policy's diff.ignore left out of %s)\n", text.Plural(a.Ignored, "object"))
	}
	writeSecretKeysText(bw, a.Resources)
	writeLiveText(bw, a.Live)
	if len(a.Hooks) > 0 {
		bw.WriteString("hooks that will run:\n")
		for _, h := range a.Hooks {
			fmt.Fprintf(bw, "  %s %s (%s)\n", strings.Join(h.HookTypes, ","), h.Key, h.Change)
		}
		for _, h := range hooks {
			bw.WriteString(h.Diff)
		}
	}
}

func writeSecretKeysText(w io.Writer, resources []diff.Resource) {
	for _, res := range resources {
		for _, k := range res.SecretKeys {
			fmt.Fprintf(w, "%s: %s: <%s>\n", res.Key, k.Key, k.Change)
		}
	}
}

// liveSummary is the one line saying how the live state compares (nil: no line).
func liveSummary(l *Live) string {
	switch {
	case l == nil:
		return ""
	case l.Missing:
		return "not in Argo CD: live state not compared"
	case l.NotManaged:
		return "exists in Argo CD, not managed from this repository: live state not compared"
	case l.Error != "":
		return "live state not read: " + l.Error
	}
	s := fmt.Sprintf("%s compared with the live state in Argo CD", text.Plural(l.Compared, "resource"))
	if l.Drifted() {
		s += "; live state drifted from the base render: " + strings.Join(l.Drift, ", ")
	} else {
		s += "; no drift from the base render"
	}
	return s
}

// liveDetails are the lines that say which drift Argo CD would prune, which extra objects it ignores, and which
// Secret keys were changed live (names only), for apps whose live comparison found any.
func liveDetails(l *Live) []string {
	var out []string
	if len(l.Extraneous) > 0 {
		out = append(out, "would be pruned by a sync with prune (in no render, tracked as the app's): "+strings.Join(l.Extraneous, ", "))
	}
	if len(l.IgnoredExtraneous) > 0 {
		out = append(out, "extraneous, ignored by Argo CD (IgnoreExtraneous), not drift: "+strings.Join(l.IgnoredExtraneous, ", "))
	}
	keys := make([]string, 0, len(l.DriftSecretKeys))
	for k := range l.DriftSecretKeys {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s: changed live (values never shown): %s", k, strings.Join(l.DriftSecretKeys[k], ", ")))
	}
	return out
}

func writeLiveText(w io.Writer, l *Live) {
	line := liveSummary(l)
	if line == "" {
		return
	}
	fmt.Fprintf(w, "live: %s\n", line)
	for _, d := range liveDetails(l) {
		fmt.Fprintf(w, "live: %s\n", d)
	}
	for _, n := range l.Notes {
		fmt.Fprintf(w, "live: note: %s\n", n)
	}
	if len(l.LiveDiff) == 0 {
		return
	}
	fmt.Fprintf(w, "live diff (live → head, what a sync would change):\n")
	for _, res := range l.LiveDiff {
		io.WriteString(w, res.Diff)
	}
	writeSecretKeysText(w, l.LiveDiff)
}

// WriteJSON writes the report as JSON (the plan's fields at the top level).
func (r *Report) WriteJSON(w io.Writer) error {
	b, err := r.MarshalJSON()
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err = w.Write(out.Bytes())
	return err
}

// MarshalJSON merges the plan's JSON object into the report's.
func (r *Report) MarshalJSON() ([]byte, error) {
	type plain Report
	out := *r
	out.SchemaVersion = SchemaVersion
	out.Groups = r.groups()
	out.Apps = withClasses(r.Apps)
	out.Classes = r.ClassCounts()
	b, err := json.Marshal((*plain)(&out))
	if err != nil || r.Plan == nil {
		return b, err
	}
	pb, err := json.Marshal(r.Plan)
	if err != nil {
		return nil, fmt.Errorf("encoding plan: %w", err)
	}
	var top, plan map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(pb, &plan); err != nil {
		return nil, fmt.Errorf("encoding plan: not an object: %w", err)
	}
	for k, v := range plan {
		if _, clash := top[k]; !clash {
			top[k] = v
		}
	}
	// Keep a stable order: the report's fields as declared, then the plan's sorted (encoding/json sorts maps).
	return json.Marshal(top)
}

// Marker is the hidden HTML comment that identifies fleetwave's PR comment (one per PR, updated in place).
const Marker = "<!-- fleetwave:preview -->"

// partMarker identifies part n of a split comment.
func partMarker(n int) string { return fmt.Sprintf("<!-- fleetwave:preview part=%d -->", n) }

// MaxCommentChars is GitHub's limit on an issue comment body (internal/edge/github/limits).
const MaxCommentChars = limits.CommentBody

// Markdown is the whole PR comment as one document (the check-run output takes it unsplit).
func (r *Report) Markdown() string {
	head, blocks := r.markdownBlocks()
	var b strings.Builder
	b.WriteString(Marker + "\n")
	b.WriteString(head)
	for _, bl := range blocks {
		b.WriteString(bl)
	}
	return b.String()
}

// MarkdownParts splits the PR comment into numbered parts of at most limit bytes (MaxCommentChars when
// limit <= 0; bytes bound GitHub's character count from above). The first part starts with the summary and the
// wave plan; every later part repeats the summary line. App sections are never cut across parts; a section
// too large for any part has its diff shortened, with a note saying so.
func (r *Report) MarkdownParts(limit int) []string {
	if limit <= 0 {
		limit = MaxCommentChars
	}
	head, blocks := r.markdownBlocks()
	const headroom = 400 // for part headers, whose final numbers are known only at the end
	var parts [][]string
	cur := []string{head}
	size := len(head) + len(Marker) + 1
	for _, bl := range blocks {
		if len(bl) > limit-headroom-len(head) {
			bl = shorten(bl, limit-headroom-len(head))
		}
		if size+len(bl) > limit-headroom {
			parts = append(parts, cur)
			cur = nil
			size = 0
		}
		cur = append(cur, bl)
		size += len(bl)
	}
	parts = append(parts, cur)
	out := make([]string, len(parts))
	for i, p := range parts {
		var b strings.Builder
		if i == 0 {
			b.WriteString(Marker + "\n")
			if len(parts) > 1 {
				p = append([]string{p[0], fmt.Sprintf("_Part 1 of %d._\n\n", len(parts))}, p[1:]...)
			}
		} else {
			b.WriteString(partMarker(i+1) + "\n")
			fmt.Fprintf(&b, "**fleetwave preview, part %d of %d** — %s\n\n", i+1, len(parts), html.EscapeString(r.SummaryLine()))
		}
		for _, s := range p {
			b.WriteString(s)
		}
		out[i] = b.String()
	}
	return out
}

// shorten cuts an app section's diff so the section fits in max bytes, keeping its markdown well formed.
func shorten(block string, max int) string {
	fence := strings.Index(block, "\n```")
	if fence < 0 || max < 200 {
		return "<details><summary>section too large to show</summary></details>\n\n"
	}
	keep := max - 300
	if keep < fence {
		keep = fence
	}
	body := block[:keep]
	if i := strings.LastIndexByte(body, '\n'); i > fence {
		body = body[:i+1]
	}
	omitted := strings.Count(block[len(body):], "\n")
	return body + fmt.Sprintf("%s\n\n_Diff shortened: %d more lines. The check-run and `fleetwave diff --output json` have all of it._\n</details>\n\n",
		fenceFor(body), omitted)
}

// fenceFor returns the code fence used in a section (the backtick run that opened it).
func fenceFor(s string) string {
	i := strings.Index(s, "\n```")
	if i < 0 {
		return "```"
	}
	j := i + 1
	for j < len(s) && s[j] == '`' {
		j++
	}
	return s[i+1 : j]
}

// maxTableRows bounds the summary table so the comment's first part always fits; the rest is counted.
const maxTableRows = 100

// markdownBlocks returns the comment's head (summary, table, headlines, plan) and one self-contained block per
// section: the failures, one per group of identical changes in rollout order, the unchanged count, the footer.
func (r *Report) markdownBlocks() (string, []string) {
	groups := r.groups()
	var head strings.Builder
	fmt.Fprintf(&head, "## fleetwave preview `%s..%s`\n\n", text.Short(r.Base, 7), text.Short(r.Head, 7))
	fmt.Fprintf(&head, "**%s**\n\n", markdown.Escape(r.SummaryLine()))
	for _, n := range r.Notes {
		fmt.Fprintf(&head, "> %s\n\n", markdown.Escape(n))
	}
	if l := r.ClassLine(); l != "" {
		head.WriteString(l + "\n\n")
	}
	secs := sections(groups)
	writeTable(&head, secs)
	writeAttentionMarkdown(&head, attention(groups))
	if r.Plan != nil {
		var pb bytes.Buffer
		if err := r.Plan.WriteMarkdown(&pb); err != nil {
			fmt.Fprintf(&head, "_The wave plan could not be written: %s_\n\n", markdown.Escape(err.Error()))
		} else {
			head.Write(pb.Bytes())
			head.WriteString("\n")
		}
	}
	if len(r.PolicyErrors) > 0 {
		head.WriteString("### Wave plan\n\n❌ **The release policy is invalid**, so no plan was made (the diff below is complete):\n\n")
		for _, e := range r.PolicyErrors {
			fmt.Fprintf(&head, "- %s\n", markdown.Escape(e))
		}
		head.WriteString("\n")
	}
	var blocks []string
	if r.Summary.Failed > 0 || len(r.Problems) > 0 {
		var b strings.Builder
		b.WriteString("### ❌ Failed to render\n\n")
		for i := range r.Apps {
			a := &r.Apps[i]
			if a.Status == StatusError {
				fmt.Fprintf(&b, "- `%s` → %s: %s\n", a.Key(), markdown.Escape(onInstance(a.Instance, a.Cluster)), markdown.Escape(a.Error))
			}
		}
		for _, p := range r.Problems {
			fmt.Fprintf(&b, "- %s\n", markdown.Escape(p))
		}
		b.WriteString("\n")
		blocks = append(blocks, b.String())
	}
	if len(r.Unevaluated) > 0 {
		blocks = append(blocks, unevaluatedMarkdown(r.Unevaluated))
	}
	if len(groups) > 0 {
		title := "### Apps\n\n"
		if r.Plan != nil {
			title = "### Apps, in rollout order\n\n"
		}
		blocks = append(blocks, title)
	}
	shown := map[string]int{} // resource diff → the section that showed it
	for _, sec := range secs {
		blocks = append(blocks, sectionBlocks(sec, r.Footer, shown, r.FoldChartLabels)...)
	}
	if r.Summary.Unchanged > 0 {
		blocks = append(blocks, fmt.Sprintf("_%s unchanged._\n", text.Plural(r.Summary.Unchanged, "app")))
	}
	if f := r.Footer; f != nil {
		blocks = append(blocks, f.markdown())
	}
	return head.String(), blocks
}

// writeTable writes the summary table: one row per section, in rollout order.
func writeTable(b *strings.Builder, secs [][]*Group) {
	if len(secs) == 0 {
		return
	}
	// The renderer gets a column only when Argo CD rendered some app (a plugin source): otherwise every app was
	// rendered in process, and the column would say nothing.
	byArgo := false
	for _, sec := range secs {
		for _, g := range sec {
			byArgo = byArgo || g.first().RenderedBy == "argocd"
		}
	}
	if byArgo {
		b.WriteString("| # | Apps | Wave | Clusters | Change | Secret keys | Hooks that run | Rendered by |\n")
		b.WriteString("|---:|---|---|---|---|---|---|---|\n")
	} else {
		b.WriteString("| # | Apps | Wave | Clusters | Change | Secret keys | Hooks that run |\n")
		b.WriteString("|---:|---|---|---|---|---|---|\n")
	}
	for i, sec := range secs {
		if i == maxTableRows {
			fmt.Fprintf(b, "\n_… and %d more sections, below._\n", len(secs)-i)
			break
		}
		g := sec[0]
		a := g.first()
		members, clusters, waves := sectionMembers(sec)
		apps := "`" + mdEscapeCode(a.Key()) + "`"
		if len(members) > 1 {
			apps = fmt.Sprintf("`%s` ×%d", mdEscapeCode(g.Label), len(members))
		}
		change := string(g.Status)
		switch g.Status {
		case StatusChanged, StatusAdded, StatusRemoved:
			change += fmt.Sprintf(" +%d ~%d -%d", g.Counts.Added, g.Counts.Modified, g.Counts.Removed)
		case StatusSkipped:
			change = "not rendered"
		}
		if len(sec) > 1 {
			change += fmt.Sprintf(" · %d variants", len(sec))
		}
		for _, v := range sec {
			if v.first().Live.Drifted() {
				change += " · live drift"
				break
			}
		}
		var secrets, hooks []string
		seen := map[string]bool{}
		for _, v := range sec { // variants may change different keys of the same Secrets
			for _, res := range v.first().Resources {
				for _, k := range res.SecretKeys {
					if !seen[k.Key] {
						seen[k.Key] = true
						secrets = append(secrets, "`"+mdEscapeCode(k.Key)+"`")
					}
				}
			}
		}
		for _, h := range a.Hooks {
			hooks = append(hooks, cell(strings.Join(h.HookTypes, ",")+" "+h.Kind+" "+h.Name))
		}
		rendered := "in process"
		if a.RenderedBy == "argocd" {
			rendered = "Argo CD"
		}
		if g.Status == StatusSkipped {
			rendered = "—"
		}
		fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %s | %s |", g.Section, apps, orDash(cell(strings.Join(waves, ", "))),
			cell(listSome(clusters, 3)), change, orDash(strings.Join(secrets, " ")), orDash(strings.Join(hooks, "; ")))
		if byArgo {
			fmt.Fprintf(b, " %s |", rendered)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// sectionMembers are a section's apps in rollout order, their clusters and waves (each once, in order).
func sectionMembers(sec []*Group) (apps []*App, clusters, waves []string) {
	for _, g := range sec {
		apps = append(apps, g.members...)
	}
	slices.SortStableFunc(apps, compareRollout)
	seenC, seenW := map[string]bool{}, map[string]bool{}
	for _, a := range apps {
		if c := a.cluster(); !seenC[c] {
			seenC[c] = true
			clusters = append(clusters, c)
		}
		if a.Wave != "" && !seenW[a.Wave] {
			seenW[a.Wave] = true
			waves = append(waves, a.Wave)
		}
	}
	return apps, clusters, waves
}

// listSome joins the first n items and counts the rest: "a, b, c … (9)".
func listSome(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(" … (%d)", len(items))
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// cell escapes text for a table cell.
func cell(s string) string { return markdown.Escape(s) }

// sectionSummary is the one line that heads a section.
func sectionSummary(sec []*Group, apps int) string {
	g := sec[0]
	if apps == 1 {
		return fmt.Sprintf("#%d %s", g.Section, g.first().headline())
	}
	s := fmt.Sprintf("#%d %s: ", g.Section, g.Label)
	if len(sec) == 1 {
		s += fmt.Sprintf("same change on %d apps", apps)
	} else {
		s += fmt.Sprintf("%d apps, %d variants of one change", apps, len(sec))
	}
	switch g.Status {
	case StatusChanged, StatusAdded, StatusRemoved:
		s += fmt.Sprintf(", %s (+%d ~%d -%d each)", g.Status, g.Counts.Added, g.Counts.Modified, g.Counts.Removed)
	case StatusSkipped:
		s += ", not rendered"
	default:
		s += ", " + string(g.Status)
	}
	return s
}

// appList lists apps in rollout order, by wave: "- **canary**: `api-test-ap-1` → test-ap-1, …".
func appList(apps []*App, urls map[string]string) string {
	var b strings.Builder
	planned := false
	for _, a := range apps {
		planned = planned || a.Wave != ""
	}
	wave := "\x00"
	for _, a := range apps {
		if a.Wave != wave {
			if wave != "\x00" {
				b.WriteString("\n")
			}
			wave = a.Wave
			switch {
			case a.Wave != "":
				fmt.Fprintf(&b, "- **%s**: ", markdown.Escape(a.Wave))
			case planned:
				b.WriteString("- **not planned**: ")
			default:
				b.WriteString("- ")
			}
		} else {
			b.WriteString(", ")
		}
		b.WriteString(appRef(a, urls))
	}
	b.WriteString("\n\n")
	return b.String()
}

// appRef is "`name` → cluster", the name linked to Argo CD when its URL is known.
func appRef(a *App, urls map[string]string) string {
	name := "`" + mdEscapeCode(a.Name) + "`"
	if u := urls[a.Key()]; u != "" {
		name = "[" + name + "](" + u + ")"
	}
	return name + " → " + markdown.Escape(a.cluster())
}

// affectedBy is the union of the apps' reasons.
func affectedBy(apps []*App) []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range apps {
		for _, r := range a.AffectedBy {
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	return out
}

// sectionIgnored sums the objects diff.ignore changed over a section's apps.
func sectionIgnored(sec []*Group) int {
	n := 0
	for _, g := range sec {
		n += g.first().Ignored * len(g.members)
	}
	return n
}

// splitDiffs splits the diffs of one list of resources (the resources, or the hooks) of a section into what
// every group of the section shares (whole resource diffs, and the hunks all groups have) and what is each
// group's own (indexed like sec).
//
// A whole resource diff that an earlier section showed (shown: diff → section) is not repeated: refs name it.
func splitDiffs(sec []*Group, pick func(*App) []diff.Resource, shown map[string]int) (shared string, own, refs []string) {
	var sb strings.Builder
	ob := make([]strings.Builder, len(sec))
	for i, r := range pick(sec[0].first()) {
		diffs := make([]string, len(sec))
		same := true
		for j, g := range sec {
			if rs := pick(g.first()); i < len(rs) {
				diffs[j] = rs[i].Diff
			}
			same = same && diffs[j] == r.Diff
		}
		if same {
			key := r.Key.String() + "\x00" + r.Diff
			if at, ok := shown[key]; ok && at != sec[0].Section {
				refs = append(refs, fmt.Sprintf("`%s` (%s): the same change as in #%d", mdEscapeCode(r.Key.String()), r.Change, at))
				continue
			}
			shown[key] = sec[0].Section
			sb.WriteString(r.Diff)
			continue
		}
		header, common := commonHunks(diffs)
		if len(common) > 0 {
			sb.WriteString(header)
			for _, h := range common {
				sb.WriteString(h)
			}
		}
		for j, d := range diffs {
			if rest := withoutHunks(d, common); rest != "" {
				ob[j].WriteString(rest)
			}
		}
	}
	own = make([]string, len(sec))
	for j := range ob {
		own[j] = ob[j].String()
	}
	return sb.String(), own, refs
}

// writeRefs lists the resources whose diff an earlier section showed.
func writeRefs(b *strings.Builder, refs []string) {
	for _, r := range refs {
		fmt.Fprintf(b, "- %s\n", r)
	}
	if len(refs) > 0 {
		b.WriteString("\n")
	}
}

// writeDiff writes a diff in a fenced block (nothing for an empty one).
func writeDiff(b *strings.Builder, d string) {
	if d == "" {
		return
	}
	f := fence(d)
	fmt.Fprintf(b, "%sdiff\n%s%s\n\n", f, d, f)
}

// splitHunks splits a unified diff into its file header and its hunks (each from its "@@" line).
func splitHunks(d string) (header string, hunks []string) {
	i := strings.Index(d, "\n@@")
	if i < 0 {
		return d, nil
	}
	header, rest := d[:i+1], d[i+1:]
	for rest != "" {
		j := strings.Index(rest, "\n@@")
		if j < 0 {
			hunks = append(hunks, rest)
			break
		}
		hunks = append(hunks, rest[:j+1])
		rest = rest[j+1:]
	}
	return header, hunks
}

// commonHunks returns the header of the first diff and the hunks that all diffs contain, in its order.
func commonHunks(diffs []string) (string, []string) {
	header, hunks := splitHunks(diffs[0])
	count := map[string]int{}
	for _, d := range diffs {
		_, hs := splitHunks(d)
		seen := map[string]bool{}
		for _, h := range hs {
			if !seen[h] {
				seen[h] = true
				count[h]++
			}
		}
	}
	var common []string
	for _, h := range hunks {
		if count[h] == len(diffs) {
			common = append(common, h)
		}
	}
	return header, common
}

// withoutHunks removes the given hunks from a diff; "" when none of its hunks is left.
func withoutHunks(d string, drop []string) string {
	header, hunks := splitHunks(d)
	var b strings.Builder
	for _, h := range hunks {
		if !slices.Contains(drop, h) {
			b.WriteString(h)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return header + b.String()
}

// sectionBlocks are a section's blocks: the first has its apps, why they are affected and what they all share;
// when its groups differ, one more block per group has that group's own hunks (blocks, so that a long section
// splits across comment parts without being cut).
func sectionBlocks(sec []*Group, f *Footer, shown map[string]int, foldCharts bool) []string {
	apps, _, _ := sectionMembers(sec)
	a := sec[0].first()
	var urls map[string]string
	if f != nil {
		urls = f.AppURLs
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<details><summary><code>%s</code></summary>\n\n", html.EscapeString(sectionSummary(sec, len(apps))))
	if len(apps) > 1 {
		b.WriteString(appList(apps, urls))
	} else if u := urls[a.Key()]; u != "" {
		fmt.Fprintf(&b, "[Open in Argo CD](%s)\n\n", u)
	}
	if l := legend(sec); l != "" {
		fmt.Fprintf(&b, "%s\n\n", l)
	}
	if a.Error != "" {
		fmt.Fprintf(&b, "Not rendered: %s\n\n", markdown.Escape(a.Error))
	}
	if a.Removal != nil {
		fmt.Fprintf(&b, "🗑️ **Removed**: %s\n\n", markdown.Escape(a.Removal.Detail))
	}
	if a.Warning != "" {
		fmt.Fprintf(&b, "⚠️ %s\n\n", markdown.Escape(a.Warning))
	}
	if reasons := affectedBy(apps); len(reasons) > 0 {
		fmt.Fprintf(&b, "Affected by: %s\n\n", markdown.Escape(listSome(reasons, 6)))
	}
	b.WriteString(sectionClasses(apps))
	fold := func(pick func(*App) []diff.Resource) func(*App) []diff.Resource {
		return func(a *App) []diff.Resource { rs, _ := foldResources(pick(a), foldCharts); return rs }
	}
	folded := 0
	for _, g := range sec {
		_, n := foldResources(g.first().Resources, foldCharts)
		_, m := foldResources(g.first().Hooks, foldCharts)
		folded += (n + m) * len(g.members)
	}
	shared, own, refs := splitDiffs(sec, fold(func(a *App) []diff.Resource { return a.Resources }), shown)
	if len(sec) > 1 && shared != "" {
		b.WriteString("What every app of this section gets:\n\n")
	}
	writeDiff(&b, shared)
	writeRefs(&b, refs)
	var secrets []string
	seen := map[string]bool{}
	for _, g := range sec {
		for _, res := range g.first().Resources {
			for _, k := range res.SecretKeys {
				s := fmt.Sprintf("`%s` `%s: <%s>`", res.Key, k.Key, k.Change)
				if !seen[s] {
					seen[s] = true
					secrets = append(secrets, s)
				}
			}
		}
	}
	if len(secrets) > 0 {
		fmt.Fprintf(&b, "🔒 Secret values are never shown. Changed keys: %s\n\n", strings.Join(secrets, ", "))
	}
	if len(sec) == 1 {
		writeLiveMarkdown(&b, a.Live)
	}
	var ownHooks []string
	if len(a.Hooks) > 0 {
		b.WriteString("**Hooks that will run** (not part of sync status):\n\n")
		for _, h := range a.Hooks {
			fmt.Fprintf(&b, "- %s `%s` (%s)\n", strings.Join(h.HookTypes, ", "), h.Key, h.Change)
		}
		b.WriteString("\n")
		var sharedHooks string
		var hookRefs []string
		sharedHooks, ownHooks, hookRefs = splitDiffs(sec, fold(func(a *App) []diff.Resource { return a.Hooks }), shown)
		writeDiff(&b, sharedHooks)
		writeRefs(&b, hookRefs)
	}
	if folded > 0 {
		fmt.Fprintf(&b, "🔕 %s only changing the `helm.sh/chart` label folded (`diff.showChartLabels: true` in the release policy shows them).\n\n", text.Plural(folded, "hunk"))
	}
	if ignored := sectionIgnored(sec); ignored > 0 {
		fmt.Fprintf(&b, "🔕 Fields the release policy's `diff.ignore` names are left out (%s).\n\n", text.Plural(ignored, "object"))
	}
	if len(sec) > 1 {
		fmt.Fprintf(&b, "The rest differs by app: %d variants follow.\n\n", len(sec))
	}
	b.WriteString("</details>\n\n")
	blocks := []string{b.String()}
	if len(sec) == 1 {
		return blocks
	}
	for i, g := range sec {
		own[i] = restore(own[i], g.own) // a variant's own hunks as its apps have them, where they agree
		if ownHooks != nil {
			ownHooks[i] = restore(ownHooks[i], g.own)
		}
		var v strings.Builder
		label := fmt.Sprintf("#%d.%d %s → %s", g.Section, i+1, g.first().Key(), g.first().cluster())
		if len(g.members) > 1 {
			label += fmt.Sprintf(" and %d more", len(g.members)-1)
		}
		fmt.Fprintf(&v, "<details><summary><code>%s</code></summary>\n\n", html.EscapeString(label))
		if len(g.members) > 1 {
			v.WriteString(appList(g.members, urls))
		}
		if own[i] == "" && (ownHooks == nil || ownHooks[i] == "") {
			v.WriteString("Nothing more than the section's shared change.\n\n")
		}
		writeDiff(&v, own[i])
		if ownHooks != nil {
			writeDiff(&v, ownHooks[i])
		}
		writeLiveMarkdown(&v, g.first().Live)
		v.WriteString("</details>\n\n")
		blocks = append(blocks, v.String())
	}
	return blocks
}

func writeLiveMarkdown(b *strings.Builder, l *Live) {
	line := liveSummary(l)
	if line == "" {
		return
	}
	icon := "🔎"
	if l.Drifted() {
		icon = "⚠️"
	}
	fmt.Fprintf(b, "%s Live: %s\n\n", icon, markdown.Escape(line))
	for _, d := range liveDetails(l) {
		fmt.Fprintf(b, "- %s\n", markdown.Escape(d))
	}
	if len(liveDetails(l)) > 0 {
		b.WriteString("\n")
	}
	for _, n := range l.Notes {
		fmt.Fprintf(b, "> %s\n\n", markdown.Escape(n))
	}
	var text strings.Builder
	for _, res := range l.LiveDiff {
		text.WriteString(res.Diff)
	}
	if text.Len() > 0 {
		f := fence(text.String())
		fmt.Fprintf(b, "**Live diff** (live → head, what a sync would change):\n\n%sdiff\n%s%s\n\n", f, text.String(), f)
	}
	var secrets []string
	for _, res := range l.LiveDiff {
		for _, k := range res.SecretKeys {
			secrets = append(secrets, fmt.Sprintf("`%s` `%s: <%s>`", res.Key, k.Key, k.Change))
		}
	}
	if len(secrets) > 0 {
		fmt.Fprintf(b, "🔒 Secret values are never shown. Keys that differ from live: %s\n\n", strings.Join(secrets, ", "))
	}
}

// fence returns a code fence longer than any backtick run in s.
func fence(s string) string {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// unevaluatedMarkdown lists the ApplicationSets whose apps were not generated, those the change touches first.
func unevaluatedMarkdown(us []Unevaluated) string {
	var b strings.Builder
	b.WriteString("### ApplicationSets not evaluated\n\nTheir generators need a live service; their apps are not in this diff.\n\n")
	for _, changed := range []bool{true, false} {
		for _, u := range us {
			if u.Changed != changed {
				continue
			}
			mark := "- "
			if changed {
				mark = "- ❌ changed by this PR: "
			}
			b.WriteString(mark + markdown.Escape(u.String()) + "\n")
		}
	}
	b.WriteString("\n")
	return b.String()
}
