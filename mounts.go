package ward

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	wfs "github.com/wardbox/ward/fs"
	"github.com/wardbox/ward/nsexec"
)

// Mount is a host path made visible inside (--mount=SRC:DST[:ro|rw]).
type Mount struct {
	Source, Target string
	Writable       bool
}

// ParseMount reads SRC:DST[:ro|rw] (ro when the mode is left out).
func ParseMount(s string) (Mount, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
		return Mount{}, fmt.Errorf("want SRC:DST[:ro|rw]")
	}
	m := Mount{Source: parts[0], Target: parts[1]}
	if len(parts) == 3 {
		switch parts[2] {
		case "ro":
		case "rw":
			m.Writable = true
		default:
			return Mount{}, fmt.Errorf("mode %q: want ro or rw", parts[2])
		}
	}
	return m, nil
}

// hostMount is one resolved user mount, before it is opened.
type hostMount struct {
	flag, value string // for messages: the flag and what the user wrote
	src, dst    string
	rw, noexec  bool
}

// resolveMounts turns --workspace, --allow-read, --allow-write and --mount
// into host paths and targets, checked, before anything starts; a bad one
// is a *ConfigError naming the flag and value. With VirtualFS only the
// workspace and the --mount targets are added.
func resolveMounts(cfg Config) ([]hostMount, error) {
	cwd := cfg.Cwd
	if cwd == "" {
		return nil, &ConfigError{Key: "allow-read", Value: ".", Reason: "cannot know the current directory"}
	}
	var out []hostMount
	add := func(flag, value, src, dst string, rw, noexec bool) error {
		real, err := wfs.ResolveSource(src, cwd)
		if err != nil {
			return &ConfigError{Key: flag, Value: value, Reason: err.Error()}
		}
		if fi, err := os.Stat(real); err == nil && fi.Mode()&os.ModeSocket != 0 && !cfg.AllowSockets {
			// Checked again on the fd that is mounted (openOne); here it
			// is a clear exit 2 before anything starts.
			return &ConfigError{Key: flag, Value: value, Reason: real + " is a unix socket, a way out of the sandbox (--allow-sockets lets it in)"}
		}
		if dst == "" {
			dst = real
		}
		if err := wfs.CheckTarget(dst); err != nil {
			return &ConfigError{Key: flag, Value: value, Reason: err.Error()}
		}
		out = append(out, hostMount{flag: flag, value: value, src: real, dst: filepath.Clean(dst), rw: rw, noexec: noexec})
		return nil
	}
	// The workspace first: a --mount may go beneath it. It is a --mount
	// like any other, so it is there with --virtual-fs too.
	if dir, rw, ok := cfg.workspace(); ok {
		if err := add("workspace", dir, dir, WorkspaceDir, rw, false); err != nil {
			return nil, err
		}
		if fi, err := os.Stat(out[0].src); err == nil && !fi.IsDir() {
			return nil, &ConfigError{Key: "workspace", Value: dir, Reason: out[0].src + " is not a directory"}
		}
	}
	if !cfg.VirtualFS {
		for _, p := range cfg.AllowRead {
			if err := add("allow-read", p, p, "", false, true); err != nil {
				return nil, err
			}
		}
		for _, p := range cfg.AllowWrite {
			if err := add("allow-write", p, p, "", true, false); err != nil {
				return nil, err
			}
		}
	}
	for _, m := range cfg.Mounts {
		v := m.Source + ":" + m.Target
		if err := add("mount", v, m.Source, m.Target, m.Writable, false); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// openedMounts are the user mounts cloned on the host, ready for the init.
type openedMounts struct {
	files  []*os.File
	mounts []wfs.UserMount
	// fallback are writable sources that could not be idmapped: lent to
	// the sandbox user for the run and given back after it.
	fallback []lent
}

// lent is a writable directory whose owner ward changed for the run:
// from uid:gid to the host ids to:toGID. dir is the O_PATH fd it was
// opened with; the give-back goes through it, never the name.
type lent struct {
	path      string
	dir       *os.File
	uid, gid  int
	to, toGID int
}

func (o *openedMounts) close() {
	for _, f := range o.files {
		f.Close()
	}
	o.files = nil
}

// open clones each mount's tree here, on the host (open_tree, detached),
// limits it (read-only unless writable; nosuid, nodev; noexec for
// --allow-read) and, for a writable one, maps the caller's uid and gid to
// the sandbox user's with an idmapped mount, so files the program creates
// belong to the caller. The init attaches each by fd: it needs no
// permission on the host path, and nothing done to the path afterwards can
// redirect the mount. Each source is opened once (wfs.OpenSource: no
// symlink may appear in it after it was resolved) and the clone, the stat,
// the socket walk and a lend all go through that fd. fds are numbered from
// first. Whatever it lent is in o.fallback even when it fails: the caller
// registers o.giveBack before calling it.
func (o *openedMounts) open(ms []hostMount, allowSockets bool, first int) (err error) {
	var idmap *os.File // shared (idmapUsernsFor): not closed here
	defer func() {
		if err != nil {
			o.close()
		}
	}()
	for i, m := range ms {
		src, err := wfs.OpenSource(m.src)
		if err != nil {
			return fmt.Errorf("--%s=%s: %w", m.flag, m.value, err)
		}
		err = o.openOne(m, src, allowSockets, first+i, &idmap)
		src.Close()
		if err != nil {
			return fmt.Errorf("--%s=%s: %w", m.flag, m.value, err)
		}
	}
	return nil
}

// openOne clones m from src, its O_PATH fd, as fd number fd in the init.
func (o *openedMounts) openOne(m hostMount, src *os.File, allowSockets bool, fd int, idmap **os.File) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(src.Fd()), &st); err != nil {
		return fmt.Errorf("stat %s: %w", m.src, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFSOCK && !allowSockets {
		return fmt.Errorf("%s is a unix socket, a way out of the sandbox (--allow-sockets lets it in)", m.src)
	}
	if os.Geteuid() != 0 {
		return o.passSource(m, src, &st, allowSockets, fd)
	}
	tree, err := unix.OpenTree(int(src.Fd()), "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
	if err != nil {
		return fmt.Errorf("clone the mount of %s: %w", m.src, err)
	}
	o.files = append(o.files, os.NewFile(uintptr(tree), m.src))
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if !m.rw {
		attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
	}
	if m.noexec {
		attr.Attr_set |= unix.MOUNT_ATTR_NOEXEC
	}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, attr); err != nil {
		return fmt.Errorf("limit the mount of %s: %w", m.src, err)
	}
	if m.rw {
		if *idmap == nil {
			if *idmap, err = idmapUserns(); err != nil {
				return err
			}
		}
		id := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64((*idmap).Fd())}
		if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, id); err != nil {
			// The file system cannot be idmapped (tmpfs before 6.3,
			// some network file systems): lend the top directory to
			// the sandbox user for the run, give everything back after.
			if err := o.lend(src, m.src, nsexec.HostUIDBase+SandboxUID, nsexec.HostUIDBase+SandboxGID); err != nil {
				return err
			}
		}
	}
	dir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	um := wfs.UserMount{Src: m.src, Dst: m.dst, FD: fd, RW: m.rw, Dir: dir}
	if dir && !allowSockets {
		// The walk goes over the clone itself: what is listed is what
		// will be mounted.
		if um.Sockets, err = wfs.FindSockets(tree, m.src); err != nil {
			return err
		}
	}
	o.mounts = append(o.mounts, um)
	return nil
}

