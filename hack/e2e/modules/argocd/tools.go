//go:build tools

// Package tools pins Argo CD's command (one binary dispatching on its name) for hack/e2e/build.sh.
package tools

import (
	_ "github.com/argoproj/argo-cd/v3/cmd"
)
