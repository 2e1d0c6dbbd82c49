package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStaleName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{fmt.Sprintf("%s%d-abc", Prefix, os.Getpid()), false}, // ours, alive
		{Prefix + "999999999-abc", true},                      // no such pid
		{Prefix + "supervisor", false},                        // not ward-<pid>-...
		{"other-123-abc", false},
		{Prefix + "x-abc", false},
	} {
		if got := stale(tc.name); got != tc.want {
			t.Errorf("stale(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestMissingControllers(t *testing.T) {
	if got := missingControllers("cpuset cpu io memory pids"); len(got) != 0 {
		t.Errorf("all enabled, missing = %v", got)
	}
	if got := strings.Join(missingControllers("cpu io"), " "); got != "memory pids" {
		t.Errorf("missing = %q, want memory pids", got)
	}
}

func TestReadKeyed(t *testing.T) {
	p := filepath.Join(t.TempDir(), "memory.events")
	if err := os.WriteFile(p, []byte("low 0\nhigh 0\nmax 12\noom 3\noom_kill 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := readKeyed(p)
	if err != nil || m["oom_kill"] != 1 || m["oom"] != 3 {
		t.Errorf("readKeyed = %v, %v", m, err)
	}
}

// TestNewSetsLimitsAndCleansUp creates a real cgroup on this host's layout.
func TestNewSetsLimitsAndCleansUp(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates a cgroup")
	}
	m, err := New(Resources{MemoryBytes: 64 << 20, CPUPercent: 50, Pids: 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Destroy() })
	var want map[string]string
	if m.Version() == 2 {
		want = map[string]string{"memory.max": "67108864", "memory.swap.max": "0", "cpu.max": "50000 100000", "pids.max": "7"}
	} else {
		want = map[string]string{"memory.limit_in_bytes": "67108864"}
	}
	for f, v := range want {
		b, err := os.ReadFile(filepath.Join(m.Path(), f))
		if err != nil || strings.TrimSpace(string(b)) != v {
			t.Errorf("%s = %q, %v; want %q", f, b, err, v)
		}
	}
	procs, err := m.OpenProcs()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range procs {
		f.Close()
	}
	if n, err := m.PidsCurrent(); err != nil || n != 0 {
		t.Errorf("PidsCurrent = %d, %v; want 0", n, err)
	}
	st, err := m.Stats()
	if err != nil || st.OOMKills != 0 {
		t.Errorf("Stats = %+v, %v", st, err)
	}
	if err := m.Destroy(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(m.Path()); !os.IsNotExist(err) {
		t.Errorf("%s still exists after Destroy", m.Path())
	}
}

// TestV1ControllersMountedTogether: where cpu and cpuacct are one
// hierarchy (cpu,cpuacct, as systemd mounts them), the sandbox's cgroup is
// one directory for both: created, opened and removed once.
func TestV1ControllersMountedTogether(t *testing.T) {
	shared := "/sys/fs/cgroup/cpu,cpuacct/self/ward-1-0"
	m := &v1{paths: map[string]string{"memory": "/sys/fs/cgroup/memory/self/ward-1-0", "cpu": shared, "cpuacct": shared, "pids": "/sys/fs/cgroup/pids/self/ward-1-0"}}
	if d := m.dirs(); len(d) != 3 || d[1] != shared {
		t.Errorf("dirs = %v, want memory, cpu,cpuacct and pids once each", d)
	}
	dir := filepath.Join(t.TempDir(), "ward-1-0")
	r := Resources{CPUPercent: 50}
	if err := makeCgroup(dir, v1Knobs("cpu", r)); err != nil {
		t.Fatal(err)
	}
	if err := writeKnobs(dir, v1Knobs("cpuacct", r)); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "cpu.cfs_quota_us")); err != nil || string(b) != "50000" {
		t.Errorf("cpu.cfs_quota_us = %q, %v", b, err)
	}
}
