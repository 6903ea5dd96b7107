package argocdsim_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
)

// pushBody is GitHub's push event for the main branch of git.example.com/fleet/gitops, moved to newRev.
func pushBody(htmlURL, ref string) string {
	return `{"ref":"` + ref + `","before":"` + oldRev + `","after":"` + newRev + `",
"repository":{"html_url":"` + htmlURL + `","default_branch":"main"},"commits":[{"modified":["apps/web/cm.yaml"]}]}`
}

func postWebhook(t *testing.T, sim *argocdsim.Server, event, body string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://argocd.sim/api/webhook", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", event)
	resp, err := sim.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestWebhookPushStartsAutomatedSyncInTheSameReconciliation: a GitHub push delivered to /api/webhook refreshes
// exactly the apps util/webhook refreshes (repoURL matching the payload's html_url in any of its spellings,
// targetRevision following the pushed branch), and an app with automated sync starts syncing the pushed commit
// in that reconciliation — ReconcileDelay after the push, initiatedBy automated — as Argo CD's controller does.
func TestWebhookPushStartsAutomatedSyncInTheSameReconciliation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := func(repo, rev string) func(*v1alpha1.Application) {
			return func(a *v1alpha1.Application) { a.Spec.Source.RepoURL, a.Spec.Source.TargetRevision = repo, rev }
		}
		sim := argocdsim.New(argocdsim.Config{ReconcileDelay: 50 * time.Millisecond, SyncDuration: time.Second})
		t.Cleanup(sim.Close)
		sim.SetRef("HEAD", oldRev)
		sim.SetRef("main", oldRev)
		apps := []*v1alpha1.Application{
			appSpec("auto-https", autoSync, src("https://git.example.com/fleet/gitops.git", "main")),
			appSpec("auto-ssh", autoSync, src("git@git.example.com:fleet/gitops.git", "HEAD")),
			appSpec("auto-ssh-url", autoSync, src("ssh://git@git.example.com/Fleet/GitOps", "main")),
			appSpec("manual", src("https://git.example.com/fleet/gitops", "main")),
			appSpec("auto-other-repo", autoSync, src("https://git.example.com/fleet/other.git", "main")),
			appSpec("auto-other-branch", autoSync, src("https://git.example.com/fleet/gitops.git", "release")),
		}
		for _, a := range apps {
			if err := sim.AddApp(a, argocdsim.AppOptions{LiveRevisions: []string{oldRev}}); err != nil {
				t.Fatal(err)
			}
		}
		settle(time.Second)

		if code := postWebhook(t, sim, "issues", "{}"); code != http.StatusBadRequest {
			t.Errorf("an issues event answered %d, want 400", code)
		}
		if code := postWebhook(t, sim, "push", pushBody("https://git.example.com/fleet/gitops", "refs/heads/main")); code != http.StatusOK {
			t.Fatalf("push answered %d", code)
		}
		settle(60 * time.Millisecond) // one reconcile after the push, not a resync
		for _, tc := range []struct {
			app       string
			refreshed bool
			syncing   bool
		}{
			{"auto-https", true, true}, {"auto-ssh", true, true}, {"auto-ssh-url", true, true},
			{"manual", true, false}, {"auto-other-repo", false, false}, {"auto-other-branch", false, false},
		} {
			a, _ := sim.App(tc.app)
			if got := sim.Counts(tc.app).WebhookRefreshes > 0; got != tc.refreshed {
				t.Errorf("%s: refreshed by the webhook %v, want %v", tc.app, got, tc.refreshed)
			}
			var op *v1alpha1.Operation
			switch {
			case a.Operation != nil:
				op = a.Operation
			case a.Status.OperationState != nil && a.Status.OperationState.Operation.Sync.Revision == newRev:
				op = &a.Status.OperationState.Operation
			}
			if syncing := op != nil; syncing != tc.syncing {
				t.Errorf("%s: syncing %v 60ms after the push, want %v (sync %s)", tc.app, syncing, tc.syncing, a.Status.Sync.Status)
				continue
			}
			if op != nil && (!op.InitiatedBy.Automated || op.Sync.Revision != newRev) {
				t.Errorf("%s: operation %+v, want an automated sync to %s", tc.app, op.InitiatedBy, newRev)
			}
		}
		if got := sim.Totals(); got.Webhooks != 1 || got.WebhookRefreshes != 4 {
			t.Errorf("totals: %d webhooks, %d refreshes; want 1 and 4", got.Webhooks, got.WebhookRefreshes)
		}
	})
}

// TestUsersRecordTheirName: a sync requested with another account's token is recorded under that account's
// name (what tells fleetwave a person synced an app, not itself).
func TestUsersRecordTheirName(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, argocdsim.Config{Token: "bot", Username: "fleetwave", Users: map[string]string{"alice-token": "alice"},
			SyncDuration: time.Minute}, appSpec("web"))
		alice, err := argocd.New(argocd.Options{BaseURL: "http://argocd.sim", Token: "alice-token", HTTPClient: e.sim.HTTPClient(), MaxRetries: -1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := alice.Sync(context.Background(), "web", argocd.SyncRequest{Revision: newRev}); err != nil {
			t.Fatal(err)
		}
		settle(time.Second)
		a := e.app(t, "web")
		if os := a.Status.OperationState; os == nil || os.Operation.InitiatedBy.Username != "alice" {
			t.Fatalf("operation not alice's: %s", trace(&a))
		}
	})
}
