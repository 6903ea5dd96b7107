package command

import (
	"reflect"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/plan"
)

func TestParse(t *testing.T) {
	p := Parser{BotLogin: "fleetwave[bot]"}
	tests := []struct {
		name    string
		comment Comment
		want    Result
		// respContains is checked instead of Response equality when set.
		respContains []string
	}{
		{name: "pause", comment: Comment{Body: "/pause", Author: "alice"}, want: Result{Command: Pause, Args: []string{}}},
		{name: "case-insensitive, CRLF, reason below", comment: Comment{Body: "/PAUSE\r\nalerts firing in eu-1\r\n"},
			want: Result{Command: Pause, Args: []string{}}},
		{name: "leading blank lines", comment: Comment{Body: "\n\n  /resume  \n"}, want: Result{Command: Resume, Args: []string{}}},
		{name: "abort", comment: Comment{Body: "/abort"}, want: Result{Command: Abort, Args: []string{}}},
		{name: "abort keeping automated sync off", comment: Comment{Body: "/abort keep-automated-off"},
			want: Result{Command: Abort, Args: []string{"keep-automated-off"}}},
		{name: "abort with another word", comment: Comment{Body: "/abort now"},
			respContains: []string{"`/abort` takes no argument but `keep-automated-off`", `"now"`}},
		{name: "approve without wave", comment: Comment{Body: "/approve"}, want: Result{Command: Approve, Args: []string{}}},
		{name: "approve a wave", comment: Comment{Body: "/approve production"},
			want: Result{Command: Approve, Args: []string{"production"}, Target: "production"}},
		{name: "approve a quoted wave", comment: Comment{Body: `/approve "eu west"`},
			want: Result{Command: Approve, Args: []string{"eu west"}, Target: "eu west"}},
		{name: "rollback defaults to all", comment: Comment{Body: "/rollback"},
			want: Result{Command: Rollback, Args: []string{}, Target: TargetAll}},
		{name: "rollback all", comment: Comment{Body: "/rollback ALL"},
			want: Result{Command: Rollback, Args: []string{"ALL"}, Target: TargetAll}},
		{name: "rollback a wave", comment: Comment{Body: "/rollback canary"},
			want: Result{Command: Rollback, Args: []string{"canary"}, Target: "canary"}},
		{name: "plan", comment: Comment{Body: "/plan"}, want: Result{Command: Plan, Args: []string{}}},
		{name: "acknowledge", comment: Comment{Body: "/Acknowledge\nthe CRD change is backwards compatible"}, want: Result{Command: Acknowledge, Args: []string{}}},
		{name: "acknowledge takes no argument", comment: Comment{Body: "/acknowledge crd"},
			respContains: []string{"`/acknowledge` takes no argument", "Usage: `/acknowledge`"}},
		{name: "help", comment: Comment{Body: "/help"}, respContains: []string{"| `/rollback [wave|all]` |", "| `/pause` |"},
			want: Result{Command: Help, Args: []string{}}},
		{name: "unknown command gets help", comment: Comment{Body: "/deploy now"},
			respContains: []string{"Unknown command `/deploy`", "| `/approve [wave]` |"}},
		{name: "too many arguments", comment: Comment{Body: "/pause everything now"},
			respContains: []string{"`/pause` takes no argument", "Usage: `/pause`"}},
		{name: "approve takes one wave", comment: Comment{Body: "/approve a b"},
			respContains: []string{"`/approve` takes at most one argument", `"a" "b"`}},
		{name: "unterminated quote", comment: Comment{Body: `/approve "eu west`},
			respContains: []string{"Could not read the arguments of `/approve`"}},
		{name: "not a command", comment: Comment{Body: "LGTM, ship it"}, want: Result{Ignore: true}},
		{name: "command on a later line does not count", comment: Comment{Body: "thanks!\n/rollback all"}, want: Result{Ignore: true}},
		{name: "quoted command does not count", comment: Comment{Body: "> /pause\nwhy?"}, want: Result{Ignore: true}},
		{name: "a path is not a command", comment: Comment{Body: "/etc/hosts is wrong"}, want: Result{Ignore: true}},
		{name: "double slash", comment: Comment{Body: "// comment"}, want: Result{Ignore: true}},
		{name: "empty", comment: Comment{Body: "  \n "}, want: Result{Ignore: true}},
		{name: "own comment", comment: Comment{Body: "/help", Author: "Fleetwave[bot]"}, want: Result{Ignore: true}},
		{name: "another bot", comment: Comment{Body: "/rollback", Author: "renovate[bot]", AuthorIsBot: true}, want: Result{Ignore: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := p.Parse(tt.comment)
			if len(tt.respContains) > 0 {
				for _, s := range tt.respContains {
					if !strings.Contains(got.Response, s) {
						t.Errorf("Response %q does not contain %q", got.Response, s)
					}
				}
				got.Response = ""
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse(%q) = %+v, want %+v", tt.comment.Body, got, tt.want)
			}
		})
	}
}

