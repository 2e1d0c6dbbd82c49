package ward

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// resolveMounts turns --allow-read, --allow-write and --mount into host
// paths and targets, checked, before anything starts; a bad one is a
// *ConfigError naming the flag and value. With VirtualFS only the --mount
// targets are added.
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
		if dst == "" {
			dst = real
		}
		if err := wfs.CheckTarget(dst); err != nil {
			return &ConfigError{Key: flag, Value: value, Reason: err.Error()}
		}
		out = append(out, hostMount{flag: flag, value: value, src: real, dst: filepath.Clean(dst), rw: rw, noexec: noexec})
		return nil
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
// from uid:gid to the host ids to:toGID.
type lent struct {
	path      string
	uid, gid  int
	to, toGID int
}

func (o *openedMounts) close() {
	for _, f := range o.files {
		f.Close()
	}
}

// openMounts clones each mount's tree here, on the host (open_tree,
// detached), limits it (read-only unless writable; nosuid, nodev; noexec
// for --allow-read) and, for a writable one, maps the caller's uid and gid
// to the sandbox user's with an idmapped mount, so files the program
// creates belong to the caller. The init attaches each by fd: it needs no
// permission on the host path, and nothing done to the path afterwards can
// redirect the mount. fds are numbered from first.
func openMounts(ms []hostMount, allowSockets bool, first int) (*openedMounts, error) {
	o := &openedMounts{}
	var idmap *os.File
	defer func() {
		if idmap != nil {
			idmap.Close()
		}
	}()
	for i, m := range ms {
		fd, err := unix.OpenTree(unix.AT_FDCWD, m.src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			o.close()
			return nil, fmt.Errorf("--%s=%s: clone the mount of %s: %w", m.flag, m.value, m.src, err)
		}
		o.files = append(o.files, os.NewFile(uintptr(fd), m.src))
		attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
		if !m.rw {
			attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
		}
		if m.noexec {
			attr.Attr_set |= unix.MOUNT_ATTR_NOEXEC
		}
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, attr); err != nil {
			o.close()
			return nil, fmt.Errorf("--%s=%s: limit the mount of %s: %w", m.flag, m.value, m.src, err)
		}
		if m.rw {
			if idmap == nil {
				if idmap, err = idmapUserns(); err != nil {
					o.close()
					return nil, fmt.Errorf("--%s=%s: %w", m.flag, m.value, err)
				}
			}
			id := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(idmap.Fd())}
			if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, id); err != nil {
				// The file system cannot be idmapped (tmpfs before 6.3,
				// some network file systems): lend the top directory to
				// the sandbox user for the run, give everything back after.
				l, err := lend(m.src, nsexec.HostUIDBase+SandboxUID, nsexec.HostUIDBase+SandboxGID)
				if err != nil {
					o.close()
					o.giveBack()
					return nil, fmt.Errorf("--%s=%s: %w", m.flag, m.value, err)
				}
				o.fallback = append(o.fallback, l)
			}
		}
		fi, err := os.Stat(m.src)
		if err != nil {
			o.close()
			return nil, fmt.Errorf("--%s=%s: %w", m.flag, m.value, err)
		}
		um := wfs.UserMount{Src: m.src, Dst: m.dst, FD: first + i, RW: m.rw, Dir: fi.IsDir()}
		if fi.IsDir() && !allowSockets {
			if um.Sockets, err = wfs.FindSockets(m.src); err != nil {
				o.close()
				return nil, err
			}
		}
		o.mounts = append(o.mounts, um)
	}
	return o, nil
}

// idmapUserns returns a user namespace in which the caller's uid and gid
// are the sandbox user's host uid and gid, for MOUNT_ATTR_IDMAP: through a
// mount idmapped with it, a file owned by the caller is the sandbox user's
// inside, and a file the sandbox user creates is the caller's on disk. A
// short-lived child holds the namespace while its fd is opened.
func idmapUserns() (*os.File, error) {
	return idmapUsernsFor(os.Getuid(), os.Getgid(), nsexec.HostUIDBase+SandboxUID, nsexec.HostUIDBase+SandboxGID)
}

// idmapUsernsFor maps the on-disk uid and gid given to the host ids host
// and hostGID.
func idmapUsernsFor(uid, gid, host, hostGID int) (*os.File, error) {
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{"ward-idmap"}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: host, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: hostGID, Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("idmap user namespace: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("idmap user namespace: %w", err)
	}
	defer func() {
		stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	f, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid))
	if err != nil {
		return nil, fmt.Errorf("idmap user namespace: %w", err)
	}
	return f, nil
}

// lend makes path (a writable source that cannot be idmapped) the
// sandbox user's for the run, so the program can create files in it; the
// files that were there stay the caller's (readable, not writable, unless
// their mode says otherwise).
func lend(path string, to, toGID int) (lent, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return lent{}, fmt.Errorf("lend %s to the sandbox: %w", path, err)
	}
	l := lent{path: path, uid: int(st.Uid), gid: int(st.Gid), to: to, toGID: toGID}
	if err := unix.Lchown(path, to, toGID); err != nil {
		return lent{}, fmt.Errorf("lend %s to the sandbox: %w", path, err)
	}
	return l, nil
}

// giveBack returns what the sandbox user owns under each lent directory to
// the caller, and each directory to its owner.
func (o *openedMounts) giveBack() error {
	var first error
	note := func(err error) {
		if err != nil && first == nil && !errors.Is(err, unix.ENOENT) {
			first = err
		}
	}
	for _, l := range o.fallback {
		_ = filepath.WalkDir(l.path, func(p string, e fs.DirEntry, err error) error {
			if err != nil || p == l.path {
				return nil
			}
			var st unix.Stat_t
			if unix.Lstat(p, &st) == nil && (int(st.Uid) == l.to || int(st.Gid) == l.toGID) {
				if err := unix.Lchown(p, os.Getuid(), os.Getgid()); err != nil {
					note(fmt.Errorf("give %s back to uid %d: %w", p, os.Getuid(), err))
				}
			}
			return nil
		})
		if err := unix.Lchown(l.path, l.uid, l.gid); err != nil {
			note(fmt.Errorf("give %s back to uid %d: %w", l.path, l.uid, err))
		}
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
	var idmap *os.File
	defer func() {
		if idmap != nil {
			idmap.Close()
		}
	}()
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

// openOverlayKeep clones the caller's --overlay-keep directory for the
// init, which copies the overlays' changes into it at the end: idmapped so
// that what the init (root inside, host uid HostUIDBase) writes is the
// caller's, or else lent to the init's host uid for the run and given back.
func (o *openedMounts) openOverlayKeep(dir string) (*os.File, error) {
	fd, err := unix.OpenTree(unix.AT_FDCWD, dir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("--overlay-keep=%s: clone: %w", dir, err)
	}
	f := os.NewFile(uintptr(fd), dir)
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, attr); err != nil {
		f.Close()
		return nil, fmt.Errorf("--overlay-keep=%s: %w", dir, err)
	}
	idmap, err := idmapUsernsFor(os.Getuid(), os.Getgid(), nsexec.HostUIDBase, nsexec.HostUIDBase)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("--overlay-keep=%s: %w", dir, err)
	}
	defer idmap.Close()
	id := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(idmap.Fd())}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, id); err != nil {
		l, err := lend(dir, nsexec.HostUIDBase, nsexec.HostUIDBase)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("--overlay-keep=%s: %w", dir, err)
		}
		o.fallback = append(o.fallback, l)
	}
	return f, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}
