package oci

import (
	"errors"
	"reflect"
	"testing"
)

func TestCgroupFiles(t *testing.T) {
	c, err := Spec(readTestSpec(t, "cri-containerd.json"), SpecOptions{ID: "c1", Bundle: bundle, SystemdCgroup: true})
	if err != nil {
		t.Fatal(err)
	}
	v2, err := c.Resources.CgroupFiles(true)
	if err != nil {
		t.Fatal(err)
	}
	want2 := []CgroupFile{
		{File: "memory.max", Value: "134217728"},
		{File: "memory.swap.max", Value: "0"},
		{File: "cpu.weight", Value: "4"},
		{File: "cpu.max", Value: "50000 100000"},
		{File: "pids.max", Value: "1024"},
		{File: "hugetlb.2MB.max", Value: "0"},
		{File: "hugetlb.1GB.max", Value: "0"},
	}
	if !reflect.DeepEqual(v2, want2) {
		t.Errorf("v2:\n%+v\nwant\n%+v", v2, want2)
	}
	v1, err := c.Resources.CgroupFiles(false)
	if err != nil {
		t.Fatal(err)
	}
	want1 := []CgroupFile{
		{"memory", "memory.limit_in_bytes", "134217728"},
		{"memory", "memory.memsw.limit_in_bytes", "134217728"},
		{"cpu", "cpu.shares", "102"},
		{"cpu", "cpu.cfs_period_us", "100000"},
		{"cpu", "cpu.cfs_quota_us", "50000"},
		{"pids", "pids.max", "1024"},
		{"hugetlb", "hugetlb.2MB.limit_in_bytes", "0"},
		{"hugetlb", "hugetlb.1GB.limit_in_bytes", "0"},
		{"devices", "devices.deny", "a"},
		{"devices", "devices.allow", "c 1:3 rwm"},
		{"devices", "devices.allow", "c 1:8 rwm"},
		{"devices", "devices.allow", "c 5:0 rwm"},
		{"devices", "devices.allow", "c 136:* rwm"},
	}
	if !reflect.DeepEqual(v1, want1) {
		t.Errorf("v1:\n%+v\nwant\n%+v", v1, want1)
	}
}

func TestCgroupFilesEdges(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	u64 := func(v uint64) *uint64 { return &v }
	yes := true
	for _, tt := range []struct {
		name    string
		r       Resources
		unified bool
		want    []CgroupFile
		field   string
	}{
		{"no limits", Resources{MemoryLimit: i64(-1), MemorySwap: i64(-1), PidsLimit: i64(0), CPUQuota: i64(-1)}, true,
			[]CgroupFile{{File: "memory.max", Value: "max"}, {File: "memory.swap.max", Value: "max"}, {File: "cpu.max", Value: "max 100000"}, {File: "pids.max", Value: "max"}}, ""},
		{"no limits v1", Resources{MemoryLimit: i64(-1), PidsLimit: i64(-1)}, false,
			[]CgroupFile{{"memory", "memory.limit_in_bytes", "-1"}, {"pids", "pids.max", "max"}}, ""},
		{"shares bounds", Resources{CPUShares: u64(262144)}, true, []CgroupFile{{File: "cpu.weight", Value: "10000"}}, ""},
		{"shares 2", Resources{CPUShares: u64(2)}, true, []CgroupFile{{File: "cpu.weight", Value: "1"}}, ""},
		{"unified", Resources{Unified: map[string]string{"memory.high": "1000000", "cpu.weight": "50"}}, true,
			[]CgroupFile{{File: "cpu.weight", Value: "50"}, {File: "memory.high", Value: "1000000"}}, ""},
		{"unified on v1", Resources{Unified: map[string]string{"memory.high": "1"}}, false, nil, "linux.resources.unified"},
		{"swap without limit on v2", Resources{MemorySwap: i64(1 << 20)}, true, nil, "linux.resources.memory.swap"},
		{"swappiness on v2", Resources{MemorySwappiness: u64(10)}, true, nil, "linux.resources.memory.swappiness"},
		{"oom killer off on v2", Resources{DisableOOMKiller: &yes}, true, nil, "linux.resources.memory.disableOOMKiller"},
		{"kernel TCP on v1", Resources{MemoryKernelTCP: i64(50593792)}, false,
			[]CgroupFile{{"memory", "memory.kmem.tcp.limit_in_bytes", "50593792"}}, ""},
		{"kernel TCP on v2", Resources{MemoryKernelTCP: i64(1 << 20)}, true, nil, "linux.resources.memory.kernelTCP"},
		{"idle on v1", Resources{CPUIdle: i64(1)}, false, nil, "linux.resources.cpu.idle"},
		{"any device, some access", Resources{Devices: []DeviceRule{{Allow: true, Type: 'a', Major: -1, Minor: -1, Access: "m"}}}, false,
			[]CgroupFile{{"devices", "devices.allow", "a *:* m"}}, ""},
		{"device rules are not v2 files", Resources{Devices: []DeviceRule{{Allow: false, Type: 'a', Major: -1, Minor: -1, Access: "rwm"}}}, true, nil, ""},
	} {
		got, err := tt.r.CgroupFiles(tt.unified)
		var fe *FieldError
		if tt.field != "" {
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Errorf("%s: err %v, want one naming %s", tt.name, err, tt.field)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
}