func TestHelpNamesWhoMay(t *testing.T) {
	pol, err := plan.ParsePolicy(".fleetwave.yaml", []byte(`apiVersion: fleetwave/v1
waves:
  - name: everything
    selector: {}
commands:
  rollback: {teams: [org/sre]}
  pause: {permission: triage}
`))
	if err != nil {
		t.Fatal(err)
	}
	h := Parser{Policy: pol}.Help()
	for _, want := range []string{
		"| `/rollback [wave|all]` | sync the apps the rollout touched back to their previous revision, from that wave on (default: all) | membership of org/sre |",
		"| `/pause` | finish the syncs in flight and start no new one | triage permission |",
		"| `/abort [keep-automated-off]` | end the rollout: no new syncs, nothing rolled back; automated sync restored unless keep-automated-off | write permission |",
		"| `/acknowledge` | acknowledge the risk classes the policy asks a person to acknowledge, for the pull request's current head | write permission |",
		"| `/help` | show this help | anyone |",
	} {
		if !strings.Contains(h, want) {
			t.Errorf("help lacks %q:\n%s", want, h)
		}
	}
}

func TestAuthorize(t *testing.T) {
	pol, err := plan.ParsePolicy(".fleetwave.yaml", []byte(`apiVersion: fleetwave/v1
waves:
  - name: canary
    selector: {matchLabels: {env: test}}
  - name: production
    selector: {matchLabels: {env: prd}}
    approval: {required: true, teams: [org/prod-owners]}
commands:
  rollback: {teams: [org/sre]}
  approve: {permission: write}
`))
	if err != nil {
		t.Fatal(err)
	}
	writer := plan.Actor{Login: "alice", Permission: plan.PermWrite}
	reader := plan.Actor{Login: "bob", Permission: plan.PermRead}
	sre := plan.Actor{Login: "carol", Permission: plan.PermRead, Teams: []string{"org/sre"}}
	owner := plan.Actor{Login: "dave", Permission: plan.PermWrite, Teams: []string{"ORG/prod-owners"}}
	tests := []struct {
		name   string
		pol    *plan.Policy
		req    Request
		allow  bool
		reason string // substring of the refusal
	}{
		{name: "writer pauses", pol: pol, req: Request{Command: Pause, Actor: writer}, allow: true},
		{name: "no write permission", pol: pol, req: Request{Command: Pause, Actor: reader},
			reason: "@bob: /pause needs write permission (your permission on the repository: read)."},
		{name: "no permission at all", pol: pol, req: Request{Command: Abort, Actor: plan.Actor{Login: "eve"}},
			reason: "your permission on the repository: none"},
		{name: "wrong team for rollback", pol: pol, req: Request{Command: Rollback, Actor: owner},
			reason: "/rollback needs membership of org/sre"},
		{name: "team member rolls back without write", pol: pol, req: Request{Command: Rollback, Actor: sre}, allow: true},
		{name: "admin is not in the rollback team", pol: pol,
			req: Request{Command: Rollback, Actor: plan.Actor{Login: "root", Permission: plan.PermAdmin}}, reason: "membership of org/sre"},
		{name: "approve production needs the wave's team", pol: pol, req: Request{Command: Approve, Wave: "production", Actor: writer},
			reason: `wave "production" may only be approved by org/prod-owners`},
		{name: "wave team member approves (team slugs compare case-insensitively)", pol: pol,
			req: Request{Command: Approve, Wave: "production", Actor: owner}, allow: true},
		{name: "approve PROD needs the teams of production's namesake", pol: pol, req: Request{Command: Approve, Wave: "PRODUCTION", Actor: writer},
			reason: `wave "production" may only be approved by org/prod-owners`},
		{name: "approve without a resolved wave is refused", pol: pol, req: Request{Command: Approve, Actor: owner},
			reason: "could not tell which wave it approves"},
		{name: "approve canary with write", pol: pol, req: Request{Command: Approve, Wave: "canary", Actor: writer}, allow: true},
		{name: "edited comment", pol: pol, req: Request{Command: Pause, Actor: writer, Edited: true}, reason: "edited comment"},
		{name: "fork PR", pol: pol, req: Request{Command: Rollback, Actor: sre, FromFork: true}, reason: "from a fork"},
		{name: "help always", pol: pol, req: Request{Command: Help, Actor: reader, Edited: true, FromFork: true}, allow: true},
		{name: "plan with triage by default", pol: nil, req: Request{Command: Plan, Actor: plan.Actor{Login: "t", Permission: plan.PermTriage}}, allow: true},
		{name: "plan refused for read", pol: nil, req: Request{Command: Plan, Actor: reader}, reason: "/plan needs triage permission"},
		{name: "default policy: rollback with write", pol: nil, req: Request{Command: Rollback, Actor: writer}, allow: true},
		{name: "acknowledge with write by default", pol: nil, req: Request{Command: Acknowledge, Actor: writer}, allow: true},
		{name: "acknowledge refused for read", pol: nil, req: Request{Command: Acknowledge, Actor: reader},
			reason: "@bob: /acknowledge needs write permission (your permission on the repository: read)."},
		{name: "acknowledge from a fork", pol: nil, req: Request{Command: Acknowledge, Actor: writer, FromFork: true}, reason: "from a fork"},
		{name: "unknown command", pol: nil, req: Request{Command: "deploy", Actor: writer}, reason: "not a fleetwave command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Authorize(tt.pol, tt.req)
			if d.Allowed != tt.allow {
				t.Fatalf("Allowed = %v (%q), want %v", d.Allowed, d.Reason, tt.allow)
			}
			if !tt.allow && !strings.Contains(d.Reason, tt.reason) {
				t.Errorf("Reason %q does not contain %q", d.Reason, tt.reason)
			}
			if tt.allow && d.Reason != "" {
				t.Errorf("allowed with a reason %q", d.Reason)
			}
		})
	}
}

func TestFromAction(t *testing.T) {
	tests := []struct {
		id, target string
		want       Result
		ok         bool
	}{
		{"approve", "production", Result{Command: Approve, Target: "production"}, true},
		{"pause", "", Result{Command: Pause}, true},
		{"resume", "x", Result{Command: Resume}, true},
		{"abort", "", Result{Command: Abort}, true},
		{"rollback", "", Result{Command: Rollback, Target: TargetAll}, true},
		{"rollback", "canary", Result{Command: Rollback, Target: "canary"}, true},
		{"plan", "", Result{}, false},
		{"acknowledge", "", Result{}, false},
		{"format-disk", "", Result{}, false},
	}
	for _, tt := range tests {
		got, ok := FromAction(tt.id, tt.target)
		if ok != tt.ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("FromAction(%q, %q) = %+v, %v; want %+v, %v", tt.id, tt.target, got, ok, tt.want, tt.ok)
		}
	}
}
