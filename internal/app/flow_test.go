package app_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/app"
	"github.com/fleetwave/fleetwave/internal/edge/github/fakegithub"
	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/preview"
	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/report"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
	"github.com/fleetwave/fleetwave/internal/testkit/golden"
	"github.com/fleetwave/fleetwave/webhooks/webhooktest"
)

// TestPullRequestFlow sends a "pull_request opened" delivery, pointed at a repository made of
// examples/fleet and examples/fleet-change, through the webhooks server: one sticky comment and two completed
// check runs come out (golden files); a redelivery and a badly signed delivery change nothing; no Secret value
// of the fleet leaves the bot.
func TestPullRequestFlow(t *testing.T) {
	f := newFixture(t, fleetChange(t))
	h := newHarness(t, nil)
	h.openPR(f, f.head())
	body := prPayload(t, "pull_request/opened.json", f, f.head())

	const delivery = "72d3162e-cc78-11e3-81ab-4c9367dc0958"
	if code := h.send("pull_request", delivery, body); code != http.StatusAccepted {
		t.Fatalf("delivery answered %d, want 202", code)
	}
	h.wait()

	comments := h.fake.Comments(repoFullName, prNumber)
	if len(comments) != 1 {
		t.Fatalf("%d comments, want 1", len(comments))
	}
	runs := h.runsOn(f.head())
	if len(runs[app.CheckDiff]) != 1 || len(runs[app.CheckPlan]) != 1 || len(h.fake.CheckRuns(repoFullName)) != 2 {
		t.Fatalf("check runs = %v, want one fleetwave/diff and one fleetwave/plan on the head", runs)
	}
	for _, cr := range h.fake.CheckRuns(repoFullName) {
		if strings.Join(cr.History, ",") != "in_progress,completed" {
			t.Errorf("%s went %v, want in_progress then completed", cr.Name, cr.History)
		}
	}
	diffRun, planRun := runs[app.CheckDiff][0], runs[app.CheckPlan][0]
	if diffRun.Conclusion != "success" || planRun.Conclusion != "success" {
		t.Errorf("conclusions diff=%s plan=%s, want success and success", diffRun.Conclusion, planRun.Conclusion)
	}
	norm := normalizer(f)
	golden.Assert(t, "opened-comment.md", norm(comments[0].Body))
	golden.Assert(t, "opened-check-diff.txt", norm(describeRun(diffRun)))
	golden.Assert(t, "opened-check-plan.txt", norm(describeRun(planRun)))

	// A redelivery (same GUID) is acknowledged and not handled: no request reaches GitHub.
	before := len(h.fake.Requests())
	if code := h.send("pull_request", delivery, body); code != http.StatusOK {
		t.Errorf("redelivery answered %d, want 200", code)
	}
	// A delivery with a bad signature is refused and not handled.
	if code := h.sendSigned("pull_request", "", body, webhooktest.Sign("not the secret", body)); code != http.StatusUnauthorized {
		t.Errorf("bad signature answered %d, want 401", code)
	}
	h.wait()
	if after := len(h.fake.Requests()); after != before {
		t.Errorf("%d requests to GitHub after a redelivery and a bad signature, want none", after-before)
	}
	if got := len(h.fake.Comments(repoFullName, prNumber)); got != 1 {
		t.Errorf("%d comments after the redelivery, want 1", got)
	}
	if s := h.hooks.Stats(); s.Duplicates != 1 || s.Unauthorized != 1 || s.Handled != 1 {
		t.Errorf("webhook stats = %+v, want 1 handled, 1 duplicate, 1 unauthorized", s)
	}

	assertNoSecretValues(t, h, []string{"../../examples/fleet", "../../examples/fleet-change"})
}

// assertNoSecretValues checks that no value of a Secret under dirs appears in any request body the bot sent to
// GitHub — and, so that the check cannot pass vacuously, that the bodies do name the changed Secret's key.
// The name and server of Argo CD cluster Secrets are not secret (they name clusters in every plan); their
// config (credentials) is.
func assertNoSecretValues(t *testing.T, h *harness, dirs []string) {
	t.Helper()
	values := secretValues(t, dirs)
	if len(values) < 4 {
		t.Fatalf("found only %d Secret values in %v: the check would prove nothing", len(values), dirs)
	}
	var all strings.Builder
	for _, r := range h.fake.Requests() {
		all.Write(r.Body)
		all.WriteByte('\n')
	}
	bodies := all.String()
	for _, v := range values {
		escaped, _ := json.Marshal(v)
		if strings.Contains(bodies, v) || strings.Contains(bodies, strings.Trim(string(escaped), `"`)) {
			t.Errorf("a Secret value (%d characters, starting %q) was sent to GitHub", len(v), v[:min(4, len(v))])
		}
	}
	if !strings.Contains(bodies, "DB_PASSWORD") {
		t.Error("no request names the changed Secret key DB_PASSWORD: the payments Secret was not in the preview")
	}
}

