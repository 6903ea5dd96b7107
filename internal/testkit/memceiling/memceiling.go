// Package memceiling runs a test case in a child process of the test binary under a heap ceiling, so that a
// regression in a guard against hostile input (an alias bomb, a runaway render) fails the test instead of
// exhausting the shared machine's memory. Test support only.
package memceiling

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
)

const childEnv = "FLEETWAVE_MEMCEILING_CHILD"

// DefaultCeiling is the heap ceiling Run uses when given 0.
const DefaultCeiling = 1 << 30

// ChildTimeout bounds a child run, so that a guard that regresses into a loop fails too.
const ChildTimeout = 5 * time.Minute

// Run runs fn as the test t in a child process of the test binary whose live heap may not exceed ceiling bytes
// (0: DefaultCeiling): the child exits as soon as it does, and t fails with the child's output. fn's own failures
// fail t the same way. Call Run before any other work of t: the child re-runs t from its start.
func Run(t *testing.T, ceiling uint64, fn func(t *testing.T)) {
	t.Helper()
	if ceiling == 0 {
		ceiling = DefaultCeiling
	}
	if os.Getenv(childEnv) == t.Name() {
		stop := watch(ceiling)
		defer stop()
		fn(t)
		return
	}
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	cmd := exec.Command(os.Args[0], "-test.run="+strings.Join(parts, "/"), "-test.count=1", "-test.v", "-test.timeout="+ChildTimeout.String())
	cmd.Env = append(os.Environ(), childEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child run of %s failed (%v):\n%s", t.Name(), err, tail(out))
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()+" ") {
		t.Fatalf("child run of %s did not run it:\n%s", t.Name(), tail(out))
	}
}

// watch makes the garbage collector work against the ceiling and exits the process when the live heap passes it.
func watch(ceiling uint64) (stop func()) {
	old := debug.SetMemoryLimit(int64(ceiling) / 2)
	done := make(chan struct{})
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			metrics.Read(s)
			if s[0].Value.Kind() == metrics.KindUint64 && s[0].Value.Uint64() > ceiling {
				fmt.Fprintf(os.Stderr, "memceiling: heap passed the ceiling of %d bytes: the guard did not hold\n", ceiling)
				os.Exit(3)
			}
		}
	}()
	return func() {
		close(done)
		debug.SetMemoryLimit(old)
	}
}

func tail(b []byte) string {
	const n = 4000
	if len(b) > n {
		return "…" + string(b[len(b)-n:])
	}
	return string(b)
}
