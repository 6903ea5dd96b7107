package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/app"
	"github.com/fleetwave/fleetwave/internal/edge/github/fakegithub"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

// The App's flows against the people who can comment on, open or merge a pull request (issue #38). The example
// fleet's policy gives wave production the approval team example/sre; "dev" has write permission and is in no
// team; "sre-lead" is in example/sre.

// securityHarness is a harness on the example fleet, with the pull request registered, a rollout awaiting
// approval for wave production, and the two users.
func securityHarness(t *testing.T) (*harness, *fixture) {
	t.Helper()
	f := newFixture(t, edit(t, "manifests/payments/service.yaml", func(s string) string { return s + "# touched\n" }))
	h := newHarness(t, nil)
	h.merges.awaiting = "production"
	h.openPR(f, f.head())
	h.fake.SetPermission(repoFullName, "sre-lead", "write")
	h.fake.SetPermission(repoFullName, "dev", "write")
	h.fake.SetTeamMembership("example/sre", "sre-lead", "active")
	return h, f
}

// harnessNow is the harness's clock (harness.start's WithClock).
var harnessNow = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// comment posts a new comment by user on the pull request and delivers its issue_comment webhook.
func (h *harness) comment(f *fixture, user, body string) {
	h.t.Helper()
	if code := h.send("issue_comment", "", h.commentBody(f, user, body, harnessNow.Add(-time.Minute))); code != http.StatusAccepted {
		h.t.Fatalf("issue_comment answered %d", code)
	}
}

// commentBody posts a new comment by user, created at created, on the pull request and returns its
// issue_comment webhook's body.
func (h *harness) commentBody(f *fixture, user, body string, created time.Time) []byte {
	h.t.Helper()
	id := h.fake.AddComment(repoFullName, prNumber, user, body)
	return payload(h.t, "issue_comment/created-on-pull-request.json", map[string]any{
		"issue.number": prNumber, "comment.id": id, "comment.body": body, "comment.user.login": user,
		"comment.created_at": created.Format(time.RFC3339), "repository": repositoryOf(h.t.(*testing.T), f),
	})
}

// rolloutButton is a click by user on a button of the fleetwave/rollout check run of rollout 7 (no wave named).
func rolloutButton(t *testing.T, f *fixture, user, action string) []byte {
	t.Helper()
	repo := repositoryOf(t, f)
	repo["default_branch"] = "master"
	body := payload(t, "check_run/requested_action.json", map[string]any{
		"check_run.name":                 "fleetwave/rollout",
		"check_run.head_sha":             f.base,
		"check_run.external_id":          "fleetwave:7",
		"requested_action.identifier":    action,
		"sender.login":                   user,
		"repository":                     repo,
		"check_run.check_suite.head_sha": f.base,
	})
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	doc["check_run"].(map[string]any)["pull_requests"].([]any)[0].(map[string]any)["number"] = prNumber
	out, _ := json.Marshal(doc)
	return out
}

// botReplies are the App's replies on the pull request (the sticky preview comment left out).
func (h *harness) botReplies() string {
	var out []string
	for _, c := range h.fake.Comments(repoFullName, prNumber) {
		if c.User == h.fake.BotLogin() && !strings.Contains(c.Body, "fleetwave:comment") {
			out = append(out, c.Body)
		}
	}
	return strings.Join(out, "\n---\n")
}

// TestBareApproveTakesTheWaveTeams: "/approve" names no wave; the wave it approves is the one the rollout awaits
// approval for, and that wave's approval team applies. Before the fix a writer outside the team passed the gate.
func TestBareApproveTakesTheWaveTeams(t *testing.T) {
	h, f := securityHarness(t)
	h.comment(f, "dev", "/approve")
	h.wait()
	if got := h.merges.approvals(); len(got) != 0 {
		t.Fatalf("approvals handed to the executor = %+v, want none: dev is not in example/sre", got)
	}
	if r := h.botReplies(); !strings.Contains(r, `@dev: wave "production" may only be approved by example/sre`) {
		t.Errorf("replies = %q, want the refusal naming the wave's team", r)
	}
	h.comment(f, "sre-lead", "/approve")
	h.wait()
	if got := h.merges.approvals(); len(got) != 1 || got[0].Target != "production" || got[0].Actor != "sre-lead" {
		t.Errorf("approvals = %+v, want sre-lead's, of wave production by name", got)
	}
}

