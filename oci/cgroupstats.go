package oci

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Event is one line of the events command, as runc prints it: "stats"
// with Data, or "oom".
type Event struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	Data *Stats `json:"data,omitempty"`
}

// Stats are the container's cgroup figures under runc's names (its
// types/events.go): CPU, memory and pids. runc's blkio, hugetlb, intel_rdt
// and network_interfaces are not read.
type Stats struct {
	CPU    CPUStats    `json:"cpu"`
	Memory MemoryStats `json:"memory"`
	Pids   PidsStats   `json:"pids"`
}

// CPUStats: times in nanoseconds.
type CPUStats struct {
	Usage      CPUUsage   `json:"usage,omitempty"`
	Throttling Throttling `json:"throttling,omitempty"`
}

// CPUUsage is the CPU time used, in all, per CPU (v1), in the kernel and
// in user space.
type CPUUsage struct {
	Total  uint64   `json:"total,omitempty"`
	Percpu []uint64 `json:"percpu,omitempty"`
	Kernel uint64   `json:"kernel"`
	User   uint64   `json:"user"`
}

// Throttling is the CFS quota's effect.
type Throttling struct {
	Periods          uint64 `json:"periods,omitempty"`
	ThrottledPeriods uint64 `json:"throttledPeriods,omitempty"`
	ThrottledTime    uint64 `json:"throttledTime,omitempty"`
}

// MemoryEntry is one memory counter: its use, its high-water mark, its
// limit (math.MaxUint64 for none) and how often the limit was hit (v1).
type MemoryEntry struct {
	Limit   uint64 `json:"limit"`
	Usage   uint64 `json:"usage,omitempty"`
	Max     uint64 `json:"max,omitempty"`
	Failcnt uint64 `json:"failcnt"`
}

// MemoryStats: Raw is memory.stat whole; Cache is its page cache.
type MemoryStats struct {
	Cache uint64            `json:"cache,omitempty"`
	Usage MemoryEntry       `json:"usage,omitempty"`
	Swap  MemoryEntry       `json:"swap,omitempty"`
	Raw   map[string]uint64 `json:"raw,omitempty"`
}

// PidsStats: the tasks now, and the limit (0 for none).
type PidsStats struct {
	Current uint64 `json:"current,omitempty"`
	Limit   uint64 `json:"limit,omitempty"`
}

// Stats reads the container's figures from its cgroup, on either layout.
// A controller the cgroup does not have leaves its figures at zero.
func (s *Store) Stats(st *State) (*Stats, error) {
	if _, ok := s.cgroupIn(st, "pids"); !ok {
		return nil, fmt.Errorf("%s: no cgroup of its own", st.ID)
	}
	out := &Stats{}
	at := func(ctrl string) string { l, _ := s.cgroupIn(st, ctrl); return l.dir() }
	if s.unified() {
		dir := at("")
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("%s: cgroup %s: %w", st.ID, dir, err)
		}
		s.statsV2(dir, out)
		return out, nil
	}
	cpu := at("cpuacct")
	out.CPU.Usage.Total = readUint(filepath.Join(cpu, "cpuacct.usage"))
	for _, f := range strings.Fields(readString(filepath.Join(cpu, "cpuacct.usage_percpu"))) {
		n, _ := strconv.ParseUint(f, 10, 64)
		out.CPU.Usage.Percpu = append(out.CPU.Usage.Percpu, n)
	}
	// cpuacct.stat is in USER_HZ (100 a second on every architecture).
	acct := readKeyed(filepath.Join(cpu, "cpuacct.stat"))
	out.CPU.Usage.User, out.CPU.Usage.Kernel = acct["user"]*1e7, acct["system"]*1e7
	cs := readKeyed(filepath.Join(at("cpu"), "cpu.stat"))
	out.CPU.Throttling = Throttling{cs["nr_periods"], cs["nr_throttled"], cs["throttled_time"]}
	mem := at("memory")
	out.Memory.Raw = readKeyed(filepath.Join(mem, "memory.stat"))
	out.Memory.Cache = out.Memory.Raw["cache"]
	entry := func(prefix string) MemoryEntry {
		return MemoryEntry{Usage: readUint(filepath.Join(mem, prefix+"usage_in_bytes")), Max: readUint(filepath.Join(mem, prefix+"max_usage_in_bytes")),
			Limit: readUint(filepath.Join(mem, prefix+"limit_in_bytes")), Failcnt: readUint(filepath.Join(mem, prefix+"failcnt"))}
	}
	out.Memory.Usage, out.Memory.Swap = entry("memory."), entry("memory.memsw.")
	out.Pids = PidsStats{readUint(filepath.Join(at("pids"), "pids.current")), readUint(filepath.Join(at("pids"), "pids.max"))}
	return out, nil
}

