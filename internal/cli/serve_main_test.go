package cli

import (
	"os"
	"testing"

	"github.com/fleetwave/fleetwave/internal/render/isolate"
)

// TestMain lets the test binary be its own render worker, as the real binary is (cmd/bot calls
// isolate.WorkerMain first thing): the commands under test (serve, diff, plan, rollout, render) render in
// worker processes, killed at their caps, not in the test process.
func TestMain(m *testing.M) {
	isolate.WorkerMain()
	os.Exit(m.Run())
}
