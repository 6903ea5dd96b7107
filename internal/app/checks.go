package app

import (
	"context"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/fleetwave/fleetwave/internal/github"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/report"
	"github.com/fleetwave/fleetwave/internal/text"
)

// headFiles reads files of the head commit from the local repository, once each, for annotations.
type headFiles struct {
	ctx    context.Context
	clones Clones
	dir    string
	commit string
	cache  map[string][]byte
}

func (a *App) headFiles(ctx context.Context, out *outcome, ch Change) *headFiles {
	return &headFiles{ctx: ctx, clones: a.clones, dir: out.dir, commit: ch.Head, cache: map[string][]byte{}}
}

// open returns the file's content, and an error wrapping fs.ErrNotExist when it cannot be read (plan.Load's
// reader: an unreadable policy file is no policy file here, the preview having read it already).
func (h *headFiles) open(path string) ([]byte, error) {
	if data := h.read(path); data != nil {
		return data, nil
	}
	return nil, fmt.Errorf("%s: %w", path, fs.ErrNotExist)
}

// read returns the file's content, nil when it cannot be read ("" is no file).
func (h *headFiles) read(path string) []byte {
	if path == "" {
		return nil
	}
	if data, ok := h.cache[path]; ok {
		return data
	}
	data, err := h.clones.ReadFile(h.ctx, h.dir, h.commit, path)
	if err != nil {
		data = nil
	}
	h.cache[path] = data
	return data
}

