package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"

	"github.com/fleetwave/fleetwave/internal/command"
	"github.com/fleetwave/fleetwave/internal/diff/risk"
	"github.com/fleetwave/fleetwave/internal/edge/github"
	"github.com/fleetwave/fleetwave/internal/kit/text"
)

// A change carrying a risk class the release policy lists under acknowledge fails fleetwave/plan until a person
// the policy's acknowledge rule admits comments /acknowledge, for the pull request's head: a new head carrying
// such a class needs a new acknowledgement.
//
// The acknowledgement is recorded where the pull request's preview is: in its sticky comment, on the line
// after the classes (a line and a hidden marker only fleetwave writes, naming the head and who acknowledged),
// and in the comment kept per change (Previews), so that it survives a restart and comes back with the comment
// when the head returns to the commit. The plan check is then published again from the preview's plan check
// kept in memory (no render); after a restart, which forgets it, the head is previewed again and the preview
// finds the acknowledgement in the comment.

// ackGate is what a head's plan check needs acknowledged.
type ackGate struct {
	classes []risk.Class // present in the change and listed under acknowledge, most serious first
	who     string       // who may acknowledge ("write permission")
}

// ackNeeded is the gate of a preview: the classes of its apps the policies list under acknowledge — the head's
// (the one the plan was made with) and the base's, so that a pull request cannot drop the requirement by editing
// the policy it is checked against — and who may acknowledge under the base's rule, which authorises the
// command. An unreadable base policy leaves the head's alone (its error is logged).
func (a *App) ackNeeded(ctx context.Context, ch Change, out *outcome) ackGate {
	if out.err != nil || out.rep == nil || out.policy == nil {
		return ackGate{}
	}
	var classes []risk.Class
	for _, c := range out.rep.ClassCounts() {
		classes = append(classes, c.Class)
	}
	rules := out.policy
	need := out.policy.NeedAcknowledgement(classes)
	if base, err := a.readPolicy(ctx, out.dir, ch.Base); err != nil {
		logFrom(ctx).Warn("reading the base's release policy for the classes to acknowledge", slog.Any("error", err))
	} else if base != nil {
		rules = base
		for _, c := range base.NeedAcknowledgement(classes) {
			if !containsClass(need, c) {
				need = append(need, c)
			}
		}
	}
	if len(need) == 0 {
		return ackGate{}
	}
	sortClasses(need)
	return ackGate{classes: need, who: rules.Who(string(command.Acknowledge))}
}

func containsClass(cs []risk.Class, c risk.Class) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}

func sortClasses(cs []risk.Class) {
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && cs[j].Rank() < cs[j-1].Rank(); j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
}

func classNames(cs []risk.Class) string {
	q := make([]string, len(cs))
	for i, c := range cs {
		q[i] = "`" + string(c) + "` (" + c.Title() + ")"
	}
	return strings.Join(q, ", ")
}

func classList(cs []risk.Class) string {
	q := make([]string, len(cs))
	for i, c := range cs {
		q[i] = string(c)
	}
	return strings.Join(q, ",")
}

// gateAcknowledge is the plan check run as the gate makes it: without an acknowledgement (by == "") a passing
// check fails, saying which classes need one and who may give it; with one, it says who gave it. run is not
// changed (its Output is copied).
func gateAcknowledge(run github.CheckRun, g ackGate, head, by string) github.CheckRun {
	if len(g.classes) == 0 || run.Output == nil {
		return run
	}
	o := *run.Output
	run.Output = &o
	if by != "" {
		o.Summary = fmt.Sprintf("**Acknowledged** by @%s for `%s`: %s.\n\n", by, text.Short(head, 7), classNames(g.classes)) + o.Summary
		return run
	}
	o.Summary = fmt.Sprintf("**Needs acknowledgement**: this change carries %s, which the release policy asks a person to acknowledge "+
		"(`acknowledge:` in .fleetwave.yaml). Comment `/acknowledge` on the pull request (who may: %s). "+
		"The acknowledgement holds for this head (`%s`) only: a new commit needs a new one.\n\n", classNames(g.classes), g.who, text.Short(head, 7)) + o.Summary
	if run.Conclusion == github.ConclusionSuccess || run.Conclusion == github.ConclusionNeutral || run.Conclusion == "" {
		run.Conclusion = github.ConclusionFailure
		o.Title = "Needs acknowledgement: " + strings.ReplaceAll(classList(g.classes), ",", ", ")
	}
	return run
}

// The comment's acknowledgement line follows the classes line of its first part; its marker names the head and,
// once acknowledged, who did. Only a line in that place counts: the rest of the comment quotes the change.
var (
	classesLine = regexp.MustCompile(`(?m)^\*\*Classes\*\*: .*$`)
	lineClass   = regexp.MustCompile("`([a-z-]+)` \\(")
	ackMarker   = regexp.MustCompile(`<!-- fleetwave:ack ([0-9a-f]{40}) (needed|by ([A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\[bot\])?)) -->$`)
)

