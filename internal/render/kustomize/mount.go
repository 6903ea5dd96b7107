package kustomize

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/fleetwave/fleetwave/internal/render/repofs"
)

// RemoteFetcher returns the files of an allowed git repository at a revision (a remote base's ?ref=, "" for its
// default branch), or an error saying why not (not allowed, unreachable…).
type RemoteFetcher func(ctx context.Context, repoURL, revision string) (*repofs.FS, error)

// mountDir is where fetched remote bases appear in a build's view of the checkout. The name cannot collide with
// what kustomize would write, and a checkout directory of that name is shadowed, never read.
const mountDir = ".fleetwave-remote-bases"

// view is what a build reads: the checkout, with each fetched remote repository mounted at mountDir/<id>. Reads of
// the checkout are recorded by its recorder; a mounted repository's are not (they are not the checkout's files).
type view struct {
	main *repofs.FS

	mu     sync.Mutex
	mounts map[string]*repofs.FS // by id
}

func newView(main *repofs.FS) *view { return &view{main: main, mounts: map[string]*repofs.FS{}} }

// mount adds f and returns the repository-relative path it appears at.
func (v *view) mount(key string, f *repofs.FS) string {
	sum := sha256.Sum256([]byte(key))
	id := hex.EncodeToString(sum[:8])
	v.mu.Lock()
	v.mounts[id] = f
	v.mu.Unlock()
	return mountDir + "/" + id
}

// pick returns the file system rel is in and rel inside it.
func (v *view) pick(rel string) (*repofs.FS, string, string) {
	c := path.Clean(filepath.ToSlash(rel))
	rest, ok := strings.CutPrefix(c, mountDir+"/")
	if !ok {
		return v.main, c, ""
	}
	id, sub, _ := strings.Cut(rest, "/")
	v.mu.Lock()
	f := v.mounts[id]
	v.mu.Unlock()
	if f == nil {
		return v.main, c, ""
	}
	if sub == "" {
		sub = "."
	}
	return f, sub, mountDir + "/" + id
}

func (v *view) Resolve(rel string) (string, error) {
	f, sub, _ := v.pick(rel)
	return f.Resolve(sub)
}

// Rel maps an absolute path of the checkout or of a mounted repository to its path in the view.
func (v *view) Rel(abs string) (string, error) {
	v.mu.Lock()
	for id, f := range v.mounts {
		root := f.Root()
		if abs == root || strings.HasPrefix(abs, root+string(filepath.Separator)) {
			v.mu.Unlock()
			r, err := f.Rel(abs)
			if err != nil {
				return "", err
			}
			return path.Join(mountDir, id, r), nil
		}
	}
	v.mu.Unlock()
	return v.main.Rel(abs)
}

func (v *view) Stat(rel string) (fs.FileInfo, error) {
	f, sub, _ := v.pick(rel)
	return f.Stat(sub)
}

func (v *view) ReadFile(rel string) ([]byte, error) {
	f, sub, _ := v.pick(rel)
	return f.ReadFile(sub)
}

func (v *view) ReadDir(rel string) ([]fs.DirEntry, error) {
	f, sub, _ := v.pick(rel)
	return f.ReadDir(sub)
}

func (v *view) Exists(rel string) bool {
	f, sub, _ := v.pick(rel)
	return f.Exists(sub)
}

// Recorder is the checkout's recorder.
func (v *view) Recorder() *repofs.Recorder { return v.main.Recorder() }

// remoteBase is a kustomize remote base that names a git repository: its clone URL, the directory in it, and the
// ref to check out ("" for the default branch).
type remoteBase struct {
	repoURL string
	dir     string
	ref     string
}

// parseRemoteBase reads the remote-base forms kustomize's git.NewRepoSpecFromURL reads (api@v0.21.1
// internal/git/repospec.go) that name an https repository: an optional "git::" prefix (which kustomize strips),
// "https://host/org/repo//dir?ref=v1", "https://host/org/repo.git/dir?ref=", "https://host/org/_git/repo/dir"
// (Azure DevOps), "https://host/org/repo/dir" (the first two path segments are the repository) and the
// "github.com/org/repo/dir" shorthand (https://github.com/org/repo). ?version= is ?ref='s older name. Other
// schemes (ssh, scp-style, http, file) are not fetched: ok is false.
func parseRemoteBase(s string) (remoteBase, bool) {
	n, query, _ := strings.Cut(s, "?")
	if t, ok := trimFold(n, "git::"); ok {
		n = t
	}
	var host string
	switch {
	case hasFold(n, "https://"):
		rest := n[len("https://"):]
		i := strings.Index(rest, "/")
		if i <= 0 {
			return remoteBase{}, false
		}
		host, n = "https://"+rest[:i+1], rest[i+1:]
	case hasFold(n, "github.com/"):
		host, n = "https://github.com/", n[len("github.com/"):]
	default:
		return remoteBase{}, false
	}
	if strings.Contains(host, "@") {
		return remoteBase{}, false // credentials in the URL: never
	}
	var repoPath, dir string
	switch {
	case strings.Contains(n, "_git/"):
		i := strings.Index(n, "_git/")
		segs := strings.Split(n[i+len("_git/"):], "/")
		repoPath, dir = n[:i+len("_git/")]+segs[0], strings.Join(segs[1:], "/")
	case strings.Contains(n, "//"):
		i := strings.Index(n, "//")
		repoPath, dir = n[:i], n[i+2:]
	case strings.Contains(n, ".git"):
		i := strings.Index(n, ".git")
		repoPath, dir = n[:i+len(".git")], n[i+len(".git"):]
	default:
		segs := strings.Split(n, "/")
		if len(segs) < 2 {
			return remoteBase{}, false
		}
		repoPath, dir = strings.Join(segs[:2], "/"), strings.Join(segs[2:], "/")
	}
	dir = strings.Trim(dir, "/")
	if repoPath == "" {
		return remoteBase{}, false
	}
	if c := path.Clean("/" + dir); dir != "" && strings.TrimPrefix(c, "/") != dir {
		return remoteBase{}, false // "..", "." or doubled separators inside the directory
	}
	if dir == "" {
		dir = "."
	}
	vals, _ := url.ParseQuery(query)
	ref := vals.Get("version")
	if r := vals.Get("ref"); r != "" {
		ref = r
	}
	return remoteBase{repoURL: host + repoPath, dir: dir, ref: ref}, true
}

func hasFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

func trimFold(s, prefix string) (string, bool) {
	if hasFold(s, prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// mountRemote fetches the repository of a remote base and mounts it; it returns the base's directory in the view.
func (w *walker) mountRemote(rb remoteBase) (string, error) {
	key := rb.repoURL + "\x00" + rb.ref
	w.st.mountMu.Lock()
	defer w.st.mountMu.Unlock()
	at, ok := w.st.mounted[key]
	if !ok {
		f, err := w.st.in.Remote(w.ctx, rb.repoURL, rb.ref)
		if err != nil {
			return "", err
		}
		at = w.fs.repo.mount(key, f)
		w.st.mounted[key] = at
	}
	if rb.dir == "." {
		return at, nil
	}
	return at + "/" + rb.dir, nil
}

// remoteFailure is the refusal detail of a remote base that could not be fetched.
func remoteFailure(err error) string { return fmt.Sprintf("remote base not fetched: %v", err) }
