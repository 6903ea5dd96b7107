// Command fleetwave (built as bin/fleetwave) is the fleetwave CLI and GitHub App server.
package main

import (
	"context"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"

	// For its init: kubectl's translation catalogue is not loaded at start-up (see the package).
	_ "github.com/fleetwave/fleetwave/cmd/bot/internal/startup"
	"github.com/fleetwave/fleetwave/internal/cli"
	"github.com/fleetwave/fleetwave/internal/render/isolate"
)

func main() {
	// A render worker is this binary started by internal/render/isolate: it serves renders and exits here.
	isolate.WorkerMain()
	// Kustomize's API prints deprecation warnings ("'commonLabels' is deprecated…") through the standard logger
	// while it builds PR content; they are about the user's kustomization, not fleetwave, and would interleave
	// with the command's output. fleetwave itself logs with log/slog.
	log.SetOutput(io.Discard)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.DefaultDeps())
	stop()
	os.Exit(code)
}