// secretValues collects the values of every Secret in the YAML files under dirs (stringData, and data both
// encoded and decoded), but cluster Secrets' name and server.
func secretValues(t *testing.T, dirs []string) []string {
	t.Helper()
	seen := map[string]bool{}
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || (!strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml")) {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, doc := range strings.Split(string(data), "\n---") {
				var obj struct {
					Kind     string
					Metadata struct{ Labels map[string]string }
					Data     map[string]string
					// stringData
					StringData map[string]string `json:"stringData"`
				}
				if yaml.Unmarshal([]byte(doc), &obj) != nil || obj.Kind != "Secret" {
					continue
				}
				cluster := obj.Metadata.Labels["argocd.argoproj.io/secret-type"] == "cluster"
				for k, v := range obj.StringData {
					if cluster && (k == "name" || k == "server") {
						continue
					}
					seen[strings.TrimSpace(v)] = true
					if cluster && k == "config" {
						var cfg struct {
							BearerToken string `json:"bearerToken"`
						}
						if json.Unmarshal([]byte(v), &cfg) == nil && cfg.BearerToken != "" {
							seen[cfg.BearerToken] = true
						}
					}
				}
				for _, v := range obj.Data {
					seen[v] = true
					if dec, err := base64.StdEncoding.DecodeString(v); err == nil {
						seen[string(dec)] = true
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var out []string
	for v := range seen {
		if len(v) >= 6 {
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

// TestNewerPushSupersedesOlder: while the preview of the first head is computing, a synchronize brings a newer
// head. The older preview is cancelled and posts nothing but "cancelled" on its own check runs; only the newer
// head's results reach the comment.
func TestNewerPushSupersedesOlder(t *testing.T) {
	f := newFixture(t, fleetChange(t), edit(t, "values/web/prd.yaml", func(s string) string { return s + "\n# touched again\nreplicaCount: 5\n" }))
	older, newer := f.heads[0], f.heads[1]
	blocked := make(chan struct{})
	var once sync.Once
	r := renderFunc(func(ctx context.Context, req render.Request) (*render.Result, error) {
		if req.Settings.Revision == older {
			once.Do(func() { close(blocked) })
			<-ctx.Done() // the older head's renders hang until the newer push cancels them
			return nil, ctx.Err()
		}
		return sharedRenderer().Render(ctx, req)
	})
	h := newHarness(t, r)
	h.openPR(f, older)
	if code := h.send("pull_request", "", prPayload(t, "pull_request/opened.json", f, older)); code != http.StatusAccepted {
		t.Fatalf("opened answered %d", code)
	}
	<-blocked
	h.openPR(f, newer) // GitHub now shows the newer head
	if code := h.send("pull_request", "", prPayload(t, "pull_request/synchronize.json", f, newer)); code != http.StatusAccepted {
		t.Fatalf("synchronize answered %d", code)
	}
	h.wait()

	olderRuns, newerRuns := h.runsOn(older), h.runsOn(newer)
	if len(olderRuns[app.CheckDiff]) != 1 || len(olderRuns[app.CheckPlan]) != 1 {
		t.Fatalf("older head's check runs = %v", olderRuns)
	}
	for _, cr := range append(olderRuns[app.CheckDiff], olderRuns[app.CheckPlan]...) {
		if cr.Conclusion != "cancelled" || cr.Status != "completed" {
			t.Errorf("older head's %s: %s/%s, want completed/cancelled", cr.Name, cr.Status, cr.Conclusion)
		}
	}
	if len(newerRuns[app.CheckDiff]) != 1 || newerRuns[app.CheckDiff][0].Conclusion != "success" ||
		len(newerRuns[app.CheckPlan]) != 1 || newerRuns[app.CheckPlan][0].Conclusion != "success" {
		t.Errorf("newer head's check runs = %+v, want diff and plan successful", newerRuns)
	}
	comments := h.fake.Comments(repoFullName, prNumber)
	if len(comments) != 1 || !strings.Contains(comments[0].Body, text.Short(newer, 7)) {
		t.Fatalf("comments = %+v, want one about %s", comments, text.Short(newer, 7))
	}
	// Nothing computed for the older head was ever sent: no body carries its preview.
	for _, r := range h.fake.Requests() {
		if strings.Contains(string(r.Body), "fleetwave preview `"+text.Short(f.base, 7)+".."+text.Short(older, 7)) {
			t.Errorf("%s %s carries the older head's results: %.200s", r.Method, r.Path, r.Body)
		}
	}
}

type renderFunc func(ctx context.Context, req render.Request) (*render.Result, error)

// Fetches: it fetches nothing itself.
func (f renderFunc) Fetches(*v1alpha1.ApplicationSource) bool { return false }

func (f renderFunc) Render(ctx context.Context, req render.Request) (*render.Result, error) {
	return f(ctx, req)
}

// TestRerunRecomputes: a change is previewed once, whatever delivery names it again; "Re-run" on a check run
// (check_run rerequested) and "Re-run all" (check_suite rerequested) preview the head again, updating the head's
// check runs (created once per head).
func TestRerunRecomputes(t *testing.T) {
	f := newFixture(t, edit(t, "manifests/payments/secret.yaml", func(s string) string {
		return strings.Replace(s, "s3cr3t-demo-value", "s3cr3t-demo-value-rotated", 1)
	}))
	h := newHarness(t, nil)
	repo := repositoryOf(t, f)
	h.open(f)
	var diffID int64
	for _, cr := range h.fake.CheckRuns(repoFullName) {
		if cr.Name == app.CheckDiff {
			diffID = cr.ID
		}
	}

	// Deliveries that name the same base and head again (a new delivery id, reopened, ready_for_review) find it
	// previewed: no GitHub call, no new check run.
	before := len(h.fake.Requests())
	for _, action := range []string{"opened", "reopened", "ready_for_review"} {
		body := payload(t, "pull_request/opened.json", map[string]any{"action": action,
			"repository.clone_url": f.cloneURL(), "pull_request.head.sha": f.head(), "pull_request.base.sha": f.base})
		if code := h.send("pull_request", "", body); code != http.StatusAccepted {
			t.Fatalf("%s answered %d", action, code)
		}
		h.wait()
	}
	if n := len(h.fake.Requests()) - before; n != 0 {
		t.Fatalf("%d GitHub requests for a change already previewed, want 0", n)
	}

	// "Re-run" on this pull request's fleetwave/diff check run.
	rerun := payload(t, "check_run/rerequested.json", map[string]any{
		"check_run.id":          diffID,
		"check_run.name":        app.CheckDiff,
		"check_run.head_sha":    f.head(),
		"check_run.external_id": fmt.Sprintf("fleetwave-pr:%d", prNumber),
		"repository":            repo,
	})
	if code := h.send("check_run", "", rerun); code != http.StatusAccepted {
		t.Fatalf("check_run rerequested answered %d", code)
	}
	h.wait()
	if n := len(h.runsOn(f.head())[app.CheckDiff]); n != 1 {
		t.Fatalf("%d fleetwave/diff runs after a re-run, want the one updated", n)
	}
	if got := ops(h.fake.Requests()[before:]); got["checks/create"] != 0 || got["checks/update"] != 2 {
		t.Fatalf("a re-run made %v; want both check runs updated, none created", got)
	}

	// "Re-run all checks": check_suite rerequested, pointed at this repository and head.
	suite := payload(t, "check_suite/rerequested.json", map[string]any{
		"check_suite.head_sha": f.head(),
		"repository":           repo,
	})
	var doc map[string]any
	if err := json.Unmarshal(suite, &doc); err != nil {
		t.Fatal(err)
	}
	prs := doc["check_suite"].(map[string]any)["pull_requests"].([]any)
	prs[0].(map[string]any)["head"].(map[string]any)["sha"] = f.head()
	prs[0].(map[string]any)["base"].(map[string]any)["sha"] = f.base
	suite, _ = json.Marshal(doc)
	if code := h.send("check_suite", "", suite); code != http.StatusAccepted {
		t.Fatalf("check_suite rerequested answered %d", code)
	}
	h.wait()
	runs := h.runsOn(f.head())
	if len(runs[app.CheckDiff]) != 1 || len(runs[app.CheckPlan]) != 1 {
		t.Fatalf("after two re-runs: %d diff and %d plan runs, want 1 of each", len(runs[app.CheckDiff]), len(runs[app.CheckPlan]))
	}
	if got := ops(h.fake.Requests()[before:]); got["checks/create"] != 0 || got["checks/update"] != 4 {
		t.Fatalf("two re-runs made %v; want both check runs updated twice, none created", got)
	}
	for _, cr := range append(runs[app.CheckDiff], runs[app.CheckPlan]...) {
		if cr.Status != "completed" {
			t.Errorf("%s %d is %s", cr.Name, cr.ID, cr.Status)
		}
	}
	if n := len(h.fake.Comments(repoFullName, prNumber)); n != 1 {
		t.Errorf("%d comments, want the one sticky comment", n)
	}
}

// repositoryOf is the pull_request payload fixture's repository object, pointed at the fixture repository.
func repositoryOf(t *testing.T, f *fixture) map[string]any {
	var doc map[string]any
	if err := json.Unmarshal(prPayload(t, "pull_request/opened.json", f, f.head()), &doc); err != nil {
		t.Fatal(err)
	}
	return doc["repository"].(map[string]any)
}

// TestRenderFailureFailsTheDiffCheck: an API overlay that references a missing file fails to render; the diff
// check fails with an annotation on the Applications' manifest, at their source.
func TestRenderFailureFailsTheDiffCheck(t *testing.T) {
	f := newFixture(t, edit(t, "kustomize/api/overlays/prd/kustomization.yaml", func(s string) string {
		return strings.Replace(s, "resources:", "resources:\n  - missing.yaml", 1)
	}))
	h := newHarness(t, nil)
	h.open(f)
	runs := h.runsOn(f.head())
	diffRun := runs[app.CheckDiff][0]
	if diffRun.Conclusion != "failure" {
		t.Fatalf("fleetwave/diff concluded %s, want failure", diffRun.Conclusion)
	}
	if len(diffRun.Annotations) == 0 {
		t.Fatal("no annotation on the failing apps")
	}
	wantLine := lineAt(t, f, "apps/api.yaml", "source:")
	for _, a := range diffRun.Annotations {
		if a["path"] != "apps/api.yaml" || fmt.Sprint(a["start_line"]) != fmt.Sprint(wantLine) || a["annotation_level"] != "failure" {
			t.Errorf("annotation %v, want apps/api.yaml line %d (source), level failure", a, wantLine)
		}
		if !strings.Contains(fmt.Sprint(a["message"]), "missing.yaml") {
			t.Errorf("annotation message %q does not name the missing file", a["message"])
		}
	}
	golden.Assert(t, "render-failure-check-diff.txt", normalizer(f)(describeRun(diffRun)))
	// The plan lacks the apps that failed: it says so and is no all-clear.
	planRun := runs[app.CheckPlan][0]
	if planRun.Conclusion != "failure" || !strings.Contains(planRun.Title, "Incomplete plan: 3 app(s) not placed") ||
		!strings.Contains(planRun.Summary, "argocd/api-prd-eu-1") {
		t.Errorf("fleetwave/plan: %s %q\n%s", planRun.Conclusion, planRun.Title, planRun.Summary)
	}
}

// TestPolicyViolationFailsThePlanCheck: a change to payments, whose Application turns on automated sync,
// breaks the policy (Argo CD would sync it at merge, bypassing the waves): the plan check fails with an
// annotation at the "automated:" line of its manifest.
func TestPolicyViolationFailsThePlanCheck(t *testing.T) {
	f := newFixture(t,
		edit(t, "apps/payments.yaml", func(s string) string { return s + "  syncPolicy:\n    automated:\n      prune: true\n" }),
		edit(t, "manifests/payments/deployment.yaml", func(s string) string { return strings.Replace(s, "replicas: 2", "replicas: 3", 1) }))
	h := newHarness(t, nil)
	h.open(f)
	runs := h.runsOn(f.head())
	planRun := runs[app.CheckPlan][0]
	if planRun.Conclusion != "failure" {
		t.Fatalf("fleetwave/plan concluded %s, want failure; summary:\n%s", planRun.Conclusion, planRun.Summary)
	}
	wantLine := lineAt(t, f, "apps/payments.yaml", "automated:")
	if len(planRun.Annotations) != 1 {
		t.Fatalf("annotations = %v, want one", planRun.Annotations)
	}
	a := planRun.Annotations[0]
	if a["path"] != "apps/payments.yaml" || fmt.Sprint(a["start_line"]) != fmt.Sprint(wantLine) {
		t.Errorf("annotation at %v:%v, want apps/payments.yaml:%d", a["path"], a["start_line"], wantLine)
	}
	if d := runs[app.CheckDiff][0]; d.Conclusion != "success" {
		t.Errorf("fleetwave/diff concluded %s, want success", d.Conclusion)
	}
	golden.Assert(t, "violation-check-plan.txt", normalizer(f)(describeRun(planRun)))
}

// TestInvalidPolicyFailsThePlanCheckAtItsLine: a pull request that breaks .fleetwave.yaml still gets its diff;
// the plan check fails with an annotation at the offending line.
func TestInvalidPolicyFailsThePlanCheckAtItsLine(t *testing.T) {
	f := newFixture(t,
		edit(t, ".fleetwave.yaml", func(s string) string { return strings.Replace(s, "    soak: 10m\n", "    soak: 10 minutes\n", 1) }),
		edit(t, "manifests/payments/service.yaml", func(s string) string { return s + "# touched\n" }))
	h := newHarness(t, nil)
	h.open(f)
	runs := h.runsOn(f.head())
	planRun := runs[app.CheckPlan][0]
	if planRun.Conclusion != "failure" {
		t.Fatalf("fleetwave/plan concluded %s, want failure", planRun.Conclusion)
	}
	wantLine := lineAt(t, f, ".fleetwave.yaml", "soak: 10 minutes")
	found := false
	for _, a := range planRun.Annotations {
		if a["path"] == ".fleetwave.yaml" && fmt.Sprint(a["start_line"]) == fmt.Sprint(wantLine) {
			found = true
		}
	}
	if !found {
		t.Errorf("annotations %v, want one at .fleetwave.yaml:%d", planRun.Annotations, wantLine)
	}
	if d := runs[app.CheckDiff][0]; d.Conclusion == "failure" {
		t.Errorf("fleetwave/diff failed (%s): the diff does not depend on the policy", d.Title)
	}
	// The comment shows the diff and, in place of the plan, the policy's error at its line.
	comments := h.fake.Comments(repoFullName, prNumber)
	if len(comments) != 1 || !strings.Contains(comments[0].Body, "The release policy is invalid") ||
		!strings.Contains(comments[0].Body, fmt.Sprintf(".fleetwave.yaml:%d:", wantLine)) || !strings.Contains(comments[0].Body, "27 apps: ") {
		t.Errorf("comment does not show the diff and the policy error at line %d:\n%v", wantLine, comments)
	}
}

// TestPlanCommandRecomputes: "/plan" from someone with write permission recomputes; from a reader it is
// refused with a reply. Unknown commands get help. Every command comment gets 👀.
func TestPlanCommandRecomputes(t *testing.T) {
	f := newFixture(t, edit(t, "manifests/payments/service.yaml", func(s string) string { return s + "# touched\n" }))
	h := newHarness(t, nil)
	h.openPR(f, f.head())
	h.fake.SetPermission(repoFullName, "Codertocat", "write")
	h.fake.SetPermission(repoFullName, "reader", "read")
	repo := repositoryOf(t, f)
	comment := func(user, body string) []byte {
		id := h.fake.AddComment(repoFullName, prNumber, user, body)
		// A comment on the pull request (issue.pull_request is set), with this commenter and body.
		return payload(t, "issue_comment/created-on-pull-request.json", map[string]any{
			"issue.number": prNumber, "comment.id": id, "comment.body": body, "comment.user.login": user,
			"repository": repo,
		})
	}
	if code := h.send("issue_comment", "", comment("Codertocat", "/plan")); code != http.StatusAccepted {
		t.Fatalf("/plan answered %d", code)
	}
	h.wait()
	if n := len(h.runsOn(f.head())[app.CheckPlan]); n != 1 {
		t.Fatalf("%d plan runs after /plan, want 1", n)
	}
	if code := h.send("issue_comment", "", comment("reader", "/plan")); code != http.StatusAccepted {
		t.Fatalf("/plan answered %d", code)
	}
	if code := h.send("issue_comment", "", comment("Codertocat", "/frobnicate")); code != http.StatusAccepted {
		t.Fatalf("/frobnicate answered %d", code)
	}
	if code := h.send("issue_comment", "", comment("Codertocat", "/pause")); code != http.StatusAccepted {
		t.Fatalf("/pause answered %d", code)
	}
	h.wait()
	if n := len(h.runsOn(f.head())[app.CheckPlan]); n != 1 {
		t.Errorf("%d plan runs after a refused /plan, want still 1", n)
	}
	var replies []string
	for _, c := range h.fake.Comments(repoFullName, prNumber) {
		if c.User == h.fake.BotLogin() && !strings.Contains(c.Body, "fleetwave:comment") {
			replies = append(replies, c.Body)
		}
	}
	joined := strings.Join(replies, "\n---\n")
	for _, want := range []string{"recomputing the preview", "@reader", "/frobnicate", "did /pause"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no reply mentions %q; replies:\n%s", want, joined)
		}
	}
	if len(h.merges.commands) != 1 || h.merges.commands[0].Command != "pause" || h.merges.commands[0].Actor != "Codertocat" {
		t.Errorf("commands handed to the executor = %+v, want one /pause by Codertocat", h.merges.commands)
	}
	for _, c := range h.fake.Comments(repoFullName, prNumber) {
		if c.User != h.fake.BotLogin() && len(h.fake.Reactions(c.ID)) != 1 {
			t.Errorf("comment %q got reactions %v, want 👀", c.Body, h.fake.Reactions(c.ID))
		}
	}
}

// TestMergeHandsThePlanOver: a merged pull request is handed to the executor with the plan at the merge commit
// and the digest of the plan shown on the pull request. With Argo CD configured, the pull request's preview
// compares the apps with their live state; the merge only plans, and asks Argo CD for no live state.
func TestMergeHandsThePlanOver(t *testing.T) {
	f := newFixture(t, edit(t, "manifests/payments/service.yaml", func(s string) string { return s + "# touched\n" }))
	// The merge commit, on master.
	gittest.Run(t, f.dir, "merge", "-q", "--no-ff", "-m", "Merge pull request #2", "changes")
	merge := gittest.Run(t, f.dir, "rev-parse", "HEAD")
	live := &countingLive{}
	h := newHarness(t, nil, app.WithArgoCD(preview.ArgoCD{Live: live}))
	h.open(f)
	previewed := live.apps.Load()
	if previewed == 0 {
		t.Fatal("the pull request's preview compared no app with its live state: the test proves nothing")
	}
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
	m := h.merges.merges[0]
	if m.MergeSHA != merge || m.BaseSHA != f.base || m.PRNumber != prNumber || m.Plan == nil {
		t.Errorf("merge = %+v", m)
	}
	if m.PRPlanDigest == "" || m.PRPlanDigest != m.Plan.Digest() {
		t.Errorf("PR plan digest %q, want the merge plan's %q (same change)", m.PRPlanDigest, m.Plan.Digest())
	}
	if n := live.apps.Load() - previewed; n != 0 {
		t.Errorf("the merge compared %d app(s) with their live state, want none: it needs only the plan", n)
	}
}

// countingLive is a LiveComparer that counts the apps it is asked to compare, and finds each in sync.
type countingLive struct{ apps atomic.Int64 }

func (c *countingLive) CompareLive(_ context.Context, apps []preview.LiveApp) ([]*report.Live, error) {
	c.apps.Add(int64(len(apps)))
	return make([]*report.Live, len(apps)), nil
}

// lineAt is the 1-based line of the first line containing substr in path at the fixture's head.
func lineAt(t *testing.T, f *fixture, path, substr string) int {
	t.Helper()
	data := gittest.Run(t, f.dir, "show", f.head()+":"+path)
	for i, l := range strings.Split(data, "\n") {
		if strings.Contains(l, substr) {
			return i + 1
		}
	}
	t.Fatalf("%s at head has no line with %q", path, substr)
	return 0
}

// describeRun renders a check run for a golden file.
func describeRun(cr fakegithub.CheckRun) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "name: %s\nstatus: %s\nconclusion: %s\nexternal_id: %s\ntitle: %s\nhistory: %s\n", cr.Name, cr.Status,
		cr.Conclusion, cr.ExternalID, cr.Title, strings.Join(cr.History, " → "))
	sb.WriteString("annotations:\n")
	for _, a := range cr.Annotations {
		fmt.Fprintf(&sb, "- %v:%v [%v] %v: %v\n", a["path"], a["start_line"], a["annotation_level"], a["title"], a["message"])
	}
	fmt.Fprintf(&sb, "---- summary ----\n%s\n---- text ----\n%s\n", cr.Summary, cr.Text)
	return sb.String()
}

// normalizer replaces what changes from run to run: commit ids (full and abbreviated), plan digests, paths of
// temporary directories.
func normalizer(f *fixture) func(string) string {
	digest := regexp.MustCompile(`[0-9a-f]{64}`)
	return func(s string) string {
		for i, h := range f.heads {
			name := fmt.Sprintf("<head%d>", i+1)
			if i == len(f.heads)-1 {
				name = "<head>"
			}
			s = strings.ReplaceAll(s, h, name)
			s = strings.ReplaceAll(s, h[:12], name)
			s = strings.ReplaceAll(s, h[:7], name)
		}
		s = strings.ReplaceAll(s, f.base, "<base>")
		s = strings.ReplaceAll(s, f.base[:12], "<base>")
		s = strings.ReplaceAll(s, f.base[:7], "<base>")
		s = strings.ReplaceAll(s, f.dir, "<repo>")
		return digest.ReplaceAllString(s, "<digest>")
	}
}

// TestCheckRunButtonIsAuthorisedThenHandedOver: a button on a wave's check run (check_run requested_action)
// is the matching slash command, authorised with the policy at the check run's commit: approving the
// production wave takes its approval team.
func TestCheckRunButtonIsAuthorisedThenHandedOver(t *testing.T) {
	f := newFixture(t, edit(t, "manifests/payments/service.yaml", func(s string) string { return s + "# touched\n" }))
	h := newHarness(t, nil)
	h.merges.awaiting = "production"
	h.openPR(f, f.head())
	h.fake.SetPermission(repoFullName, "sre-lead", "write")
	h.fake.SetPermission(repoFullName, "dev", "write")
	h.fake.SetTeamMembership("example/sre", "sre-lead", "active")
	repo := repositoryOf(t, f)
	repo["default_branch"] = "master"
	button := func(user string) []byte {
		// A button on a wave's check run: the check run, the button, the sender and the repository are set to
		// this fixture's.
		body := payload(t, "check_run/requested_action.json", map[string]any{
			"check_run.name":                 "fleetwave/wave: production",
			"check_run.head_sha":             f.base,
			"check_run.external_id":          "fleetwave:7:wave:production",
			"requested_action.identifier":    "approve",
			"sender.login":                   user,
			"repository":                     repo,
			"check_run.check_suite.head_sha": f.base,
		})
		var doc map[string]any
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatal(err)
		}
		prs := doc["check_run"].(map[string]any)["pull_requests"].([]any)
		prs[0].(map[string]any)["number"] = prNumber
		out, _ := json.Marshal(doc)
		return out
	}
	for _, user := range []string{"sre-lead", "dev"} {
		if code := h.send("check_run", "", button(user)); code != http.StatusAccepted {
			t.Fatalf("requested_action answered %d", code)
		}
	}
	h.wait()
	if len(h.merges.commands) != 1 {
		t.Fatalf("commands handed over = %+v, want only sre-lead's approve", h.merges.commands)
	}
	c := h.merges.commands[0]
	if c.Command != "approve" || c.Target != "production" || c.Actor != "sre-lead" || c.CheckRunExternalID != "fleetwave:7:wave:production" || c.PRNumber != prNumber {
		t.Errorf("command = %+v", c)
	}
	var replies []string
	for _, cm := range h.fake.Comments(repoFullName, prNumber) {
		replies = append(replies, cm.Body)
	}
	if joined := strings.Join(replies, "\n"); !strings.Contains(joined, "did /approve") || !strings.Contains(joined, "@dev") {
		t.Errorf("replies = %q, want the executor's answer and a refusal for @dev", replies)
	}
}

// TestStaleEventIsDropped: GitHub delivers out of order. A synchronize for a head that is no longer the pull
// request's does nothing (it must not cancel, nor overwrite, the newer head's preview).
func TestStaleEventIsDropped(t *testing.T) {
	f := newFixture(t, edit(t, "manifests/payments/service.yaml", func(s string) string { return s + "# one\n" }),
		edit(t, "manifests/payments/service.yaml", func(s string) string { return s + "# two\n" }))
	h := newHarness(t, nil)
	h.openPR(f, f.heads[1])
	if code := h.send("pull_request", "", prPayload(t, "pull_request/synchronize.json", f, f.heads[0])); code != http.StatusAccepted {
		t.Fatalf("synchronize answered %d", code)
	}
	h.wait()
	if runs := h.fake.CheckRuns(repoFullName); len(runs) != 0 {
		t.Errorf("check runs = %+v, want none for a stale head", runs)
	}
	if n := len(h.fake.Comments(repoFullName, prNumber)); n != 0 {
		t.Errorf("%d comments, want none", n)
	}
}

// TestUnfetchableHeadFailsBothChecks: when no preview can be made (here the head commit is not in the
// repository), both checks fail — the change is unverified — and the comment says why.
func TestUnfetchableHeadFailsBothChecks(t *testing.T) {
	f := newFixture(t, edit(t, "manifests/payments/service.yaml", func(s string) string { return s + "# one\n" }))
	const ghost = "1111111111111111111111111111111111111111"
	h := newHarness(t, nil)
	h.openPR(f, ghost)
	if code := h.send("pull_request", "", prPayload(t, "pull_request/opened.json", f, ghost)); code != http.StatusAccepted {
		t.Fatalf("opened answered %d", code)
	}
	// The handler reports the failure (logged once by the webhooks server).
	deadline := time.Now().Add(60 * time.Second)
	for s := h.hooks.Stats(); s.Handled+s.Failed < s.Accepted; s = h.hooks.Stats() {
		if time.Now().After(deadline) {
			t.Fatal("not handled in time")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s := h.hooks.Stats(); s.Failed != 1 {
		t.Errorf("stats = %+v, want the delivery failed", s)
	}
	runs := h.runsOn(ghost)
	for _, name := range []string{app.CheckDiff, app.CheckPlan} {
		if len(runs[name]) != 1 || runs[name][0].Conclusion != "failure" || !strings.Contains(runs[name][0].Summary, ghost) {
			t.Errorf("%s = %+v, want one failure naming the missing commit", name, runs[name])
		}
	}
	comments := h.fake.Comments(repoFullName, prNumber)
	if len(comments) != 1 || !strings.Contains(comments[0].Body, "could not preview") {
		t.Errorf("comments = %+v, want one saying the preview failed", comments)
	}
}

// TestLongPreviewIsSplit: a preview longer than GitHub's comment limit becomes numbered comments, the summary
// first and repeated; the check run carries the whole text, cut at GitHub's limit with a note.
func TestLongPreviewIsSplit(t *testing.T) {
	f := newFixture(t, edit(t, "values/web/shared.yaml", func(s string) string {
		var flags strings.Builder
		for i := 0; i < 400; i++ {
			fmt.Fprintf(&flags, "  flag-%03d-with-a-name-long-enough-to-fill-the-comment-quickly: true\n", i)
		}
		return strings.Replace(s, "featureFlags:\n", "featureFlags:\n"+flags.String(), 1)
	}))
	h := newHarness(t, nil)
	h.open(f)
	comments := h.fake.Comments(repoFullName, prNumber)
	if len(comments) < 2 {
		t.Fatalf("%d comment(s), want the preview split into several", len(comments))
	}
	for i, c := range comments {
		if len(c.Body) > 65536 {
			t.Errorf("comment %d is %d bytes", i+1, len(c.Body))
		}
		if !strings.Contains(c.Body, fmt.Sprintf("<!-- fleetwave:part %d -->", i+1)) || !strings.Contains(c.Body, "9 changed") {
			t.Errorf("comment %d lacks its part number or the summary line:\n%.300s", i+1, c.Body)
		}
	}
	if !strings.Contains(comments[0].Body, "### Wave plan") {
		t.Error("the first comment lacks the wave plan")
	}
	diffRun := h.runsOn(f.head())[app.CheckDiff][0]
	if len(diffRun.Text) > 65535 || !strings.Contains(diffRun.Text, "truncated") {
		t.Errorf("check-run text is %d bytes, want at most 65,535 and a truncation note", len(diffRun.Text))
	}
}

type failingLive struct{}

func (failingLive) CompareLive(context.Context, []preview.LiveApp) ([]*report.Live, error) {
	return nil, errors.New("argo cd https://argocd.example: connection refused")
}

// TestArgoCDDownStillPreviews: when the live state cannot be read, the preview is posted without it, saying so.
func TestArgoCDDownStillPreviews(t *testing.T) {
	f := newFixture(t, edit(t, "manifests/payments/deployment.yaml", func(s string) string { return strings.Replace(s, "replicas: 2", "replicas: 3", 1) }))
	h := newHarness(t, nil, app.WithArgoCD(preview.ArgoCD{Live: failingLive{}}))
	h.open(f)
	d := h.runsOn(f.head())[app.CheckDiff][0]
	if d.Conclusion != "success" || !strings.Contains(d.Summary, "live state not compared: argo cd https://argocd.example: connection refused") {
		t.Errorf("diff check %s, summary:\n%s\nwant success with a note on the live state", d.Conclusion, d.Summary)
	}
}

// TestMergeFollowsTheTrack (#34): the plan handed to the executor at the merge is the track's. The merged
// change only labels the payments Service (metadata), and the policy at the merge commit sends metadata-only
// changes everywhere at once: the payments apps take one first wave of their own, with no soak and no approval.
func TestMergeFollowsTheTrack(t *testing.T) {
	f := newFixture(t,
		edit(t, ".fleetwave.yaml", func(s string) string {
			return s + "tracks:\n  - name: everywhere\n    classes: [metadata]\n    oneWave: true\n"
		}),
		edit(t, "manifests/payments/service.yaml", func(s string) string {
			return strings.Replace(s, "  namespace: payments\n", "  namespace: payments\n  labels: {team: payments}\n", 1)
		}))
	gittest.Run(t, f.dir, "merge", "-q", "--no-ff", "-m", "Merge pull request #2", "changes")
	merge := gittest.Run(t, f.dir, "rev-parse", "HEAD")
	h := newHarness(t, nil)
	h.open(f)
	closed := payload(t, "pull_request/closed-merged.json", map[string]any{
		"repository.clone_url": f.cloneURL(), "pull_request.head.sha": f.head(), "pull_request.base.sha": f.base,
		"pull_request.merged": true, "pull_request.merge_commit_sha": merge,
	})
	if code := h.send("pull_request", "", closed); code != http.StatusAccepted {
		t.Fatalf("closed answered %d", code)
	}
	h.wait()
	if len(h.merges.merges) != 1 || h.merges.merges[0].Plan == nil {
		t.Fatalf("merges handed over: %+v", h.merges.merges)
	}
	pl := h.merges.merges[0].Plan
	if len(pl.Waves) == 0 || pl.Waves[0].Name != "everywhere" {
		t.Fatalf("the merge's plan does not start with the track's wave: %+v", pl.Waves)
	}
	w := pl.Waves[0]
	if w.Gates.Soak != 0 || w.Gates.Approval.Before() {
		t.Errorf("wave %q has gates %+v; a oneWave track has none", w.Name, w.Gates)
	}
	n := 0
	for _, b := range w.Batches {
		for _, a := range b.Apps {
			n++
			if a.Track != "everywhere" || !strings.HasPrefix(a.Name, "payments") {
				t.Errorf("app %s (track %q) in the track's wave", a.Name, a.Track)
			}
		}
	}
	if n == 0 || n != pl.AppCount() {
		t.Errorf("%d apps in the track's wave of %d in the plan: want every changed app there", n, pl.AppCount())
	}
}
