package gitfetchtest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

// Repo is a working repository whose branches and tags are pushed, after every change, to a bare repository
// "<name>" under a server's root.
type Repo struct {
	tb   testing.TB
	work string
	Bare string
}

// NewRepo starts an empty repository (branch main) published as root/name.
func NewRepo(tb testing.TB, root, name string) *Repo {
	tb.Helper()
	r := &Repo{tb: tb, work: filepath.Join(tb.TempDir(), "work"), Bare: filepath.Join(root, name)}
	if err := os.MkdirAll(r.work, 0o755); err != nil {
		tb.Fatal(err)
	}
	gittest.Run(tb, root, "init", "-q", "--bare", "-b", "main", r.Bare)
	gittest.Run(tb, r.work, "init", "-q", "-b", "main")
	gittest.Run(tb, r.work, "remote", "add", "origin", r.Bare)
	return r
}

// Commit writes files (an empty content removes the file), commits them on the current branch, publishes, and
// returns the commit id.
func (r *Repo) Commit(msg string, files map[string]string) string {
	r.tb.Helper()
	for name, content := range files {
		p := filepath.Join(r.work, filepath.FromSlash(name))
		if content == "" {
			if err := os.Remove(p); err != nil {
				r.tb.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			r.tb.Fatal(err)
		}
	}
	gittest.Run(r.tb, r.work, "add", "-A")
	gittest.Run(r.tb, r.work, "commit", "-q", "--allow-empty", "-m", msg)
	r.publish()
	return gittest.Run(r.tb, r.work, "rev-parse", "HEAD")
}

// Tag tags the current commit (annotated when msg is not empty) and publishes.
func (r *Repo) Tag(name, msg string) {
	r.tb.Helper()
	if msg != "" {
		gittest.Run(r.tb, r.work, "tag", "-a", "-m", msg, name)
	} else {
		gittest.Run(r.tb, r.work, "tag", name)
	}
	r.publish()
}

func (r *Repo) publish() {
	r.tb.Helper()
	gittest.Run(r.tb, r.work, "push", "-q", "--force", "origin", "refs/heads/*:refs/heads/*", "refs/tags/*:refs/tags/*")
}