// TestApproveInAnotherCaseTakesTheWaveTeams: "/approve PRODUCTION" is wave production (the executor matches
// names case-insensitively), so production's team applies; the executor is handed the wave's own name.
func TestApproveInAnotherCaseTakesTheWaveTeams(t *testing.T) {
	h, f := securityHarness(t)
	h.comment(f, "dev", "/approve PRODUCTION")
	h.wait()
	if got := h.merges.approvals(); len(got) != 0 {
		t.Fatalf("approvals handed to the executor = %+v, want none: dev is not in example/sre", got)
	}
	h.comment(f, "sre-lead", "/approve PRODUCTION")
	h.wait()
	if got := h.merges.approvals(); len(got) != 1 || got[0].Target != "production" {
		t.Errorf("approvals = %+v, want one, of wave production by its own name", got)
	}
}

// TestApproveOfAWaveNotAwaitingIsRefused: "/approve canary" while production awaits approval approves nothing
// and says so.
func TestApproveOfAWaveNotAwaitingIsRefused(t *testing.T) {
	h, f := securityHarness(t)
	h.comment(f, "sre-lead", "/approve canary")
	h.wait()
	if got := h.merges.approvals(); len(got) != 0 {
		t.Fatalf("approvals = %+v, want none", got)
	}
	if r := h.botReplies(); !strings.Contains(r, "wave canary is not awaiting approval") {
		t.Errorf("replies = %q, want the refusal", r)
	}
}

// TestRolloutButtonTakesTheWaveTeams: the Approve button of the fleetwave/rollout check run names no wave; it is
// authorised against the wave awaiting approval, as a bare /approve is.
func TestRolloutButtonTakesTheWaveTeams(t *testing.T) {
	h, f := securityHarness(t)
	if code := h.send("check_run", "", rolloutButton(t, f, "dev", "approve")); code != http.StatusAccepted {
		t.Fatalf("requested_action answered %d", code)
	}
	h.wait()
	if got := h.merges.approvals(); len(got) != 0 {
		t.Fatalf("approvals handed to the executor = %+v, want none: dev is not in example/sre", got)
	}
	if code := h.send("check_run", "", rolloutButton(t, f, "sre-lead", "approve")); code != http.StatusAccepted {
		t.Fatalf("requested_action answered %d", code)
	}
	h.wait()
	if got := h.merges.approvals(); len(got) != 1 || got[0].Target != "production" || got[0].CheckRunExternalID != "fleetwave:7" {
		t.Errorf("approvals = %+v, want sre-lead's, of wave production", got)
	}
}

var _ app.Commands = (*recordedMerges)(nil)

// TestMergeIntoAnotherBranchStartsNothing: a pull request merged into a branch that is not the default branch
// (one without required reviews or checks, whose merge commit carries a policy its author wrote) starts no
// rollout; merged into the default branch, it does, with the branch its apps must track.
func TestMergeIntoAnotherBranchStartsNothing(t *testing.T) {
	f := newFixture(t, edit(t, "manifests/payments/service.yaml", func(s string) string { return s + "# touched\n" }))
	gittest.Run(t, f.dir, "merge", "-q", "--no-ff", "-m", "Merge pull request #2", "changes")
	merge := gittest.Run(t, f.dir, "rev-parse", "HEAD")
	h := newHarness(t, nil)
	closed := func(base string) []byte {
		return payload(t, "pull_request/closed-merged.json", map[string]any{
			"repository.clone_url":          f.cloneURL(),
			"pull_request.head.sha":         f.head(),
			"pull_request.base.sha":         f.base,
			"pull_request.base.ref":         base,
			"pull_request.merged":           true,
			"pull_request.merge_commit_sha": merge,
		})
	}
	if code := h.send("pull_request", "", closed("release-eu")); code != http.StatusAccepted {
		t.Fatalf("closed answered %d", code)
	}
	h.wait()
	if n := len(h.merges.merges); n != 0 {
		t.Fatalf("%d merges handed over for a merge into release-eu, want none", n)
	}
	if !strings.Contains(h.logs.String(), "not the default branch: no rollout") {
		t.Errorf("no log line says why nothing was rolled out:\n%s", h.logs.String())
	}
	if code := h.send("pull_request", "", closed("master")); code != http.StatusAccepted {
		t.Fatalf("closed answered %d", code)
	}
	h.wait()
	if n := len(h.merges.merges); n != 1 || h.merges.merges[0].Branch != "master" {
		t.Fatalf("merges = %+v, want one, of branch master", h.merges.merges)
	}
}

