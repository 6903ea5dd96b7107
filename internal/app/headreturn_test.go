package app_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/app"
	"github.com/fleetwave/fleetwave/internal/kit/text"
)

// TestHeadBackToAnEarlierCommitShowsItsComment (#34): head A is previewed, then head B, then the pull request
// is force-pushed back to A. A was previewed already, so it is not previewed again, nor are its check runs
// created again — but the sticky comment must show A's preview, not B's: it is re-pointed at A's recorded
// comment. Without a store, from the App's memory.
func TestHeadBackToAnEarlierCommitShowsItsComment(t *testing.T) {
	f := newFixture(t, edit(t, "manifests/payments/service.yaml", func(s string) string { return s + "# one\n" }),
		edit(t, "manifests/payments/service.yaml", func(s string) string { return s + "# two\n" }))
	a, b := f.heads[0], f.heads[1]
	previews := &previewCount{}
	h := newHarness(t, nil, app.WithObserver(previews))
	title := func(head string) string {
		return "fleetwave preview `" + text.Short(f.base, 7) + ".." + text.Short(head, 7) + "`"
	}
	push := func(head, action string) {
		t.Helper()
		h.openPR(f, head)
		if code := h.send("pull_request", "", prPayload(t, "pull_request/"+action+".json", f, head)); code != http.StatusAccepted {
			t.Fatalf("%s answered %d", action, code)
		}
		h.wait()
	}
	shows := func(head string) {
		t.Helper()
		comments := h.fake.Comments(repoFullName, prNumber)
		if len(comments) != 1 || !strings.Contains(comments[0].Body, title(head)) {
			var got []string
			for _, c := range comments {
				for _, line := range strings.Split(c.Body, "\n") {
					if strings.HasPrefix(line, "## ") {
						got = append(got, line)
					}
				}
			}
			t.Fatalf("comments %q; want the one sticky comment showing %s", got, title(head))
		}
	}
	push(a, "opened")
	shows(a)
	aBody := h.fake.Comments(repoFullName, prNumber)[0].Body
	push(b, "synchronize")
	shows(b)
	before := ops(h.fake.Requests())

	push(a, "synchronize") // force-pushed back to A
	shows(a)
	if got := h.fake.Comments(repoFullName, prNumber)[0].Body; got != aBody {
		t.Errorf("the comment shown again differs from A's preview:\n%s\nwant\n%s", got, aBody)
	}
	after := ops(h.fake.Requests())
	if n := previews.n.Load(); n != 2 {
		t.Errorf("%d previews; want 2 (A and B, A not recomputed)", n)
	}
	if after["checks/create"] != before["checks/create"] || after["checks/update"] != before["checks/update"] {
		t.Errorf("check runs created or updated when returning to A: %v then %v", before, after)
	}
	for _, head := range []string{a, b} {
		if runs := h.runsOn(head); len(runs[app.CheckDiff]) != 1 || len(runs[app.CheckPlan]) != 1 {
			t.Errorf("head %.7s: check runs %v; want one of each", head, runs)
		}
	}

	// Another delivery naming A costs nothing; a late delivery naming B (no longer the head) changes nothing.
	n := len(h.fake.Requests())
	push(a, "synchronize")
	if extra := h.fake.Requests()[n:]; len(extra) != 0 {
		t.Errorf("a delivery of the head the comment shows made GitHub calls %v; want none", ops(extra))
	}
	if code := h.send("pull_request", "", prPayload(t, "pull_request/synchronize.json", f, b)); code != http.StatusAccepted {
		t.Fatalf("synchronize answered %d", code)
	}
	h.wait()
	shows(a)
	if n := previews.n.Load(); n != 2 {
		t.Errorf("%d previews after a late delivery of B; want 2", n)
	}
}
