package fs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// UserMount is one path the user asked for (--allow-read, --allow-write,
// --mount): a detached mount tree that ward cloned and limited on the host
// (fd FD in the init), attached at Dst.
type UserMount struct {
	Src string `json:"src"` // the host path, for messages
	Dst string `json:"dst"`
	FD  int    `json:"fd"`
	RW  bool   `json:"rw,omitempty"`
	Dir bool   `json:"dir,omitempty"`
	// Sockets are paths inside Dst, relative, of unix sockets found in the
	// source on the host: each is hidden (unless --allow-sockets).
	Sockets []string `json:"sockets,omitempty"`
	// Clone: FD is the source itself (an O_PATH fd the caller opened),
	// not a detached clone of its tree: an unprivileged caller cannot
	// clone a host mount. The init clones it (CloneUserPaths); NoExec
	// says how to limit the clone (RW says whether it stays writable).
	Clone  bool `json:"clone,omitempty"`
	NoExec bool `json:"noexec,omitempty"`
}

// CloneUserPaths, in the init, makes each Clone mount's detached tree
// while the host's root is still reachable at OldRoot (an unprivileged
// caller could not: cloning a mount needs CAP_SYS_ADMIN over its mount
// namespace, which the init has over its own copy). The source is opened
// again by its resolved path beneath OldRoot, refusing every symlink, and
// must be the very file the caller opened (same device and inode):
// nothing swapped in between can redirect it. The clone takes the fd
// number the caller's fd had.
func CloneUserPaths(mounts []UserMount) error {
	old, err := unix.Open(OldRoot, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail("open", OldRoot, err)
	}
	defer unix.Close(old)
	for _, m := range mounts {
		if !m.Clone {
			continue
		}
		how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
		src, err := unix.Openat2(old, strings.TrimPrefix(filepath.Clean(m.Src), "/"), how)
		if err != nil {
			return fail("open again (no symlinks allowed)", m.Src, err)
		}
		var want, got unix.Stat_t
		err = unix.Fstat(m.FD, &want)
		if err == nil {
			err = unix.Fstat(src, &got)
		}
		if err == nil && (want.Dev != got.Dev || want.Ino != got.Ino) {
			err = unix.ESTALE
		}
		if err != nil {
			unix.Close(src)
			return fail("check it is what the caller opened", m.Src, err)
		}
		tree, err := unix.OpenTree(src, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
		unix.Close(src)
		if err != nil {
			return fail("clone the mount of", m.Src, err)
		}
		attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
		if !m.RW {
			attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
		}
		if m.NoExec {
			attr.Attr_set |= unix.MOUNT_ATTR_NOEXEC
		}
		if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, attr); err != nil {
			unix.Close(tree)
			return fail("limit the mount of", m.Src, err)
		}
		err = unix.Dup3(tree, m.FD, unix.O_CLOEXEC)
		unix.Close(tree)
		if err != nil {
			return fail("dup the clone of", m.Src, err)
		}
	}
	return nil
}

// resolveFlags confine every lookup to the new root and refuse any
// symlink: a link planted in a shared writable directory (by another
// sandbox, while this one is being set up) cannot redirect a mount.
const resolveFlags = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// MountUser attaches the user's mounts in order, after the host's root is
// gone, each at a target made and opened beneath "/" with openat2, then
// hides the sockets found in them. Runs in the init.
func MountUser(mounts []UserMount) error {
	if len(mounts) == 0 {
		return nil
	}
	root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail("open", "/", err)
	}
	defer unix.Close(root)
	for _, m := range mounts {
		target, err := makeTargetIn(root, m.Dst, m.Dir)
		if err != nil {
			return err
		}
		err = unix.MoveMount(m.FD, "", target, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
		unix.Close(target)
		if err != nil {
			return fail("move_mount "+m.Src+" onto the mount point", m.Dst, err) // ENOENT: removed since it was made
		}
		if err := checkReadOnly(m.Dst, !m.RW); err != nil {
			return err
		}
		for _, s := range m.Sockets {
			if err := hideSocket(filepath.Join(m.Dst, s)); err != nil {
				return err
			}
		}
	}
	return nil
}

// makeTargetIn creates dst (a directory, or an empty file) and its parents
// beneath root, never following a symlink and never leaving a mount
// (RESOLVE_NO_XDEV is dropped only for the final open, which may be an
// existing mount point), and returns an O_PATH fd of it.
func makeTargetIn(root int, dst string, dir bool) (int, error) {
	rel := strings.TrimPrefix(filepath.Clean(dst), "/")
	parts := strings.Split(rel, "/")
	cur, err := unix.Dup(root)
	if err != nil {
		return -1, fail("dup", "/", err)
	}
	for i, name := range parts {
		last := i == len(parts)-1
		how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: resolveFlags &^ unix.RESOLVE_NO_XDEV}
		next, err := unix.Openat2(cur, name, how)
		if errors.Is(err, unix.ENOENT) {
			switch {
			case !last || dir:
				err = unix.Mkdirat(cur, name, 0o755)
			default:
				var fd int
				fd, err = unix.Openat(cur, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o444)
				if err == nil {
					unix.Close(fd)
				}
			}
			if err != nil && !errors.Is(err, unix.EEXIST) {
				unix.Close(cur)
				return -1, fail("create mount point", dst, err)
			}
			next, err = unix.Openat2(cur, name, how)
		}
		unix.Close(cur)
		if err != nil {
			return -1, fail("open mount point (no symlinks allowed)", dst, err)
		}
		cur = next
	}
	return cur, nil
}

