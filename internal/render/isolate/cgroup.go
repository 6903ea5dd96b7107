package isolate

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// cgroupRoot is where the kernel mounts cgroup v2 (the unified hierarchy).
const cgroupRoot = "/sys/fs/cgroup"

// cgroups places render workers in cgroup v2 child groups of the process's own cgroup, each with memory.max and
// cpu.max, where the machine runs cgroup v2 and the process may write its own cgroup (a delegated cgroup: a
// container runtime's or systemd's Delegate=yes). The kernel then caps a worker's whole memory (heap, stacks,
// mappings the Go heap watch does not see) and its CPU share. Elsewhere (cgroup v1, read-only) workers run under
// setrlimit alone, as they always do.
type cgroups struct {
	dir  string // the process's own cgroup directory: the workers' groups are made in it
	next atomic.Uint64
}

// detectCgroupV2 finds where workers' cgroups can be made: root must be a cgroup v2 mount (root/cgroup.controllers
// exists) that offers the memory and cpu controllers, self is /proc/self/cgroup ("0::/path" under v2), and the
// process's own cgroup directory must be writable. Otherwise why says, in a few words, what is missing.
func detectCgroupV2(root string, self []byte, writable func(dir string) bool) (dir, why string) {
	ctrl, err := os.ReadFile(filepath.Join(root, "cgroup.controllers"))
	if err != nil {
		return "", "no cgroup v2 (" + filepath.Join(root, "cgroup.controllers") + " is absent: cgroup v1)"
	}
	fields := strings.Fields(string(ctrl))
	for _, c := range []string{"memory", "cpu"} {
		if !slices.Contains(fields, c) {
			return "", "cgroup v2 without the " + c + " controller"
		}
	}
	path := ""
	for _, line := range strings.Split(string(self), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			path = rest
		}
	}
	if path == "" || !strings.HasPrefix(path, "/") {
		return "", "this process's cgroup v2 path is unknown (/proc/self/cgroup)"
	}
	dir = filepath.Join(root, filepath.FromSlash(path))
	if strings.Contains(path, "..") || !strings.HasPrefix(dir, filepath.Clean(root)) {
		return "", "this process's cgroup v2 path is not under " + root
	}
	if !writable(dir) {
		return "", "this process's cgroup " + dir + " is not writable (not delegated)"
	}
	return dir, ""
}

// setup enables the memory and cpu controllers for the children of c.dir. A cgroup with processes cannot give
// its children controllers (cgroup v2's "no internal processes" rule), so when the kernel says so (EBUSY), this
// process moves into a child group of its own, fleetwave, first.
func (c *cgroups) setup() error {
	control := filepath.Join(c.dir, "cgroup.subtree_control")
	if cur, err := os.ReadFile(control); err == nil && slices.Contains(strings.Fields(string(cur)), "memory") && slices.Contains(strings.Fields(string(cur)), "cpu") {
		return nil
	}
	err := writeFile(control, "+memory +cpu")
	if errors.Is(err, unix.EBUSY) {
		main := filepath.Join(c.dir, "fleetwave")
		if err := os.Mkdir(main, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		if err := writeFile(filepath.Join(main, "cgroup.procs"), strconv.Itoa(os.Getpid())); err != nil {
			return err
		}
		err = writeFile(control, "+memory +cpu")
	}
	return err
}

// group makes a worker's cgroup: memory.max at memory (no swap), cpu.max at one CPU. It returns the group's
// directory, open, for the worker's start (SysProcAttr.CgroupFD: the process starts in it), and its path.
func (c *cgroups) group(memory int64) (*os.File, string, error) {
	dir := filepath.Join(c.dir, fmt.Sprintf("fleetwave-worker-%d-%d", os.Getpid(), c.next.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, "", err
	}
	for _, f := range []struct {
		name, value string
		optional    bool
	}{
		{"memory.max", strconv.FormatInt(memory, 10), false},
		{"memory.swap.max", "0", true}, // absent without swap accounting
		{"cpu.max", "100000 100000", false},
	} {
		if err := writeFile(filepath.Join(dir, f.name), f.value); err != nil && !f.optional {
			_ = os.Remove(dir)
			return nil, "", fmt.Errorf("%s: %w", f.name, err)
		}
	}
	fd, err := os.Open(dir)
	if err != nil {
		_ = os.Remove(dir)
		return nil, "", err
	}
	return fd, dir, nil
}

// oomKilled reports whether the kernel killed a process of the group for its memory.max.
func oomKilled(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "memory.events"))
	if err != nil {
		return false
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if f := strings.Fields(string(line)); len(f) == 2 && f[0] == "oom_kill" && f[1] != "0" {
			return true
		}
	}
	return false
}

// newCgroups detects cgroup v2 under root (self: /proc/self/cgroup) and prepares the process's cgroup for
// workers' groups; nil, with why, where workers run under setrlimit alone.
func newCgroups(root, self string) (c *cgroups, why string) {
	b, _ := os.ReadFile(self)
	dir, why := detectCgroupV2(root, b, func(dir string) bool { return unix.Access(dir, unix.W_OK) == nil })
	if dir == "" {
		return nil, why
	}
	c = &cgroups{dir: dir}
	if err := c.setup(); err != nil {
		return nil, "cgroup v2 controllers could not be enabled in " + dir + ": " + err.Error()
	}
	return c, ""
}

// cgroupMemory is a worker's memory.max: as its address-space cap, room above the heap cap for the runtime.
func cgroupMemory(heap int64) int64 { return heap + heap/4 + 256<<20 }

func writeFile(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