// diffCheck is the fleetwave/diff check run of a preview:
//   - failure when an app failed to render or the repository has problems (broken manifests, failing
//     generators), with an annotation on the manifest each failing app is declared in; failure too when no
//     app takes a source from this repository (nothing was rendered: no all-clear), and when the change adds or
//     alters an ApplicationSet with live generators that was not evaluated (its apps are unknown); other
//     unevaluated ApplicationSets are listed without failing unrelated PRs;
//   - neutral when the change alters no app's manifests (nothing to review; GitHub counts neutral as passing
//     for required checks);
//   - success otherwise.
//
// Its text is the whole preview (the comment unsplit; the adapter cuts it at GitHub's limit with a note).
func (a *App) diffCheck(ctx context.Context, ch Change, out *outcome) github.CheckRun {
	rep := out.rep
	files := a.headFiles(ctx, out, ch)
	run := github.CheckRun{Name: CheckDiff, ExternalID: externalID(ch.Number, "")}
	var sb strings.Builder
	fmt.Fprintf(&sb, "**%s**\n", rep.SummaryLine())
	if l := rep.ClassLine(); l != "" {
		fmt.Fprintf(&sb, "\n%s\n", l)
	}
	var anns []github.Annotation
	var failed, skipped []report.App
	for _, ap := range rep.Apps {
		switch ap.Status {
		case report.StatusError:
			failed = append(failed, ap)
		case report.StatusSkipped:
			skipped = append(skipped, ap)
		}
	}
	if len(failed) > 0 {
		sb.WriteString("\n### Apps that failed to render\n\n")
		for _, ap := range failed {
			file := declaredIn(rep, ap)
			fmt.Fprintf(&sb, "- `%s`%s: %s\n", ap.Key(), inFile(file), ap.Error)
			if file == "" {
				continue
			}
			anns = append(anns, github.Annotation{
				Path: file, StartLine: manifestLine(files.read(file), ap.Name, "source", "sources"),
				Title: fmt.Sprintf("%s failed to render", ap.Key()), Message: ap.Error,
			})
		}
	}
	if len(rep.Problems) > 0 {
		sb.WriteString("\n### Repository problems\n\n")
		for _, p := range rep.Problems {
			fmt.Fprintf(&sb, "- %s\n", p)
			if file, _, ok := strings.Cut(p, ": "); ok && !strings.ContainsAny(file, " \t") && files.read(file) != nil {
				anns = append(anns, github.Annotation{Path: file, StartLine: 1, Title: "repository problem", Message: p})
			}
		}
	}
	if len(rep.Unevaluated) > 0 {
		sb.WriteString("\n### ApplicationSets not evaluated\n\n")
		for _, u := range rep.Unevaluated {
			mark := ""
			if u.Changed {
				mark = "❌ changed by this PR: "
				if u.File != "" && files.read(u.File) != nil {
					anns = append(anns, github.Annotation{Path: u.File, StartLine: 1, Title: "ApplicationSet not evaluated", Message: u.String()})
				}
			}
			fmt.Fprintf(&sb, "- %s%s\n", mark, u)
		}
	}
	if len(skipped) > 0 {
		fmt.Fprintf(&sb, "\n%d app(s) take sources from outside this repository and were not rendered here.\n", len(skipped))
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(&sb, "\n> %s\n", n)
	}
	switch {
	case rep.NoSourceInRepo:
		// Nothing was rendered: no all-clear, whatever else the report says.
		run.Conclusion = github.ConclusionFailure
		run.Output = &github.CheckOutput{Title: "No app takes a source from this repository: nothing was rendered"}
	case rep.NoApps && !rep.HasErrors():
		run.Conclusion = github.ConclusionFailure
		run.Output = &github.CheckOutput{Title: "No Application or ApplicationSet at either revision: nothing was previewed"}
	case rep.HasErrors():
		run.Conclusion = github.ConclusionFailure
		run.Output = &github.CheckOutput{Title: fmt.Sprintf("%d of %d apps failed to render", rep.Summary.Failed, rep.Summary.Apps)}
		if rep.Summary.Failed == 0 {
			run.Output.Title = fmt.Sprintf("%d repository problem(s)", len(rep.Problems))
			if len(rep.Problems) == 0 {
				run.Output.Title = fmt.Sprintf("%d changed ApplicationSet(s) could not be evaluated", rep.UnevaluatedChanged())
			}
		}
	case !rep.HasChanges():
		run.Conclusion = github.ConclusionNeutral
		run.Output = &github.CheckOutput{Title: "No app's manifests change"}
	default:
		run.Conclusion = github.ConclusionSuccess
		run.Output = &github.CheckOutput{Title: fmt.Sprintf("%d of %d apps change", rep.Summary.Changed+rep.Summary.Added+rep.Summary.Removed, rep.Summary.Apps)}
	}
	if n := rep.Summary.Skipped; n > 0 && !rep.NoSourceInRepo {
		// The first screen names what was not rendered before anything else.
		run.Output.Title = fmt.Sprintf("%d app(s) not rendered; %s", n, run.Output.Title)
	}
	run.Output.Summary = sb.String()
	run.Output.Text = rep.Markdown()
	run.Output.Annotations = anns
	return run
}

