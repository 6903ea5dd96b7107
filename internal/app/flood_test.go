package app_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/app"
	"github.com/fleetwave/fleetwave/internal/github/fakegithub"
	"github.com/fleetwave/fleetwave/internal/report"
	"github.com/fleetwave/fleetwave/internal/store"
	"github.com/fleetwave/fleetwave/internal/writebudget"
)

// Bounds of one head's GitHub calls (token requests aside), a preview with a one-part comment: the pull
// request read before and after rendering, both check runs created then completed, and the sticky comment
// listed then written — 8 calls, 5 of them content-creating. The tester counted 9 for one preview.
const (
	callsPerHead  = 8
	writesPerHead = 5
)

// ops counts requests by GitHub operation, token requests left out (one per installation and hour, not per head).
func ops(reqs []fakegithub.Request) map[string]int {
	out := map[string]int{}
	for _, r := range reqs {
		if r.Operation != "apps/create-installation-access-token" {
			out[r.Operation]++
		}
	}
	return out
}

// writes counts the content-creating requests (POST, PATCH, PUT, DELETE), token requests left out.
func writes(reqs []fakegithub.Request) int {
	n := 0
	for _, r := range reqs {
		switch r.Method {
		case http.MethodPost, http.MethodPatch, http.MethodPut, http.MethodDelete:
			if r.Operation != "apps/create-installation-access-token" {
				n++
			}
		}
	}
	return n
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// previewCount is an app.Observer counting previews.
type previewCount struct{ n atomic.Int64 }

func (p *previewCount) Previewed(string, time.Duration, *report.Report, error) { p.n.Add(1) }

// countingBudget is the real write budget, counting the tokens taken.
type countingBudget struct {
	*writebudget.Budget
	takes atomic.Int64
}

func (c *countingBudget) Take(ctx context.Context, id int64) error {
	c.takes.Add(1)
	return c.Budget.Take(ctx, id)
}

// delivery is one signed delivery of the flood.
type delivery struct {
	event, id string
	body      []byte
}

// TestFloodOfDeliveriesPreviewsEachHeadOnce is the measurement (#21) through the real webhooks server,
// App and GitHub adapter against the fake GitHub: N pushes of one pull request, each flooded with signed
// deliveries at once — one delivery id sent several times, redeliveries under new ids, opened, synchronize,
// reopened, ready_for_review, edited, and late deliveries of the previous head. Each head is previewed once,
// gets its two check runs created once, and costs at most callsPerHead GitHub calls (writesPerHead of them
// content-creating, every one through the write budget). Then the App restarts on the same store: every
// delivery again costs nothing, and a re-run recomputes by updating the head's check runs, found in the store.
func TestFloodOfDeliveriesPreviewsEachHeadOnce(t *testing.T) {
	const pushes = 4
	var changes []func(string)
	for i := 0; i < pushes; i++ {
		changes = append(changes, edit(t, "manifests/payments/secret.yaml", func(s string) string {
			return strings.Replace(s, "s3cr3t-demo-value", fmt.Sprintf("s3cr3t-demo-value-%d", i+1), 1)
		}))
	}
	f := newFixture(t, changes...)
	st, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "fleetwave.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b, err := writebudget.New(writebudget.Options{Limits: []writebudget.Limit{{N: 6000, Per: time.Minute, Burst: 1000}}})
	if err != nil {
		t.Fatal(err)
	}
	budget := &countingBudget{Budget: b}
	previews := &previewCount{}
	h := newHarnessWith(t, harnessConfig{budget: budget, opts: []app.Option{app.WithPreviews(st), app.WithObserver(previews)}})

	var n atomic.Int64
	newID := func() string { return fmt.Sprintf("f1000d00-0000-0000-0000-%012d", n.Add(1)) }
	prEvent := func(action, head string) []byte {
		fixture := "pull_request/opened.json"
		if action == "synchronize" {
			fixture = "pull_request/synchronize.json"
		}
		return payload(t, fixture, map[string]any{"action": action, "repository.clone_url": f.cloneURL(),
			"pull_request.head.sha": head, "pull_request.base.sha": f.base})
	}
	flood := func(ds []delivery) {
		t.Helper()
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for _, d := range ds {
			wg.Add(1)
			sem <- struct{}{}
			go func(d delivery) {
				defer wg.Done()
				defer func() { <-sem }()
				if code := h.send(d.event, d.id, d.body); code >= 300 {
					t.Errorf("%s delivery %s answered %d", d.event, d.id, code)
				}
			}(d)
		}
		wg.Wait()
		h.wait()
	}

	sent := 0
	for i, head := range f.heads {
		h.openPR(f, head) // GitHub's pull request now has this head
		action := "synchronize"
		if i == 0 {
			action = "opened"
		}
		var ds []delivery
		first := delivery{"pull_request", newID(), prEvent(action, head)}
		for k := 0; k < 5; k++ {
			ds = append(ds, first) // the same delivery id: the webhooks server drops all but one
		}
		for k := 0; k < 10; k++ {
			ds = append(ds, delivery{"pull_request", newID(), prEvent(action, head)}) // redeliveries, new ids
		}
		for _, again := range []string{"reopened", "ready_for_review", "edited", "synchronize"} {
			for k := 0; k < 5; k++ {
				ds = append(ds, delivery{"pull_request", newID(), prEvent(again, head)})
			}
		}
		if i > 0 {
			for k := 0; k < 5; k++ {
				ds = append(ds, delivery{"pull_request", newID(), prEvent("synchronize", f.heads[i-1])}) // late
			}
		}
		flood(ds)
		sent += len(ds)
	}

	reqs := h.fake.Requests()
	got := ops(reqs)
	t.Logf("%d deliveries for %d pushes: %d previews, %d GitHub calls (%.1f per head), %d content-creating; by operation %v",
		sent, pushes, previews.n.Load(), total(got), float64(total(got))/pushes, writes(reqs), got)
	if n := previews.n.Load(); n != pushes {
		t.Errorf("%d previews for %d heads; want one per head", n, pushes)
	}
	for _, head := range f.heads {
		runs := h.runsOn(head)
		if len(runs[app.CheckDiff]) != 1 || len(runs[app.CheckPlan]) != 1 {
			t.Errorf("head %.7s: %d %s and %d %s check runs; want one of each", head, len(runs[app.CheckDiff]), app.CheckDiff, len(runs[app.CheckPlan]), app.CheckPlan)
		}
		for _, cr := range append(runs[app.CheckDiff], runs[app.CheckPlan]...) {
			if cr.Status != "completed" {
				t.Errorf("head %.7s: %s is %s", head, cr.Name, cr.Status)
			}
		}
	}
	if got["checks/create"] != 2*pushes {
		t.Errorf("%d check runs created for %d heads; want 2 per head", got["checks/create"], pushes)
	}
	if n := total(got); n > callsPerHead*pushes {
		t.Errorf("%d GitHub calls for %d heads; want at most %d per head", n, pushes, callsPerHead)
	}
	if n := writes(reqs); n > writesPerHead*pushes || int64(n) != budget.takes.Load() {
		t.Errorf("%d content-creating calls, %d through the write budget; want at most %d per head, every one through it", n, budget.takes.Load(), writesPerHead)
	}
	if n := len(h.fake.Comments(repoFullName, prNumber)); n != 1 {
		t.Errorf("%d comments; want the one sticky comment", n)
	}
	if s := h.hooks.Stats(); s.Duplicates == 0 {
		t.Errorf("the webhooks server saw no duplicate delivery id: %+v", s)
	}

	// A restart (or another replica) on the same store: the same changes named again cost nothing.
	h.restart()
	before, previewed := len(h.fake.Requests()), previews.n.Load()
	var again []delivery
	for _, head := range f.heads {
		for _, action := range []string{"synchronize", "reopened", "ready_for_review"} {
			again = append(again, delivery{"pull_request", newID(), prEvent(action, head)})
		}
	}
	flood(again)
	if after := h.fake.Requests()[before:]; len(after) != 0 || previews.n.Load() != previewed {
		t.Fatalf("after a restart, %d deliveries of changes already previewed made %d previews and GitHub calls %v; want none", len(again), previews.n.Load()-previewed, ops(after))
	}

	// A re-run after the restart recomputes, updating the head's check runs found in the store.
	var diffID int64
	for _, cr := range h.runsOn(f.head())[app.CheckDiff] {
		diffID = cr.ID
	}
	rerun := payload(t, "check_run/rerequested.json", map[string]any{
		"check_run.id": diffID, "check_run.name": app.CheckDiff, "check_run.head_sha": f.head(),
		"check_run.external_id": fmt.Sprintf("fleetwave-pr:%d", prNumber), "repository": repositoryOf(t, f),
	})
	flood([]delivery{{"check_run", newID(), rerun}})
	after := ops(h.fake.Requests()[before:])
	if previews.n.Load() != previewed+1 || after["checks/create"] != 0 || after["checks/update"] != 2 {
		t.Fatalf("a re-run after the restart made %d previews and %v; want 1 preview updating both check runs, creating none", previews.n.Load()-previewed, after)
	}
	keys := make([]string, 0, len(after))
	for k := range after {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	t.Logf("re-run after the restart: %v", keys)
}