// TestRolloutCommandOnAnotherBranchIsRefused: a rollout command on a pull request into another branch is refused
// before anything is read from that branch.
func TestRolloutCommandOnAnotherBranchIsRefused(t *testing.T) {
	h, f := securityHarness(t)
	h.fake.AddPullRequest(repoFullName, fakegithub.PullRequest{Number: prNumber, HeadSHA: f.head(), BaseSHA: f.base,
		BaseRef: "release-eu", HeadRef: "changes", Author: "Codertocat"})
	h.comment(f, "sre-lead", "/pause")
	h.wait()
	if len(h.merges.commands) != 0 {
		t.Fatalf("commands handed over = %+v, want none", h.merges.commands)
	}
	if r := h.botReplies(); !strings.Contains(r, "this pull request is into `release-eu`, not the default branch") {
		t.Errorf("replies = %q, want the refusal", r)
	}
}

// TestReplayedCommandDoesNothing: the signature covers the body, not the X-GitHub-Delivery header. The same
// signed /pause sent again under new delivery ids, and the same button click sent again, are acted on once.
func TestReplayedCommandDoesNothing(t *testing.T) {
	h, f := securityHarness(t)
	pause := h.commentBody(f, "sre-lead", "/pause", harnessNow.Add(-time.Minute))
	click := rolloutButton(t, f, "sre-lead", "resume")
	for range 3 {
		for _, d := range []struct {
			event string
			body  []byte
		}{{"issue_comment", pause}, {"check_run", click}} {
			if code := h.send(d.event, "", d.body); code != http.StatusAccepted {
				t.Fatalf("%s answered %d", d.event, code)
			}
			h.wait()
		}
	}
	var got []string
	for _, c := range h.merges.commands {
		got = append(got, string(c.Command))
	}
	if strings.Join(got, " ") != "pause resume" {
		t.Errorf("commands handed over = %v, want one pause and one resume", got)
	}
	if n := strings.Count(h.logs.String(), "already acted on"); n != 4 {
		t.Errorf("%d log lines say a replay was not acted on, want 4:\n%s", n, h.logs.String())
	}
}

// TestOldCommandIsRefused: a command comment created more than app.CommandMaxAge before it is handled is not
// acted on (a replay of an old command, even once its identity is forgotten), with a line in the logs.
func TestOldCommandIsRefused(t *testing.T) {
	h, f := securityHarness(t)
	if code := h.send("issue_comment", "", h.commentBody(f, "sre-lead", "/pause", harnessNow.Add(-11*time.Minute))); code != http.StatusAccepted {
		t.Fatalf("issue_comment answered %d", code)
	}
	h.wait()
	if len(h.merges.commands) != 0 {
		t.Errorf("commands handed over = %+v, want none", h.merges.commands)
	}
	if !strings.Contains(h.logs.String(), "command comment not acted on: the comment was created 11m0s ago, more than 10m0s") {
		t.Errorf("no log line says why:\n%s", h.logs.String())
	}
	if r := h.botReplies(); r != "" {
		t.Errorf("replies = %q, want none", r)
	}
}