// planCheck is the fleetwave/plan check run of a preview:
//   - failure when the release policy at head is invalid (an annotation at each error's line) or the plan breaks
//     it (an annotation on the manifest of each app concerned, at the line that matters for the rule);
//   - failure when the plan is incomplete: apps of the change failed to render, so it cannot place them;
//   - neutral when the change has nothing to roll out;
//   - success otherwise.
//
// Apps that failed to render are not planned; the diff check fails for them.
func (a *App) planCheck(ctx context.Context, ch Change, out *outcome) github.CheckRun {
	run := github.CheckRun{Name: CheckPlan, ExternalID: externalID(ch.Number, "")}
	files := a.headFiles(ctx, out, ch)
	if pe := out.policyErr; pe != nil {
		var sb strings.Builder
		fmt.Fprintf(&sb, "The release policy `%s` at `%s` is invalid, so no plan was made:\n\n", pe.File, text.Short(ch.Head, 7))
		var anns []github.Annotation
		for _, d := range pe.Diagnostics {
			fmt.Fprintf(&sb, "- %s\n", d.String())
			anns = append(anns, diagnosticAnnotation(pe.File, d))
		}
		sb.WriteString("\nRun `fleetwave validate` locally to check it.\n")
		run.Conclusion = github.ConclusionFailure
		run.Output = &github.CheckOutput{Title: fmt.Sprintf("The release policy %s is invalid", pe.File), Summary: sb.String(), Annotations: anns}
		return run
	}
	pl, ok := out.rep.Plan.(*plan.Plan)
	if !ok || pl == nil {
		run.Conclusion = github.ConclusionNeutral
		run.Output = &github.CheckOutput{Title: "No plan", Summary: "No wave plan was made for this change."}
		return run
	}
	run.ExternalID = externalID(ch.Number, pl.Digest())
	// The policy file at head, for its wave lines, and its warnings when it parses (files.open never fails but
	// for absence, so an error is the policy's own: policy is then nil and policyFile still names the file).
	policy, policyFile, _ := plan.Load(files.open)
	policyData := files.read(policyFile)
	var md strings.Builder
	if err := pl.WriteMarkdown(&md); err != nil {
		md.WriteString("(the plan could not be written: " + postable(err) + ")")
	}
	var sb strings.Builder
	var anns []github.Annotation
	switch {
	case !pl.OK():
		run.Conclusion = github.ConclusionFailure
		fmt.Fprintf(&sb, "The plan breaks the release policy (%s):\n\n", pl.Policy)
		for _, v := range pl.Violations {
			fmt.Fprintf(&sb, "- %s\n", violationLine(v))
			anns = append(anns, a.violationAnnotations(out.rep, files, v, policyFile, policyData)...)
		}
		run.Output = &github.CheckOutput{Title: fmt.Sprintf("%d policy violation(s)", len(pl.Violations))}
	case !pl.Complete():
		// Never an all-clear: apps of the change are missing from the plan.
		run.Conclusion = github.ConclusionFailure
		fmt.Fprintf(&sb, "The plan is incomplete: %d app(s) of the change could not be rendered, so the plan does not place them:\n\n", len(pl.Unplaced))
		for _, u := range pl.Unplaced {
			fmt.Fprintf(&sb, "- `%s/%s` → %s\n", u.Namespace, u.App, u.Cluster)
		}
		for _, u := range pl.Unreadable {
			fmt.Fprintf(&sb, "- repository problem, its apps unknown: %s\n", u)
		}
		run.Output = &github.CheckOutput{Title: fmt.Sprintf("Incomplete plan: %d app(s) not placed", len(pl.Unplaced))}
		if len(pl.Unreadable) > 0 {
			run.Output.Title += fmt.Sprintf(", %d repository problem(s)", len(pl.Unreadable))
		}
	case pl.AppCount() == 0:
		run.Conclusion = github.ConclusionNeutral
		fmt.Fprintf(&sb, "The change alters no app's manifests: there is nothing to roll out (policy %s).\n", pl.Policy)
		run.Output = &github.CheckOutput{Title: "Nothing to roll out"}
	default:
		run.Conclusion = github.ConclusionSuccess
		fmt.Fprintf(&sb, "The plan follows the release policy (%s): %d apps in %d waves.\n", pl.Policy, pl.AppCount(), len(pl.Waves))
		run.Output = &github.CheckOutput{Title: fmt.Sprintf("%d apps in %d waves", pl.AppCount(), len(pl.Waves))}
	}
	if out.rep.Summary.Failed > 0 {
		fmt.Fprintf(&sb, "\n%d app(s) failed to render and are not in the plan: see %s.\n", out.rep.Summary.Failed, CheckDiff)
	}
	if policy != nil && policyFile != "" {
		for _, w := range policy.Warnings {
			anns = append(anns, diagnosticAnnotation(policyFile, w))
		}
	}
	run.Output.Summary = sb.String()
	run.Output.Text = md.String()
	run.Output.Annotations = anns
	return run
}

