package isolate

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A temporary directory stands in for the cgroup file system: the kernel's files are plain files there, so the
// tests see what detection reads and what the pool writes. Whether the kernel then enforces them is its part;
// this machine and CI run cgroup v1, where TestCgroupV2OnThisMachine shows workers run under setrlimit alone.

func TestDetectCgroupV2(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]string // under the stand-in root
		readOnly bool              // the process's own cgroup directory is not writable (access(2) says so)
		self     string            // /proc/self/cgroup
		wantDir  string            // relative to the root; "" for none
		why      string
	}{
		{name: "cgroup v1", files: map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712"},
			self: "9:memory:/\n0::/\n", why: "cgroup v1"},
		{name: "v2 with memory and cpu, delegated", files: map[string]string{"cgroup.controllers": "cpuset cpu io memory pids\n",
			"svc/fleetwave.service/cgroup.procs": "1\n"}, self: "0::/svc/fleetwave.service\n", wantDir: "svc/fleetwave.service"},
		{name: "v2 without the memory controller", files: map[string]string{"cgroup.controllers": "cpu io pids\n"},
			self: "0::/\n", why: "without the memory controller"},
		{name: "v2 without the cpu controller", files: map[string]string{"cgroup.controllers": "memory pids\n"},
			self: "0::/\n", why: "without the cpu controller"},
		{name: "v2 not delegated", files: map[string]string{"cgroup.controllers": "cpu memory\n", "svc/cgroup.procs": "1\n"},
			readOnly: true, self: "0::/svc\n", why: "is not writable"},
		{name: "hybrid: no v2 line", files: map[string]string{"cgroup.controllers": "cpu memory\n"},
			self: "4:memory:/x\n", why: "path is unknown"},
		{name: "a path out of the mount", files: map[string]string{"cgroup.controllers": "cpu memory\n"},
			self: "0::/../etc\n", why: "not under"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for rel, c := range tc.files {
				p := filepath.Join(root, rel)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			writable := func(dir string) bool { return !tc.readOnly }
			dir, why := detectCgroupV2(root, []byte(tc.self), writable)
			want := ""
			if tc.wantDir != "" {
				want = filepath.Join(root, tc.wantDir)
			}
			if dir != want || (tc.why != "" && !strings.Contains(why, tc.why)) || (tc.why == "" && why != "") {
				t.Errorf("detectCgroupV2 = %q, %q; want %q, a reason with %q", dir, why, want, tc.why)
			}
		})
	}
}

// TestCgroupGroups: the controllers are enabled for the children of the process's cgroup, and each worker's group
// gets memory.max and cpu.max; a group is removed with its worker.
func TestCgroupGroups(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "svc")
	for rel, c := range map[string]string{"cgroup.controllers": "cpu memory pids\n", "svc/cgroup.subtree_control": ""} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, rel), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	self := filepath.Join(root, "self-cgroup")
	if err := os.WriteFile(self, []byte("0::/svc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, why := newCgroups(root, self)
	if c == nil {
		t.Fatalf("no cgroups: %s", why)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control")); string(b) != "+memory +cpu" {
		t.Errorf("cgroup.subtree_control = %q", b)
	}
	heap := int64(512 << 20)
	fd, group, err := c.group(cgroupMemory(heap))
	if err != nil {
		t.Fatal(err)
	}
	fd.Close()
	if filepath.Dir(group) != dir || !strings.HasPrefix(filepath.Base(group), "fleetwave-worker-"+strconv.Itoa(os.Getpid())+"-") {
		t.Errorf("group %s: not a worker's group in %s", group, dir)
	}
	for file, want := range map[string]string{"memory.max": strconv.FormatInt(heap+heap/4+256<<20, 10), "memory.swap.max": "0", "cpu.max": "100000 100000"} {
		if b, err := os.ReadFile(filepath.Join(group, file)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", file, b, err, want)
		}
	}
	if oomKilled(group) {
		t.Error("oomKilled without memory.events")
	}
	if err := os.WriteFile(filepath.Join(group, "memory.events"), []byte("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !oomKilled(group) {
		t.Error("memory.events says oom_kill 1: not seen")
	}
	// The kernel's group is empty once its process is reaped; the stand-in's files are removed first.
	for _, f := range []string{"memory.max", "memory.swap.max", "cpu.max", "memory.events"} {
		_ = os.Remove(filepath.Join(group, f))
	}
	w := &worker{cgroup: group}
	w.removeCgroup()
	if _, err := os.Stat(group); !os.IsNotExist(err) {
		t.Errorf("the group is left: %v", err)
	}
}

// TestCgroupV2OnThisMachine says which path the pool takes here; the log line of serve says the same.
func TestCgroupV2OnThisMachine(t *testing.T) {
	c, why := newCgroups(cgroupRoot, "/proc/self/cgroup")
	_, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers"))
	switch {
	case err != nil && c != nil:
		t.Fatalf("cgroups detected without %s/cgroup.controllers", cgroupRoot)
	case c != nil:
		t.Logf("workers run in cgroup v2 groups under %s", c.dir)
	default:
		t.Logf("workers run under setrlimit alone: %s", why)
	}
}
