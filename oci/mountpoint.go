package oci

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// MakeMountPoints makes, in the bundle's rootfs, the mount point of each
// of config.json's mounts that is not there, as runc makes them: a
// directory (0755), or an empty file (0644) for a bind of anything but a
// directory, and the missing directories above it (0755), all owned by
// the rootfs's owner. create calls it as host root, before the init is
// cloned, with nothing but mkdirat and openat in the host's mount
// namespace: the container's root may not write the rootfs where it is
// not idmapped. Paths resolve within the rootfs (openat2 RESOLVE_IN_ROOT:
// a symlink, absolute or "..", never leads out of it). What would be made
// at or below an earlier mount's destination, by name or through a
// symlink (/var/run to /run, a /run tmpfs), is left to the init: it
// belongs in that mount (a tmpfs, /proc), not in the rootfs.
func (c *Container) MakeMountPoints() error {
	root, err := os.OpenFile(c.Root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return invalid("root.path", "%v", err)
	}
	defer root.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(root.Fd()), &st); err != nil {
		return invalid("root.path", "%s: %v", c.Root, err)
	}
	for i, m := range c.Mounts {
		covered := func(path string) bool {
			for _, a := range c.Mounts[:i] {
				if a.Destination == "/" || path == a.Destination || strings.HasPrefix(path, a.Destination+"/") {
					return true
				}
			}
			return false
		}
		if m.Destination == "/" || covered(m.Destination) {
			continue
		}
		dir := true
		if m.Bind {
			// As the init decides (the source's clone is what it
			// binds): a missing source is the init's error to give.
			if s, err := os.Stat(m.Source); err == nil {
				dir = s.IsDir()
			}
		}
		mp := mountPoint{root: int(root.Fd()), uid: int(st.Uid), gid: int(st.Gid), covered: covered}
		if err := mp.make(m.Destination, dir); err != nil {
			return fmt.Errorf("mounts[%d]: create the mount point %s in the rootfs %s: %w", i, m.Destination, c.Root, err)
		}
	}
	return nil
}

// mountPoint makes one mount point below root, owned by uid and gid,
// unless covered (nil: never) says a path (absolute within root) is in a
// file system mounted before.
type mountPoint struct {
	root     int
	uid, gid int
	covered  func(path string) bool
}

// make makes dst (absolute, clean) unless it is there: each missing
// directory on the way, then dst itself, a directory or (dir false) an
// empty file. A symlink on the way to nothing is followed within root and
// its target made, as runc's SecureJoin has it (an image's
// /etc/resolv.conf to ../run/systemd/resolve/stub-resolv.conf).
func (mp *mountPoint) make(dst string, dir bool) error {
	names := split(dst)
	for links, i := 0, 0; i < len(names); i++ {
		path := strings.Join(names[:i+1], "/")
		fd, err := inRoot(mp.root, path, 0)
		if err == nil {
			unix.Close(fd) // there (a non-directory on the way: ENOTDIR next)
			continue
		}
		if !errors.Is(err, unix.ENOENT) {
			return err
		}
		parent := "."
		if i > 0 {
			parent = strings.Join(names[:i], "/")
		}
		pfd, err := inRoot(mp.root, parent, unix.O_DIRECTORY)
		if err != nil {
			return err
		}
		if mp.covered != nil && mp.covered(mp.pathOf(pfd, names[i])) {
			unix.Close(pfd)
			return nil // the init's to make, in that mount
		}
		err = makeEntry(pfd, names[i], dir || i < len(names)-1, mp.uid, mp.gid)
		target, lerr := readlinkat(pfd, names[i])
		unix.Close(pfd)
		if !errors.Is(err, unix.EEXIST) {
			if err != nil {
				return err
			}
			continue
		}
		if lerr != nil { // made meanwhile by someone else
			if fd, err := inRoot(mp.root, path, 0); err == nil {
				unix.Close(fd)
				continue
			}
			return err
		}
		// A symlink to nothing: its target instead, the kernel resolving
		// it (and any "..") within root, not a lexical cleaning.
		if links++; links > 40 {
			return &os.PathError{Op: "resolve", Path: dst, Err: unix.ELOOP}
		}
		var head []string
		if !strings.HasPrefix(target, "/") {
			head = names[:i:i]
		}
		names = append(append(head, split(target)...), names[i+1:]...)
		i = -1
	}
	return nil
}

// pathOf is name in directory dir as an absolute path within root, dir's
// symlinks resolved (the kernel's name for it, less root's).
func (mp *mountPoint) pathOf(dir int, name string) string {
	d, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", dir))
	r, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", mp.root))
	if r != "/" {
		d = strings.TrimPrefix(d, r)
	}
	return strings.TrimSuffix(d, "/") + "/" + name
}

// split is path's names, without empty ones and ".".
func split(path string) []string {
	var out []string
	for _, n := range strings.Split(path, "/") {
		if n != "" && n != "." {
			out = append(out, n)
		}
	}
	return out
}

// readlinkat is the target of the symlink name in dir.
func readlinkat(dir int, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dir, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// inRoot opens path below root, resolved as if root were / (O_PATH).
func inRoot(root int, path string, flags uint64) (int, error) {
	fd, err := unix.Openat2(root, path, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC | flags,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return -1, &os.PathError{Op: "openat2", Path: "/" + path, Err: err}
	}
	return fd, nil
}

// makeEntry makes name in directory dir (it follows no symlink: an entry
// there, a symlink too, is EEXIST) and gives it its mode (the umask aside)
// and owner through its own fd.
func makeEntry(dir int, name string, isDir bool, uid, gid int) error {
	var fd int
	var err error
	mode := uint32(0o644)
	if isDir {
		mode = 0o755
		if err = unix.Mkdirat(dir, name, mode); err == nil {
			fd, err = unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
	} else {
		fd, err = unix.Openat(dir, name, unix.O_RDONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	}
	if err != nil {
		return &os.PathError{Op: "create", Path: name, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "stat", Path: name, Err: err}
	}
	if int(st.Uid) != uid || int(st.Gid) != gid { // a rootless caller may not chown, even to itself
		if err := unix.Fchown(fd, uid, gid); err != nil {
			return &os.PathError{Op: "chown", Path: name, Err: err}
		}
	}
	if err := unix.Fchmod(fd, mode); err != nil {
		return &os.PathError{Op: "chmod", Path: name, Err: err}
	}
	return nil
}
