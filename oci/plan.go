package oci

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/wardbox/ward/fs"
)

// The container's root as ward's init builds it (nsexec/root_linux.c): the
// bundle's rootfs itself, as runc has it. The parent clones the rootfs
// (AttachSources: idmapped, where ward's user namespace makes the
// container's root another uid than the rootfs's owner), the init attaches
// the clone, builds the plan in it (config.json's mounts in order, the
// default devices when /dev is a mount of the container's own, the
// devices of linux.devices, the masked paths and the read-only paths) and
// pivots into it; root.readonly makes / read-only at the end.

// defaultDevices are runc's: bound from the host's /dev (device access
// kept) when config.json makes /dev a file system of the container's own.
var defaultDevices = []string{"null", "zero", "full", "random", "urandom", "tty"}

// Plan is the root plan for c, or the first field ward cannot honour yet.
func Plan(c *Container) (*fs.Plan, error) {
	root, err := filepath.EvalSymlinks(c.Root)
	if err != nil {
		return nil, invalid("root.path", "%v", err)
	}
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return nil, invalid("root.path", "%s: not a directory (%v)", root, err)
	}
	p := &fs.Plan{Rootfs: &fs.Rootfs{Path: root, Readonly: c.RootReadonly, Propagation: c.RootfsPropagation}}
	for i, m := range c.Mounts {
		ops, err := mountOps(m, fmt.Sprintf("mounts[%d]", i))
		if err != nil {
			return nil, err
		}
		p.Ops = append(p.Ops, ops...)
	}
	if c.mountsDev() {
		for _, d := range defaultDevices {
			p.Ops = append(p.Ops, fs.Op{Kind: fs.KindBind, Src: "/dev/" + d, Dst: "/dev/" + d, RW: true, Dev: true})
		}
		p.Ops = append(p.Ops, fs.Op{Kind: fs.KindSymlink, Dst: "/dev/ptmx", Link: "pts/ptmx"},
			fs.Op{Kind: fs.KindSymlink, Dst: "/dev/fd", Link: "/proc/self/fd"},
			fs.Op{Kind: fs.KindSymlink, Dst: "/dev/stdin", Link: "/proc/self/fd/0"},
			fs.Op{Kind: fs.KindSymlink, Dst: "/dev/stdout", Link: "/proc/self/fd/1"},
			fs.Op{Kind: fs.KindSymlink, Dst: "/dev/stderr", Link: "/proc/self/fd/2"})
	}
	for _, d := range c.Devices {
		// Made on the host at create (Launch.MakeDevices), bound here.
		p.Ops = append(p.Ops, fs.Op{Kind: kindDevice, Dst: d.Path})
	}
	for _, m := range c.MaskedPaths {
		p.Ops = append(p.Ops, fs.Op{Kind: fs.KindMask, Dst: m})
	}
	for _, r := range c.ReadonlyPaths {
		p.Ops = append(p.Ops, fs.Op{Kind: fs.KindRebind, Dst: r})
	}
	return p, nil
}

// mountsDev says whether config.json makes /dev a file system of the
// container's own (ward then binds the default devices into it).
func (c *Container) mountsDev() bool {
	for _, m := range c.Mounts {
		if m.Destination == "/dev" {
			return true
		}
	}
	return false
}

// mountOps are one of config.json's mounts as plan operations: the mount,
// then its recursive attributes (rro, rnosuid, ...) and its propagation.
func mountOps(m Mount, field string) ([]fs.Op, error) {
	op, err := mountOp(m, field)
	if err != nil {
		return nil, err
	}
	op.CopyUp = m.TmpCopyUp // a tmpfs's (specMounts checked)
	ops := []fs.Op{op}
	if m.AttrSet != 0 || m.AttrClr != 0 {
		ops = append(ops, fs.Op{Kind: fs.KindSetattr, Dst: m.Destination, Mode: uint32(m.AttrSet), UID: int(uint32(m.AttrClr))})
	}
	for _, p := range m.Propagation {
		ops = append(ops, fs.Op{Kind: fs.KindPropagate, Dst: m.Destination, Mode: uint32(p)})
	}
	return ops, nil
}