// ackLine is the comment's line for the gate: what is needed and who may give it, or who gave it.
func ackLine(g ackGate, head, by string) string {
	if by != "" {
		return fmt.Sprintf("✅ **Acknowledged** by @%s for `%s`: %s. <!-- fleetwave:ack %s by %s -->", by, text.Short(head, 7), classNames(g.classes), head, by)
	}
	return fmt.Sprintf("⚠️ **Needs acknowledgement**: %s — comment `/acknowledge` (who may: %s); `fleetwave/plan` fails until then, and a new commit needs a new one. <!-- fleetwave:ack %s needed -->",
		classNames(g.classes), g.who, head)
}

// ackLineAt finds the acknowledgement line of a comment's first part: its position (the line after the classes
// line and a blank line) and its text ("" when there is none).
func ackLineAt(part string) (start, end int, line string, ok bool) {
	loc := classesLine.FindStringIndex(part)
	if loc == nil {
		return 0, 0, "", false
	}
	start = loc[1]
	if !strings.HasPrefix(part[start:], "\n\n") {
		return start, start, "", true
	}
	rest := part[start+2:]
	nl := strings.IndexByte(rest, '\n')
	if nl < 0 {
		nl = len(rest)
	}
	if ackMarker.MatchString(rest[:nl]) {
		return start, start + 2 + nl, rest[:nl], true
	}
	return start, start, "", true
}

// withAckLine sets the acknowledgement line of a comment (after the classes line of its first part); parts is
// not changed. A comment without a classes line is returned as it is.
func withAckLine(parts []string, line string) []string {
	if len(parts) == 0 {
		return parts
	}
	start, end, _, ok := ackLineAt(parts[0])
	if !ok {
		return parts
	}
	out := append([]string(nil), parts...)
	out[0] = parts[0][:start] + "\n\n" + line + parts[0][end:]
	return out
}

// ackState reads a comment's acknowledgement of head: needed (the line asks for one) and by (who gave it).
func ackState(parts []string, head string) (needed bool, by string) {
	if len(parts) == 0 {
		return false, ""
	}
	_, _, line, _ := ackLineAt(parts[0])
	m := ackMarker.FindStringSubmatch(line)
	if m == nil || m[1] != head {
		return false, ""
	}
	if m[2] == "needed" {
		return true, ""
	}
	return true, m[3]
}

// acknowledgedBy is who acknowledged head, as the comment the pull request shows records it ("" when nobody, or
// when it shows another head). A failure is logged: the check then asks for an acknowledgement again.
func (a *App) acknowledgedBy(ctx context.Context, ch Change) string {
	shown, err := a.previews.ShownComment(ctx, ch.Repo, ch.Number)
	if err != nil || shown.Head != ch.Head {
		if err != nil {
			logFrom(ctx).Warn("reading the acknowledgement of the head", slog.Any("error", err))
		}
		return ""
	}
	parts, err := a.previews.Comment(ctx, shown)
	if err != nil {
		logFrom(ctx).Warn("reading the acknowledgement of the head", slog.Any("error", err))
		return ""
	}
	_, by := ackState(parts, ch.Head)
	return by
}

// pendingPlanCheck is a head's plan check as its preview made it, before the acknowledgement gate: what
// /acknowledge publishes again.
type pendingPlanCheck struct {
	run  github.CheckRun
	gate ackGate
}

// ackChecks keeps the pending plan checks of the latest heads in memory, the oldest forgotten beyond max.
type ackChecks struct {
	mu    sync.Mutex
	max   int
	runs  map[string]pendingPlanCheck
	order []string
}

func newAckChecks(max int) *ackChecks {
	return &ackChecks{max: max, runs: map[string]pendingPlanCheck{}}
}

func ackKey(repo string, pr int, head string) string { return fmt.Sprintf("%s#%d@%s", repo, pr, head) }

