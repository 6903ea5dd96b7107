package preview

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

// TestUnreadablePolicyIsAnInputError: a .fleetwave.yaml that is a symbolic link is refused, saying so, and the
// .fleetwave.yml beside it is not taken instead.
func TestUnreadablePolicyIsAnInputError(t *testing.T) {
	dir := exampleRepo(t)
	if err := os.WriteFile(filepath.Join(dir, ".fleetwave.yml"), []byte("apiVersion: fleetwave/v1\nwaves:\n  - name: all\n    selector: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, ".fleetwave.yaml")); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if err := os.Symlink(".fleetwave.yml", filepath.Join(dir, ".fleetwave.yaml")); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "policy as a link")
	_, err := Run(context.Background(), theRenderer(), Input{RepoDir: dir, Base: "main", Head: "change", Plan: true})
	var ie *InputError
	if !errors.As(err, &ie) || err.Error() != "reading .fleetwave.yaml: .fleetwave.yaml: not a regular file" {
		t.Fatalf("err = %v, want an InputError saying .fleetwave.yaml is not a regular file", err)
	}
}