func (s *Store) statsV2(dir string, out *Stats) {
	cs := readKeyed(filepath.Join(dir, "cpu.stat"))
	out.CPU.Usage = CPUUsage{Total: cs["usage_usec"] * 1000, User: cs["user_usec"] * 1000, Kernel: cs["system_usec"] * 1000}
	out.CPU.Throttling = Throttling{cs["nr_periods"], cs["nr_throttled"], cs["throttled_usec"] * 1000}
	out.Memory.Raw = readKeyed(filepath.Join(dir, "memory.stat"))
	out.Memory.Cache = out.Memory.Raw["file"]
	ev := readKeyed(filepath.Join(dir, "memory.events"))
	out.Memory.Usage = MemoryEntry{Usage: readUint(filepath.Join(dir, "memory.current")), Max: readUint(filepath.Join(dir, "memory.peak")),
		Limit: readUint(filepath.Join(dir, "memory.max")), Failcnt: ev["max"]}
	// As runc: swap is reported with memory, as v1's memsw counts it.
	swap, swapMax := readUint(filepath.Join(dir, "memory.swap.current")), readUint(filepath.Join(dir, "memory.swap.max"))
	out.Memory.Swap = MemoryEntry{Usage: swap + out.Memory.Usage.Usage, Limit: swapMax}
	if swapMax != math.MaxUint64 && out.Memory.Usage.Limit != math.MaxUint64 {
		out.Memory.Swap.Limit += out.Memory.Usage.Limit
	}
	out.Pids = PidsStats{readUint(filepath.Join(dir, "pids.current")), readUint(filepath.Join(dir, "pids.max"))}
	if out.Pids.Limit == math.MaxUint64 {
		out.Pids.Limit = 0
	}
}

func readString(path string) string {
	b, _ := os.ReadFile(path)
	return string(bytes.TrimSpace(b))
}

// readUint is a file's number; "max" is math.MaxUint64; a file that is
// not there (a controller the cgroup lacks) is 0.
func readUint(path string) uint64 {
	s := readString(path)
	if s == "max" {
		return math.MaxUint64
	}
	n, _ := strconv.ParseUint(s, 10, 64)
	return n
}

// readKeyed reads a file of "key value" lines.
func readKeyed(path string) map[string]uint64 {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	out := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); ok && err == nil {
			out[k] = n
		}
	}
	return out
}

// OOMNotify returns a file that becomes readable when the container's
// memory cgroup meets its limit: on v2 an inotify watch of memory.events
// (the caller compares OOMKills before and after), on v1 an eventfd
// registered for memory.oom_control (one 8-byte count per read).
func (s *Store) OOMNotify(st *State) (*os.File, error) {
	l, ok := s.cgroupIn(st, "memory")
	if !ok {
		return nil, fmt.Errorf("%s: no cgroup of its own", st.ID)
	}
	if s.unified() {
		fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
		if err != nil {
			return nil, fmt.Errorf("inotify: %w", err)
		}
		p := filepath.Join(l.dir(), "memory.events")
		if _, err := unix.InotifyAddWatch(fd, p, unix.IN_MODIFY); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("watch %s: %w", p, err)
		}
		return os.NewFile(uintptr(fd), "inotify"), nil
	}
	dir := l.dir()
	ctl, err := os.Open(filepath.Join(dir, "memory.oom_control"))
	if err != nil {
		return nil, fmt.Errorf("cgroup %s: %w", dir, err)
	}
	defer ctl.Close()
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	if err := writeCgroupFile(filepath.Join(dir, "cgroup.event_control"), fmt.Sprintf("%d %d", efd, ctl.Fd())); err != nil {
		unix.Close(efd)
		return nil, err
	}
	return os.NewFile(uintptr(efd), "eventfd"), nil
}

// OOMKills is how many processes of the container's the OOM killer has
// killed: v2's memory.events oom_kill; on v1 memory.oom_control's oom_kill.
func (s *Store) OOMKills(st *State) (uint64, error) {
	l, ok := s.cgroupIn(st, "memory")
	if !ok {
		return 0, fmt.Errorf("%s: no cgroup of its own", st.ID)
	}
	p := filepath.Join(l.dir(), "memory.events")
	if !s.unified() {
		p = filepath.Join(l.dir(), "memory.oom_control")
	}
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("%s: %w", p, err)
	}
	return readKeyed(p)["oom_kill"], nil
}