// mountOp is one of config.json's mounts as a plan operation.
func mountOp(m Mount, field string) (fs.Op, error) {
	ro := m.Flags&unix.MS_RDONLY != 0
	switch {
	case m.Bind:
		return fs.Op{Kind: fs.KindBind, Src: m.Source, Dst: m.Destination, RW: !ro,
			Dev: m.Flags&unix.MS_NODEV == 0, NoExec: m.Flags&unix.MS_NOEXEC != 0}, nil
	}
	// A new file system's source is config.json's ("shm" for a tmpfs), as
	// /proc/self/mountinfo then shows it.
	src := m.Source
	if strings.ContainsRune(src, 0) || len(src) >= 4096 {
		return fs.Op{}, invalid(field+".source", "%.40q: not a source", src)
	}
	switch m.Type {
	case "proc":
		return fs.Op{Kind: fs.KindProc, Src: src, Dst: m.Destination}, nil
	case "tmpfs":
		return fs.Op{Kind: fs.KindTmpfs, Src: src, Dst: m.Destination, Data: m.Data, RW: !ro, Exec: m.Flags&unix.MS_NOEXEC == 0}, nil
	case "devpts":
		return fs.Op{Kind: fs.KindDevpts, Src: src, Dst: m.Destination, Data: m.Data}, nil
	case "sysfs":
		return fs.Op{Kind: fs.KindSysfs, Src: src, Dst: m.Destination, RW: !ro}, nil
	case "mqueue":
		return fs.Op{Kind: fs.KindMqueue, Src: src, Dst: m.Destination}, nil
	case "cgroup", "cgroup2":
		// The container's own cgroup, once create knows its path
		// (Launch.CgroupMounts).
		return fs.Op{Kind: kindCgroup, Dst: m.Destination, RW: !ro, NoExec: m.Flags&unix.MS_NOEXEC != 0}, nil
	}
	return fs.Op{}, unsupported(field+".type", fmt.Sprintf("a %s mount is not set up yet", m.Type))
}

// kindCgroup is a cgroup mount in a Plan until Launch.CgroupMounts makes
// it binds of the container's cgroup (the init knows no such operation).
const kindCgroup fs.Kind = "oci-cgroup"

// CgroupMounts makes each cgroup mount of the plan the container's own
// cgroup (st's, below s's cgroup file system), as runc has it for a
// container that may not mount a cgroup file system itself (the init is
// not in the container's cgroup namespace yet when it builds the root):
// on cgroup v2 a bind of its directory in the v2 tree; on v1 a tmpfs
// holding a bind of its directory in each hierarchy (the hierarchies'
// symlinks, cpu to cpu,cpuacct, made again). Read-only unless the mount
// says rw.
func (l *Launch) CgroupMounts(s *Store, st *State) error {
	var ops []fs.Op
	for _, op := range l.Spec.Plan.Ops {
		if op.Kind != kindCgroup {
			ops = append(ops, op)
			continue
		}
		if s.unified() {
			ops = append(ops, fs.Op{Kind: fs.KindBind, Src: filepath.Join(s.cgroupRoot, cleanCgroupPath(st.CgroupPath)), Dst: op.Dst, RW: op.RW, NoExec: op.NoExec})
			continue
		}
		ops = append(ops, fs.Op{Kind: fs.KindTmpfs, Dst: op.Dst, RW: true, Data: "mode=0755,size=64k,nr_inodes=64"})
		ents, err := os.ReadDir(s.cgroupRoot)
		if err != nil {
			return fmt.Errorf("cgroup mount %s: %w", op.Dst, err)
		}
		for _, e := range ents {
			src, dst := filepath.Join(s.cgroupRoot, e.Name()), filepath.Join(op.Dst, e.Name())
			switch {
			case e.Type()&os.ModeSymlink != 0:
				link, err := os.Readlink(src)
				if err != nil {
					return fmt.Errorf("cgroup mount %s: %w", op.Dst, err)
				}
				ops = append(ops, fs.Op{Kind: fs.KindSymlink, Dst: dst, Link: link})
			case e.IsDir() && e.Name() != "unified":
				ops = append(ops, fs.Op{Kind: fs.KindBind, Src: filepath.Join(src, st.cgroupPathIn(e.Name())), Dst: dst, RW: op.RW, NoExec: op.NoExec})
			}
		}
		if !op.RW {
			ops = append(ops, fs.Op{Kind: fs.KindSeal, Dst: op.Dst})
		}
	}
	l.Spec.Plan.Ops = ops
	return nil
}

// hostDev is where MakeDevices looks for host nodes (a test's own directory).
var hostDev = "/dev"

// kindDevice is a device of linux.devices in a Plan until
// Launch.MakeDevices makes it a bind of a node made for it.
const kindDevice fs.Kind = "oci-device"

