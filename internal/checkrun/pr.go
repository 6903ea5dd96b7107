package checkrun

import (
	"fmt"
	"strings"

	"github.com/fleetwave/fleetwave/internal/config"
	"github.com/fleetwave/fleetwave/internal/edge/github"
	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/report"
)

// Files reads the files of the head commit that annotations point into: nil when a file cannot be read ("" is
// no file).
type Files interface {
	Read(path string) []byte
}

// read is files.Read, nil without files.
func read(files Files, path string) []byte {
	if files == nil || path == "" {
		return nil
	}
	return files.Read(path)
}

// Diff is a pull request's fleetwave/diff check run (name), from its preview:
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
func Diff(name, externalID string, rep *report.Report, files Files) github.CheckRun {
	run := github.CheckRun{Name: name, ExternalID: externalID}
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
				Path: file, StartLine: manifestLine(read(files, file), ap.Name, "source", "sources"),
				Title: fmt.Sprintf("%s failed to render", ap.Key()), Message: ap.Error,
			})
		}
	}
	if len(rep.Problems) > 0 {
		sb.WriteString("\n### Repository problems\n\n")
		for _, p := range rep.Problems {
			fmt.Fprintf(&sb, "- %s\n", p)
			if file, _, ok := strings.Cut(p, ": "); ok && !strings.ContainsAny(file, " \t") && read(files, file) != nil {
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
				if u.File != "" && read(files, u.File) != nil {
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

// PlanInput is what a pull request's fleetwave/plan check run is made of.
type PlanInput struct {
	Name, ExternalID string
	// DiffCheck is the diff check's name, which the summary points at for the apps that failed to render.
	DiffCheck string
	// Head is the head commit.
	Head string
	// Report is the preview; Plan its wave plan (nil: none was made).
	Report *report.Report
	Plan   *plan.Plan
	// PolicyErr is set when the release policy at head is invalid (then no plan was made).
	PolicyErr *plan.PolicyError
	// Policy is the release policy at head (nil when it does not parse), read from PolicyFile, whose content
	// is PolicyData (for the lines of its waves).
	Policy     *plan.Policy
	PolicyFile string
	PolicyData []byte
	// Files reads the head's files for annotations.
	Files Files
}

// Plan is a pull request's fleetwave/plan check run:
//   - failure when the release policy at head is invalid (an annotation at each error's line) or the plan breaks
//     it (an annotation on the manifest of each app concerned, at the line that matters for the rule);
//   - failure when the plan is incomplete: apps of the change failed to render, so it cannot place them;
//   - neutral when the change has nothing to roll out;
//   - success otherwise.
//
// Apps that failed to render are not planned; the diff check fails for them.
func Plan(in PlanInput) github.CheckRun {
	run := github.CheckRun{Name: in.Name, ExternalID: in.ExternalID}
	if pe := in.PolicyErr; pe != nil {
		var sb strings.Builder
		fmt.Fprintf(&sb, "The release policy `%s` at `%s` is invalid, so no plan was made:\n\n", pe.File, text.Short(in.Head, 7))
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
	pl := in.Plan
	if pl == nil {
		run.Conclusion = github.ConclusionNeutral
		run.Output = &github.CheckOutput{Title: "No plan", Summary: "No wave plan was made for this change."}
		return run
	}
	var md strings.Builder
	if err := pl.WriteMarkdown(&md); err != nil {
		md.WriteString("(the plan could not be written: " + Postable(err) + ")")
	}
	var sb strings.Builder
	var anns []github.Annotation
	switch {
	case !pl.OK():
		run.Conclusion = github.ConclusionFailure
		fmt.Fprintf(&sb, "The plan breaks the release policy (%s):\n\n", pl.Policy)
		for _, v := range pl.Violations {
			fmt.Fprintf(&sb, "- %s\n", violationLine(v))
			anns = append(anns, violationAnnotations(in.Report, in.Files, v, in.PolicyFile, in.PolicyData)...)
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
	if in.Report.Summary.Failed > 0 {
		fmt.Fprintf(&sb, "\n%d app(s) failed to render and are not in the plan: see %s.\n", in.Report.Summary.Failed, in.DiffCheck)
	}
	if in.Policy != nil && in.PolicyFile != "" {
		for _, w := range in.Policy.Warnings {
			anns = append(anns, diagnosticAnnotation(in.PolicyFile, w))
		}
	}
	run.Output.Summary = sb.String()
	run.Output.Text = md.String()
	run.Output.Annotations = anns
	return run
}

// PreviewFailed is the output of both check runs when no preview of base..head could be made: why (err, one
// line, credentials redacted) and how to retry.
func PreviewFailed(base, head string, err error) *github.CheckOutput {
	return &github.CheckOutput{
		Title:   "fleetwave could not preview this change",
		Summary: fmt.Sprintf("Previewing `%s..%s` failed: %s\n\nRe-run this check, or comment `/plan`, to try again.", text.Short(base, 7), text.Short(head, 7), Postable(err)),
	}
}

// Postable is an error as a pull request may show it: its first line, credentials redacted.
func Postable(err error) string { return text.FirstLine(config.Redact(err.Error())) }

// violationAnnotations point a policy violation at the app's manifest — at "automated:" for the
// automated-sync rule, at its labels for an uncovered app, else at its name — and, for limits no batch can
// satisfy, at the wave in the policy file.
func violationAnnotations(rep *report.Report, files Files, v plan.Violation, policyFile string, policyData []byte) []github.Annotation {
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
	return append(out, github.Annotation{Path: file, StartLine: manifestLine(read(files, file), ap.Name, keys...), Title: title, Message: v.Message})
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
