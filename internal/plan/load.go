package plan

import (
	"errors"
	"io/fs"
)

// PolicyFiles are the names the release policy may have at the repository root, in order of preference.
func PolicyFiles() []string { return []string{DefaultPolicyFile, ".fleetwave.yml"} }

// IsPolicyFile reports whether name is one of PolicyFiles (a Plan's Policy names its file, or "default").
func IsPolicyFile(name string) bool {
	for _, f := range PolicyFiles() {
		if f == name {
			return true
		}
	}
	return false
}

// Load finds and parses the release policy of a repository revision. read returns a file at the root of the
// revision, and an error wrapping fs.ErrNotExist when there is none; Load takes the first of PolicyFiles that
// read finds. It returns the policy and its file, or DefaultPolicy and "" when there is no policy file.
//
// An error of read other than absence (a symbolic link, an unreadable blob) is returned as read returned it
// (the reader says what failed), and a policy that does not parse as ParsePolicy's *PolicyError; file names
// the file either way. Load does no I/O of its own: each caller hands it the reader of its revision (a
// checkout, the clone cache, git).
func Load(read func(name string) ([]byte, error)) (policy *Policy, file string, err error) {
	for _, name := range PolicyFiles() {
		data, err := read(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, name, err
		}
		p, err := ParsePolicy(name, data)
		if err != nil {
			return nil, name, err
		}
		return p, name, nil
	}
	return DefaultPolicy(), "", nil
}
