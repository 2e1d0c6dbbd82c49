package oci

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/wardbox/ward/fs"
	"github.com/wardbox/ward/nsexec"
	"github.com/wardbox/ward/seccomp"
)

// Launch is a Container in the launcher's terms: the init's spec and how
// to clone it (nsexec.Create).
type Launch struct {
	Spec *nsexec.Spec
	Opt  nsexec.Options
	// RootfsNote (after AttachSources) says why the rootfs is not
	// idmapped where it should be ("": it is, or need not be).
	RootfsNote string
	// uidMap and gidMap are the container's user namespace's maps
	// (config.json's, or ward's).
	uidMap, gidMap []syscall.SysProcIDMap
	// ipcPath is the IPC namespace joined by path ("": a new one or
	// none): its mqueue mounts are made on the host (AttachSources).
	ipcPath string
	// devices are linux.devices (MakeDevices); staged the nodes made
	// for them, whose clones get device access (AttachSources).
	devices []Device
	staged  []string
}

// lifecycleUnsupported is the first field of c that the lifecycle does not
// set up yet (config.json's reading accepts more than create can honour).
func lifecycleUnsupported(c *Container) error {
	p := c.Process
	for _, f := range []struct {
		field string
		set   bool
		why   string
	}{
		{"process.user.additionalGids", len(p.AdditionalGids) > nsexec.MaxGroups, fmt.Sprintf("ward sets at most %d supplementary groups", nsexec.MaxGroups)},
	} {
		if f.set {
			return unsupported(f.field, f.why)
		}
	}
	for i, ns := range c.Namespaces {
		if ns.Path != "" {
			switch ns.Type {
			case "pid":
				return unsupported(fmt.Sprintf("linux.namespaces[%d].path", i), "ward's init is PID 1 of a PID namespace of its own: in a joined one it could not mount its /proc from ward's user namespace")
			case "user":
				return unsupported(fmt.Sprintf("linux.namespaces[%d].path", i), "ward makes the container's user namespace itself (its root is a host uid that owns nothing)")
			case "time":
				return unsupported(fmt.Sprintf("linux.namespaces[%d].type", i), "a time namespace is not set up yet")
			}
			continue // network, ipc, uts, cgroup: joined (NewLaunch)
		}
		if ns.Type == "time" {
			return unsupported(fmt.Sprintf("linux.namespaces[%d].type", i), "a time namespace is not set up yet")
		}
	}
	// ward's init is PID 1 of a PID namespace of its own; a UTS
	// namespace, new or joined, keeps the host's hostname out of reach.
	for _, need := range []string{"pid", "uts"} {
		if c.namespace(need) == nil {
			return unsupported("linux.namespaces", fmt.Sprintf("ward needs a %s namespace", need))
		}
	}
	return nil
}

