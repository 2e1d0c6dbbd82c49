package oci

import (
	"fmt"
	"path/filepath"
	"reflect"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Update writes the resources given (linux.resources as `update` takes
// them: what is not given stays as it is) into the container's cgroup, with
// the writer create uses, and records them in the state's config.json. A
// stopped container is not updated. Device rules are left as create made
// them, as runc does (containerd passes the spec's whole linux.resources,
// devices included, on every update).
func (s *Store) Update(st *State, lr *specs.LinuxResources) error {
	if s.Status(st) == Stopped {
		return fmt.Errorf("%s: %w", st.ID, ErrNotRunning)
	}
	given := *lr
	given.Devices = nil
	lr = &given
	r, err := specResources(lr)
	if err != nil {
		return err
	}
	old := recordedResources(st)
	if r.MemorySwap != nil && r.MemoryLimit == nil && old.Memory != nil {
		// cgroup v2's swap file counts swap alone: it needs the limit.
		r.MemoryLimit = old.Memory.Limit
	}
	if len(s.cgroupLocs(st)) == 0 {
		return fmt.Errorf("%s: no cgroup of its own to update", st.ID)
	}
	unified := s.unified()
	files, err := r.CgroupFiles(unified)
	if err != nil {
		return err
	}
	if !unified && r.MemorySwap != nil {
		files = s.swapFirst(st, files, *r.MemorySwap)
	}
	if err := s.writeCgroupFiles(st, files); err != nil {
		return fmt.Errorf("%s: %w", st.ID, err)
	}
	mergeResources(old, lr)
	return s.Save(st)
}

// swapFirst orders v1's memory files as runc does: v1 keeps the memory
// limit at most memory+swap's, so a memory+swap limit that rises (or goes)
// is written before the memory limit, one that falls after it.
func (s *Store) swapFirst(st *State, files []CgroupFile, swap int64) []CgroupFile {
	mem, _ := s.cgroupIn(st, "memory")
	cur := readUint(filepath.Join(mem.dir(), "memory.memsw.limit_in_bytes"))
	if swap != -1 && uint64(swap) <= cur {
		return files
	}
	var first, rest []CgroupFile
	for _, f := range files {
		if f.File == "memory.memsw.limit_in_bytes" {
			first = append(first, f)
		} else {
			rest = append(rest, f)
		}
	}
	return append(first, rest...)
}

// recordedResources is the state's linux.resources, made when missing.
func recordedResources(st *State) *specs.LinuxResources {
	if st.Config == nil {
		st.Config = &specs.Spec{}
	}
	if st.Config.Linux == nil {
		st.Config.Linux = &specs.Linux{}
	}
	if st.Config.Linux.Resources == nil {
		st.Config.Linux.Resources = &specs.LinuxResources{}
	}
	return st.Config.Linux.Resources
}

// mergeResources sets in dst what src gives: the memory, CPU and pids
// fields that are set, hugepage limits by page size, unified files by name.
func mergeResources(dst, src *specs.LinuxResources) {
	if src.Memory != nil {
		if dst.Memory == nil {
			dst.Memory = &specs.LinuxMemory{}
		}
		mergeSetFields(dst.Memory, src.Memory)
	}
	if src.CPU != nil {
		if dst.CPU == nil {
			dst.CPU = &specs.LinuxCPU{}
		}
		mergeSetFields(dst.CPU, src.CPU)
	}
	if src.Pids != nil {
		dst.Pids = src.Pids
	}
	for _, h := range src.HugepageLimits {
		i := 0
		for i < len(dst.HugepageLimits) && dst.HugepageLimits[i].Pagesize != h.Pagesize {
			i++
		}
		if i == len(dst.HugepageLimits) {
			dst.HugepageLimits = append(dst.HugepageLimits, h)
		}
		dst.HugepageLimits[i] = h
	}
	for k, v := range src.Unified {
		if dst.Unified == nil {
			dst.Unified = map[string]string{}
		}
		dst.Unified[k] = v
	}
}

// mergeSetFields copies each field of *src that is set (not nil, not "")
// into *dst, a struct of the same type.
func mergeSetFields(dst, src any) {
	d, s := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem()
	for i := 0; i < s.NumField(); i++ {
		if !s.Field(i).IsZero() {
			d.Field(i).Set(s.Field(i))
		}
	}
}
