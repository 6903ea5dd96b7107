package github

import (
	"context"
	"fmt"
	"strings"
)

// permissionRank orders GitHub's repository permissions. The REST "permission" field folds maintain into
// write and triage into read; the finer names are ranked too in case a caller compares role names.
var permissionRank = map[string]int{"none": 0, "read": 1, "triage": 2, "write": 3, "maintain": 4, "admin": 5}

// PermissionAtLeast reports whether permission have grants at least want ("read", "write", "admin", ...).
// Unknown names grant nothing.
func PermissionAtLeast(have, want string) bool {
	h, ok1 := permissionRank[have]
	w, ok2 := permissionRank[want]
	return ok1 && ok2 && h >= w
}

// Permission returns user's permission on repo: "admin", "write", "read" or "none" (also for a user GitHub
// does not know).
func (c *Client) Permission(ctx context.Context, repo, user string) (string, error) {
	owner, name, err := splitRepo(repo)
	if err != nil {
		return "", err
	}
	p, resp, err := c.svc.Repos.GetPermissionLevel(ctx, owner, name, user)
	if isNotFound(resp) {
		return "none", nil
	}
	if err != nil {
		return "", apiErr(fmt.Sprintf("getting %s's permission on %s", user, repo), resp, err)
	}
	if p.GetPermission() == "" {
		return "none", nil
	}
	return p.GetPermission(), nil
}

// IsTeamMember reports whether user is an active member of team "org/team-slug" (child teams included, as
// GitHub counts them). Teams are named by slug, not display name. A pending invitation is not membership.
func (c *Client) IsTeamMember(ctx context.Context, team, user string) (bool, error) {
	org, slug, ok := strings.Cut(team, "/")
	if !ok || org == "" || slug == "" || strings.Contains(slug, "/") {
		return false, fmt.Errorf("team %q is not org/team-slug", team)
	}
	m, resp, err := c.svc.Teams.GetTeamMembershipBySlug(ctx, org, slug, user)
	if isNotFound(resp) {
		return false, nil
	}
	if err != nil {
		return false, apiErr(fmt.Sprintf("getting %s's membership of team %s", user, team), resp, err)
	}
	return m.GetState() == "active", nil
}