// NewLaunch turns c into the init's spec: the root plan, the program,
// its user, limits and seccomp filter, and the namespaces to make.
// cgroupFDs is how many cgroup.procs files the caller passes first
// (Files), which the container's process writes itself into.
func NewLaunch(c *Container, cgroupFiles []*os.File) (*Launch, error) {
	if err := lifecycleUnsupported(c); err != nil {
		return nil, err
	}
	plan, err := Plan(c)
	if err != nil {
		return nil, err
	}
	if c.mountsDev() {
		// The devices ward binds into /dev are allowed after
		// config.json's rules, as runc allows its default devices.
		for _, d := range [][2]int64{{1, 3}, {1, 5}, {1, 7}, {1, 8}, {1, 9}, {5, 0}, {5, 2}, {136, -1}} {
			c.Resources.Devices = append(c.Resources.Devices, DeviceRule{Allow: true, Type: 'c', Major: d[0], Minor: d[1], Access: "rwm"})
		}
	}
	for _, d := range c.Devices {
		// linux.devices are allowed too, as runc allows them (a fifo
		// is no device).
		t := d.Type
		if t == 'p' {
			continue
		}
		if t == 'u' {
			t = 'c'
		}
		c.Resources.Devices = append(c.Resources.Devices, DeviceRule{Allow: true, Type: t, Major: d.Major, Minor: d.Minor, Access: "rwm"})
	}
	spec, err := processSpec(c, c.Process)
	if err != nil {
		return nil, err
	}
	spec.Hostname, spec.Plan, spec.CgroupFDs = c.Hostname, plan, len(cgroupFiles)
	if c.Ward.Report != "" && c.Seccomp != nil && c.Seccomp.AllowsReadWrite() {
		// ward.report counts the profile's denials: the program's process
		// loads the profile with SCMP_ACT_ERRNO as user notifications, and
		// the init, which stays (docs/oci.md), answers each from the exact
		// filter (Seccomp[1], which it keeps and the process never loads).
		// Not for a profile that may deny read or write: the process
		// reports the listener with them before anyone serves it.
		if notify, err := c.Seccomp.CompileNotify(); err == nil {
			spec.Seccomp, spec.SeccompNotify = append([]seccomp.Program{notify}, spec.Seccomp...), "oci"
		}
	}
	own, joined := c.splitSysctls()
	spec.OCIProc.Sysctl = own
	var flags uintptr
	var joins []nsexec.JoinNS
	for _, ns := range c.Namespaces {
		if ns.Path != "" {
			joins = append(joins, nsexec.JoinNS{Path: ns.Path, Flag: ns.Flag})
			continue
		}
		flags |= ns.Flag
	}
	spec.LoopbackUp = flags&unix.CLONE_NEWNET != 0
	if err := containerHooks(c, spec); err != nil {
		return nil, err
	}
	opt := nsexec.Options{OCI: true, CloneFlags: flags, HostNetwork: !spec.LoopbackUp, Files: cgroupFiles, Join: joins}
	if ns := c.namespace("uts"); ns != nil && ns.Path != "" && c.Hostname != "" {
		joined = append([]string{"kernel.hostname=" + c.Hostname}, joined...)
		spec.Hostname = ""
	}
	if len(joined) > 0 {
		opt.OnJoined = func() error { return writeSysctls(joined) }
	}
	l := &Launch{Spec: spec, Opt: opt, devices: c.Devices}
	l.uidMap = []syscall.SysProcIDMap{{ContainerID: 0, HostID: nsexec.HostUIDBase, Size: nsexec.IDRange}}
	l.gidMap = l.uidMap
	if len(c.UIDMappings) > 0 {
		l.Opt.UIDMap, l.Opt.GIDMap = idMaps(c.UIDMappings), idMaps(c.GIDMappings)
		l.uidMap, l.gidMap = l.Opt.UIDMap, l.Opt.GIDMap
	}
	if ns := c.namespace("ipc"); ns != nil {
		l.ipcPath = ns.Path
	}
	return l, nil
}

// AttachSources clones the rootfs and every bind's source on the host
// (open_tree: a detached copy of the mount tree) and hands them to the
// init by fd (files.Add), so that the init, root of a user namespace of
// its own, attaches them without looking a path up: an OCI bundle's
// directories are often searchable by host root only. The rootfs's clone
// is idmapped (rootfsTree). The caller closes the files.
func (l *Launch) AttachSources(files *nsexec.Files) (trees []*os.File, err error) {
	defer func() {
		if err != nil {
			for _, t := range trees {
				t.Close()
			}
			trees = nil
		}
	}()
	if r := l.Spec.Plan.Rootfs; r != nil {
		t, note, err := rootfsTree(r.Path, l.uidMap, l.gidMap)
		if err != nil {
			return trees, err
		}
		trees = append(trees, t)
		r.FD, l.RootfsNote = files.Add(t), note
	}
	for i := range l.Spec.Plan.Ops {
		op := &l.Spec.Plan.Ops[i]
		if op.Kind == fs.KindMqueue && l.ipcPath != "" {
			// The init may not mount an mqueue of an IPC namespace it
			// joined (a pod's, host root's): made here, attached by fd.
			m, err := nsexec.MqueueIn(l.ipcPath)
			if err != nil {
				return trees, err
			}
			trees = append(trees, m)
			*op = fs.Op{Kind: fs.KindBind, Src: "/dev/mqueue", Dst: op.Dst, RW: true, NoExec: true, SrcFD: files.Add(m)}
			continue
		}
		if op.Kind != fs.KindBind {
			continue
		}
		t, err := cloneTree(op.Src)
		if err != nil {
			return trees, fmt.Errorf("clone the bind source %s: %w", op.Src, err)
		}
		trees = append(trees, t)
		if slices.Contains(l.staged, op.Src) {
			// A node MakeDevices made: usable even where the state's
			// file system is nodev (the init only sets attributes).
			attr := &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_NODEV}
			if err := unix.MountSetattr(int(t.Fd()), "", unix.AT_EMPTY_PATH, attr); err != nil {
				return trees, fmt.Errorf("device access on %s: %w", op.Src, err)
			}
		}
		op.SrcFD = files.Add(t)
	}
	return trees, nil
}

