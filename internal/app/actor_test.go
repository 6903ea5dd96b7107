package app

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/command"
	"github.com/fleetwave/fleetwave/internal/plan"
)

// permissions is a value fake of the Permissions role: a permission per user, the members of each team.
type permissions struct {
	perm    map[string]string
	members map[string][]string // team → logins
	err     error
	asked   []string // teams asked about, in order
}

func (p *permissions) Permission(_ context.Context, _, user string) (string, error) {
	return p.perm[user], p.err
}

func (p *permissions) IsTeamMember(_ context.Context, team, user string) (bool, error) {
	p.asked = append(p.asked, team)
	for _, m := range p.members[team] {
		if m == user {
			return true, nil
		}
	}
	return false, nil
}

// The actor of a command is their permission and, of the teams the command's rule names (for /approve also the
// waves' approval teams), those they are in; nobody is asked about other teams.
func TestActor(t *testing.T) {
	policy := &plan.Policy{
		Commands: map[string]plan.CommandRule{"rollback": {Permission: plan.PermWrite, Teams: []string{"org/sre"}}},
		Waves:    []plan.WavePolicy{{Name: "prod", Approval: plan.Approval{Required: true, Teams: []string{"org/release", "org/sre"}}}},
	}
	gh := func() *permissions {
		return &permissions{perm: map[string]string{"alice": "write", "bob": "none"},
			members: map[string][]string{"org/sre": {"alice"}, "org/release": {"alice", "bob"}}}
	}
	for _, tt := range []struct {
		name, login string
		cmd         command.Name
		perm        plan.Permission
		teams       string // the actor's
		asked       string // the teams asked about
	}{
		{"rule's team", "alice", command.Rollback, plan.PermWrite, "org/sre", "org/sre"},
		{"approve adds the waves' teams", "alice", command.Approve, plan.PermWrite, "org/release,org/sre", "org/release,org/sre"},
		{"permission none is no permission", "bob", command.Approve, "", "org/release", "org/release,org/sre"},
		{"default rule names no team", "alice", command.Pause, plan.PermWrite, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := gh()
			got, err := (&App{}).actor(context.Background(), p, "org/fleet", tt.login, policy, tt.cmd)
			if err != nil {
				t.Fatal(err)
			}
			if got.Login != tt.login || got.Permission != tt.perm || strings.Join(got.Teams, ",") != tt.teams ||
				strings.Join(p.asked, ",") != tt.asked {
				t.Errorf("actor = %+v, asked about %v; want permission %q, teams %q, asked %q", got, p.asked, tt.perm, tt.teams, tt.asked)
			}
		})
	}
	p := gh()
	p.err = errors.New("rate limited")
	if _, err := (&App{}).actor(context.Background(), p, "org/fleet", "alice", policy, command.Rollback); err == nil ||
		!strings.Contains(err.Error(), "reading the permission of alice on org/fleet: rate limited") {
		t.Errorf("err = %v; want the permission's failure", err)
	}
}
