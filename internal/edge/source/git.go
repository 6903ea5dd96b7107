package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/fleetwave/fleetwave/internal/kit/text"
)

// ErrNotRepository is returned by Open when the directory is not in a git repository.
var ErrNotRepository = errors.New("not a git repository")

// ErrUnknownRevision is returned when a revision does not name a commit of the repository.
var ErrUnknownRevision = errors.New("unknown revision")

// Repo is a local git repository driven through the git CLI. It is safe for concurrent use.
type Repo struct {
	dir  string // the directory git runs in (top level of a working copy, or the bare repository)
	bare bool
	git  string // path of the git binary
}

// safetyConfig is passed to every git process. Hooks never run, no program configured by repository attributes
// runs, and git never waits for a terminal.
var safetyConfig = []string{
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.fsmonitor=false",
	"-c", "core.untrackedCache=false",
	"-c", "diff.external=",
	"-c", "protocol.allow=never",
	"-c", "protocol.file.allow=never",
	"--no-pager",
	"--no-replace-objects",
}

// Open returns the repository dir is in: the top level of the working copy that holds dir (as git finds it from
// a subdirectory), or the bare repository dir.
func Open(ctx context.Context, dir string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("opening repository %s: %w", dir, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("opening repository %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("opening repository %s: %w (not a directory)", dir, ErrNotRepository)
	}
	gitBin, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("opening repository %s: git is not installed: %w", dir, err)
	}
	r := &Repo{dir: abs, git: gitBin}
	// One process: "true"/"false", then (in a working copy) its top level. A directory inside a working copy
	// opens the working copy, as git itself does.
	// Only this lookup may search the parent directories (every later git process is bounded by the top level).
	discover := func(args ...string) ([]byte, error) {
		cmd := r.command(ctx, args...)
		cmd.Env = gitEnv("")
		return cmd.Output()
	}
	out, err := discover("rev-parse", "--is-bare-repository", "--show-toplevel")
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// In a bare repository --show-toplevel fails; ask again without it.
		if out, err = discover("rev-parse", "--is-bare-repository"); err != nil {
			return nil, fmt.Errorf("opening repository %s: %w", dir, ErrNotRepository)
		}
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	r.bare = strings.TrimSpace(lines[0]) == "true"
	if !r.bare {
		if len(lines) < 2 || strings.TrimSpace(lines[1]) == "" {
			// Inside a .git directory, say: not a working copy git can show files of.
			return nil, fmt.Errorf("opening repository %s: %w", dir, ErrNotRepository)
		}
		r.dir = filepath.Clean(strings.TrimSpace(lines[1]))
	}
	return r, nil
}

// Dir is the repository directory.
func (r *Repo) Dir() string { return r.dir }

// Resolve returns the full commit id that rev (a branch, tag, sha or expression) names.
func (r *Repo) Resolve(ctx context.Context, rev string) (string, error) {
	if rev == "" || strings.HasPrefix(rev, "-") || strings.ContainsAny(rev, "\x00\n") {
		return "", fmt.Errorf("resolving revision %q: %w", rev, ErrUnknownRevision)
	}
	out, err := r.run(ctx, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("resolving revision %q in %s: %w", rev, r.dir, ErrUnknownRevision)
	}
	return strings.TrimSpace(string(out)), nil
}

// Revisions resolves the two sides of a change at once: the commits base and head name, and head's tree.
// Errors are Resolve's, naming the side that failed.
func (r *Repo) Revisions(ctx context.Context, base, head string) (baseSHA, headSHA, headTree string, err error) {
	for _, rev := range []string{base, head} {
		if rev == "" || strings.HasPrefix(rev, "-") || strings.ContainsAny(rev, "\x00\n") {
			_, err = r.Resolve(ctx, rev)
			return "", "", "", err
		}
	}
	out, err := r.run(ctx, nil, "rev-parse", base+"^{commit}", head+"^{commit}", head+"^{tree}", "--")
	lines := strings.Fields(string(out))
	if len(lines) > 0 && lines[len(lines)-1] == "--" {
		lines = lines[:len(lines)-1]
	}
	if err != nil || len(lines) != 3 {
		// Say precisely which one is wrong.
		if _, err := r.Resolve(ctx, base); err != nil {
			return "", "", "", fmt.Errorf("base: %w", err)
		}
		if _, err := r.Resolve(ctx, head); err != nil {
			return "", "", "", fmt.Errorf("head: %w", err)
		}
		return "", "", "", fmt.Errorf("resolving %s and %s: %w", base, head, ErrUnknownRevision)
	}
	return lines[0], lines[1], lines[2], nil
}

