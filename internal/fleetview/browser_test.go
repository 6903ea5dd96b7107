package fleetview

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/testkit/golden"
)

// TestFleetViewInBrowser drives the view in headless Chromium (Debian's), as a person would: sign in with the
// token, watch a rollout move without reloading the page, reach every link with the keyboard. With -update it
// redraws the picture in docs/. Without Chromium it skips with one line; FLEETWAVE_REQUIRE_BROWSER=1 (.ci/run)
// makes that a failure.
func TestFleetViewInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser check skipped in -short mode")
	}
	chromium := ""
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		if os.Getenv("FLEETWAVE_REQUIRE_BROWSER") == "1" {
			t.Fatal("browser check: no chromium on PATH")
		}
		t.Skip("browser check skipped: no chromium on PATH (apt-get install chromium)")
	}
	f := newFixture(t)
	page := f.srv.URL + "/fleet/rollouts/" + itoa(f.rollout.ID)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.WindowSize(1280, 1100))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	defer cancelT()

	// Sign in through the form; the view sends us back to the rollout.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(page),
		chromedp.WaitVisible(chromedp.CSS(`#token`)),
		chromedp.SendKeys(chromedp.CSS(`#token`), testToken),
		chromedp.Submit(chromedp.CSS(`#token`)),
		chromedp.WaitVisible(chromedp.CSS(`#wave-1`)),
	); err != nil {
		t.Fatalf("signing in: %v", err)
	}
	before, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`main`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(before, "0 synced, 0 in flight, 2 waiting, 0 failed") {
		t.Fatalf("production wave before the sync:\n%s", before)
	}
	// A mark on the window: a reload would lose it.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.__noReload = 1`)); err != nil {
		t.Fatal(err)
	}

	// The rollout moves in the store: web-eu synced. The page follows without a reload.
	ctxb := context.Background()
	s := f.steps["web-eu"]
	s, err = f.st.RecordIntent(ctxb, store.Intent{StepID: s.ID, Version: s.Version, PreviousRevision: "old"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.RecordOutcome(ctxb, store.Outcome{StepID: s.ID, Version: s.Version, State: store.StepSynced, Health: "Healthy", Message: "synced"}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector("main").innerText.includes("1 synced, 0 in flight, 1 waiting, 0 failed")`,
		chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("the page did not follow the rollout: %v", err)
	}
	kept, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__noReload === 1`))
	if err != nil || !kept {
		t.Fatalf("the page was reloaded instead of updated (%v)", err)
	}
	t.Logf("page updated %s after the store changed, without a reload", time.Since(start).Round(time.Millisecond))

	// Keyboard: Tab reaches every link and control of the page.
	links, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("a[href], button, input:not([type=hidden])")).map(e => e.outerHTML)`))
	if err != nil {
		t.Fatal(err)
	}
	reached := map[string]bool{}
	for i := 0; i < len(links)+5; i++ {
		if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Tab)); err != nil {
			t.Fatal(err)
		}
		active, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement ? document.activeElement.outerHTML : ""`))
		if err != nil {
			t.Fatal(err)
		}
		reached[active] = true
	}
	for _, l := range links {
		if !reached[l] {
			t.Errorf("not reachable with Tab: %s", l)
		}
	}
	t.Logf("%d links reached with the keyboard", len(links))

	html, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS(`html`)))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(html, testToken) {
		t.Error("the page shows the token")
	}
	if golden.Updating() {
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](`document.activeElement.blur()`)); err != nil {
			t.Fatal(err)
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join("..", "..", "docs", "pictures", "fleet-view.png")
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", out)
	}
}
