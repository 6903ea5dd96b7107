package app_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/app"
	"github.com/fleetwave/fleetwave/internal/edge/github/fakegithub"
)

// TestLabelsFollowTheClasses (#34): the policy's labels of the classes a head's preview finds go on the pull
// request; a new head that drops a class takes its label off; a label the policy does not name stays; a head the
// pull request returns to gets its labels back with its comment, without a preview.
func TestLabelsFollowTheClasses(t *testing.T) {
	labelPolicy := edit(t, ".fleetwave.yaml", func(s string) string {
		return s + "labels:\n  metadata: 'risk: metadata'\n  service: 'risk: service'\n  crd: 'risk: crd'\n"
	})
	teamLabel := edit(t, "manifests/payments/service.yaml", func(s string) string {
		return strings.Replace(s, "  namespace: payments\n", "  namespace: payments\n  labels: {team: payments}\n", 1)
	})
	newPort := edit(t, "manifests/payments/service.yaml", func(s string) string {
		return strings.Replace(strings.Replace(s, "  labels: {team: payments}\n", "", 1), "port: 80", "port: 8080", 1)
	})
	f := newFixture(t, func(dir string) { labelPolicy(dir); teamLabel(dir) }, newPort)
	a, b := f.heads[0], f.heads[1]
	previews := &previewCount{}
	h := newHarness(t, nil, app.WithObserver(previews))
	push := func(head, action string) {
		t.Helper()
		h.fake.AddPullRequest(repoFullName, fakegithub.PullRequest{Number: prNumber, HeadSHA: head, BaseSHA: f.base,
			BaseRef: "master", HeadRef: "changes", Author: "Codertocat", Labels: h.fake.Labels(repoFullName, prNumber)})
		if code := h.send("pull_request", "", prPayload(t, "pull_request/"+action+".json", f, head)); code != http.StatusAccepted {
			t.Fatalf("%s answered %d", action, code)
		}
		h.wait()
	}
	labels := func(want ...string) {
		t.Helper()
		got := h.fake.Labels(repoFullName, prNumber)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("labels %q, want %q", got, want)
		}
	}
	h.fake.AddPullRequest(repoFullName, fakegithub.PullRequest{Number: prNumber, Labels: []string{"needs-review", "Risk: CRD"}})

	push(a, "opened") // metadata only
	labels("needs-review", "risk: metadata")
	push(b, "synchronize") // the team label is gone, the Service's port changed
	labels("needs-review", "risk: service")

	n := len(h.fake.Requests())
	push(b, "synchronize") // the same head again: nothing to label
	if extra := ops(h.fake.Requests()[n:]); extra["issues/add-labels"]+extra["issues/remove-label"] != 0 {
		t.Errorf("labels written again for a head already labelled: %v", extra)
	}
	labels("needs-review", "risk: service")

	before := previews.n.Load()
	push(a, "synchronize") // force-pushed back to A: its comment and its labels come back, nothing is previewed
	labels("needs-review", "risk: metadata")
	if previews.n.Load() != before {
		t.Errorf("%d previews when the head returned to A, want none", previews.n.Load()-before)
	}
}