func cloneTree(path string) (*os.File, error) {
	fd, err := unix.OpenTree(unix.AT_FDCWD, path, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// rootfsTree is the rootfs's clone, the container's root. Where the
// container's root (uids[0], gids[0] on the host) is not the rootfs's
// owner, the clone is idmapped through a user namespace with the
// container's own maps: a file of host uid N shows as the container's uid
// N, so host root's rootfs is the container root's to write, and what the
// container root makes there is host root's on disk (the rootfs's owner's,
// as the files around it). Where the kernel or the file system refuses
// idmapping, the clone is plain (the rootfs is then host root's, not the
// container's, to write) and note says why.
func rootfsTree(path string, uids, gids []syscall.SysProcIDMap) (*os.File, string, error) {
	t, err := cloneTree(path)
	if err != nil {
		return nil, "", invalid("root.path", "clone %s: %v", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(t.Fd()), &st); err != nil {
		t.Close()
		return nil, "", invalid("root.path", "%s: %v", path, err)
	}
	rootUID, rootGID := hostIDOf(uids, 0), hostIDOf(gids, 0)
	if st.Uid == rootUID && st.Gid == rootGID {
		return t, "", nil // the container's root owns it already
	}
	ns, err := nsexec.NewUserns(uids, gids)
	if err != nil {
		return t, fmt.Sprintf("the rootfs is not idmapped: a user namespace for it: %v", err), nil
	}
	defer ns.Close()
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(ns.Fd())}
	if err := unix.MountSetattr(int(t.Fd()), "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, attr); err != nil {
		return t, fmt.Sprintf("the rootfs is not idmapped: %s refuses it: %v", path, err), nil
	}
	return t, "", nil
}

// hostIDOf is the host id that id maps to in m (-1: none).
func hostIDOf(m []syscall.SysProcIDMap, id int) uint32 {
	for _, l := range m {
		if id >= l.ContainerID && id < l.ContainerID+l.Size {
			return uint32(l.HostID + id - l.ContainerID)
		}
	}
	return ^uint32(0)
}

// capSets are p's capability sets in the gate's order (OCI: kept as
// config.json gives them; none given is none at all).
func capSets(p *Process) *[5]uint64 {
	c := Capabilities{}
	if p.Capabilities != nil {
		c = *p.Capabilities
	}
	return &[5]uint64{c.Bounding, c.Effective, c.Permitted, c.Inheritable, c.Ambient}
}

func idMaps(m []IDMapping) []syscall.SysProcIDMap {
	out := make([]syscall.SysProcIDMap, len(m))
	for i, l := range m {
		out[i] = syscall.SysProcIDMap{ContainerID: int(l.ContainerID), HostID: int(l.HostID), Size: int(l.Size)}
	}
	return out
}

// RootOnHost is the host uid and gid the container's root is (the exec
// fifo's owner): its user namespace's mapping of 0, or ward's.
func (c *Container) RootOnHost() (uid, gid int) {
	uid, gid = nsexec.HostUIDBase, nsexec.HostUIDBase
	for _, m := range c.UIDMappings {
		if m.ContainerID == 0 {
			uid = int(m.HostID)
		}
	}
	for _, m := range c.GIDMappings {
		if m.ContainerID == 0 {
			gid = int(m.HostID)
		}
	}
	return uid, gid
}

// ExecSpec is the spec of a command run in container c (ward-oci exec):
// process p, with the container's seccomp filter.
func ExecSpec(c *Container, p *Process) (*nsexec.Spec, error) {
	cc := *c
	cc.Process = p
	if err := lifecycleUnsupported(&cc); err != nil {
		return nil, err
	}
	spec, err := processSpec(c, p)
	if err != nil {
		return nil, err
	}
	// The command joins the container's cgroup namespace (nsexec.Join) and
	// keeps it, as runc's exec: it sees its cgroup as the container sees
	// it (exec --cgroup SUB: "/SUB"), not as the root of one of its own.
	spec.KeepCgroupNS = true
	return spec, nil
}

// sysctlList is domainname (as kernel.domainname) and linux.sysctl, in
// key order, as "key=value" for the container's process: domainname
// first, so that a sysctl of the same name wins, as with runc.
func (c *Container) sysctlList() []string {
	var out []string
	if c.Domainname != "" {
		out = append(out, "kernel.domainname="+c.Domainname)
	}
	keys := make([]string, 0, len(c.Sysctl))
	for k := range c.Sysctl {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+c.Sysctl[k])
	}
	return out
}

// splitSysctls is sysctlList split into those of the container's own
// namespaces, which its init writes, and those of namespaces joined by
// path (a pod's), which ward-oci writes from the thread that joined them
// (Options.OnJoined): ward's user namespace does not own them, as runc
// changes them in a pod's namespaces too.
func (c *Container) splitSysctls() (own, joined []string) {
	for _, kv := range c.sysctlList() {
		k, _, _ := strings.Cut(kv, "=")
		if ns := c.namespace(sysctlNamespace(k)); ns != nil && ns.Path != "" {
			joined = append(joined, kv)
		} else {
			own = append(own, kv)
		}
	}
	return own, joined
}

// writeSysctls writes "key=value" sysctls in the calling thread's
// namespaces (/proc/sys shows the writer's), kernel.hostname and
// kernel.domainname by their system calls.
func writeSysctls(kvs []string) error {
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		var err error
		switch k {
		case "kernel.hostname":
			err = unix.Sethostname([]byte(v))
		case "kernel.domainname":
			err = unix.Setdomainname([]byte(v))
		default:
			err = os.WriteFile("/proc/sys/"+strings.ReplaceAll(k, ".", "/"), []byte(v), 0)
		}
		if err != nil {
			return &nsexec.SetupError{Step: "set-sysctl", Msg: fmt.Sprintf("sysctl %s=%s (a namespace joined by path): %v", k, v, err)}
		}
	}
	return nil
}

