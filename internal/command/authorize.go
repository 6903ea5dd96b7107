package command

import (
	"fmt"

	"github.com/fleetwave/fleetwave/internal/plan"
)

// Request is everything Authorize looks at: the command, who asks, and where the comment came from.
type Request struct {
	Command Name
	// Wave is the wave the command is about: for approve, the wave to approve, whose approval teams then apply
	// too. The caller resolves it before authorising (the wave the rollout awaits approval for when the comment
	// or button names none); an approve without one is refused, so that no wave's teams are skipped.
	Wave string
	// Actor: login, permission on the repository (collaborator permission API; "" when none) and team slugs
	// ("org/slug", team membership API).
	Actor plan.Actor
	// Edited: the command came from an edited comment (issue_comment action "edited").
	Edited bool
	// FromFork: the pull request's head repository is not the base repository.
	FromFork bool
}

// Decision is Authorize's verdict. Reason says why a command is refused, ready to post as a reply.
type Decision struct {
	Allowed bool
	Reason  string
}

// Authorize decides whether a command may run. p is the release policy (nil: plan.DefaultPolicy). Help is
// always allowed; commands from edited comments or fork PRs never are; otherwise the policy's rule for the
// command (GitHub permission or team) and, for approve, the wave's approval teams must admit the actor.
func Authorize(p *plan.Policy, r Request) Decision {
	if r.Command == Help {
		return Decision{Allowed: true}
	}
	who := "@" + r.Actor.Login
	if r.Actor.Login == "" {
		who = "The commenter"
	}
	if r.Edited {
		return Decision{Reason: fmt.Sprintf("%s: `/%s` was in an edited comment; fleetwave only acts on new comments, post it again.", who, r.Command)}
	}
	if r.FromFork {
		return Decision{Reason: fmt.Sprintf("%s: `/%s` is refused on a pull request from a fork.", who, r.Command)}
	}
	if _, ok := lookup(r.Command); !ok {
		return Decision{Reason: fmt.Sprintf("%s: `/%s` is not a fleetwave command.", who, r.Command)}
	}
	if p == nil {
		p = plan.DefaultPolicy()
	}
	if r.Command == Approve && r.Wave == "" {
		return Decision{Reason: fmt.Sprintf("%s: `/approve` was not run: fleetwave could not tell which wave it approves.", who)}
	}
	ok, why := p.Allowed(string(r.Command), r.Wave, r.Actor)
	if ok {
		return Decision{Allowed: true}
	}
	perm := string(r.Actor.Permission)
	if perm == "" {
		perm = "none"
	}
	return Decision{Reason: fmt.Sprintf("%s: %s (your permission on the repository: %s).", who, why, perm)}
}
