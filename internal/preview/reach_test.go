package preview

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/fleetwave/fleetwave/internal/discover"
	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/testkit/sharedtest"
)

// assertReachCoversReads renders every app of an inventory and checks that each file the render read (and
// each directory it listed) lies in the app's reach: the premise on which apps the change cannot reach are
// not rendered. It returns the number of apps checked.
func assertReachCoversReads(t *testing.T, root string, inv *discover.Inventory, s render.Settings) (n, files int) {
	t.Helper()
	for _, a := range inv.Apps() {
		reach := inv.Reach(a)
		res, err := theRenderer().Render(context.Background(), render.Request{
			App:      a.App,
			Repos:    func(string) (string, bool) { return root, true },
			Settings: s,
		})
		if err != nil {
			if !errors.Is(err, render.ErrExternalSource) {
				t.Logf("%s: not rendered: %v", a.Key, err)
			}
			continue
		}
		n++
		if reach.Unbounded() {
			continue
		}
		files += len(res.ReadFiles)
		for _, f := range res.ReadFiles {
			if !reach.Touches([]string{f}) {
				t.Errorf("%s: the render read %s, outside the app's reach", a.Key, f)
			}
		}
		for _, d := range res.ReadDirs {
			if d != "." && !reach.Touches([]string{d}) {
				t.Errorf("%s: the render listed %s, outside the app's reach", a.Key, d)
			}
		}
	}
	return n, files
}

func TestReachCoversWhatTheExampleFleetReads(t *testing.T) {
	root, err := filepath.Abs("../../examples/fleet")
	if err != nil {
		t.Fatal(err)
	}
	inv := discover.Discover(discover.Options{Root: root, IsThisRepo: func(string) bool { return true }})
	if n, files := assertReachCoversReads(t, root, inv, render.DefaultSettings()); n < 20 || files < 100 {
		t.Fatalf("only %d apps rendered, %d read files checked", n, files)
	}
}

// TestReachCoversWhatTheFidelityCorpusReads runs the same check over the render-fidelity corpus: real public
// charts and Kustomize trees (sharedtest.Fidelity: skipped with one line on a clone, a failure when
// FLEETWAVE_REQUIRE_SHARED=1 and the corpus is absent or incomplete).
func TestReachCoversWhatTheFidelityCorpusReads(t *testing.T) {
	total, files := 0, 0
	for _, dir := range sharedtest.FidelityCaseDirs(t) {
		s := render.DefaultSettings()
		if env := filepath.Join(dir, "render-env.yaml"); fileExists(env) {
			var err error
			if s, err = render.LoadSettings(env); err != nil {
				t.Fatal(err)
			}
		}
		inv := discover.Discover(discover.Options{Root: dir, IsThisRepo: func(string) bool { return true }})
		n, f := assertReachCoversReads(t, dir, inv, s)
		total, files = total+n, files+f
	}
	if total < 30 || files < 500 {
		t.Fatalf("only %d corpus cases rendered, %d read files checked", total, files)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