// passSource hands an unprivileged caller's source to the init as it is
// (an O_PATH fd): cloning a host mount needs privileges this process does
// not have, the init has them over its own copy of the mount namespace and
// clones it there (clone-user-paths, nsexec/root_user_linux.c). No idmapping is needed: the single
// mapping makes the sandbox user the caller. The socket walk goes over the
// source itself.
func (o *openedMounts) passSource(m hostMount, src *os.File, st *unix.Stat_t, allowSockets bool, fd int) error {
	dup, err := unix.FcntlInt(src.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("dup %s: %w", m.src, err)
	}
	o.files = append(o.files, os.NewFile(uintptr(dup), m.src))
	dir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	um := wfs.UserMount{Src: m.src, Dst: m.dst, FD: fd, RW: m.rw, Dir: dir, Clone: true, NoExec: m.noexec}
	if dir && !allowSockets {
		if um.Sockets, err = wfs.FindSockets(dup, m.src); err != nil {
			return err
		}
	}
	o.mounts = append(o.mounts, um)
	return nil
}

// idmapUserns returns a user namespace in which the caller's uid and gid
// are the sandbox user's host uid and gid, for MOUNT_ATTR_IDMAP: through a
// mount idmapped with it, a file owned by the caller is the sandbox user's
// inside, and a file the sandbox user creates is the caller's on disk.
func idmapUserns() (*os.File, error) {
	return idmapUsernsFor(os.Getuid(), os.Getgid(), nsexec.HostUIDBase+SandboxUID, nsexec.HostUIDBase+SandboxGID)
}