// TestPlanDigestOfAnotherAppIsIgnored: any App (or a workflow's token) may create a check run named
// fleetwave/plan with a digest of its choosing; the digest of the plan shown on the pull request is read from
// the App's own run only.
func TestPlanDigestOfAnotherAppIsIgnored(t *testing.T) {
	f := newFixture(t, fleetChange(t))
	gittest.Run(t, f.dir, "merge", "-q", "--no-ff", "-m", "Merge pull request #2", "changes")
	merge := gittest.Run(t, f.dir, "rev-parse", "HEAD")
	h := newHarness(t, nil)
	h.open(f)
	forged := strings.Repeat("f", 64)
	h.fake.AddCheckRun(repoFullName, fakegithub.CheckRun{Name: app.CheckPlan, HeadSHA: f.head(), Conclusion: "success",
		ExternalID: fmt.Sprintf("fleetwave-pr:%d:plan:%s", prNumber, forged), AppID: 777})
	closed := payload(t, "pull_request/closed-merged.json", map[string]any{
		"repository.clone_url":          f.cloneURL(),
		"pull_request.head.sha":         f.head(),
		"pull_request.base.sha":         f.base,
		"pull_request.merged":           true,
		"pull_request.merge_commit_sha": merge,
	})
	if code := h.send("pull_request", "", closed); code != http.StatusAccepted {
		t.Fatalf("closed answered %d", code)
	}
	h.wait()
	if len(h.merges.merges) != 1 {
		t.Fatalf("%d merges handed over, want 1", len(h.merges.merges))
	}
	if m := h.merges.merges[0]; m.PRPlanDigest == forged || m.PRPlanDigest != m.Plan.Digest() {
		t.Errorf("PR plan digest %q, want the App's own run's %q", m.PRPlanDigest, m.Plan.Digest())
	}
}

// TestDeletedForkIsAFork: a pull request whose head repository was deleted (head.repo null) is a fork's.
func TestDeletedForkIsAFork(t *testing.T) {
	f := newFixture(t, fleetChange(t))
	h := newHarness(t, nil)
	h.openPR(f, f.head())
	body := payload(t, "pull_request/opened.json", map[string]any{
		"repository.clone_url":   f.cloneURL(),
		"pull_request.head.sha":  f.head(),
		"pull_request.base.sha":  f.base,
		"pull_request.head.repo": nil,
	})
	if code := h.send("pull_request", "", body); code != http.StatusAccepted {
		t.Fatalf("delivery answered %d", code)
	}
	h.wait()
	if !strings.Contains(h.logs.String(), "fork=true") {
		t.Errorf("the preview of a deleted fork's pull request is not logged as a fork's:\n%s", h.logs.String())
	}
}

// TestOtherOwnersAreIgnored: with an allow-list of installation accounts, an event about another account's
// repository does nothing but say so in one log line.
func TestOtherOwnersAreIgnored(t *testing.T) {
	f := newFixture(t, fleetChange(t))
	h := newHarness(t, nil, app.WithAllowedOwners("acme-corp", "Platform"))
	h.openPR(f, f.head())
	if code := h.send("pull_request", "", prPayload(t, "pull_request/opened.json", f, f.head())); code != http.StatusAccepted {
		t.Fatalf("delivery answered %d", code)
	}
	h.wait()
	if runs := h.fake.CheckRuns(repoFullName); len(runs) != 0 {
		t.Errorf("check runs = %+v, want none for Codertocat's repository", runs)
	}
	if n := strings.Count(h.logs.String(), "not in FLEETWAVE_ALLOWED_OWNERS: ignored"); n != 1 {
		t.Errorf("%d log lines say the event was ignored, want 1:\n%s", n, h.logs.String())
	}
}

// TestAllowedOwnerIsServed: the allow-list compares account names case-insensitively.
func TestAllowedOwnerIsServed(t *testing.T) {
	f := newFixture(t, fleetChange(t))
	h := newHarness(t, nil, app.WithAllowedOwners("codertocat"))
	h.open(f)
	if runs := h.runsOn(f.head()); len(runs[app.CheckDiff]) != 1 {
		t.Errorf("check runs = %v, want the preview's", runs)
	}
}