// hideSocket covers a unix socket with an empty read-only file: a socket
// is a way out of any sandbox (docker.sock, dbus, X11).
func hideSocket(path string) error {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&os.ModeSocket == 0 {
		return nil // gone or replaced since ward looked: nothing to hide
	}
	if err := unix.Mount("/dev/null", path, "", unix.MS_BIND, ""); err != nil {
		return fail("hide socket", path, err)
	}
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC}
	if err := unix.MountSetattr(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, attr); err != nil {
		return fail("hide socket", path, err)
	}
	return nil
}

// MustKeep are what a program needs to start, kept even when a deny
// pattern matches them (for /etc/*).
var MustKeep = []string{"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf"}

// MaskDenied hides every visible path a deny pattern (a glob on paths
// inside) matches: a directory under an empty read-only tmpfs, anything
// else under /dev/null; for a symlink, what it points to (inside: the
// root is the sandbox's own by now). Names stay listed, contents go. Runs
// in the init, after every mount.
func MaskDenied(patterns []string) error {
	for _, pat := range patterns {
		matches, err := filepath.Glob(pat)
		if err != nil {
			return fail("deny pattern", pat, err)
		}
		for _, m := range matches {
			if keep(m) {
				continue
			}
			target, err := filepath.EvalSymlinks(m)
			if err != nil || keep(target) || strings.HasPrefix(target, "/proc/") || strings.HasPrefix(target, "/dev/") {
				continue // dangling, needed, or the sandbox's own /proc and /dev
			}
			if err := apply(Op{Kind: KindMask, Dst: target}); err != nil {
				return err
			}
		}
	}
	return nil
}

func keep(p string) bool {
	for _, k := range MustKeep {
		if p == k {
			return true
		}
	}
	return false
}

// OpenSource opens path, a caller's host path that ResolveSource has
// already freed of symlinks, once and for good: O_PATH, refusing a symlink
// (or /proc magic link) in any component. A link swapped in since the path
// was resolved (a race, or a link planted by a sandbox that could write
// there) makes the open fail with ELOOP instead of redirecting it; every
// later use (the clone, the stat, the socket walk, lending) goes through
// the fd, never the name again.
func OpenSource(path string) (*os.File, error) {
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(unix.AT_FDCWD, path, how)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("open %s: a symlink appeared in it since it was resolved: %w", path, err)
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return os.NewFile(uintptr(fd), path), nil
}

// WalkAt calls fn for everything under the directory dir (an fd, O_PATH
// will do), depth first: the fd of the directory holding it, its name, its
// path relative to dir, and its type (S_IFMT bits). Each directory is
// opened beneath its parent's fd with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS:
// a directory swapped for a symlink during the walk is skipped, never
// followed. Unreadable parts are skipped. A non-directory dir yields
// nothing.
func WalkAt(dir int, fn func(parent int, name, rel string, mode uint32) error) error {
	fd, err := unix.Openat(dir, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOTDIR) {
			return nil
		}
		return err
	}
	return walkAt(fd, "", fn)
}

// walkAt walks the directory fd (which it closes) at rel.
func walkAt(fd int, rel string, fn func(parent int, name, rel string, mode uint32) error) error {
	defer unix.Close(fd)
	buf := make([]byte, 8192)
	var subdirs []string
	for {
		n, err := unix.Getdents(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			break // the end, or an unreadable directory: nothing more of it
		}
		for off := 0; off < n; {
			// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
			reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
			typ := buf[off+18]
			name := buf[off+19 : off+reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			off += reclen
			nm := string(name)
			if nm == "." || nm == ".." {
				continue
			}
			mode := dtToMode(typ)
			if mode == 0 {
				var st unix.Stat_t
				if unix.Fstatat(fd, nm, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
					continue // gone since
				}
				mode = st.Mode & unix.S_IFMT
			}
			r := nm
			if rel != "" {
				r = rel + "/" + nm
			}
			if err := fn(fd, nm, r, mode); err != nil {
				return err
			}
			if mode == unix.S_IFDIR {
				subdirs = append(subdirs, nm)
			}
		}
	}
	for _, nm := range subdirs {
		how := &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
		sub, err := unix.Openat2(fd, nm, how)
		if err != nil {
			continue // unreadable, gone, or swapped for a link: skipped
		}
		r := nm
		if rel != "" {
			r = rel + "/" + nm
		}
		if err := walkAt(sub, r, fn); err != nil {
			return err
		}
	}
	return nil
}

func dtToMode(t byte) uint32 {
	switch t {
	case unix.DT_DIR:
		return unix.S_IFDIR
	case unix.DT_REG:
		return unix.S_IFREG
	case unix.DT_LNK:
		return unix.S_IFLNK
	case unix.DT_SOCK:
		return unix.S_IFSOCK
	case unix.DT_FIFO:
		return unix.S_IFIFO
	case unix.DT_CHR:
		return unix.S_IFCHR
	case unix.DT_BLK:
		return unix.S_IFBLK
	}
	return 0
}

// FindSockets lists the unix sockets under the directory tree (an fd: the
// clone that will be mounted), relative to it; for a non-directory it
// returns nothing. name is for messages.
func FindSockets(tree int, name string) ([]string, error) {
	var found []string
	err := WalkAt(tree, func(_ int, _, rel string, mode uint32) error {
		if mode == unix.S_IFSOCK {
			found = append(found, rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("look for sockets under %s: %w", name, err)
	}
	return found, nil
}
