package oci

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Resources are linux.resources that ward sets on the container's cgroup,
// on both layouts. nil means not given (left as the cgroup has it).
type Resources struct {
	// Memory in bytes; -1 is no limit. MemorySwap is memory and swap
	// together, as runtime-spec (and cgroup v1) count it.
	MemoryLimit       *int64
	MemoryReservation *int64
	MemorySwap        *int64
	MemorySwappiness  *uint64
	DisableOOMKiller  *bool
	// MemoryKernelTCP: the kernel's TCP buffers' limit (v1 only).
	MemoryKernelTCP *int64
	// KernelMemoryIgnored: config.json gives memory.kernel, which the
	// kernel no longer enforces (a warning, as runtime-spec lets a
	// runtime ignore it and runc does).
	KernelMemoryIgnored bool
	// CPU: shares (v1's weight, turned into cpu.weight on v2), the CFS
	// quota and period in µs (quota -1: none), the burst, the cpusets, idle.
	CPUShares *uint64
	CPUQuota  *int64
	CPUPeriod *uint64
	CPUBurst  *uint64
	CPUs      string
	Mems      string
	CPUIdle   *int64
	// PidsLimit: the most tasks; 0 or below means no limit.
	PidsLimit      *int64
	HugepageLimits []HugepageLimit
	// Unified are cgroup v2 files written as given (linux.resources.unified).
	Unified map[string]string
	// Devices are the device cgroup's rules, in order.
	Devices []DeviceRule
}

// HugepageLimit is one hugetlb limit: the page size ("2MB") and bytes.
type HugepageLimit struct {
	PageSize string
	Limit    uint64
}

// DeviceRule is one linux.resources.devices rule; Major or Minor -1 is
// any, Type 'a' is every device.
type DeviceRule struct {
	Allow  bool
	Type   byte
	Major  int64
	Minor  int64
	Access string
}

// The patterns are compiled on first use, not at every start of ward.
var (
	cpusetList = lazyRegexp(`^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$`)
	pageSize   = lazyRegexp(`^[0-9]+[KMG]B$`)
	unifiedKey = lazyRegexp(`^[a-z_]+\.[a-z_.]+$`)
)

func lazyRegexp(p string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(p) })
}

func specResources(r *specs.LinuxResources) (Resources, error) {
	var out Resources
	if r == nil {
		return out, nil
	}
	for _, u := range []struct {
		name string
		set  bool
	}{{"linux.resources.blockIO", r.BlockIO != nil}, {"linux.resources.network", r.Network != nil},
		{"linux.resources.rdma", len(r.Rdma) > 0}} {
		if u.set {
			return out, unsupported(u.name, "ward does not set it up yet")
		}
	}
	if err := specMemory(&out, r.Memory); err != nil {
		return out, err
	}
	if err := specCPU(&out, r.CPU); err != nil {
		return out, err
	}
	if r.Pids != nil {
		out.PidsLimit = r.Pids.Limit
	}
	for i, h := range r.HugepageLimits {
		if !pageSize().MatchString(h.Pagesize) {
			return out, invalid(fmt.Sprintf("linux.resources.hugepageLimits[%d].pageSize", i), "%q: want a size such as 2MB or 1GB", h.Pagesize)
		}
		out.HugepageLimits = append(out.HugepageLimits, HugepageLimit{PageSize: h.Pagesize, Limit: h.Limit})
	}
	for k, v := range r.Unified {
		if !unifiedKey().MatchString(k) || strings.HasPrefix(k, "cgroup.") {
			return out, invalid("linux.resources.unified."+k, "not a controller's file of the container's cgroup")
		}
		if strings.ContainsRune(v, '\n') {
			return out, invalid("linux.resources.unified."+k, "a value of one line")
		}
	}
	out.Unified = r.Unified
	for i, d := range r.Devices {
		rule, err := deviceRule(d, fmt.Sprintf("linux.resources.devices[%d]", i))
		if err != nil {
			return out, err
		}
		out.Devices = append(out.Devices, rule)
	}
	return out, nil
}