// errorChecks are both check runs when no preview could be made: failure (the change is unverified, so a
// required check must not pass), saying why and how to retry.
func (a *App) errorChecks(ch Change, err error) (github.CheckRun, github.CheckRun) {
	out := func() *github.CheckOutput {
		return &github.CheckOutput{
			Title:   "fleetwave could not preview this change",
			Summary: fmt.Sprintf("Previewing `%s..%s` failed: %s\n\nRe-run this check, or comment `/plan`, to try again.", text.Short(ch.Base, 7), text.Short(ch.Head, 7), postable(err)),
		}
	}
	return github.CheckRun{Name: CheckDiff, Conclusion: github.ConclusionFailure, ExternalID: externalID(ch.Number, ""), Output: out()},
		github.CheckRun{Name: CheckPlan, Conclusion: github.ConclusionFailure, ExternalID: externalID(ch.Number, ""), Output: out()}
}

// violationAnnotations point a policy violation at the app's manifest — at "automated:" for the
// automated-sync rule, at its labels for an uncovered app, else at its name — and, for limits no batch can
// satisfy, at the wave in the policy file.
func (a *App) violationAnnotations(rep *report.Report, files *headFiles, v plan.Violation, policyFile string, policyData []byte) []github.Annotation {
	title := fmt.Sprintf("%s: %s", v.Rule, v.App)
	var out []github.Annotation
	if line := policyWaveLine(policyData, v.Wave); line > 0 && v.Rule == plan.RuleUnsatisfiableLimits {
		out = append(out, github.Annotation{Path: policyFile, StartLine: line, Title: title, Message: v.Message})
	}
	ap, ok := findApp(rep, v.Namespace, v.App)
	if !ok {
		return out
	}
	file := declaredIn(rep, ap)
	if file == "" {
		return out
	}
	var keys []string
	switch v.Rule {
	case plan.RuleAutomatedSync:
		keys = []string{"automated"}
	case plan.RuleUncovered:
		keys = []string{"labels"}
	}
	return append(out, github.Annotation{Path: file, StartLine: manifestLine(files.read(file), ap.Name, keys...), Title: title, Message: v.Message})
}

func violationLine(v plan.Violation) string {
	where := v.Rule
	if v.Wave != "" {
		where += ", wave " + v.Wave
	}
	app := v.App
	if app == "" {
		app = "(policy)"
	}
	return fmt.Sprintf("`%s` (%s): %s", app, where, v.Message)
}

func diagnosticAnnotation(file string, d plan.Diagnostic) github.Annotation {
	if d.File != "" {
		file = d.File
	}
	msg := d.Message
	if d.Hint != "" {
		msg += " (hint: " + d.Hint + ")"
	}
	level, title := "failure", "invalid release policy"
	if d.Warning {
		level, title = "warning", "release policy warning"
	}
	return github.Annotation{Path: file, StartLine: max(d.Line, 1), StartCol: d.Column, Level: level, Title: title, Message: msg}
}

// findApp finds an app of the report by name (and namespace when given).
func findApp(rep *report.Report, namespace, name string) (report.App, bool) {
	for _, ap := range rep.Apps {
		if ap.Name == name && (namespace == "" || ap.Namespace == namespace) {
			return ap, true
		}
	}
	return report.App{}, false
}

// declaredIn is the repository file an app is declared in: its own manifest, its ApplicationSet's, or (for a
// child of an app-of-apps without a file of its own) its parent's.
func declaredIn(rep *report.Report, ap report.App) string {
	seen := map[string]bool{}
	for ap.File == "" && ap.Parent != "" && !seen[ap.Parent] {
		seen[ap.Parent] = true
		ns, name, ok := strings.Cut(ap.Parent, "/")
		if !ok {
			ns, name = "", ap.Parent
		}
		parent, found := findApp(rep, ns, name)
		if !found {
			break
		}
		ap = parent
	}
	return ap.File
}

func inFile(file string) string {
	if file == "" {
		return ""
	}
	return " (" + file + ")"
}

// sortedKeys returns the keys of m in order.
func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
