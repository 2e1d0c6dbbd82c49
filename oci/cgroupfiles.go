package oci

import (
	"fmt"
	"sort"
	"strconv"
)

// CgroupFile is one value to write into the container's cgroup: File in
// the v2 cgroup, or in the v1 hierarchy Controller.
type CgroupFile struct {
	Controller string // v1 only: "memory", "cpu", "pids", "cpuset", "hugetlb", "devices"
	File       string
	Value      string
}

// CgroupFiles turns the resources into the files to write, in the order to
// write them, as runc and crun do: on v2 (unified) or v1. A resource one
// layout has no file for is an error naming its field. On v2 the device
// rules are not files (they are an eBPF program attached to the cgroup):
// they are left to the caller, and DeviceRules says them in v1's words.
func (r *Resources) CgroupFiles(unified bool) ([]CgroupFile, error) {
	var out []CgroupFile
	add := func(ctrl, v1, v2, value string) {
		if unified {
			out = append(out, CgroupFile{File: v2, Value: value})
		} else {
			out = append(out, CgroupFile{Controller: ctrl, File: v1, Value: value})
		}
	}
	if err := r.memoryFiles(unified, add); err != nil {
		return nil, err
	}
	if err := r.cpuFiles(unified, add); err != nil {
		return nil, err
	}
	if r.PidsLimit != nil {
		v := "max"
		if *r.PidsLimit > 0 {
			v = strconv.FormatInt(*r.PidsLimit, 10)
		}
		add("pids", "pids.max", "pids.max", v)
	}
	for _, h := range r.HugepageLimits {
		add("hugetlb", "hugetlb."+h.PageSize+".limit_in_bytes", "hugetlb."+h.PageSize+".max", strconv.FormatUint(h.Limit, 10))
	}
	if len(r.Unified) > 0 {
		if !unified {
			return nil, unsupported("linux.resources.unified", "cgroup v2 files, and this host's cgroups are v1")
		}
		keys := make([]string, 0, len(r.Unified))
		for k := range r.Unified {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, CgroupFile{File: k, Value: r.Unified[k]})
		}
	}
	if !unified {
		for _, d := range r.DeviceRules() {
			out = append(out, CgroupFile{Controller: "devices", File: d.File, Value: d.Rule})
		}
	}
	return out, nil
}

func (r *Resources) memoryFiles(unified bool, add func(ctrl, v1, v2, value string)) error {
	// Bytes; -1 (no limit) is "max" on v2, -1 on v1.
	mem := func(v int64) string {
		if v < 0 {
			return map[bool]string{true: "max", false: "-1"}[unified]
		}
		return strconv.FormatInt(v, 10)
	}
	if r.MemoryReservation != nil {
		add("memory", "memory.soft_limit_in_bytes", "memory.low", mem(*r.MemoryReservation))
	}
	if r.MemoryLimit != nil {
		add("memory", "memory.limit_in_bytes", "memory.max", mem(*r.MemoryLimit))
	}
	if r.MemorySwap != nil {
		if !unified {
			// v1 counts memory and swap together, as runtime-spec does.
			add("memory", "memory.memsw.limit_in_bytes", "", mem(*r.MemorySwap))
		} else {
			v, err := swapV2(r.MemorySwap, r.MemoryLimit)
			if err != nil {
				return err
			}
			add("memory", "", "memory.swap.max", v)
		}
	}
	if r.MemorySwappiness != nil {
		if unified {
			return unsupported("linux.resources.memory.swappiness", "cgroup v2 has no per-cgroup swappiness")
		}
		add("memory", "memory.swappiness", "", strconv.FormatUint(*r.MemorySwappiness, 10))
	}
	if r.DisableOOMKiller != nil && *r.DisableOOMKiller {
		if unified {
			return unsupported("linux.resources.memory.disableOOMKiller", "cgroup v2 cannot turn the OOM killer off")
		}
		add("memory", "memory.oom_control", "", "1")
	}
	if r.MemoryKernelTCP != nil {
		if unified {
			return unsupported("linux.resources.memory.kernelTCP", "cgroup v2 has no kernel TCP limit (memory.max counts socket memory)")
		}
		add("memory", "memory.kmem.tcp.limit_in_bytes", "", mem(*r.MemoryKernelTCP))
	}
	return nil
}