// processSpec is what the container's init and an exec'd command share:
// process p (args, env, cwd, user, groups, umask, rlimits, oom score,
// capabilities, no_new_privs) under the container's seccomp filter.
func processSpec(c *Container, p *Process) (*nsexec.Spec, error) {
	spec := &nsexec.Spec{Args: p.Args, Env: p.Env, Dir: p.Cwd, UID: int(p.UID), GID: int(p.GID), NoFile: 1024}
	proc := &nsexec.OCIProc{NoNewPrivs: p.NoNewPrivileges, Groups: p.AdditionalGids, Umask: 0o022, OOMScoreAdj: p.OOMScoreAdj}
	if p.Umask != nil {
		proc.Umask = *p.Umask
	}
	for _, r := range p.Rlimits {
		if r.Resource == unix.RLIMIT_NOFILE {
			spec.NoFile, spec.NoFileHard = r.Soft, r.Hard
		}
		proc.Rlimits = append(proc.Rlimits, nsexec.Rlimit{Resource: r.Resource, Soft: r.Soft, Hard: r.Hard})
	}
	spec.OCIProc = proc
	if ns := c.namespace("cgroup"); ns != nil && ns.Path != "" {
		spec.KeepCgroupNS = true
	}
	spec.Caps = capSets(p)
	if p.Terminal {
		// SpecProcess checked the size (at most 65535 each).
		spec.Console, spec.ConsoleRows, spec.ConsoleCols = true, uint16(p.ConsoleHeight), uint16(p.ConsoleWidth)
	}
	if c.Seccomp != nil {
		prog, err := c.Seccomp.Compile()
		if err != nil {
			return nil, invalid("linux.seccomp", "%v", err)
		}
		spec.Seccomp = []seccomp.Program{prog}
	}
	return spec, nil
}