func specMemory(out *Resources, m *specs.LinuxMemory) error {
	if m == nil {
		return nil
	}
	switch {
	case m.UseHierarchy != nil && !*m.UseHierarchy:
		return unsupported("linux.resources.memory.useHierarchy", "cgroups are always hierarchical here")
	}
	for _, v := range []struct {
		name string
		p    *int64
	}{{"limit", m.Limit}, {"reservation", m.Reservation}, {"swap", m.Swap}} {
		if v.p != nil && *v.p < -1 {
			return invalid("linux.resources.memory."+v.name, "%d: want bytes, or -1 for no limit", *v.p)
		}
	}
	if m.Limit != nil && m.Swap != nil && *m.Limit > 0 && *m.Swap >= 0 && *m.Swap < *m.Limit {
		return invalid("linux.resources.memory.swap", "%d below the limit %d: swap counts memory and swap together", *m.Swap, *m.Limit)
	}
	if m.Swappiness != nil && *m.Swappiness > 100 {
		return invalid("linux.resources.memory.swappiness", "%d: want 0 to 100", *m.Swappiness)
	}
	out.MemoryLimit, out.MemoryReservation, out.MemorySwap = m.Limit, m.Reservation, m.Swap
	out.MemorySwappiness, out.DisableOOMKiller = m.Swappiness, m.DisableOOMKiller
	if m.KernelTCP != nil && *m.KernelTCP < -1 {
		return invalid("linux.resources.memory.kernelTCP", "%d: want bytes, or -1 for no limit", *m.KernelTCP)
	}
	//lint:ignore SA1019 read to say it is ignored, never silently
	out.MemoryKernelTCP, out.KernelMemoryIgnored = m.KernelTCP, m.Kernel != nil
	return nil
}

func specCPU(out *Resources, c *specs.LinuxCPU) error {
	if c == nil {
		return nil
	}
	if c.RealtimeRuntime != nil || c.RealtimePeriod != nil {
		return unsupported("linux.resources.cpu.realtimeRuntime", "real-time scheduling budgets are not set up")
	}
	if c.Shares != nil && *c.Shares != 0 && (*c.Shares < 2 || *c.Shares > 262144) {
		return invalid("linux.resources.cpu.shares", "%d: want 2 to 262144", *c.Shares)
	}
	if c.Quota != nil && *c.Quota != -1 && *c.Quota < 1000 && *c.Quota != 0 {
		return invalid("linux.resources.cpu.quota", "%d: want at least 1000 (µs), or -1 for none", *c.Quota)
	}
	if c.Period != nil && *c.Period != 0 && (*c.Period < 1000 || *c.Period > 1000000) {
		return invalid("linux.resources.cpu.period", "%d: want 1000 to 1000000 (µs)", *c.Period)
	}
	for _, v := range []struct{ name, s string }{{"cpus", c.Cpus}, {"mems", c.Mems}} {
		if v.s != "" && !cpusetList().MatchString(v.s) {
			return invalid("linux.resources.cpu."+v.name, "%q: want a list such as 0-3,5", v.s)
		}
	}
	if c.Idle != nil && *c.Idle != 0 && *c.Idle != 1 {
		return invalid("linux.resources.cpu.idle", "%d: want 0 or 1", *c.Idle)
	}
	out.CPUShares, out.CPUQuota, out.CPUPeriod, out.CPUBurst = c.Shares, c.Quota, c.Period, c.Burst
	out.CPUs, out.Mems, out.CPUIdle = c.Cpus, c.Mems, c.Idle
	return nil
}

func deviceRule(d specs.LinuxDeviceCgroup, field string) (DeviceRule, error) {
	r := DeviceRule{Allow: d.Allow, Type: 'a', Major: -1, Minor: -1, Access: d.Access}
	switch d.Type {
	case "", "a":
	case "c", "b":
		r.Type = d.Type[0]
	default:
		return r, invalid(field+".type", "%q: want a, c or b", d.Type)
	}
	if d.Major != nil {
		r.Major = *d.Major
	}
	if d.Minor != nil {
		r.Minor = *d.Minor
	}
	if r.Major < -1 || r.Minor < -1 {
		return r, invalid(field, "major %d, minor %d: want a number or none (any)", r.Major, r.Minor)
	}
	if r.Access == "" {
		r.Access = "rwm"
	}
	seen := map[rune]bool{}
	for _, c := range r.Access {
		if !strings.ContainsRune("rwm", c) || seen[c] {
			return r, invalid(field+".access", "%q: want some of r, w, m", d.Access)
		}
		seen[c] = true
	}
	return r, nil
}