// swapV2 is memory.swap.max, swap alone, from runtime-spec's memory and
// swap together (runc's ConvertMemorySwapToCgroupV2Value).
func swapV2(swap, limit *int64) (string, error) {
	switch {
	case *swap == -1:
		return "max", nil
	case limit == nil || *limit == 0:
		return "", invalid("linux.resources.memory.swap", "a swap limit needs a memory limit on cgroup v2")
	case *limit == -1:
		return "", invalid("linux.resources.memory.swap", "a swap limit with no memory limit")
	case *swap < *limit:
		return "", invalid("linux.resources.memory.swap", "%d below the limit %d", *swap, *limit)
	}
	return strconv.FormatInt(*swap-*limit, 10), nil
}

func (r *Resources) cpuFiles(unified bool, add func(ctrl, v1, v2, value string)) error {
	if r.CPUShares != nil && *r.CPUShares != 0 {
		if unified {
			// runc's and crun's mapping of 2..262144 onto 1..10000.
			add("cpu", "", "cpu.weight", strconv.FormatUint(1+((*r.CPUShares-2)*9999)/262142, 10))
		} else {
			add("cpu", "cpu.shares", "", strconv.FormatUint(*r.CPUShares, 10))
		}
	}
	if r.CPUQuota != nil || r.CPUPeriod != nil {
		quota, period := int64(-1), uint64(100000)
		if r.CPUQuota != nil && *r.CPUQuota > 0 {
			quota = *r.CPUQuota
		}
		if r.CPUPeriod != nil && *r.CPUPeriod != 0 {
			period = *r.CPUPeriod
		}
		if unified {
			q := "max"
			if quota > 0 {
				q = strconv.FormatInt(quota, 10)
			}
			add("cpu", "", "cpu.max", fmt.Sprintf("%s %d", q, period))
		} else {
			// The period first: a quota is checked against it.
			add("cpu", "cpu.cfs_period_us", "", strconv.FormatUint(period, 10))
			add("cpu", "cpu.cfs_quota_us", "", strconv.FormatInt(quota, 10))
		}
	}
	if r.CPUBurst != nil {
		add("cpu", "cpu.cfs_burst_us", "cpu.max.burst", strconv.FormatUint(*r.CPUBurst, 10))
	}
	if r.CPUIdle != nil {
		if !unified {
			return unsupported("linux.resources.cpu.idle", "cgroup v1 has no cpu.idle")
		}
		add("cpu", "", "cpu.idle", strconv.FormatInt(*r.CPUIdle, 10))
	}
	if r.CPUs != "" {
		add("cpuset", "cpuset.cpus", "cpuset.cpus", r.CPUs)
	}
	if r.Mems != "" {
		add("cpuset", "cpuset.mems", "cpuset.mems", r.Mems)
	}
	return nil
}

// DeviceLine is one device rule in cgroup v1's words: File is
// devices.allow or devices.deny, Rule "c 1:3 rwm" ("*" for any number) or
// "a" (every device).
type DeviceLine struct{ File, Rule string }

// DeviceRules are the device cgroup's rules in v1's words, in order.
func (r *Resources) DeviceRules() []DeviceLine {
	var out []DeviceLine
	num := func(n int64) string {
		if n < 0 {
			return "*"
		}
		return strconv.FormatInt(n, 10)
	}
	for _, d := range r.Devices {
		file := "devices.deny"
		if d.Allow {
			file = "devices.allow"
		}
		rule := "a"
		if d.Type != 'a' {
			rule = fmt.Sprintf("%c %s:%s %s", d.Type, num(d.Major), num(d.Minor), d.Access)
		} else if d.Major >= 0 || d.Minor >= 0 || d.Access != "rwm" {
			rule = fmt.Sprintf("a %s:%s %s", num(d.Major), num(d.Minor), d.Access)
		}
		out = append(out, DeviceLine{file, rule})
	}
	return out
}