func (c *ackChecks) put(repo string, pr int, head string, p pendingPlanCheck) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := ackKey(repo, pr, head)
	if _, ok := c.runs[k]; !ok {
		c.order = append(c.order, k)
		if len(c.order) > c.max {
			delete(c.runs, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.runs[k] = p
}

func (c *ackChecks) get(repo string, pr int, head string) (pendingPlanCheck, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.runs[ackKey(repo, pr, head)]
	return p, ok
}

// applyAcknowledge gates a preview's plan check and comment on the acknowledgement of its head (publish calls it
// under the pull request's lock, before posting): it keeps the plan check as the preview made it, for
// /acknowledge, and returns the check and comment to post.
func (a *App) applyAcknowledge(ctx context.Context, ch Change, g ackGate, run github.CheckRun, parts []string) (github.CheckRun, []string) {
	if len(g.classes) == 0 {
		return run, parts
	}
	by := a.acknowledgedBy(ctx, ch)
	a.acks.put(ch.Repo, ch.Number, ch.Head, pendingPlanCheck{run: run, gate: g})
	return gateAcknowledge(run, g, ch.Head, by), withAckLine(parts, ackLine(g, ch.Head, by))
}

// acknowledge runs an authorised /acknowledge on pull request pr: the comment the pull request shows must be its
// current head's and ask for an acknowledgement; it then says who acknowledged, and the plan check is published
// again from the head's preview — or, when this process does not have it (a restart), the head is previewed again
// and finds the acknowledgement in the comment.
func (a *App) acknowledge(ctx context.Context, client GitHub, pr github.PullRequest, repo string, login string, recompute func() error, reply func(string) error) error {
	head := text.Short(pr.HeadSHA, 7)
	if pr.State == "closed" {
		return reply(fmt.Sprintf("@%s: this pull request is closed; there is nothing to acknowledge.", login))
	}
	st := a.state(prKey{repo: repo, number: pr.Number})
	st.mu.Lock()
	answer, again, err := a.recordAcknowledgement(ctx, client, pr, repo, login)
	st.mu.Unlock()
	if err != nil {
		return errors.Join(err, reply(fmt.Sprintf("@%s: `/acknowledge` failed; see fleetwave's logs. Try again later.", login)))
	}
	if answer != "" {
		return reply(answer)
	}
	if again {
		if err := reply(fmt.Sprintf("@%s acknowledged the change at `%s`; fleetwave/plan is recomputed with it.", login, head)); err != nil {
			logFrom(ctx).Warn("replying to /acknowledge", slog.Any("error", err))
		}
		return recompute()
	}
	return reply(fmt.Sprintf("@%s acknowledged the change at `%s`; fleetwave/plan is published again.", login, head))
}

// recordAcknowledgement records login's acknowledgement of pr's head in its comment and publishes the plan check
// again. answer is the reply when nothing was acknowledged; again asks for a new preview of the head (this
// process does not have its plan check).
func (a *App) recordAcknowledgement(ctx context.Context, client GitHub, pr github.PullRequest, repo, login string) (answer string, again bool, err error) {
	head := pr.HeadSHA
	shown, err := a.previews.ShownComment(ctx, repo, pr.Number)
	if err != nil {
		return "", false, err
	}
	var parts []string
	if shown.Head == head {
		if parts, err = a.previews.Comment(ctx, shown); err != nil {
			return "", false, err
		}
	}
	if parts == nil {
		return fmt.Sprintf("@%s: `/acknowledge` was not run: the preview of `%s`, the pull request's head, is not done yet. Comment it again when fleetwave/plan has completed.",
			login, text.Short(head, 7)), false, nil
	}
	needed, by := ackState(parts, head)
	switch {
	case by != "":
		return fmt.Sprintf("@%s: `%s` was acknowledged already, by @%s.", login, text.Short(head, 7), by), false, nil
	case !needed:
		return fmt.Sprintf("@%s: nothing at `%s` needs acknowledging: the change carries none of the classes the release policy lists under `acknowledge`.",
			login, text.Short(head, 7)), false, nil
	}
	p, known := a.acks.get(repo, pr.Number, head)
	g := p.gate
	if !known {
		g = gateOfLine(parts[0])
	}
	parts = withAckLine(parts, ackLine(g, head, login))
	if _, err := client.UpsertComment(ctx, repo, pr.Number, parts); err != nil {
		return "", false, err
	}
	if err := a.previews.SaveComment(ctx, shown, parts); err != nil {
		return "", false, err
	}
	if !known {
		return "", true, nil
	}
	run := gateAcknowledge(p.run, p.gate, head, login)
	run.Status, run.CompletedAt = github.StatusCompleted, a.now()
	if run.Output != nil {
		o := *run.Output
		o.Annotations = nil // GitHub keeps those the check has; sent again, they would be added twice
		run.Output = &o
	}
	id := a.checkRunID(ctx, repo, head, CheckPlan)
	if id == 0 {
		return "", true, nil
	}
	if err := client.UpdateCheckRun(ctx, repo, id, run); err != nil {
		return "", false, err
	}
	logFrom(ctx).Info("acknowledged", slog.String("head", text.Short(head, 7)), slog.String("by", login), slog.String("classes", classList(p.gate.classes)))
	return "", false, nil
}

// gateOfLine is the gate a comment's line asks for, for a process that does not have the head's plan check: the
// classes and who may, as the line says them.
func gateOfLine(part string) ackGate {
	_, _, line, _ := ackLineAt(part)
	var g ackGate
	for _, m := range lineClass.FindAllStringSubmatch(line, -1) {
		if risk.Known(m[1]) {
			g.classes = append(g.classes, risk.Class(m[1]))
		}
	}
	if _, rest, ok := strings.Cut(line, "(who may: "); ok {
		g.who, _, _ = strings.Cut(rest, ")")
	}
	return g
}
