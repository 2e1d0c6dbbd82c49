package oci

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wardbox/ward/fs"
	"github.com/wardbox/ward/nsexec"
)

// TestPlanRootIsTheRootfs: the plan's root is the rootfs itself, with
// root.readonly and linux.rootfsPropagation; none of its entries is an
// operation of its own.
func TestPlanRootIsTheRootfs(t *testing.T) {
	root := t.TempDir()
	for _, c := range []struct {
		ro   bool
		prop uintptr
	}{{false, 0}, {true, unix.MS_SHARED | unix.MS_REC}, {false, unix.MS_SLAVE}} {
		p, err := Plan(&Container{Root: root, RootReadonly: c.ro, RootfsPropagation: c.prop})
		if err != nil {
			t.Fatal(err)
		}
		want := &fs.Rootfs{Path: root, Readonly: c.ro, Propagation: c.prop}
		if !reflect.DeepEqual(p.Rootfs, want) || len(p.Ops) != 0 {
			t.Errorf("readonly %v, propagation %#x: rootfs %+v, ops %v; want %+v and no ops", c.ro, c.prop, p.Rootfs, p.Ops, want)
		}
	}
	if _, err := Plan(&Container{Root: root + "/missing"}); err == nil || !strings.Contains(err.Error(), "root.path") {
		t.Errorf("a missing rootfs: %v, want an error naming root.path", err)
	}
}

// TestPlanMountOptions: a mount is followed by its recursive attributes
// (set and cleared) and its propagations, in order; a tmpcopyup tmpfs
// says so.
func TestPlanMountOptions(t *testing.T) {
	for _, c := range []struct {
		name  string
		m     Mount
		want  []fs.Op
		error string
	}{
		{"plain, its source kept", Mount{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Data: "mode=755"},
			[]fs.Op{{Kind: fs.KindTmpfs, Src: "shm", Dst: "/dev/shm", Data: "mode=755", RW: true, Exec: true}}, ""},
		{"rro, rnosuid, rexec", Mount{Destination: "/data", Bind: true, Source: "/srv",
			AttrSet: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID, AttrClr: unix.MOUNT_ATTR_NOEXEC},
			[]fs.Op{{Kind: fs.KindBind, Src: "/srv", Dst: "/data", RW: true, Dev: true},
				{Kind: fs.KindSetattr, Dst: "/data", Mode: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID, UID: unix.MOUNT_ATTR_NOEXEC}}, ""},
		{"rslave, then shared", Mount{Destination: "/mnt", Type: "tmpfs", Propagation: []uintptr{unix.MS_SLAVE | unix.MS_REC, unix.MS_SHARED}},
			[]fs.Op{{Kind: fs.KindTmpfs, Dst: "/mnt", RW: true, Exec: true},
				{Kind: fs.KindPropagate, Dst: "/mnt", Mode: unix.MS_SLAVE | unix.MS_REC}, {Kind: fs.KindPropagate, Dst: "/mnt", Mode: unix.MS_SHARED}}, ""},
		{"tmpcopyup", Mount{Destination: "/etc", Type: "tmpfs", TmpCopyUp: true, Flags: unix.MS_RDONLY},
			[]fs.Op{{Kind: fs.KindTmpfs, Dst: "/etc", Exec: true, CopyUp: true}}, ""},
		{"an unknown type", Mount{Destination: "/x", Type: "ext4"}, nil, "mounts[0].type"},
	} {
		got, err := mountOps(c.m, "mounts[0]")
		if c.error != "" {
			if err == nil || !strings.Contains(err.Error(), c.error) {
				t.Errorf("%s: %v, want an error naming %s", c.name, err, c.error)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, %v\nwant %+v", c.name, got, err, c.want)
		}
	}
}

// TestMakeDevices: a device of linux.devices is a node made in the
// state's directory with its type, numbers, fileMode and owner (the host
// ids its uid and gid map to), bound with device access; a fifo too. A
// uid the container does not map is refused naming the device.
func TestMakeDevices(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making device nodes needs root")
	}
	root, dir := t.TempDir(), filepath.Join(t.TempDir(), DevicesDir)
	devs := []Device{
		{Path: "/dev/test1", Type: 'c', Major: 10, Minor: 666, Mode: 0o660, UID: 0, GID: 0},
		{Path: "/dev/test2", Type: 'b', Major: 8, Minor: 666, Mode: 0o640, UID: 5, GID: 6},
		{Path: "/dev/u", Type: 'u', Major: 1, Minor: 3, Mode: 0o666},
		{Path: "/dev/test3", Type: 'p', Mode: 0o600, UID: 1},
	}
	p, err := Plan(&Container{Root: root, Devices: devs})
	if err != nil {
		t.Fatal(err)
	}
	ids := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 100000, Size: 100}}
	l := &Launch{Spec: &nsexec.Spec{Plan: p}, devices: devs, uidMap: ids, gidMap: ids}
	if err := l.MakeDevices(dir); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: %v, %v; want a directory 0700", dir, fi, err)
	}
	types := map[byte]uint32{'c': unix.S_IFCHR, 'u': unix.S_IFCHR, 'b': unix.S_IFBLK, 'p': unix.S_IFIFO}
	for i, d := range devs {
		op := p.Ops[i]
		var st unix.Stat_t
		if op.Kind != fs.KindBind || op.Dst != d.Path || !op.RW || !op.Dev || unix.Stat(op.Src, &st) != nil ||
			filepath.Dir(op.Src) != dir || st.Mode&unix.S_IFMT != types[d.Type] || st.Mode&0o7777 != uint32(d.Mode) ||
			int64(unix.Major(st.Rdev)) != d.Major || int64(unix.Minor(st.Rdev)) != d.Minor ||
			st.Uid != 100000+d.UID || st.Gid != 100000+d.GID {
			t.Errorf("%s: %+v, %+v; want a bind of a node %c %d:%d %#o owned by %d:%d", d.Path, op, st,
				d.Type, d.Major, d.Minor, d.Mode, 100000+d.UID, 100000+d.GID)
		}
	}
	unmapped := []Device{{Path: "/dev/x", Type: 'c', Major: 1, Minor: 3, UID: 4000}}
	p, _ = Plan(&Container{Root: root, Devices: unmapped})
	l = &Launch{Spec: &nsexec.Spec{Plan: p}, devices: unmapped, uidMap: ids, gidMap: ids}
	if err := l.MakeDevices(filepath.Join(t.TempDir(), "d")); err == nil || !strings.Contains(err.Error(), "linux.devices[0]") {
		t.Errorf("uid 4000 not mapped: %v, want an error naming linux.devices[0]", err)
	}
}

