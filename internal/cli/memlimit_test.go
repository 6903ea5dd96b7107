package cli

import "testing"

// The batch commands lower the soft memory limit and raise GOGC under it, each unless the environment sets it
// (GOGC only with the limit in place); without setters (tests) nothing.
func TestLimitBatchMemory(t *testing.T) {
	for _, tc := range []struct {
		name      string
		env       map[string]string
		setters   bool
		wantLimit int64
		wantGC    int
	}{
		{"default", nil, true, batchMemory, batchGCPercent},
		{"GOMEMLIMIT wins", map[string]string{"GOMEMLIMIT": "1GiB"}, true, -1, -2},
		{"GOGC wins", map[string]string{"GOGC": "100"}, true, batchMemory, -2},
		{"no setters", nil, false, -1, -2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limit, gc := int64(-1), -2
			deps := &Deps{Getenv: func(k string) string { return tc.env[k] }}
			if tc.setters {
				deps.SetMemoryLimit = func(n int64) int64 { limit = n; return 0 }
				deps.SetGCPercent = func(n int) int { gc = n; return 100 }
			}
			limitBatchMemory(deps)
			if limit != tc.wantLimit || gc != tc.wantGC {
				t.Fatalf("limit %d, GOGC %d; want %d, %d", limit, gc, tc.wantLimit, tc.wantGC)
			}
		})
	}
}

// diff and render --all set it through Deps, before any work.
func TestBatchCommandsLimitMemory(t *testing.T) {
	for _, args := range [][]string{
		{"diff", "--repo", t.TempDir(), "--base", "main"},
		{"render", "--all", "--repo", t.TempDir()},
	} {
		got := int64(-1)
		deps := &Deps{Stdout: &discard{}, Stderr: &discard{}, Getenv: func(string) string { return "" },
			SetMemoryLimit: func(n int64) int64 { got = n; return 0 }}
		Main(t.Context(), args, deps) // not a git repository: fails after setting the limit
		if got != batchMemory {
			t.Errorf("%v: limit %d, want %d", args, got, batchMemory)
		}
	}
}

// render --app raises GOGC and sets its soft memory limit, each unless the environment sets it; without
// setters (tests) nothing; render --all takes the batch settings.
func TestLoosenRenderGC(t *testing.T) {
	for _, tc := range []struct {
		name      string
		env       map[string]string
		setters   bool
		wantGC    int
		wantLimit int64
	}{
		{"default", nil, true, renderGCPercent, renderMemory},
		{"GOGC wins", map[string]string{"GOGC": "100"}, true, -2, renderMemory},
		{"GOMEMLIMIT wins", map[string]string{"GOMEMLIMIT": "1GiB"}, true, renderGCPercent, -1},
		{"no setters", nil, false, -2, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gc, limit := -2, int64(-1)
			deps := &Deps{Stdout: &discard{}, Stderr: &discard{}, Getenv: func(k string) string { return tc.env[k] }}
			if tc.setters {
				deps.SetGCPercent = func(n int) int { gc = n; return 100 }
				deps.SetMemoryLimit = func(n int64) int64 { limit = n; return 0 }
			}
			Main(t.Context(), []string{"render", "--app", t.TempDir() + "/missing.yaml"}, deps) // fails after setting them
			if gc != tc.wantGC || limit != tc.wantLimit {
				t.Fatalf("GOGC %d, limit %d; want %d, %d", gc, limit, tc.wantGC, tc.wantLimit)
			}
		})
	}
	gc := -2
	deps := &Deps{Stdout: &discard{}, Stderr: &discard{}, Getenv: func(string) string { return "" },
		SetGCPercent: func(n int) int { gc = n; return 100 }, SetMemoryLimit: func(int64) int64 { return 0 }}
	Main(t.Context(), []string{"render", "--all", "--repo", t.TempDir()}, deps)
	if gc != batchGCPercent {
		t.Errorf("render --all set GOGC %d, want %d", gc, batchGCPercent)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
