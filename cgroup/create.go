package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Creating a sandbox's cgroup is a mkdir and a few writes; ward does them
// itself rather than through containerd/cgroups, whose packages (protobuf
// stats types, cilium/ebpf, go-systemd) cost every start of ward and of
// every sandbox's init about a third of its package initialisation, for
// what is here some thirty lines (docs/limits.md).

// knob is one file written in a new cgroup; an optional one may be missing
// (memory.swap.max without swap accounting, memory.memsw.* without
// swapaccount=1).
type knob struct {
	file, value string
	optional    bool
}

// v2Knobs are the limits of r as cgroup v2 files.
func v2Knobs(r Resources) []knob {
	var k []knob
	if r.MemoryBytes > 0 {
		k = append(k, knob{"memory.max", itoa(r.MemoryBytes), false}, knob{"memory.swap.max", "0", true})
	}
	if r.CPUPercent > 0 {
		k = append(k, knob{"cpu.max", fmt.Sprintf("%d %d", int64(r.CPUPercent)*1000, cpuPeriodUs), false})
	}
	if r.Pids > 0 {
		k = append(k, knob{"pids.max", itoa(int64(r.Pids)), false})
	}
	return k
}

// v1Knobs are the limits of r for the v1 hierarchy of controller c. The
// memory limit comes before memsw (memory+swap), which may not be below it:
// equal, the sandbox gets no swap at all.
func v1Knobs(c string, r Resources) []knob {
	switch {
	case c == "memory" && r.MemoryBytes > 0:
		return []knob{{"memory.limit_in_bytes", itoa(r.MemoryBytes), false}, {"memory.memsw.limit_in_bytes", itoa(r.MemoryBytes), true}}
	case c == "cpu" && r.CPUPercent > 0:
		return []knob{{"cpu.cfs_period_us", itoa(cpuPeriodUs), false}, {"cpu.cfs_quota_us", itoa(int64(r.CPUPercent) * 1000), false}}
	case c == "pids" && r.Pids > 0:
		return []knob{{"pids.max", itoa(int64(r.Pids)), false}}
	}
	return nil
}

// cpuPeriodUs is the CPU quota's period: 100 ms, the kernel's default.
const cpuPeriodUs = 100000

// makeCgroup creates dir, a new cgroup (never an existing one: every
// sandbox gets a fresh cgroup with exact figures), and writes its knobs.
// On failure dir is removed again.
func makeCgroup(dir string, knobs []knob) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	if err := writeKnobs(dir, knobs); err != nil {
		_ = syscall.Rmdir(dir)
		return err
	}
	return nil
}

// writeKnobs writes knobs in dir, a cgroup ward made.
func writeKnobs(dir string, knobs []knob) error {
	for _, k := range knobs {
		err := os.WriteFile(filepath.Join(dir, k.file), []byte(k.value), 0)
		if err != nil && !(k.optional && errors.Is(err, fs.ErrNotExist)) {
			return fmt.Errorf("write %s %s: %w", k.file, k.value, err)
		}
	}
	return nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// The host's cgroup layout, as statfs sees /sys/fs/cgroup: cgroup2 there
// is unified (v2); else v1 hierarchies, hybrid when cgroup2 is also at
// /sys/fs/cgroup/unified.
const (
	modeNone = iota
	modeV1
	modeHybrid
	modeV2
)

var (
	modeOnce sync.Once
	mode     int
)

func hostMode() int {
	modeOnce.Do(func() {
		var st unix.Statfs_t
		if err := unix.Statfs("/sys/fs/cgroup", &st); err != nil {
			mode = modeNone
			return
		}
		if st.Type == unix.CGROUP2_SUPER_MAGIC {
			mode = modeV2
			return
		}
		mode = modeV1
		if unix.Statfs("/sys/fs/cgroup/unified", &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			mode = modeHybrid
		}
	})
	return mode
}
