package app_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/app"
	"github.com/fleetwave/fleetwave/internal/edge/github/fakegithub"
	"github.com/fleetwave/fleetwave/internal/edge/github/writebudget"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/report"
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

// flood is a pull request with one commit per push, behind the harness, with the App on a SQLite store and
// its GitHub writes through a counting write budget.
type flood struct {
	t        *testing.T
	f        *fixture
	h        *harness
	previews *previewCount
	budget   *countingBudget
	n        atomic.Int64
}

func newFlood(t *testing.T, pushes int) *flood {
	t.Helper()
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
	fl := &flood{t: t, f: f, previews: &previewCount{}, budget: &countingBudget{Budget: b}}
	fl.h = newHarnessWith(t, harnessConfig{budget: fl.budget, opts: []app.Option{app.WithPreviews(st), app.WithObserver(fl.previews)}})
	return fl
}

func (fl *flood) newID() string { return fmt.Sprintf("f1000d00-0000-0000-0000-%012d", fl.n.Add(1)) }

// prEvent is a pull_request delivery of action naming head (against the fixture's base).
func (fl *flood) prEvent(action, head string) []byte {
	fixture := "pull_request/opened.json"
	if action == "synchronize" {
		fixture = "pull_request/synchronize.json"
	}
	return payload(fl.t, fixture, map[string]any{"action": action, "repository.clone_url": fl.f.cloneURL(),
		"pull_request.head.sha": head, "pull_request.base.sha": fl.f.base})
}

// push makes head i the pull request's head on GitHub and returns the deliveries it brings: one delivery id 5
// times, 10 redeliveries under new ids, 5 each of reopened, ready_for_review, edited and synchronize, and 5
// late deliveries of the previous head.
func (fl *flood) push(i int) []delivery {
	head := fl.f.heads[i]
	fl.h.openPR(fl.f, head)
	action := "synchronize"
	if i == 0 {
		action = "opened"
	}
	var ds []delivery
	first := delivery{"pull_request", fl.newID(), fl.prEvent(action, head)}
	for k := 0; k < 5; k++ {
		ds = append(ds, first) // the same delivery id: the webhooks server drops all but one
	}
	for k := 0; k < 10; k++ {
		ds = append(ds, delivery{"pull_request", fl.newID(), fl.prEvent(action, head)})
	}
	for _, again := range []string{"reopened", "ready_for_review", "edited", "synchronize"} {
		for k := 0; k < 5; k++ {
			ds = append(ds, delivery{"pull_request", fl.newID(), fl.prEvent(again, head)})
		}
	}
	if i > 0 {
		for k := 0; k < 5; k++ {
			ds = append(ds, delivery{"pull_request", fl.newID(), fl.prEvent("synchronize", fl.f.heads[i-1])})
		}
	}
	return ds
}

// send posts the deliveries, 8 at a time, and returns once all were answered (not necessarily handled).
func (fl *flood) send(ds []delivery) {
	fl.t.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, d := range ds {
		wg.Add(1)
		sem <- struct{}{}
		go func(d delivery) {
			defer wg.Done()
			defer func() { <-sem }()
			if code := fl.h.send(d.event, d.id, d.body); code >= 300 {
				fl.t.Errorf("%s delivery %s answered %d", d.event, d.id, code)
			}
		}(d)
	}
	wg.Wait()
}

// stale counts the deliveries found stale by the one read of the pull request each costs.
func (fl *flood) stale() int {
	return strings.Count(fl.h.logs.String(), "stale event: the pull request's head is now another commit")
}

// checkHeads checks that no head got more than one check run of each name, and that the last one got both,
// completed with results.
func (fl *flood) checkHeads() {
	fl.t.Helper()
	for i, head := range fl.f.heads {
		runs := fl.h.runsOn(head)
		last := i == len(fl.f.heads)-1
		for _, name := range []string{app.CheckDiff, app.CheckPlan} {
			if n := len(runs[name]); n > 1 || (last && n != 1) {
				fl.t.Errorf("head %.7s: %d %s check runs; want one", head, n, name)
			}
			for _, cr := range runs[name] {
				if cr.Status != "completed" || (last && cr.Conclusion == "cancelled") {
					fl.t.Errorf("head %.7s: %s is %s/%s", head, cr.Name, cr.Status, cr.Conclusion)
				}
			}
		}
	}
	if n := len(fl.h.fake.Comments(repoFullName, prNumber)); n != 1 {
		fl.t.Errorf("%d comments; want the one sticky comment", n)
	}
}

