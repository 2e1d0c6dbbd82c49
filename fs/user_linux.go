package fs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"

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
	// clone a host mount. The init clones it (clone-user-paths, nsexec/root_linux.c); NoExec
	// says how to limit the clone (RW says whether it stays writable).
	Clone  bool `json:"clone,omitempty"`
	NoExec bool `json:"noexec,omitempty"`
}

// MustKeep are what a program needs to start, kept even when a deny
// pattern matches them (for /etc/*).
var MustKeep = []string{"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf"}

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
