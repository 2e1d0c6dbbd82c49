package oci

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// TestUpdate: update writes the files of what it is given, on either
// layout, with create's writer, and records them in the state.
func TestUpdate(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	u64 := func(v uint64) *uint64 { return &v }
	for _, unified := range []bool{true, false} {
		t.Run(map[bool]string{true: "v2", false: "v1"}[unified], func(t *testing.T) {
			s := testStore(t, unified)
			st := stateOf(t, "c", child(t).Process.Pid)
			st.CgroupPath = "/ward-oci/c"
			st.Config.Linux = &specs.Linux{Resources: &specs.LinuxResources{
				Memory: &specs.LinuxMemory{Limit: i64(1 << 30)}, CPU: &specs.LinuxCPU{Shares: u64(512)}}}
			if err := s.Create(st); err != nil {
				t.Fatal(err)
			}
			files := map[bool][]string{
				true:  {"memory.max", "memory.swap.max", "pids.max", "cpu.max"},
				false: {"memory/memory.limit_in_bytes", "memory/memory.memsw.limit_in_bytes", "pids/pids.max", "cpu/cpu.cfs_quota_us", "cpu/cpu.cfs_period_us"},
			}[unified]
			for _, f := range files {
				dir := filepath.Join(s.cgroupRoot, filepath.Dir(f), st.CgroupPath)
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := s.Update(st, &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: i64(64 << 20), Swap: i64(64 << 20)},
				Pids: &specs.LinuxPids{Limit: i64(10)}, CPU: &specs.LinuxCPU{Quota: i64(50000)}})
			if err != nil {
				t.Fatal(err)
			}
			want := map[bool]map[string]string{
				true: {"memory.max": "67108864", "memory.swap.max": "0", "pids.max": "10", "cpu.max": "50000 100000"},
				false: {"memory/memory.limit_in_bytes": "67108864", "memory/memory.memsw.limit_in_bytes": "67108864",
					"pids/pids.max": "10", "cpu/cpu.cfs_quota_us": "50000", "cpu/cpu.cfs_period_us": "100000"},
			}[unified]
			for f, v := range want {
				b, err := os.ReadFile(filepath.Join(s.cgroupRoot, filepath.Dir(f), st.CgroupPath, filepath.Base(f)))
				if err != nil || string(b) != v {
					t.Errorf("%s: %q (%v), want %q", f, b, err, v)
				}
			}
			got, err := s.Load("c")
			if err != nil {
				t.Fatal(err)
			}
			r := got.Config.Linux.Resources
			if *r.Memory.Limit != 64<<20 || *r.Memory.Swap != 64<<20 || *r.Pids.Limit != 10 || *r.CPU.Quota != 50000 || *r.CPU.Shares != 512 {
				t.Errorf("recorded: memory %+v, cpu %+v, pids %+v", r.Memory, r.CPU, r.Pids)
			}
			if err := s.Update(st, &specs.LinuxResources{Devices: []specs.LinuxDeviceCgroup{{Allow: true}}}); err != nil {
				t.Errorf("device rules (left as they are): %v", err)
			}
			if err := s.Update(st, &specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: u64(1)}}); err == nil {
				t.Error("cpu.shares 1: updated, want refused")
			}
			stopped := stateOf(t, "c", 0)
			if err := s.Update(stopped, &specs.LinuxResources{Pids: &specs.LinuxPids{Limit: i64(10)}}); !errors.Is(err, ErrNotRunning) {
				t.Errorf("a stopped container: %v, want %v", err, ErrNotRunning)
			}
		})
	}
}

// TestSwapFirst: on v1 a rising memory+swap limit is written before the
// memory limit, a falling one after it.
func TestSwapFirst(t *testing.T) {
	s := testStore(t, false)
	dir := filepath.Join(s.cgroupRoot, "memory", "c")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "memory.memsw.limit_in_bytes"), []byte("1000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files := []CgroupFile{{"memory", "memory.limit_in_bytes", "x"}, {"memory", "memory.memsw.limit_in_bytes", "y"}, {"pids", "pids.max", "z"}}
	for _, tt := range []struct {
		swap  int64
		first string
	}{{500, "memory.limit_in_bytes"}, {1000, "memory.limit_in_bytes"}, {2000, "memory.memsw.limit_in_bytes"}, {-1, "memory.memsw.limit_in_bytes"}} {
		got := s.swapFirst(&State{CgroupPath: "c"}, append([]CgroupFile(nil), files...), tt.swap)
		if got[0].File != tt.first || len(got) != 3 {
			t.Errorf("swap %d: %+v, want %s first", tt.swap, got, tt.first)
		}
	}
}
