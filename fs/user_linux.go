package fs

import (
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
			return fail("move_mount "+m.Src, m.Dst, err)
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

// FindSockets lists the unix sockets under dir (on the host), relative to
// it; for a non-directory it returns nothing.
func FindSockets(dir string) ([]string, error) {
	var found []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable part: nothing of it is listed, or shown
		}
		if d.Type()&os.ModeSocket != 0 {
			rel, _ := filepath.Rel(dir, p)
			found = append(found, rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("look for sockets under %s: %w", dir, err)
	}
	return found, nil
}
