// Package cli holds fleetwave's command-line interface: one file per command, each a thin layer that parses
// flags, calls the engine packages and prints their results. No business logic lives here.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"
)

// ExitError carries the process exit code a command wants: 1 for a policy/plan failure (or a diff found with
// --exit-code), 2 for a usage or input error. Any other error exits 2.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// usageErr marks err as a usage or input error (exit code 2).
func usageErr(err error) error { return &ExitError{Code: 2, Err: err} }

// Deps are the process-level things commands share: the output streams and the environment lookup.
// Commands receive them instead of reaching for os.Stdout or os.Getenv, so tests can run them in-process.
type Deps struct {
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	// Signals, when set, stands for the process's SIGINT and SIGTERM in commands that handle interrupts
	// themselves (rollout: the first interrupt pauses, the second exits); tests send on it. Nil: the real ones.
	Signals <-chan os.Signal
	// SetMemoryLimit, when set, is the process's soft memory limit (runtime/debug.SetMemoryLimit): the batch
	// commands lower it (memlimit.go). Nil in tests, which share their process.
	SetMemoryLimit func(int64) int64
	// SetGCPercent, when set, is the collector's GOGC (runtime/debug.SetGCPercent): `render --app` raises it
	// (memlimit.go). Nil in tests.
	SetGCPercent func(int) int
	// Now, when set, is the clock of the commands that print durations (status); nil: time.Now. Tests fix it.
	Now func() time.Time
}

// env is the environment variable key through d.Getenv, "" when there is no Getenv.
func (d *Deps) env(key string) string {
	if d == nil || d.Getenv == nil {
		return ""
	}
	return d.Getenv(key)
}

// NewRootCmd builds the fleetwave command tree.
func NewRootCmd(deps *Deps) *cobra.Command {
	root := &cobra.Command{
		Use:           "fleetwave",
		Short:         "Render, diff, plan and roll out Argo CD changes across a fleet, safely",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(deps.Stdout)
	root.SetErr(deps.Stderr)
	for _, add := range commands {
		root.AddCommand(add(deps))
	}
	return root
}

// commands lists the constructors of the sub-commands, in help order.
var commands = []func(*Deps) *cobra.Command{
	newDiffCmd,
	newPlanCmd,
	newRenderCmd,
	newValidateCmd,
	newServeCmd,
	newRolloutCmd,
	newStatusCmd,
	newArgocdSimCmd,
	newVersionCmd,
}

// Main runs the CLI with args and returns the process exit code. User errors are printed as one line.
// Everything every command writes, errors and logs included, goes through config.Redact: passwords of URLs,
// and the tokens and secrets given in flags or the environment, are masked.
func Main(ctx context.Context, args []string, deps *Deps) int {
	secrets := secretsOf(args, deps.Getenv)
	d := *deps
	d.Stdout = &redactingWriter{w: deps.Stdout, secrets: secrets}
	d.Stderr = &redactingWriter{w: deps.Stderr, secrets: secrets}
	deps = &d
	root := NewRootCmd(deps)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintf(deps.Stderr, "fleetwave: %v\n", err)
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return 2
}

// DefaultDeps are the real process streams and environment.
func DefaultDeps() *Deps {
	return &Deps{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, SetMemoryLimit: debug.SetMemoryLimit,
		SetGCPercent: debug.SetGCPercent}
}
