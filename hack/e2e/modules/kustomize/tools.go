//go:build tools

// Package tools pins the kustomize command for hack/e2e/build.sh.
package tools

import (
	_ "sigs.k8s.io/kustomize/kustomize/v5"
)