// idmaps are the user namespaces made for idmapped mounts, one per
// mapping, kept for the process's life: a supervisor that starts many
// sandboxes makes each once.
var idmaps struct {
	sync.Mutex
	m map[[4]int]*os.File
}

// idmapUsernsFor maps the on-disk uid and gid given to the host ids host
// and hostGID, and every other id of the sandbox's range to itself. The
// file is shared: never close it.
func idmapUsernsFor(uid, gid, host, hostGID int) (*os.File, error) {
	key := [4]int{uid, gid, host, hostGID}
	idmaps.Lock()
	defer idmaps.Unlock()
	if f := idmaps.m[key]; f != nil {
		return f, nil
	}
	f, err := nsexec.NewUserns(idmapRanges(uid, host), idmapRanges(gid, hostGID))
	if err != nil {
		return nil, fmt.Errorf("idmap user namespace: %w", err)
	}
	if idmaps.m == nil {
		idmaps.m = map[[4]int]*os.File{}
	}
	idmaps.m[key] = f
	return f, nil
}

// idmapRanges maps the on-disk id to host and the rest of the sandbox's
// ids (HostUIDBase...+IDRange, but host) to themselves. Without the rest,
// chown(path, 0, 0) by the program fails with EOVERFLOW (no on-disk id for
// the sandbox's root) where any other file system says EPERM: libuv's own
// fs_chown test caught it (docs/corpus.md). The program still cannot give
// a file away (it has no CAP_CHOWN); only the error is now the usual one.
func idmapRanges(onDisk, host int) []syscall.SysProcIDMap {
	m := []syscall.SysProcIDMap{{ContainerID: onDisk, HostID: host, Size: 1}}
	lo, hi := nsexec.HostUIDBase, nsexec.HostUIDBase+nsexec.IDRange
	if onDisk >= lo && onDisk < hi || host < lo || host >= hi {
		return m // overlapping ranges: the one id only
	}
	if host > lo {
		m = append(m, syscall.SysProcIDMap{ContainerID: lo, HostID: lo, Size: host - lo})
	}
	if host+1 < hi {
		m = append(m, syscall.SysProcIDMap{ContainerID: host + 1, HostID: host + 1, Size: hi - host - 1})
	}
	return m
}

// lend makes the directory src (an O_PATH fd of path: a writable source
// that cannot be idmapped) the sandbox user's for the run, so the program
// can create files in it; the files that were there stay the caller's
// (readable, not writable, unless their modes say otherwise). It is
// recorded in o.fallback before its owner changes, so a give-back always
// follows.
func (o *openedMounts) lend(src *os.File, path string, to, toGID int) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(src.Fd()), &st); err != nil {
		return fmt.Errorf("lend %s to the sandbox: %w", path, err)
	}
	fd, err := unix.FcntlInt(src.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("lend %s to the sandbox: %w", path, err)
	}
	o.fallback = append(o.fallback, lent{path: path, dir: os.NewFile(uintptr(fd), path), uid: int(st.Uid), gid: int(st.Gid), to: to, toGID: toGID})
	if err := unix.Fchownat(fd, "", to, toGID, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("lend %s to the sandbox: %w", path, err)
	}
	return nil
}

// giveBack returns what the sandbox user owns under each lent directory to
// the caller, and each directory to its owner, through the fds they were
// lent with (a link planted in them since leads nowhere).
func (o *openedMounts) giveBack() error {
	var first error
	note := func(err error) {
		if err != nil && first == nil && !errors.Is(err, unix.ENOENT) {
			first = err
		}
	}
	for _, l := range o.fallback {
		_ = wfs.WalkAt(int(l.dir.Fd()), func(parent int, name, rel string, _ uint32) error {
			var st unix.Stat_t
			if unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && (int(st.Uid) == l.to || int(st.Gid) == l.toGID) {
				if err := unix.Fchownat(parent, name, os.Getuid(), os.Getgid(), unix.AT_SYMLINK_NOFOLLOW); err != nil {
					note(fmt.Errorf("give %s back to uid %d: %w", filepath.Join(l.path, rel), os.Getuid(), err))
				}
			}
			return nil
		})
		if err := unix.Fchownat(int(l.dir.Fd()), "", l.uid, l.gid, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
			note(fmt.Errorf("give %s back to uid %d: %w", l.path, l.uid, err))
		}
		l.dir.Close()
	}
	o.fallback = nil
	return first
}

