package app_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/app"
	"github.com/fleetwave/fleetwave/internal/edge/github/fakegithub"
	"github.com/fleetwave/fleetwave/internal/edge/store"
)

// TestAcknowledgeGatesThePlanCheck (#34): a change carrying a class the policy lists under acknowledge fails
// fleetwave/plan, saying which classes and who may acknowledge; /acknowledge by someone without the rule's
// permission is refused; by someone with it, the check is published again from the preview, green, and the
// comment says who acknowledged — no preview, no check run created. A new head carrying the class needs a new
// acknowledgement; after a restart (the plan check forgotten) the acknowledgement recomputes the head's preview.
func TestAcknowledgeGatesThePlanCheck(t *testing.T) {
	policy := edit(t, ".fleetwave.yaml", func(s string) string { return s + "acknowledge: [service]\n" })
	port := func(to string) func(string) {
		return edit(t, "manifests/payments/service.yaml", func(s string) string {
			return strings.Replace(s, "    - port: 80\n", "    - port: "+to+"\n", 1)
		})
	}
	f := newFixture(t, func(dir string) { policy(dir); port("8080")(dir) },
		edit(t, "manifests/payments/service.yaml", func(s string) string { return strings.Replace(s, "targetPort: 8080", "targetPort: 9090", 1) }))
	a, b := f.heads[0], f.heads[1]
	st, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "fw.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	previews := &previewCount{}
	h := newHarness(t, nil, app.WithPreviews(st), app.WithObserver(previews))
	h.fake.SetPermission(repoFullName, "maintainer", "write")
	h.fake.SetPermission(repoFullName, "reader", "triage")
	repo := repositoryOf(t, f)
	push := func(head, action string) {
		t.Helper()
		h.openPR(f, head)
		if code := h.send("pull_request", "", prPayload(t, "pull_request/"+action+".json", f, head)); code != http.StatusAccepted {
			t.Fatalf("%s answered %d", action, code)
		}
		h.wait()
	}
	acknowledge := func(user string) string {
		t.Helper()
		id := h.fake.AddComment(repoFullName, prNumber, user, "/acknowledge")
		n := len(h.fake.Comments(repoFullName, prNumber))
		body := payload(t, "issue_comment/created-on-pull-request.json", map[string]any{
			"issue.number": prNumber, "comment.id": id, "comment.body": "/acknowledge", "comment.user.login": user, "repository": repo,
		})
		if code := h.send("issue_comment", "", body); code != http.StatusAccepted {
			t.Fatalf("/acknowledge answered %d", code)
		}
		h.wait()
		var replies []string
		for _, c := range h.fake.Comments(repoFullName, prNumber)[n-1:] {
			if c.User == h.fake.BotLogin() && !strings.Contains(c.Body, "fleetwave:comment") {
				replies = append(replies, c.Body)
			}
		}
		return strings.Join(replies, "\n")
	}
	planRun := func(head string) fakegithub.CheckRun {
		t.Helper()
		runs := h.runsOn(head)[app.CheckPlan]
		if len(runs) != 1 {
			t.Fatalf("%d plan runs on %.7s, want 1", len(runs), head)
		}
		return runs[0]
	}
	sticky := func() string {
		for _, c := range h.fake.Comments(repoFullName, prNumber) {
			if strings.Contains(c.Body, "fleetwave:part 1 ") {
				return c.Body
			}
		}
		t.Fatal("no sticky comment")
		return ""
	}

	push(a, "opened")
	run := planRun(a)
	if run.Conclusion != "failure" || run.Title != "Needs acknowledgement: service" ||
		!strings.Contains(run.Summary, "**Needs acknowledgement**: this change carries `service` (Service type or ports changed)") ||
		!strings.Contains(run.Summary, "Comment `/acknowledge` on the pull request (who may: write permission)") {
		t.Fatalf("plan check before the acknowledgement: %s %q\n%s", run.Conclusion, run.Title, run.Summary)
	}
	if c := sticky(); !strings.Contains(c, "\n\n⚠️ **Needs acknowledgement**: `service` (Service type or ports changed) — comment `/acknowledge` (who may: write permission)") {
		t.Errorf("the comment does not ask for the acknowledgement:\n%.1500s", c)
	}

	if reply := acknowledge("reader"); !strings.Contains(reply, "@reader: /acknowledge needs write permission") {
		t.Errorf("reply to an unauthorised /acknowledge: %q", reply)
	}
	if run := planRun(a); run.Conclusion != "failure" {
		t.Errorf("plan check after an unauthorised /acknowledge: %s", run.Conclusion)
	}

	before, n := ops(h.fake.Requests()), previews.n.Load()
	if reply := acknowledge("maintainer"); !strings.Contains(reply, "@maintainer acknowledged the change at `"+a[:7]+"`") {
		t.Errorf("reply to /acknowledge: %q", reply)
	}
	run = planRun(a)
	if run.Conclusion != "success" || !strings.HasPrefix(run.Summary, "**Acknowledged** by @maintainer for `"+a[:7]+"`: `service`") {
		t.Errorf("plan check after the acknowledgement: %s %q\n%s", run.Conclusion, run.Title, run.Summary)
	}
	after := ops(h.fake.Requests())
	if previews.n.Load() != n || after["checks/create"] != before["checks/create"] || after["checks/update"] != before["checks/update"]+1 {
		t.Errorf("the acknowledgement previewed (%d → %d) or wrote check runs other than one update: %v then %v", n, previews.n.Load(), before, after)
	}
	if c := sticky(); !strings.Contains(c, "\n\n✅ **Acknowledged** by @maintainer for `"+a[:7]+"`: `service`") || strings.Contains(c, "Needs acknowledgement") {
		t.Errorf("the comment does not say who acknowledged:\n%.1500s", c)
	}
	if reply := acknowledge("maintainer"); !strings.Contains(reply, "was acknowledged already, by @maintainer") {
		t.Errorf("reply to a second /acknowledge: %q", reply)
	}

	push(b, "synchronize") // a new head still changing the Service: acknowledged again, or it fails
	if run := planRun(b); run.Conclusion != "failure" || !strings.Contains(run.Summary, "only: a new commit needs a new one") {
		t.Errorf("plan check of a new head: %s\n%s", run.Conclusion, run.Summary)
	}

	h.restart() // the plan check of b is forgotten: the acknowledgement recomputes it
	n = previews.n.Load()
	if reply := acknowledge("maintainer"); !strings.Contains(reply, "fleetwave/plan is recomputed with it") {
		t.Errorf("reply to /acknowledge after a restart: %q", reply)
	}
	if run := planRun(b); run.Conclusion != "success" || !strings.Contains(run.Summary, "**Acknowledged** by @maintainer for `"+b[:7]+"`") {
		t.Errorf("plan check of the new head after its acknowledgement: %s\n%s", run.Conclusion, run.Summary)
	}
	if previews.n.Load() != n+1 {
		t.Errorf("%d previews after a restart's acknowledgement, want 1", previews.n.Load()-n)
	}
	if c := sticky(); !strings.Contains(c, "✅ **Acknowledged** by @maintainer for `"+b[:7]+"`") {
		t.Errorf("the comment of the new head does not say who acknowledged:\n%.1500s", c)
	}
}
