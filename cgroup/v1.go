package cgroup

import (
	"os"
	"path/filepath"
	"time"

	"github.com/containerd/cgroups/v3/cgroup1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// v1Root is where the v1 hierarchies are mounted, one per controller.
const v1Root = "/sys/fs/cgroup"

// v1Controllers are the hierarchies a sandbox joins; the others (cpuset,
// blkio, devices, freezer, ...) are left alone.
var v1Controllers = []cgroup1.Name{cgroup1.Memory, cgroup1.Cpu, cgroup1.Cpuacct, cgroup1.Pids}

type v1 struct {
	paths map[cgroup1.Name]string // absolute directory per controller
}

func newV1(name string, r Resources) (Manager, error) {
	paths := map[cgroup1.Name]string{}
	var sw sweep
	for _, c := range v1Controllers {
		self, err := selfCgroup(string(c))
		if err != nil {
			return nil, &Error{Op: "find own cgroup", Path: "/proc/self/cgroup", Err: err,
				Hint: "ward needs the memory, cpu, cpuacct and pids v1 hierarchies mounted under " + v1Root}
		}
		parent := filepath.Join(v1Root, string(c), self)
		sw.removeStale(parent)
		paths[c] = filepath.Join(parent, name)
	}
	hier := func() ([]cgroup1.Subsystem, error) {
		return []cgroup1.Subsystem{
			cgroup1.NewMemory(v1Root, cgroup1.OptionalSwap()),
			cgroup1.NewCpu(v1Root),
			cgroup1.NewCpuacct(v1Root),
			cgroup1.NewPids(v1Root),
		}, nil
	}
	_, err := cgroup1.New(cgroup1.NestedPath(name), v1Resources(r), cgroup1.WithHierarchy(hier))
	if err != nil {
		m := &v1{paths: paths}
		_ = m.Destroy() // whatever part was made
		return nil, &Error{Op: "create", Path: paths[cgroup1.Memory], Err: err,
			Hint: "ward creates its cgroups under its own; run it as root with the cgroup file systems writable"}
	}
	return &v1{paths: paths}, nil
}

func v1Resources(r Resources) *specs.LinuxResources {
	res := &specs.LinuxResources{}
	if r.MemoryBytes > 0 {
		// memsw is memory+swap: equal to the limit means no swap at all.
		res.Memory = &specs.LinuxMemory{Limit: &r.MemoryBytes, Swap: &r.MemoryBytes}
	}
	if r.CPUPercent > 0 {
		period := uint64(100000)
		quota := int64(r.CPUPercent) * 1000
		res.CPU = &specs.LinuxCPU{Period: &period, Quota: &quota}
	}
	if r.Pids > 0 {
		n := int64(r.Pids)
		res.Pids = &specs.LinuxPids{Limit: &n}
	}
	return res
}

func (m *v1) Version() int { return 1 }

func (m *v1) Path() string { return m.paths[cgroup1.Memory] }

func (m *v1) OpenProcs() ([]*os.File, error) {
	dirs := make([]string, 0, len(v1Controllers))
	for _, c := range v1Controllers {
		dirs = append(dirs, m.paths[c])
	}
	return openProcs(dirs...)
}

func (m *v1) CPUUsage() (time.Duration, error) {
	ns, err := readInt(filepath.Join(m.paths[cgroup1.Cpuacct], "cpuacct.usage"))
	return time.Duration(ns), err
}

func (m *v1) PidsCurrent() (int64, error) {
	return readInt(filepath.Join(m.paths[cgroup1.Pids], "pids.current"))
}

func (m *v1) Stats() (Stats, error) {
	s := Stats{MemoryPeak: -1, PidsPeak: -1}
	acct := m.paths[cgroup1.Cpuacct]
	total, err := readInt(filepath.Join(acct, "cpuacct.usage"))
	if err != nil {
		return s, &Error{Op: "read", Path: acct, Err: err}
	}
	user, _ := readInt(filepath.Join(acct, "cpuacct.usage_user"))
	sys, _ := readInt(filepath.Join(acct, "cpuacct.usage_sys"))
	s.CPU, s.User, s.Sys = time.Duration(total), time.Duration(user), time.Duration(sys)
	mem := m.paths[cgroup1.Memory]
	if peak, err := readInt(filepath.Join(mem, "memory.max_usage_in_bytes")); err == nil {
		s.MemoryPeak = peak
	}
	if oc, err := readKeyed(filepath.Join(mem, "memory.oom_control")); err == nil {
		s.OOMKills = uint64(oc["oom_kill"])
	}
	if cs, err := readKeyed(filepath.Join(m.paths[cgroup1.Cpu], "cpu.stat")); err == nil {
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
	for _, p := range m.paths {
		if err := rmdirRetry(p); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (m *v1) MemoryCurrent() (int64, error) {
	return readInt(filepath.Join(m.paths[cgroup1.Memory], "memory.usage_in_bytes"))
}
