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

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
