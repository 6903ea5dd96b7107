package cli

import "testing"

// The batch commands lower the soft memory limit, unless GOMEMLIMIT sets one; without a setter (tests) nothing.
func TestLimitBatchMemory(t *testing.T) {
	for _, tc := range []struct {
		name      string
		gomemlim  string
		setter    bool
		wantLimit int64
	}{
		{"default", "", true, batchMemory},
		{"GOMEMLIMIT wins", "1GiB", true, -1},
		{"no setter", "", false, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := int64(-1)
			deps := &Deps{Getenv: func(k string) string {
				if k == "GOMEMLIMIT" {
					return tc.gomemlim
				}
				return ""
			}}
			if tc.setter {
				deps.SetMemoryLimit = func(n int64) int64 { got = n; return 0 }
			}
			limitBatchMemory(deps)
			if got != tc.wantLimit {
				t.Fatalf("limit %d, want %d", got, tc.wantLimit)
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
// setters (tests) nothing; render --all keeps the batch limit alone.
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
	if gc != -2 {
		t.Errorf("render --all set GOGC %d", gc)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