// TreeOf returns the tree id of a commit.
func (r *Repo) TreeOf(ctx context.Context, commit string) (string, error) {
	out, err := r.run(ctx, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", commit+"^{tree}")
	if err != nil {
		return "", fmt.Errorf("reading tree of %s: %w", text.Short(commit, 12), ErrUnknownRevision)
	}
	return strings.TrimSpace(string(out)), nil
}

// MergeBase returns the best common ancestor of a and b, or "" when they share no history.
func (r *Repo) MergeBase(ctx context.Context, a, b string) (string, error) {
	out, err := r.run(ctx, nil, "merge-base", "--end-of-options", a, b)
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) && ee.code == 1 {
			return "", nil
		}
		return "", fmt.Errorf("finding merge base of %s and %s: %w", text.Short(a, 12), text.Short(b, 12), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// MergedHead returns the tree that merging head into base produces (what GitHub tests as the pull request's
// merge commit). When base is an ancestor of head it is simply head's tree. conflicted reports a merge with
// conflicts: the caller should then fall back to head's own tree.
func (r *Repo) MergedHead(ctx context.Context, base, head string) (tree string, merged, conflicted bool, err error) {
	return r.mergedHead(ctx, base, head, "")
}

// MergedHeadTree is MergedHead when head's tree is already known.
func (r *Repo) MergedHeadTree(ctx context.Context, base, head, headTree string) (tree string, merged, conflicted bool, err error) {
	return r.mergedHead(ctx, base, head, headTree)
}

func (r *Repo) mergedHead(ctx context.Context, base, head, headTree string) (tree string, merged, conflicted bool, err error) {
	mb, err := r.MergeBase(ctx, base, head)
	if err != nil {
		return "", false, false, err
	}
	if mb == "" && r.Shallow(ctx) {
		// git would merge the two as unrelated histories: the history between them was not fetched.
		return "", false, false, fmt.Errorf("%w: %s and %s share no fetched history", ErrShallow, text.Short(base, 12), text.Short(head, 12))
	}
	if mb == base {
		if headTree != "" {
			return headTree, false, false, nil
		}
		t, err := r.TreeOf(ctx, head)
		return t, false, false, err
	}
	out, err := r.run(ctx, nil, "merge-tree", "--write-tree", "--no-messages", base, head)
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) && ee.code == 1 {
			t, err := r.TreeOf(ctx, head)
			return t, false, true, err
		}
		return "", false, false, fmt.Errorf("merging %s into %s: %w", text.Short(head, 12), text.Short(base, 12), err)
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line), true, false, nil
}

// OriginURL returns the URL of the "origin" remote, or "" when there is none.
func (r *Repo) OriginURL(ctx context.Context) (string, error) {
	out, err := r.run(ctx, nil, "config", "--get", "remote.origin.url")
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) && ee.code == 1 {
			return "", nil
		}
		return "", fmt.Errorf("reading origin remote: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// exitError is a git process that ran and exited non-zero.
type exitError struct {
	args   []string
	code   int
	stderr string
}

func (e *exitError) Error() string {
	msg := strings.TrimSpace(e.stderr)
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if msg == "" {
		msg = fmt.Sprintf("exit status %d", e.code)
	}
	return fmt.Sprintf("git %s: %s", e.args[0], msg)
}

// command builds a git command with the safety configuration and a scrubbed environment.
func (r *Repo) command(ctx context.Context, args ...string) *exec.Cmd {
	full := make([]string, 0, len(safetyConfig)+2+len(args))
	full = append(full, "-C", r.dir)
	full = append(full, safetyConfig...)
	full = append(full, args...)
	cmd := exec.CommandContext(ctx, r.git, full...)
	cmd.Env = gitEnv(filepath.Dir(r.dir))
	return cmd
}

// run executes git and returns its standard output.
func (r *Repo) run(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	cmd := r.command(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, &exitError{args: args, code: ee.ExitCode(), stderr: stderr.String()}
		}
		return nil, fmt.Errorf("running git %s: %w", args[0], err)
	}
	return stdout.Bytes(), nil
}

// gitEnv is the process environment without the GIT_* variables that could point git at another repository or
// change its behaviour, plus the settings that keep it non-interactive and bounded to the repository directory.
func gitEnv(ceiling string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GIT_") {
			continue
		}
		env = append(env, kv)
	}
	if ceiling != "" {
		env = append(env, "GIT_CEILING_DIRECTORIES="+ceiling)
	}
	return append(env,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_NO_REPLACE_OBJECTS=1",
		"GIT_ATTR_NOSYSTEM=1",
		"LC_ALL=C",
	)
}

// IsFullSHA reports whether s is a whole commit id as git and Argo CD write it: 40 (SHA-1) or 64 (SHA-256)
// lower-case hexadecimal digits, never an abbreviation.
func IsFullSHA(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return true
}
