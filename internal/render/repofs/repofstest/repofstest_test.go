package repofstest

import (
	"slices"
	"testing"

	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
)

func TestOpenRecordsReads(t *testing.T) {
	fsys := Open(t, filetest.Tree(t, map[string]string{"apps/a.yaml": "a: 1\n", "apps/b.yaml": "b: 1\n"}))
	for _, tc := range []struct{ name, want string }{
		{"apps/a.yaml", "a: 1\n"},
		{"apps/b.yaml", "b: 1\n"},
	} {
		b, err := fsys.ReadFile(tc.name)
		if err != nil || string(b) != tc.want {
			t.Errorf("%s: %q (%v), want %q", tc.name, b, err, tc.want)
		}
	}
	if fsys.Recorder() == nil {
		t.Fatal("no recorder")
	}
	if got := fsys.Recorder().Files(); !slices.Contains(got, "apps/a.yaml") || !slices.Contains(got, "apps/b.yaml") {
		t.Errorf("recorded %v, want both files", got)
	}
}