// Cgroup is where the container's cgroup goes.
type Cgroup struct {
	// Path is the cgroup relative to the cgroup file system's root (in
	// the v2 tree or each v1 hierarchy), or, when Relative, to ward-oci's
	// own cgroup. With Systemd it is where the system manager puts Unit.
	Path     string
	Relative bool
	// Systemd (--systemd-cgroup): the cgroup is a transient unit, Unit
	// (a scope, or a slice when cgroupsPath's name is one) in Slice.
	Systemd bool
	Slice   string
	Unit    string
}

// specCgroup reads linux.cgroupsPath: a cgroupfs path, or with
// --systemd-cgroup slice:prefix:name (default ":ward:ID": the scope
// ward-ID.scope in system.slice, user.slice for a rootless caller).
func specCgroup(p string, o SpecOptions) (Cgroup, error) {
	if !o.SystemdCgroup {
		if p == "" {
			// runc's default: the id, below the runtime's own cgroup.
			return Cgroup{Path: o.ID, Relative: true}, nil
		}
		rel := !filepath.IsAbs(p)
		clean := filepath.Clean("/" + p)
		if clean == "/" || (rel && strings.Contains("/"+p+"/", "/../")) {
			return Cgroup{}, invalid("linux.cgroupsPath", "%q: want a cgroup below the root (or below ward-oci's own cgroup when relative)", p)
		}
		if rel {
			return Cgroup{Path: clean[1:], Relative: true}, nil
		}
		return Cgroup{Path: clean}, nil
	}
	if p == "" {
		p = ":ward:" + o.ID
	}
	parts := strings.Split(p, ":")
	if len(parts) != 3 {
		return Cgroup{}, invalid("linux.cgroupsPath", "%q: with --systemd-cgroup want slice:prefix:name", p)
	}
	slice, prefix, name := parts[0], parts[1], parts[2]
	if slice == "" {
		slice = "system.slice"
		if o.Rootless {
			slice = "user.slice"
		}
	}
	if name == "" {
		return Cgroup{}, invalid("linux.cgroupsPath", "%q: no name", p)
	}
	unit := name
	if !strings.HasSuffix(name, ".slice") {
		unit = name + ".scope"
		if prefix != "" {
			unit = prefix + "-" + unit
		}
	}
	if !validUnit(unit) {
		return Cgroup{}, invalid("linux.cgroupsPath", "%q: %q is not a unit name", p, unit)
	}
	dir, err := expandSlice(slice)
	if err != nil {
		return Cgroup{}, invalid("linux.cgroupsPath", "%q: %v", p, err)
	}
	return Cgroup{Path: filepath.Join(dir, unit), Systemd: true, Slice: slice, Unit: unit}, nil
}

func validUnit(u string) bool {
	if len(u) > 255 {
		return false
	}
	for _, c := range u {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(":-_.\\@", c)) {
			return false
		}
	}
	return true
}

// expandSlice is the cgroup of a systemd slice: a-b.slice is
// /a.slice/a-b.slice, -.slice the root.
func expandSlice(slice string) (string, error) {
	name, ok := strings.CutSuffix(slice, ".slice")
	if !ok || !validUnit(slice) || strings.Contains(slice, "/") {
		return "", fmt.Errorf("%q is not a slice name", slice)
	}
	if name == "-" {
		return "/", nil
	}
	if name == "" || strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-") || strings.Contains(name, "--") {
		return "", fmt.Errorf("%q is not a slice name", slice)
	}
	path, prefix := "", ""
	for _, part := range strings.Split(name, "-") {
		path += "/" + prefix + part + ".slice"
		prefix += part + "-"
	}
	return path, nil
}
