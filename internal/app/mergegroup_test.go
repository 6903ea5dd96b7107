package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/fleetwave/fleetwave/internal/app"
	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

// queueGroup builds the merge queue's temporary branch of a group on the fixture, as GitHub's queue does: the
// base branch with each queued pull request's commit merged in turn. It returns the branch's full ref and head.
func queueGroup(t *testing.T, f *fixture, commits ...string) (ref, head string) {
	t.Helper()
	ref = "refs/heads/gh-readonly-queue/master/pr-2-" + f.base
	gittest.Run(t, f.dir, "checkout", "-q", "-b", strings.TrimPrefix(ref, "refs/heads/"), f.base)
	for i, c := range commits {
		gittest.Run(t, f.dir, "merge", "-q", "--no-ff", "-m", fmt.Sprintf("Merge queued pull request %d", i+1), c)
	}
	head = gittest.Run(t, f.dir, "rev-parse", "HEAD")
	gittest.Run(t, f.dir, "checkout", "-q", "master")
	return ref, head
}

// groupPayload is a merge_group payload fixture pointed at the fixture repository and the group. withBase false
// gives the older shape, without merge_group.base_sha and head_commit (GitHub's recorded example).
func groupPayload(t *testing.T, rel string, f *fixture, ref, head string, withBase bool) []byte {
	t.Helper()
	body := payload(t, rel, map[string]any{
		"repository.clone_url":            f.cloneURL(),
		"merge_group.head_sha":            head,
		"merge_group.head_ref":            ref,
		"merge_group.base_sha":            f.base,
		"merge_group.head_commit.id":      head,
		"merge_group.head_commit.message": "Merge queued pull requests",
	})
	if withBase {
		return body
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	mg := doc["merge_group"].(map[string]any)
	delete(mg, "base_sha")
	delete(mg, "head_commit")
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMergeGroupChecksTheCombinedChange: GitHub's merge queue asks for the required checks of a group holding
// two pull requests — the first turns on automated sync for payments (against the policy), the second, the
// one the group's branch is named after, only touches web. Both check runs come out on the group's head, for
// the combined change: fleetwave/plan fails on the first pull request's violation, which the second alone (the
// head against its first parent) does not have. The older payload shape, without base_sha, gets the same
// verdict (the base is then the merge base with master). No comment is written, nothing is rolled out, and a
// destroyed group, or a push to the queue's branch, brings no further check run.
func TestMergeGroupChecksTheCombinedChange(t *testing.T) {
	f := newFixture(t,
		func(dir string) {
			edit(t, "apps/payments.yaml", func(s string) string { return s + "  syncPolicy:\n    automated:\n      prune: true\n" })(dir)
			edit(t, "manifests/payments/deployment.yaml", func(s string) string { return strings.Replace(s, "replicas: 2", "replicas: 3", 1) })(dir)
		},
		edit(t, "values/web/prd.yaml", func(s string) string { return strings.Replace(s, "logLevel: warn", "logLevel: info", 1) }))
	ref, head := queueGroup(t, f, f.heads[0], f.heads[1])
	h := newHarness(t, nil)

	if code := h.send("merge_group", "", groupPayload(t, "merge_group/checks_requested.json", f, ref, head, true)); code != http.StatusAccepted {
		t.Fatalf("checks_requested answered %d", code)
	}
	h.wait()
	runs := h.runsOn(head)
	if len(runs[app.CheckDiff]) != 1 || len(runs[app.CheckPlan]) != 1 || len(h.fake.CheckRuns(repoFullName)) != 2 {
		t.Fatalf("check runs = %+v, want one fleetwave/diff and one fleetwave/plan on the group's head", h.fake.CheckRuns(repoFullName))
	}
	diffRun, planRun := runs[app.CheckDiff][0], runs[app.CheckPlan][0]
	if diffRun.Conclusion != "success" || planRun.Conclusion != "failure" {
		t.Errorf("conclusions diff=%s plan=%s, want success and failure (the first pull request's violation)", diffRun.Conclusion, planRun.Conclusion)
	}
	for _, cr := range []struct {
		name, summary, history, externalID string
	}{
		{diffRun.Name, diffRun.Summary, strings.Join(diffRun.History, ","), diffRun.ExternalID},
		{planRun.Name, planRun.Summary, strings.Join(planRun.History, ","), planRun.ExternalID},
	} {
		if cr.history != "in_progress,completed" {
			t.Errorf("%s went %s, want in_progress then completed", cr.name, cr.history)
		}
		if !strings.HasPrefix(cr.externalID, "fleetwave-queue:gh-readonly-queue/master/pr-2-") {
			t.Errorf("%s external id %q, want the group's", cr.name, cr.externalID)
		}
		if want := fmt.Sprintf("`%s..%s`", text.Short(f.base, 7), text.Short(head, 7)); !strings.Contains(cr.summary, want) || !strings.Contains(cr.summary, "#2") {
			t.Errorf("%s summary does not name the group's change %s and #2:\n%s", cr.name, want, cr.summary)
		}
	}
	if !strings.Contains(planRun.Summary, "payments") || !strings.Contains(planRun.Summary, "automated-sync") {
		t.Errorf("plan summary does not name payments' automated-sync violation:\n%s", planRun.Summary)
	}
	if !strings.Contains(diffRun.Text, "payments") || !strings.Contains(diffRun.Text, "web") {
		t.Errorf("diff text does not carry both pull requests' apps:\n%.2000s", diffRun.Text)
	}

	// The recorded, older shape: no base_sha, no head_commit.
	if code := h.send("merge_group", "", groupPayload(t, "merge_group/checks_requested.json", f, ref, head, false)); code != http.StatusAccepted {
		t.Fatalf("checks_requested (without base_sha) answered %d", code)
	}
	h.wait()
	runs = h.runsOn(head)
	if len(runs[app.CheckDiff]) != 1 || len(runs[app.CheckPlan]) != 1 {
		t.Fatalf("after the second checks_requested: %d diff and %d plan runs, want the group head's one of each, updated", len(runs[app.CheckDiff]), len(runs[app.CheckPlan]))
	}
	for _, cr := range runs[app.CheckPlan] {
		if cr.Status != "completed" || cr.Conclusion != "failure" {
			t.Errorf("plan run %d: %s/%s, want completed/failure", cr.ID, cr.Status, cr.Conclusion)
		}
	}
	latest := runs[app.CheckPlan][0]
	for _, cr := range runs[app.CheckPlan] {
		if cr.ID > latest.ID {
			latest = cr
		}
	}
	if !strings.Contains(latest.Summary, "merge base with `master`") || !strings.Contains(latest.Summary, text.Short(f.base, 7)+".."+text.Short(head, 7)) {
		t.Errorf("plan summary without base_sha does not say the base is the merge base with master (%s):\n%s", text.Short(f.base, 7), latest.Summary)
	}

	// The group lands or leaves the queue: nothing more on GitHub. A push to the queue's branch starts nothing.
	before := len(h.fake.Requests())
	if code := h.send("merge_group", "", groupPayload(t, "merge_group/destroyed.json", f, ref, head, true)); code != http.StatusAccepted {
		t.Fatalf("destroyed answered %d", code)
	}
	push := payload(t, "push/to-default-branch.json", map[string]any{
		"ref": ref, "before": f.base, "after": head, "repository.clone_url": f.cloneURL(),
	})
	if code := h.send("push", "", push); code != http.StatusAccepted {
		t.Fatalf("push answered %d", code)
	}
	h.wait()
	if after := len(h.fake.Requests()); after != before {
		t.Errorf("%d requests to GitHub after destroyed and a push to the queue's branch, want none", after-before)
	}
	if n := len(h.fake.Comments(repoFullName, prNumber)); n != 0 {
		t.Errorf("%d comments on #%d, want none (the check runs carry the report)", n, prNumber)
	}
	h.merges.mu.Lock()
	defer h.merges.mu.Unlock()
	if len(h.merges.merges) != 0 {
		t.Errorf("merges handed over = %+v, want none for a queued group", h.merges.merges)
	}
}

// TestDestroyedMergeGroupCancelsItsCheck: a group leaves the queue while its preview is rendering. The preview
// is cancelled and its check runs end cancelled (no verdict is posted); a checks_requested for the same group
// arriving afterwards creates no check run.
func TestDestroyedMergeGroupCancelsItsCheck(t *testing.T) {
	f := newFixture(t, edit(t, "manifests/payments/service.yaml", func(s string) string { return s + "# touched\n" }))
	ref, head := queueGroup(t, f, f.head())
	blocked := make(chan struct{})
	var once sync.Once
	r := renderFunc(func(ctx context.Context, req render.Request) (*render.Result, error) {
		if req.Settings.Revision == head {
			once.Do(func() { close(blocked) })
			<-ctx.Done() // the group's renders hang until it is destroyed
			return nil, ctx.Err()
		}
		return sharedRenderer().Render(ctx, req)
	})
	h := newHarness(t, r)
	if code := h.send("merge_group", "", groupPayload(t, "merge_group/checks_requested.json", f, ref, head, true)); code != http.StatusAccepted {
		t.Fatalf("checks_requested answered %d", code)
	}
	<-blocked
	if code := h.send("merge_group", "", groupPayload(t, "merge_group/destroyed.json", f, ref, head, true)); code != http.StatusAccepted {
		t.Fatalf("destroyed answered %d", code)
	}
	h.wait()
	runs := h.runsOn(head)
	if len(runs[app.CheckDiff]) != 1 || len(runs[app.CheckPlan]) != 1 {
		t.Fatalf("check runs = %+v, want one of each on the group's head", h.fake.CheckRuns(repoFullName))
	}
	for _, cr := range append(runs[app.CheckDiff], runs[app.CheckPlan]...) {
		if cr.Status != "completed" || cr.Conclusion != "cancelled" || !strings.Contains(cr.Summary, "merge group was destroyed") {
			t.Errorf("%s: %s/%s %q, want completed/cancelled saying the group was destroyed", cr.Name, cr.Status, cr.Conclusion, cr.Summary)
		}
	}

	// A late (or redelivered) checks_requested for the destroyed group: no check run.
	if code := h.send("merge_group", "", groupPayload(t, "merge_group/checks_requested.json", f, ref, head, true)); code != http.StatusAccepted {
		t.Fatalf("checks_requested answered %d", code)
	}
	h.wait()
	if n := len(h.fake.CheckRuns(repoFullName)); n != 2 {
		t.Errorf("%d check runs after a checks_requested for a destroyed group, want still 2", n)
	}
	h.merges.mu.Lock()
	defer h.merges.mu.Unlock()
	if len(h.merges.merges) != 0 {
		t.Errorf("merges handed over = %+v, want none", h.merges.merges)
	}
}

// TestLandedMergeGroupRollsOutOnce: the rollout of a queued pull request starts when its group lands on the
// default branch, by the existing paths — the push of the branch and the pull request closed as merged, both
// naming the group's head — and once: the second, and a redelivered push, are skipped.
func TestLandedMergeGroupRollsOutOnce(t *testing.T) {
	f := newFixture(t, edit(t, "manifests/payments/deployment.yaml", func(s string) string { return strings.Replace(s, "replicas: 2", "replicas: 3", 1) }))
	_, head := queueGroup(t, f, f.head())
	gittest.Run(t, f.dir, "update-ref", "refs/heads/master", head) // the queue fast-forwards master to the group
	h := newHarness(t, nil)
	push := payload(t, "push/to-default-branch.json", map[string]any{
		"ref": "refs/heads/master", "before": f.base, "after": head, "repository.clone_url": f.cloneURL(),
	})
	closed := payload(t, "pull_request/closed-merged.json", map[string]any{
		"repository.clone_url":          f.cloneURL(),
		"pull_request.head.sha":         f.head(),
		"pull_request.base.sha":         f.base,
		"pull_request.merged":           true,
		"pull_request.merge_commit_sha": head,
	})
	for _, d := range []struct {
		event string
		body  []byte
	}{{"push", push}, {"pull_request", closed}, {"push", push}} {
		if code := h.send(d.event, "", d.body); code != http.StatusAccepted {
			t.Fatalf("%s answered %d", d.event, code)
		}
	}
	h.wait()
	h.merges.mu.Lock()
	defer h.merges.mu.Unlock()
	if len(h.merges.merges) != 1 {
		t.Fatalf("%d merges handed over, want 1: %+v", len(h.merges.merges), h.merges.merges)
	}
	if m := h.merges.merges[0]; m.MergeSHA != head || m.BaseSHA != f.base || m.Plan == nil || m.Plan.AppCount() == 0 {
		t.Errorf("merge = %+v, want the group's head against master before it, with a plan", m)
	}
}
