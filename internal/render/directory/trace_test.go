package directory

import (
	"context"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/render/repofs/repofstest"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
)

// TestJsonnetLongTracesAreShortened: a stack overflow's trace of repeated frames becomes one short line that keeps
// the message and the first frame and says how many frames were left out.
func TestJsonnetLongTracesAreShortened(t *testing.T) {
	tests := []struct {
		name, code string
		want       []string
	}{
		{"stack overflow", "local f(x) = f(x) + 1;\nf(1)\n", []string{"max stack frames exceeded", "app/m.jsonnet:1:14-18", "the same as this one"}},
		{"error in a deep call", "local f(n) = if n == 0 then error 'boom' else f(n - 1) + 1;\nf(40)\n", []string{"RUNTIME ERROR: boom", "app/m.jsonnet:1:29-41"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := filetest.Tree(t, map[string]string{"app/m.jsonnet": tt.code})
			_, err := Render(context.Background(), Input{FS: repofstest.Open(t, root), AppPath: "app"})
			if err == nil {
				t.Fatal("rendered")
			}
			msg := err.Error()
			if len(msg) > 300 || strings.Contains(msg, "\n") {
				t.Errorf("error is %d characters long, want one short line: %q", len(msg), msg)
			}
			for _, s := range tt.want {
				if !strings.Contains(msg, s) {
					t.Errorf("error %q does not mention %q", msg, s)
				}
			}
		})
	}
}