// openOverlayLowers clones, for --overlay, each system directory that
// becomes an overlay, idmapped so that host root's files are the sandbox
// user's: the program can then change any of them (in the upper layer).
// Where a file system cannot be idmapped (9p, tmpfs before 6.3) the clone
// stays as it is and its existing files stay read-only to the program;
// notes says which. fds are numbered from first.
func openOverlayLowers(plan *wfs.Plan, first int) (files []*os.File, notes []string, err error) {
	var idmap *os.File // shared (idmapUsernsFor): not closed here
	if os.Geteuid() != 0 {
		// Cloning and idmapping a host mount needs privileges: the
		// overlays read the system directories from the host's root
		// directly, and files of host root stay read-only to the program.
		return nil, []string{"unprivileged: the system's existing files stay read-only (new files can be made anywhere)"}, nil
	}
	for i := range plan.Ops {
		op := &plan.Ops[i]
		if op.Kind != wfs.KindOverlay {
			continue
		}
		fd, err := unix.OpenTree(unix.AT_FDCWD, op.Src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			closeAll(files)
			return nil, nil, fmt.Errorf("overlay: clone %s: %w", op.Src, err)
		}
		files = append(files, os.NewFile(uintptr(fd), op.Src))
		// Read-only, nosuid, nodev like every other view of the host: the
		// overlay only reads its lower layer, and nothing of the host may
		// be written, run setuid or opened as a device through the clone.
		limit := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, limit); err != nil {
			closeAll(files)
			return nil, nil, fmt.Errorf("overlay: limit the clone of %s: %w", op.Src, err)
		}
		if idmap == nil {
			if idmap, err = idmapUsernsFor(0, 0, nsexec.HostUIDBase+SandboxUID, nsexec.HostUIDBase+SandboxGID); err != nil {
				closeAll(files)
				return nil, nil, fmt.Errorf("overlay: %w", err)
			}
		}
		attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(idmap.Fd())}
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, attr); err != nil {
			notes = append(notes, fmt.Sprintf("%s cannot be idmapped (%v): its existing files stay read-only", op.Src, err))
		}
		op.SrcFD = first + len(files) - 1
	}
	return files, notes, nil
}

// openOverlayKeep opens the caller's --overlay-keep directory for ward
// itself, which copies the overlays' changes into it once the sandbox is
// gone (nsexec's Sandbox.Wait), as the caller: what it writes is the
// caller's. A directory ward may not write (a read-only mount) is refused
// now, before anything runs.
func openOverlayKeep(dir string) (*os.File, error) {
	src, err := wfs.OpenSource(dir)
	if err != nil {
		return nil, fmt.Errorf("--overlay-keep=%s: %w", dir, err)
	}
	if err := unix.Access(fmt.Sprintf("/proc/self/fd/%d", src.Fd()), unix.W_OK); err != nil {
		src.Close()
		return nil, fmt.Errorf("--overlay-keep=%s: not writable: %w", dir, err)
	}
	return src, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// landlockPolicy is the second layer's part of the spec (fs.Landlock):
// the file-system rules follow from the plan and the user mounts in the
// init; here only the network mode's TCP rule. With a proxy the program
// needs to connect only to it (3128, 1080), to the direct ports, and to
// the stub resolver (53, for TCP fallback); with no network (its own
// loopback only) and with the host's, TCP is left alone: Landlock's port
// rules cannot tell the loopback from elsewhere, and a server the program
// runs for itself on the loopback must keep working.
func landlockPolicy(cfg Config) *wfs.Landlock {
	l := &wfs.Landlock{Omit: cfg.LandlockTestOmit}
	if cfg.Network == NetworkProxy {
		l.NetConnect = true
		direct := cfg.AllowPorts
		if len(direct) == 0 {
			direct = DefaultDirectPorts
		}
		l.ConnectTCP = append([]int{3128, 1080, 53}, direct...)
	}
	return l
}

// layers names the isolation layers the program runs under, for the
// report and the verbose log.
func layers(spec *nsexec.Spec, sb *nsexec.Sandbox) []string {
	out := []string{"namespaces"}
	if len(spec.Seccomp) > 0 {
		out = append(out, "seccomp")
	}
	if sb.Landlock > 0 {
		out = append(out, wfs.LandlockLayer(sb.Landlock))
	}
	return out
}
