package oci

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/wardbox/ward/fs"
)

// The container's root as ward's init builds it (nsexec/root_linux.c): the
// init pivots into a fresh tmpfs, as for every sandbox, and the plan below
// fills it. The rootfs's top-level entries are bound into it one by one
// (its directories and files; its symlinks made again), writable unless
// root.readonly; then config.json's mounts in order, the default devices
// when /dev is a mount of the container's own, the masked paths and the
// read-only paths. The root tmpfs itself is sealed read-only at the end,
// so a new top-level entry cannot be made; everything below the rootfs's
// own directories is the rootfs.

// defaultDevices are runc's: bound from the host's /dev (device access
// kept) when config.json makes /dev a file system of the container's own.
var defaultDevices = []string{"null", "zero", "full", "random", "urandom", "tty"}

// Plan is the root plan for c, or the first field ward cannot honour yet.
func Plan(c *Container) (*fs.Plan, error) {
	root, err := filepath.EvalSymlinks(c.Root)
	if err != nil {
		return nil, invalid("root.path", "%v", err)
	}
	p := &fs.Plan{}
	if err := rootfsOps(p, root, !c.RootReadonly); err != nil {
		return nil, err
	}
	for i, m := range c.Mounts {
		op, err := mountOp(m, fmt.Sprintf("mounts[%d]", i))
		if err != nil {
			return nil, err
		}
		p.Ops = append(p.Ops, op)
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

// rootfsOps binds the rootfs's top-level entries (in name order) into the
// root tmpfs.
func rootfsOps(p *fs.Plan, root string, rw bool) error {
	ents, err := os.ReadDir(root)
	if err != nil {
		return invalid("root.path", "%v", err)
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	for _, e := range ents {
		src, dst := filepath.Join(root, e.Name()), "/"+e.Name()
		switch {
		case e.Type()&os.ModeSymlink != 0:
			link, err := os.Readlink(src)
			if err != nil {
				return invalid("root.path", "%v", err)
			}
			p.Ops = append(p.Ops, fs.Op{Kind: fs.KindSymlink, Dst: dst, Link: link})
		case e.IsDir() || e.Type().IsRegular():
			p.Ops = append(p.Ops, fs.Op{Kind: fs.KindBind, Src: src, Dst: dst, RW: rw})
		}
	}
	return nil
}

// mountOp is one of config.json's mounts as a plan operation.
func mountOp(m Mount, field string) (fs.Op, error) {
	ro := m.Flags&unix.MS_RDONLY != 0 || m.AttrSet&unix.MOUNT_ATTR_RDONLY != 0
	switch {
	case len(m.Propagation) > 0 || m.AttrSet&^unix.MOUNT_ATTR_RDONLY != 0 || m.AttrClr != 0 || m.TmpCopyUp:
		return fs.Op{}, unsupported(field+".options", "propagation, recursive attributes and tmpcopyup are not set up yet")
	case m.Bind:
		return fs.Op{Kind: fs.KindBind, Src: m.Source, Dst: m.Destination, RW: !ro,
			Dev: m.Flags&unix.MS_NODEV == 0, NoExec: m.Flags&unix.MS_NOEXEC != 0}, nil
	}
	switch m.Type {
	case "proc":
		return fs.Op{Kind: fs.KindProc, Dst: m.Destination}, nil
	case "tmpfs":
		return fs.Op{Kind: fs.KindTmpfs, Dst: m.Destination, Data: m.Data, RW: !ro, Exec: m.Flags&unix.MS_NOEXEC == 0}, nil
	case "devpts":
		return fs.Op{Kind: fs.KindDevpts, Dst: m.Destination, Data: m.Data}, nil
	case "sysfs":
		return fs.Op{Kind: fs.KindSysfs, Dst: m.Destination, RW: !ro}, nil
	case "mqueue":
		return fs.Op{Kind: fs.KindMqueue, Dst: m.Destination}, nil
	}
	return fs.Op{}, unsupported(field+".type", fmt.Sprintf("a %s mount is not set up yet", m.Type))
}