// TestFloodOfDeliveriesPreviewsEachHeadOnce is the measurement (#21) through the real webhooks server,
// App and GitHub adapter against the fake GitHub: N pushes of one pull request, each flooded with signed
// deliveries at once (flood.push). Each head is previewed once, gets its two check runs created once, and
// costs at most callsPerHead GitHub calls (writesPerHead of them content-creating, every one through the write
// budget). Then the App restarts on the same store: every delivery again costs nothing, and a re-run
// recomputes by updating the head's check runs, found in the store.
func TestFloodOfDeliveriesPreviewsEachHeadOnce(t *testing.T) {
	const pushes = 4
	fl := newFlood(t, pushes)
	h, f := fl.h, fl.f
	sent := 0
	for i := range f.heads {
		ds := fl.push(i)
		fl.send(ds)
		h.wait()
		sent += len(ds)
	}

	reqs := h.fake.Requests()
	got := ops(reqs)
	stale := fl.stale()
	t.Logf("%d deliveries for %d pushes: %d previews, %d GitHub calls (%.1f per head), %d content-creating, %d stale deliveries read; by operation %v",
		sent, pushes, fl.previews.n.Load(), total(got), float64(total(got))/pushes, writes(reqs), stale, got)
	if n := fl.previews.n.Load(); n != pushes {
		t.Errorf("%d previews for %d heads; want one per head", n, pushes)
	}
	fl.checkHeads()
	if got["checks/create"] != 2*pushes {
		t.Errorf("%d check runs created for %d heads; want 2 per head", got["checks/create"], pushes)
	}
	if n := total(got); n > callsPerHead*pushes+stale {
		t.Errorf("%d GitHub calls for %d heads and %d stale deliveries; want at most %d per head plus one per stale delivery", n, pushes, stale, callsPerHead)
	}
	if n := writes(reqs); n > writesPerHead*pushes || int64(n) != fl.budget.takes.Load() {
		t.Errorf("%d content-creating calls, %d through the write budget; want at most %d per head, every one through it", n, fl.budget.takes.Load(), writesPerHead)
	}
	if s := h.hooks.Stats(); s.Duplicates == 0 {
		t.Errorf("the webhooks server saw no duplicate delivery id: %+v", s)
	}

	// A restart (or another replica) on the same store: the same changes named again are not previewed again
	// and write nothing; the head the comment shows costs nothing, another head one read of the pull request
	// (has its head returned there? #34).
	h.restart()
	before, previewed := len(h.fake.Requests()), fl.previews.n.Load()
	var again []delivery
	for _, head := range f.heads {
		for _, action := range []string{"synchronize", "reopened", "ready_for_review"} {
			again = append(again, delivery{"pull_request", fl.newID(), fl.prEvent(action, head)})
		}
	}
	fl.send(again)
	h.wait()
	after := h.fake.Requests()[before:]
	if reads := ops(after)["pulls/get"]; writes(after) != 0 || reads != total(ops(after)) || reads > 3*(len(f.heads)-1) || fl.previews.n.Load() != previewed {
		t.Fatalf("after a restart, %d deliveries of changes already previewed made %d previews and GitHub calls %v; want none but one read per delivery of a head not shown", len(again), fl.previews.n.Load()-previewed, ops(after))
	}
	before = len(h.fake.Requests())

	// A re-run after the restart recomputes, updating the head's check runs found in the store.
	var diffID int64
	for _, cr := range h.runsOn(f.head())[app.CheckDiff] {
		diffID = cr.ID
	}
	rerun := payload(t, "check_run/rerequested.json", map[string]any{
		"check_run.id": diffID, "check_run.name": app.CheckDiff, "check_run.head_sha": f.head(),
		"check_run.external_id": fmt.Sprintf("fleetwave-pr:%d", prNumber), "repository": repositoryOf(t, f),
	})
	fl.send([]delivery{{"check_run", fl.newID(), rerun}})
	h.wait()
	afterRerun := ops(h.fake.Requests()[before:])
	if fl.previews.n.Load() != previewed+1 || afterRerun["checks/create"] != 0 || afterRerun["checks/update"] != 2 {
		t.Fatalf("a re-run after the restart made %d previews and %v; want 1 preview updating both check runs, creating none", fl.previews.n.Load()-previewed, afterRerun)
	}
}

