package cgroup

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// v1Root is where the v1 hierarchies are mounted, one per controller.
const v1Root = "/sys/fs/cgroup"

// v1Controllers are the hierarchies a sandbox joins; the others (cpuset,
// blkio, devices, freezer, ...) are left alone.
var v1Controllers = []string{"memory", "cpu", "cpuacct", "pids"}

type v1 struct {
	paths map[string]string // absolute directory per controller
}

func newV1(name string, r Resources) (Manager, error) {
	paths := map[string]string{}
	var sw sweep
	for _, c := range v1Controllers {
		self, err := selfCgroup(c)
		if err != nil {
			return nil, &Error{Op: "find own cgroup", Path: "/proc/self/cgroup", Err: err,
				Hint: "ward needs the memory, cpu, cpuacct and pids v1 hierarchies mounted under " + v1Root}
		}
		// Controllers mounted together (cpu,cpuacct, with cpu and cpuacct
		// links to it, as systemd mounts them) share one directory.
		root := filepath.Join(v1Root, c)
		if real, err := filepath.EvalSymlinks(root); err == nil {
			root = real
		}
		parent := filepath.Join(root, self)
		sw.removeStale(parent)
		paths[c] = filepath.Join(parent, name)
	}
	m := &v1{paths: paths}
	made := map[string]bool{}
	for _, c := range v1Controllers {
		dir := paths[c]
		var err error
		if made[dir] {
			err = writeKnobs(dir, v1Knobs(c, r))
		} else if err = makeCgroup(dir, v1Knobs(c, r)); err == nil {
			made[dir] = true
		}
		if err != nil {
			for d := range made {
				_ = syscall.Rmdir(d)
			}
			return nil, &Error{Op: "create", Path: dir, Err: err,
				Hint: "ward creates its cgroups under its own; run it as root with the cgroup file systems writable"}
		}
	}
	return m, nil
}

// dirs are the cgroup's directories, one per hierarchy (controllers
// mounted together share one).
func (m *v1) dirs() []string {
	var out []string
	for _, c := range v1Controllers {
		if !slices.Contains(out, m.paths[c]) {
			out = append(out, m.paths[c])
		}
	}
	return out
}

func (m *v1) Version() int { return 1 }

func (m *v1) Path() string { return m.paths["memory"] }

func (m *v1) OpenProcs() ([]*os.File, error) {
	return openProcs(m.dirs()...)
}

func (m *v1) CPUUsage() (time.Duration, error) {
	ns, err := readInt(filepath.Join(m.paths["cpuacct"], "cpuacct.usage"))
	return time.Duration(ns), err
}

func (m *v1) PidsCurrent() (int64, error) {
	return readInt(filepath.Join(m.paths["pids"], "pids.current"))
}

func (m *v1) Stats() (Stats, error) {
	s := Stats{MemoryPeak: -1, PidsPeak: -1}
	acct := m.paths["cpuacct"]
	total, err := readInt(filepath.Join(acct, "cpuacct.usage"))
	if err != nil {
		return s, &Error{Op: "read", Path: acct, Err: err}
	}
	user, _ := readInt(filepath.Join(acct, "cpuacct.usage_user"))
	sys, _ := readInt(filepath.Join(acct, "cpuacct.usage_sys"))
	s.CPU, s.User, s.Sys = time.Duration(total), time.Duration(user), time.Duration(sys)
	mem := m.paths["memory"]
	if peak, err := readInt(filepath.Join(mem, "memory.max_usage_in_bytes")); err == nil {
		s.MemoryPeak = peak
	}
	if oc, err := readKeyed(filepath.Join(mem, "memory.oom_control")); err == nil {
		s.OOMKills = uint64(oc["oom_kill"])
	}
	if cs, err := readKeyed(filepath.Join(m.paths["cpu"], "cpu.stat")); err == nil {
		s.Throttled = time.Duration(cs["throttled_time"])
	}
	return s, nil
}

func (m *v1) Kill() error {
	for _, p := range m.paths {
		killProcs(p)
	}
	return nil
}

func (m *v1) Destroy() error {
	var first error
	for _, p := range m.dirs() {
		if err := rmdirRetry(p); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (m *v1) MemoryCurrent() (int64, error) {
	return readInt(filepath.Join(m.paths["memory"], "memory.usage_in_bytes"))
}