// TestHostDevice: a rootless caller's fallback finds the host's node of
// a device's type and numbers, under its own name or another; none for a
// block device with a char device's numbers.
func TestHostDevice(t *testing.T) {
	var st unix.Stat_t
	if err := unix.Stat("/dev/null", &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR {
		t.Skipf("no character device /dev/null here (%v)", err)
	}
	for _, c := range []struct {
		d  Device
		ok bool
	}{
		{Device{Path: "/dev/null", Type: 'c', Major: 1, Minor: 3}, true},
		{Device{Path: "/dev/my/null", Type: 'u', Major: 1, Minor: 3}, true},
		{Device{Path: "/dev/bnull", Type: 'b', Major: 1, Minor: 3}, false},
		{Device{Path: "/dev/none", Type: 'c', Major: 4095, Minor: 1048575}, false},
	} {
		src, ok := hostDevice(c.d)
		var got unix.Stat_t
		if ok != c.ok || (ok && (unix.Stat(src, &got) != nil || got.Rdev != st.Rdev)) {
			t.Errorf("%+v: %q, %v; want found %v", c.d, src, ok, c.ok)
		}
	}
}

// TestPlanCgroupMounts: a cgroup mount is the container's own cgroup: on
// v2 a bind of its directory; on v1 a tmpfs with a bind of its directory
// in each hierarchy (not the hybrid layout's unified tree), the
// hierarchies' symlinks made again, sealed unless rw.
func TestPlanCgroupMounts(t *testing.T) {
	v1, v2 := t.TempDir(), t.TempDir()
	for _, d := range []string{"cpu,cpuacct", "memory", "unified"} {
		if err := os.Mkdir(filepath.Join(v1, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("cpu,cpuacct", filepath.Join(v1, "cpu")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(v2, "cgroup.controllers"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	m := Mount{Destination: "/sys/fs/cgroup", Type: "cgroup", Flags: unix.MS_RDONLY | unix.MS_NOEXEC}
	one := &State{CgroupPath: "/c/d"}
	// A relative cgroupsPath on v1: below the caller's own cgroup in each
	// hierarchy, which here differ.
	each := &State{CgroupPath: "/c/d", CgroupPaths: map[string]string{"cpu,cpuacct": "/c/d", "memory": "/acct/c/d"}}
	for _, c := range []struct {
		root string
		st   *State
		want []fs.Op
	}{
		{v2, one, []fs.Op{{Kind: fs.KindBind, Src: v2 + "/c/d", Dst: "/sys/fs/cgroup", NoExec: true}}},
		{v1, one, []fs.Op{{Kind: fs.KindTmpfs, Dst: "/sys/fs/cgroup", RW: true, Data: "mode=0755,size=64k,nr_inodes=64"},
			{Kind: fs.KindSymlink, Dst: "/sys/fs/cgroup/cpu", Link: "cpu,cpuacct"},
			{Kind: fs.KindBind, Src: v1 + "/cpu,cpuacct/c/d", Dst: "/sys/fs/cgroup/cpu,cpuacct", NoExec: true},
			{Kind: fs.KindBind, Src: v1 + "/memory/c/d", Dst: "/sys/fs/cgroup/memory", NoExec: true},
			{Kind: fs.KindSeal, Dst: "/sys/fs/cgroup"}}},
		{v1, each, []fs.Op{{Kind: fs.KindTmpfs, Dst: "/sys/fs/cgroup", RW: true, Data: "mode=0755,size=64k,nr_inodes=64"},
			{Kind: fs.KindSymlink, Dst: "/sys/fs/cgroup/cpu", Link: "cpu,cpuacct"},
			{Kind: fs.KindBind, Src: v1 + "/cpu,cpuacct/c/d", Dst: "/sys/fs/cgroup/cpu,cpuacct", NoExec: true},
			{Kind: fs.KindBind, Src: v1 + "/memory/acct/c/d", Dst: "/sys/fs/cgroup/memory", NoExec: true},
			{Kind: fs.KindSeal, Dst: "/sys/fs/cgroup"}}},
	} {
		p, err := Plan(&Container{Root: t.TempDir(), Mounts: []Mount{m}})
		if err != nil {
			t.Fatal(err)
		}
		l := &Launch{Spec: &nsexec.Spec{Plan: p}}
		if err := l.CgroupMounts(&Store{cgroupRoot: c.root}, c.st); err != nil || !reflect.DeepEqual(p.Ops, c.want) {
			t.Errorf("%s: %+v, %v\nwant %+v", c.root, p.Ops, err, c.want)
		}
	}
}