// TestFloodOfInterleavedPushes: the same floods without waiting between pushes, so that deliveries of a head
// arrive while the next head is previewed, and late ones after it was superseded. A superseded head's preview
// is cancelled (its check runs completed as cancelled) and never posted; no head gets a check run twice;
// content-creating calls stay within writesPerHead per head; every call beyond callsPerHead per head is the
// one read that tells a delivery its head is stale.
func TestFloodOfInterleavedPushes(t *testing.T) {
	const pushes = 4
	fl := newFlood(t, pushes)
	sent := 0
	for i := range fl.f.heads {
		ds := fl.push(i)
		fl.send(ds)
		sent += len(ds)
	}
	fl.h.wait()

	reqs := fl.h.fake.Requests()
	got := ops(reqs)
	stale := fl.stale()
	t.Logf("%d deliveries for %d interleaved pushes: %d previews, %d GitHub calls, %d content-creating, %d stale deliveries; by operation %v",
		sent, pushes, fl.previews.n.Load(), total(got), writes(reqs), stale, got)
	fl.checkHeads()
	if n := fl.previews.n.Load(); n < 1 || n > pushes {
		t.Errorf("%d previews for %d heads; want at most one per head", n, pushes)
	}
	if got["checks/create"] > 2*pushes {
		t.Errorf("%d check runs created for %d heads; want at most 2 per head", got["checks/create"], pushes)
	}
	if n := total(got); n > callsPerHead*pushes+stale {
		t.Errorf("%d GitHub calls for %d heads and %d stale deliveries; want at most %d per head plus one per stale delivery", n, pushes, stale, callsPerHead)
	}
	if n := writes(reqs); n > writesPerHead*pushes || int64(n) != fl.budget.takes.Load() {
		t.Errorf("%d content-creating calls, %d through the write budget; want at most %d per head, every one through it", n, fl.budget.takes.Load(), writesPerHead)
	}
}

// TestFloodEndsOnAnEarlierHead (#34): four heads are previewed, each under its flood, then the pull request's
// head returns to the second one (a force-push back) while deliveries of all four heads arrive at once, as the
// issue's held-out flood ended. The second head is not previewed again and gets no check run again, but the
// sticky comment ends on its preview — not on the last head previewed — re-pointed from the stored comment.
func TestFloodEndsOnAnEarlierHead(t *testing.T) {
	const pushes = 4
	fl := newFlood(t, pushes)
	h, f := fl.h, fl.f
	var firstBody string
	for i := range f.heads {
		fl.send(fl.push(i))
		h.wait()
		if i == 1 {
			firstBody = h.fake.Comments(repoFullName, prNumber)[0].Body
		}
	}
	back := f.heads[1]
	before := ops(h.fake.Requests())
	h.openPR(f, back) // force-pushed back
	var ds []delivery
	for k := 0; k < 10; k++ {
		ds = append(ds, delivery{"pull_request", fl.newID(), fl.prEvent("synchronize", back)})
	}
	for _, head := range f.heads {
		for _, action := range []string{"synchronize", "reopened", "edited"} {
			ds = append(ds, delivery{"pull_request", fl.newID(), fl.prEvent(action, head)})
		}
	}
	fl.send(ds)
	h.wait()

	after := ops(h.fake.Requests())
	t.Logf("%d deliveries after the return to head 2: GitHub calls %v", len(ds), after)
	if n := fl.previews.n.Load(); n != pushes {
		t.Errorf("%d previews for %d heads; want one per head, the return recomputing nothing", n, pushes)
	}
	if after["checks/create"] != before["checks/create"] || after["checks/update"] != before["checks/update"] {
		t.Errorf("check runs touched by the return: %v, then %v", before, after)
	}
	fl.checkHeads()
	comments := h.fake.Comments(repoFullName, prNumber)
	want := "fleetwave preview `" + text.Short(f.base, 7) + ".." + text.Short(back, 7) + "`"
	if len(comments) != 1 || !strings.Contains(comments[0].Body, want) {
		t.Fatalf("the comment does not show the pull request's head: want %s in\n%.300s", want, comments[0].Body)
	}
	if comments[0].Body != firstBody {
		t.Errorf("the comment is not head 2's preview as first posted")
	}
	if w := writes(h.fake.Requests()); int64(w) != fl.budget.takes.Load() {
		t.Errorf("%d content-creating calls, %d through the write budget; want every one through it", w, fl.budget.takes.Load())
	}
}
