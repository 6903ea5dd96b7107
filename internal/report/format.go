package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"strings"

	"github.com/fleetwave/fleetwave/internal/diff"
)

func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

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
	line := fmt.Sprintf("%s: %s; resources +%d ~%d -%d", plural(s.Apps, "app"), strings.Join(parts, ", "),
		s.ResourcesAdded, s.ResourcesModified, s.ResourcesRemoved)
	if r.Plan != nil {
		line += "; " + plural(s.Waves, "wave")
	}
	return line
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

func (a *App) headline() string {
	c := a.Cluster
	if c == "" {
		c = a.Server
	}
	s := fmt.Sprintf("%s → %s: %s", a.Key(), c, a.Status)
	if a.Status == StatusChanged || a.Status == StatusAdded || a.Status == StatusRemoved {
		s += fmt.Sprintf(" (+%d ~%d -%d)", a.Counts.Added, a.Counts.Modified, a.Counts.Removed)
	}
	return s
}

// WriteText writes the report for a terminal.
func (r *Report) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "fleetwave diff %s..%s: %s\n", short(r.Base), short(r.Head), r.SummaryLine())
	for _, n := range r.Notes {
		fmt.Fprintf(bw, "note: %s\n", n)
	}
	for i := range r.Apps {
		a := &r.Apps[i]
		if !shown(a) {
			continue
		}
		fmt.Fprintf(bw, "\n=== %s\n", a.headline())
		if a.Error != "" {
			what := "not rendered"
			if a.Status == StatusError {
				what = "error"
			}
			fmt.Fprintf(bw, "%s: %s\n", what, a.Error)
		}
		if a.Warning != "" {
			fmt.Fprintf(bw, "warning: %s\n", a.Warning)
		}
		for _, res := range a.Resources {
			bw.WriteString(res.Diff)
		}
		writeSecretKeysText(bw, a.Resources)
		writeLiveText(bw, a.Live)
		if len(a.Hooks) > 0 {
			bw.WriteString("hooks that will run:\n")
			for _, h := range a.Hooks {
				fmt.Fprintf(bw, "  %s %s (%s)\n", strings.Join(h.HookTypes, ","), h.Key, h.Change)
			}
			for _, h := range a.Hooks {
				bw.WriteString(h.Diff)
			}
		}
	}
	if len(r.Problems) > 0 {
		bw.WriteString("\nproblems:\n")
		for _, p := range r.Problems {
			fmt.Fprintf(bw, "  %s\n", p)
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
	case l.Error != "":
		return "live state not read: " + l.Error
	}
	s := fmt.Sprintf("%s compared with the live state in Argo CD", plural(l.Compared, "resource"))
	if l.Drifted() {
		s += "; live state drifted from the base render: " + strings.Join(l.Drift, ", ")
	} else {
		s += "; no drift from the base render"
	}
	return s
}

