package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"

	"github.com/fleetwave/fleetwave/internal/config"
	"github.com/fleetwave/fleetwave/internal/preview"
	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/render/isolate"
)

// newRenderer returns the renderer of a command that renders repository content (diff, plan, rollout,
// render-all): worker processes of this binary (internal/render/isolate), each killed at the time cap and capped
// in memory, unless FLEETWAVE_RENDER_WORKERS=0 asks for rendering in this process. The CLI isolates too: its
// input is a pull request's content in CI as much as the App's, and the cost is within a few percent. A binary
// that cannot start workers (a test binary without isolate.WorkerMain) renders in-process. workers caps the pool
// (0: FLEETWAVE_RENDER_WORKERS, else GOMAXPROCS). close ends the workers; mode says which it is, for logs. What
// the workers' libraries print (Kustomize's deprecation warnings) goes to log, each distinct line once
// (isolate.Options.Log); rendering in-process, it goes where those libraries write it. The pool's settings are
// config.Render's, read from getenv by config.LoadCLI (docs/configuration.md).
func newRenderer(getenv func(string) string, log *slog.Logger, opts render.Options, workers int) (r preview.Renderer, close func(), mode string, err error) {
	cfg, err := config.LoadCLI(getenv)
	if err != nil {
		return nil, nil, "", err
	}
	return newSharedRenderer(cfg.Render, log, opts, workers, false, 0)
}

// newAppRenderer is render --app's newRenderer: one worker, which keeps nothing for a next render
// (render.Options.OneRender) and whose collector runs at renderGCPercent as the command's own does (memlimit.go),
// unless GOGC sets it (the worker inherits the environment).
func newAppRenderer(getenv func(string) string, log *slog.Logger, opts render.Options) (r preview.Renderer, close func(), mode string, err error) {
	cfg, err := config.LoadCLI(getenv)
	if err != nil {
		return nil, nil, "", err
	}
	gc := renderGCPercent
	if getenv != nil && getenv("GOGC") != "" {
		gc = 0
	}
	opts.OneRender = true
	return newSharedRenderer(cfg.Render, log, opts, 1, false, gc)
}

// toolLog is the log of a command that is not serve: warnings and above, as text lines on w.
func toolLog(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// newServeRenderer is serve's newRenderer: its pool is shared by the installations, each holding at most
// cfg.Share workers at once (FLEETWAVE_RENDER_SHARE; default: all but one, at least one), so that one
// installation whose renders all run to the time cap still leaves a worker to the others.
func newServeRenderer(cfg config.Render, log *slog.Logger, opts render.Options) (r preview.Renderer, close func(), mode string, err error) {
	return newSharedRenderer(cfg, log, opts, 0, true, 0)
}

func newSharedRenderer(cfg config.Render, log *slog.Logger, opts render.Options, workers int, shared bool, gcPercent int) (r preview.Renderer, close func(), mode string, err error) {
	if cfg.Timeout > 0 && opts.Limits.Timeout <= 0 {
		opts.Limits.Timeout = cfg.Timeout
	}
	inProcess := func(why string) (preview.Renderer, func(), string, error) {
		return render.New(opts), func() {}, "in-process (" + why + ")", nil
	}
	switch {
	case cfg.InProcess:
		return inProcess(config.EnvRenderWorkers + "=0")
	case !isolate.Available():
		return inProcess("this binary cannot start render workers")
	}
	if cfg.Workers > 0 && (workers <= 0 || cfg.Workers < workers) {
		workers = cfg.Workers
	}
	share := 0
	if shared {
		share = cfg.Share
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if shared && share == 0 {
		share = max(1, workers-1)
	}
	var changeOutput int64
	if shared {
		changeOutput = cfg.ChangeOutput
	}
	memory := cfg.MemoryBytes
	pool, err := isolate.New(isolate.Options{Render: opts, Workers: workers, MemoryBytes: memory, Share: share, ChangeOutput: changeOutput, Log: log, GCPercent: gcPercent})
	if err != nil {
		return nil, nil, "", err
	}
	if memory <= 0 {
		memory = isolate.DefaultMemoryBytes
	}
	mode = fmt.Sprintf("%d worker processes, %s of memory each", pool.Workers(), isolate.FormatBytes(memory))
	if shared {
		mode += fmt.Sprintf(", at most %d per installation, %s of manifests per change", pool.Share(), isolate.FormatBytes(pool.ChangeOutput()))
	}
	mode += "; kernel limits: " + pool.Isolation()
	if !shared {
		// A command renders soon after it starts: its workers start now, while it reads the repository, instead
		// of on the first render (40 CPU-ms and more of wall time each). A failure to start is the first
		// render's to report; serve prestarts its own pool and says so.
		go func() { _ = pool.Prestart(context.Background()) }()
	}
	return pool, func() { _ = pool.Close() }, mode, nil
}
