package source

import (
	"bytes"
	"context"
	"fmt"
	"sort"

	"github.com/fleetwave/fleetwave/internal/kit/text"
)

// Change is one file a change touches.
type Change struct {
	// Status is git's letter: A added, M modified, D deleted, R renamed, C copied, T type changed.
	Status string `json:"status"`
	// Path is the file's repository-relative slash path after the change (before it, for a deletion).
	Path string `json:"path"`
	// OldPath is the path before a rename or copy.
	OldPath string `json:"oldPath,omitempty"`
}

// ChangedFiles lists the files that differ between two tree-ishes (commits or trees), detecting renames.
func (r *Repo) ChangedFiles(ctx context.Context, from, to string) ([]Change, error) {
	out, err := r.run(ctx, nil, "diff-tree", "-r", "-z", "--name-status", "-M", "--no-ext-diff", "--no-textconv",
		"--no-commit-id", "--end-of-options", from, to)
	if err != nil {
		return nil, fmt.Errorf("listing changed files %s..%s: %w", text.Short(from, 12), text.Short(to, 12), err)
	}
	return parseNameStatus(out)
}

// parseNameStatus parses `git diff-tree -z --name-status` output: "<status>\0<path>\0", or for renames and
// copies "<R|C><score>\0<old>\0<new>\0".
func parseNameStatus(out []byte) ([]Change, error) {
	out = bytes.TrimSuffix(out, []byte{0})
	if len(out) == 0 {
		return nil, nil
	}
	fields := bytes.Split(out, []byte{0})
	var changes []Change
	for i := 0; i < len(fields); {
		st := string(fields[i])
		if st == "" {
			return nil, fmt.Errorf("parsing git diff-tree output: empty status at field %d", i)
		}
		letter := st[:1]
		switch letter {
		case "R", "C":
			if i+2 >= len(fields) {
				return nil, fmt.Errorf("parsing git diff-tree output: truncated %s entry", letter)
			}
			changes = append(changes, Change{Status: letter, OldPath: string(fields[i+1]), Path: string(fields[i+2])})
			i += 3
		default:
			if i+1 >= len(fields) {
				return nil, fmt.Errorf("parsing git diff-tree output: truncated %s entry", letter)
			}
			changes = append(changes, Change{Status: letter, Path: string(fields[i+1])})
			i += 2
		}
	}
	sort.Slice(changes, func(a, b int) bool { return changes[a].Path < changes[b].Path })
	return changes, nil
}

// Paths returns every path a set of changes touches, old and new names of renames included, sorted and unique.
func Paths(changes []Change) []string {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, c := range changes {
		add(c.Path)
		add(c.OldPath)
	}
	sort.Strings(out)
	return out
}
