package command

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/google/shlex"

	"github.com/fleetwave/fleetwave/internal/plan"
)

// Name is a slash command, without its slash.
type Name string

// The commands.
const (
	Pause    Name = "pause"
	Resume   Name = "resume"
	Abort    Name = "abort"
	Approve  Name = "approve"
	Rollback Name = "rollback"
	Plan     Name = "plan"
	Help     Name = "help"
	// Acknowledge lets the pull request's current head pass the plan check although its change carries risk
	// classes the policy asks a person to acknowledge (acknowledge: in .fleetwave.yaml).
	Acknowledge Name = "acknowledge"
)

// TargetAll is the Target of "/rollback all" (and of a bare /rollback).
const TargetAll = "all"

// KeepAutomatedOff is /abort's one word: the apps' Argo CD automated sync stays switched off (by default the
// aborted rollout restores it).
const KeepAutomatedOff = "keep-automated-off"

// spec describes one command: its arguments and its help line.
type spec struct {
	name    Name
	args    string // usage of the arguments, "" when none
	maxArgs int
	help    string
}

var specs = []spec{
	{Pause, "", 0, "finish the syncs in flight and start no new one"},
	{Resume, "", 0, "continue a paused rollout; a failed wave retries its failed apps"},
	{Abort, "[" + KeepAutomatedOff + "]", 1, "end the rollout: no new syncs, nothing rolled back; automated sync restored unless " + KeepAutomatedOff},
	{Approve, "[wave]", 1, "pass the approval gate of a wave (default: the wave awaiting approval)"},
	{Rollback, "[wave|all]", 1, "sync the apps the rollout touched back to their previous revision, from that wave on (default: all)"},
	{Plan, "", 0, "recompute the wave plan"},
	{Acknowledge, "", 0, "acknowledge the risk classes the policy asks a person to acknowledge, for the pull request's current head"},
	{Help, "", 0, "show this help"},
}

func lookup(n Name) (spec, bool) {
	for _, s := range specs {
		if s.name == n {
			return s, true
		}
	}
	return spec{}, false
}

// Names lists the commands in help order.
func Names() []Name {
	out := make([]Name, len(specs))
	for i, s := range specs {
		out[i] = s.name
	}
	return out
}

// Comment is an issue or PR comment as GitHub delivers it.
type Comment struct {
	Body   string
	Author string // the commenter's login
	// AuthorIsBot: the commenter is a bot account (sender.type "Bot"); bots never issue commands.
	AuthorIsBot bool
}

// Result is what to do about a comment. Exactly one of Ignore, Response-only, or Command is meaningful:
//   - Ignore: not a command; say nothing, react with nothing;
//   - Command empty and Response set: reply with Response (unknown command, usage error);
//   - Command set: run it (for Help, Response is the text to post).
type Result struct {
	Command Name
	// Args are the command's arguments, shell-split.
	Args []string
	// Target is the wave argument of approve ("" = the wave awaiting approval) and of rollback (TargetAll when
	// absent or "all").
	Target   string
	Response string
	Ignore   bool
}

// Parser reads slash commands. The zero value works; set BotLogin so the bot ignores its own comments, and
// Policy so the help says who may run each command.
type Parser struct {
	BotLogin string // e.g. "fleetwave[bot]"
	Policy   *plan.Policy
}

// commandToken is what makes a line a command: a slash, then a word. "/etc/hosts" or "//" are not.
var commandToken = regexp.MustCompile(`^/([A-Za-z][A-Za-z0-9_-]*)(\s|$)`)

// Parse reads a comment. It never fails: problems become a Response to post.
func (p Parser) Parse(c Comment) Result {
	if c.AuthorIsBot || (p.BotLogin != "" && strings.EqualFold(c.Author, p.BotLogin)) {
		return Result{Ignore: true}
	}
	line := firstLine(c.Body)
	m := commandToken.FindStringSubmatch(line)
	if m == nil {
		return Result{Ignore: true}
	}
	name := Name(strings.ToLower(m[1]))
	sp, ok := lookup(name)
	if !ok {
		return Result{Response: fmt.Sprintf("Unknown command `/%s`.\n\n%s", m[1], p.Help())}
	}
	args, err := shlex.Split(strings.TrimSpace(line[len(m[1])+1:]))
	if err != nil {
		return Result{Response: fmt.Sprintf("Could not read the arguments of `/%s`: %v.\n\nUsage: %s", name, err, usage(sp))}
	}
	if len(args) > sp.maxArgs {
		what := "no argument"
		if sp.maxArgs == 1 {
			what = "at most one argument"
		}
		return Result{Response: fmt.Sprintf("`/%s` takes %s, got %s.\n\nUsage: %s", name, what, quoteArgs(args), usage(sp))}
	}
	r := Result{Command: name, Args: args}
	switch name {
	case Help:
		r.Response = p.Help()
	case Approve:
		if len(args) == 1 {
			r.Target = args[0]
		}
	case Abort:
		if len(args) == 1 && !strings.EqualFold(args[0], KeepAutomatedOff) {
			return Result{Response: fmt.Sprintf("`/abort` takes no argument but `%s`, got %s.\n\nUsage: %s", KeepAutomatedOff, quoteArgs(args), usage(sp))}
		}
	case Rollback:
		r.Target = TargetAll
		if len(args) == 1 && !strings.EqualFold(args[0], TargetAll) {
			r.Target = args[0]
		}
	}
	return r
}

// firstLine is the first non-blank line of a comment, trimmed (GitHub bodies use \r\n).
func firstLine(body string) string {
	for _, l := range strings.Split(body, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

func usage(s spec) string {
	u := "`/" + string(s.name)
	if s.args != "" {
		u += " " + s.args
	}
	return u + "`"
}

func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	return strings.Join(q, " ")
}

// Help is the text answered to /help and to unknown commands: every command, what it does and, when the parser
// knows the policy, who may run it.
func (p Parser) Help() string {
	var b strings.Builder
	b.WriteString("**fleetwave commands** (comment on the pull request, also after merge; only the first line counts):\n\n")
	b.WriteString("| Command | What it does | Who may |\n|---|---|---|\n")
	for _, s := range specs {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", usage(s), s.help, p.whoMay(s.name))
	}
	return b.String()
}

func (p Parser) whoMay(n Name) string {
	if n == Help {
		return "anyone"
	}
	rules := plan.DefaultCommandRules()
	if p.Policy != nil {
		for k, v := range p.Policy.Commands {
			rules[k] = v
		}
	}
	r, ok := rules[string(n)]
	if !ok {
		return "anyone"
	}
	return describe(r)
}

// describe renders a command rule: "write permission or membership of org/sre".
func describe(r plan.CommandRule) string {
	var parts []string
	if r.Permission != "" {
		parts = append(parts, string(r.Permission)+" permission")
	}
	if len(r.Teams) > 0 {
		parts = append(parts, "membership of "+strings.Join(r.Teams, ", "))
	}
	if len(parts) == 0 {
		return "nobody"
	}
	return strings.Join(parts, " or ")
}

// FromAction maps a check-run button (check_run requested_action identifier) to the command it stands for; the
// target (wave) comes from the check-run it was clicked on. ok is false for an unknown identifier.
func FromAction(identifier, target string) (Result, bool) {
	n := Name(strings.ToLower(identifier))
	switch n {
	case Pause, Resume, Abort:
		return Result{Command: n}, true
	case Approve:
		return Result{Command: n, Target: target}, true
	case Rollback:
		if target == "" {
			target = TargetAll
		}
		return Result{Command: n, Target: target}, true
	}
	return Result{}, false
}
