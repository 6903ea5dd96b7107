// Package repofstest opens test directories as confined checkouts (repofs.FS) for the renderers' tests. It is
// imported by tests only.
package repofstest

import (
	"testing"

	"github.com/fleetwave/fleetwave/internal/render/repofs"
)

// Open is dir as a checkout with the default per-file size limit and a fresh Recorder of what is read, as the
// renderers get one; it fails tb when dir cannot be opened.
func Open(tb testing.TB, dir string) *repofs.FS {
	tb.Helper()
	fsys, err := repofs.New(dir, 0)
	if err != nil {
		tb.Fatal(err)
	}
	return fsys.WithRecorder(&repofs.Recorder{})
}