func writeLiveText(w io.Writer, l *Live) {
	line := liveSummary(l)
	if line == "" {
		return
	}
	fmt.Fprintf(w, "live: %s\n", line)
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
	b, err := json.Marshal((*plain)(r))
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

// MaxCommentChars is GitHub's limit on an issue comment body.
const MaxCommentChars = 65536

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

// markdownBlocks returns the comment's head (summary, notes, plan) and one self-contained block per section.
func (r *Report) markdownBlocks() (string, []string) {
	var head strings.Builder
	fmt.Fprintf(&head, "## fleetwave preview `%s..%s`\n\n", short(r.Base), short(r.Head))
	fmt.Fprintf(&head, "**%s**\n\n", mdEscape(r.SummaryLine()))
	for _, n := range r.Notes {
		fmt.Fprintf(&head, "> %s\n\n", mdEscape(n))
	}
	if r.Plan != nil {
		var pb bytes.Buffer
		if err := r.Plan.WriteMarkdown(&pb); err != nil {
			fmt.Fprintf(&head, "_The wave plan could not be written: %s_\n\n", mdEscape(err.Error()))
		} else {
			head.Write(pb.Bytes())
			head.WriteString("\n")
		}
	}
	if len(r.PolicyErrors) > 0 {
		head.WriteString("### Wave plan\n\n❌ **The release policy is invalid**, so no plan was made (the diff below is complete):\n\n")
		for _, e := range r.PolicyErrors {
			fmt.Fprintf(&head, "- %s\n", mdEscape(e))
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
				fmt.Fprintf(&b, "- `%s` → %s: %s\n", a.Key(), mdEscape(a.Cluster), mdEscape(a.Error))
			}
		}
		for _, p := range r.Problems {
			fmt.Fprintf(&b, "- %s\n", mdEscape(p))
		}
		b.WriteString("\n")
		blocks = append(blocks, b.String())
	}
	first := true
	for i := range r.Apps {
		a := &r.Apps[i]
		if !shown(a) || a.Status == StatusError {
			continue
		}
		if first {
			blocks = append(blocks, "### Apps\n\n")
			first = false
		}
		blocks = append(blocks, appBlock(a))
	}
	if r.Summary.Unchanged > 0 {
		blocks = append(blocks, fmt.Sprintf("_%s unchanged._\n", plural(r.Summary.Unchanged, "app")))
	}
	return head.String(), blocks
}

func appBlock(a *App) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<details><summary><code>%s</code></summary>\n\n", html.EscapeString(a.headline()))
	if a.Error != "" {
		fmt.Fprintf(&b, "Not rendered: %s\n\n", mdEscape(a.Error))
	}
	if a.Warning != "" {
		fmt.Fprintf(&b, "⚠️ %s\n\n", mdEscape(a.Warning))
	}
	if len(a.AffectedBy) > 0 {
		fmt.Fprintf(&b, "Affected by: %s\n\n", mdEscape(strings.Join(a.AffectedBy, ", ")))
	}
	var text strings.Builder
	for _, res := range a.Resources {
		text.WriteString(res.Diff)
	}
	if text.Len() > 0 {
		fence := fence(text.String())
		fmt.Fprintf(&b, "%sdiff\n%s%s\n\n", fence, text.String(), fence)
	}
	var secrets []string
	for _, res := range a.Resources {
		for _, k := range res.SecretKeys {
			secrets = append(secrets, fmt.Sprintf("`%s` `%s: <%s>`", res.Key, k.Key, k.Change))
		}
	}
	if len(secrets) > 0 {
		fmt.Fprintf(&b, "🔒 Secret values are never shown. Changed keys: %s\n\n", strings.Join(secrets, ", "))
	}
	writeLiveMarkdown(&b, a.Live)
	if len(a.Hooks) > 0 {
		b.WriteString("**Hooks that will run** (not part of sync status):\n\n")
		var hookDiff strings.Builder
		for _, h := range a.Hooks {
			fmt.Fprintf(&b, "- %s `%s` (%s)\n", strings.Join(h.HookTypes, ", "), h.Key, h.Change)
			hookDiff.WriteString(h.Diff)
		}
		b.WriteString("\n")
		if hookDiff.Len() > 0 {
			fence := fence(hookDiff.String())
			fmt.Fprintf(&b, "%sdiff\n%s%s\n\n", fence, hookDiff.String(), fence)
		}
	}
	b.WriteString("</details>\n\n")
	return b.String()
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
	fmt.Fprintf(b, "%s Live: %s\n\n", icon, mdEscape(line))
	for _, n := range l.Notes {
		fmt.Fprintf(b, "> %s\n\n", mdEscape(n))
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

// mdEscape neutralises characters that would turn plain text into markup in a comment.
func mdEscape(s string) string {
	r := strings.NewReplacer("<", "&lt;", ">", "&gt;", "|", "\\|", "*", "\\*", "_", "\\_", "`", "\\`", "[", "\\[", "]", "\\]")
	return r.Replace(s)
}