// DevicesDir is where MakeDevices makes the nodes of linux.devices, in the
// container's state directory.
const DevicesDir = "dev"

// MakeDevices makes each device of linux.devices in dir (a directory of
// the container's state, made here 0700: no host user reaches the nodes
// by path), with its type and numbers, fileMode, and uid and gid as the
// container's user namespace maps them to the host, and makes its plan
// operation a bind of that node: the kernel refuses mknod in a user
// namespace, but create, as host root, may make one on the host. The init
// binds it as every bind, in the container's mount namespace. A caller
// that may not make a device node (a rootless one) gets, for a c, b or u
// device, the host's node of the same type and numbers bound instead
// (its mode and owner the host's), as runc does rootless.
func (l *Launch) MakeDevices(dir string) error {
	i := 0
	for k := range l.Spec.Plan.Ops {
		op := &l.Spec.Plan.Ops[k]
		if op.Kind != kindDevice {
			continue
		}
		d, field := l.devices[i], fmt.Sprintf("linux.devices[%d]", i)
		if i == 0 {
			if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
				return fmt.Errorf("%s: %w", field, err)
			}
		}
		i++
		src, err := makeDevice(d, filepath.Join(dir, fmt.Sprint(i-1)), l.uidMap, l.gidMap)
		if errors.Is(err, unix.EPERM) && d.Type != 'p' {
			var ok bool
			if src, ok = hostDevice(d); !ok {
				return invalid(field, "%s (%c %d:%d): no node of the host's /dev has that type and numbers, "+
					"and this caller may not make one (%v)", d.Path, d.Type, d.Major, d.Minor, err)
			}
		} else if err != nil {
			return invalid(field, "%s: %v", d.Path, err)
		} else {
			l.staged = append(l.staged, src)
		}
		*op = fs.Op{Kind: fs.KindBind, Src: src, Dst: d.Path, RW: true, Dev: true}
	}
	return nil
}

// makeDevice makes d's node at path: its type and numbers, its mode
// exactly (not masked by the umask), owned by the host ids its uid and
// gid map to.
func makeDevice(d Device, path string, uids, gids []syscall.SysProcIDMap) (string, error) {
	uid, gid := hostIDOf(uids, int(d.UID)), hostIDOf(gids, int(d.GID))
	if uid == ^uint32(0) || gid == ^uint32(0) {
		return "", fmt.Errorf("uid %d, gid %d: not mapped in the container's user namespace", d.UID, d.GID)
	}
	mode := map[byte]uint32{'c': unix.S_IFCHR, 'u': unix.S_IFCHR, 'b': unix.S_IFBLK, 'p': unix.S_IFIFO}[d.Type]
	if err := unix.Mknod(path, mode|0o600, int(unix.Mkdev(uint32(d.Major), uint32(d.Minor)))); err != nil {
		return "", err
	}
	if err := os.Chown(path, int(uid), int(gid)); err != nil {
		return "", err
	}
	// After the chown, which clears setuid and setgid bits.
	if err := os.Chmod(path, d.Mode); err != nil {
		return "", err
	}
	return path, nil
}

// hostDevice finds the host's node for d: hostDev/<d's name> first, then
// any in hostDev and its directories (in name order; not pts, shm or
// mqueue, which hold no device nodes of interest).
func hostDevice(d Device) (string, bool) {
	want := uint32(unix.S_IFCHR)
	if d.Type == 'b' {
		want = unix.S_IFBLK
	}
	match := func(path string) bool {
		var st unix.Stat_t
		return unix.Stat(path, &st) == nil && st.Mode&unix.S_IFMT == want &&
			int64(unix.Major(st.Rdev)) == d.Major && int64(unix.Minor(st.Rdev)) == d.Minor
	}
	if p := filepath.Join(hostDev, filepath.Base(d.Path)); match(p) {
		return p, true
	}
	dirs := []string{hostDev}
	for len(dirs) > 0 {
		dir := dirs[0]
		dirs = dirs[1:]
		ents, _ := os.ReadDir(dir) // sorted by name
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			switch {
			case e.IsDir() && dir == hostDev && e.Name() != "pts" && e.Name() != "shm" && e.Name() != "mqueue":
				dirs = append(dirs, p)
			case e.Type()&(os.ModeDevice|os.ModeCharDevice) != 0 && match(p):
				return p, true
			}
		}
	}
	return "", false
}
