package fs

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// The root itself is built by the init's C (nsexec/root_linux.c) from the
// plan made here (plan.go) and packed by nsexec/rootplan.go.

// KeepUpper copies the overlays' upper layers (fd from HideOverlayLayers)
// into dst (an fd of the caller's directory, a detached mount): changed and
// new files, directories and links, each at its path inside (usr/...,
// etc/...); what the program deleted is listed in .ward-whiteouts. Runs in
// ward's parent, as the caller, after the program's processes are gone.
//
// The caller's directory may be one the sandbox could write (or another
// process of the caller's can), so nothing in it is trusted: both trees are
// walked by fd, one name at a time, and no symlink in dst is ever
// followed: directories are made with mkdirat and opened with
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, files created with
// O_CREAT|O_EXCL|O_NOFOLLOW (a name planted there beforehand fails the
// copy rather than redirecting it), links made with symlinkat. Sources are
// opened with O_NOFOLLOW and judged by fstat on the fd.
//
// Files are streamed through a fixed buffer, their holes kept
// (SEEK_DATA/SEEK_HOLE), and hard links copied once (by device and inode).
// limit (> 0) caps the bytes copied in all, the overlay's size: the upper
// layers cannot hold more, so a copy that gets there stops and says so.
func KeepUpper(upper, dst int, limit int64) error {
	k := &keeper{limit: limit, links: map[[2]uint64]int{}}
	defer k.closeLinks()
	src, err := unix.Openat(upper, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err == nil {
		err = k.walk(src, dst, "")
	}
	if err == nil && len(k.whiteouts) > 0 {
		err = k.writeWhiteouts(dst)
	}
	if err == nil && len(k.skipped) > 0 {
		list := k.skipped
		if len(list) > 20 {
			list = append(list[:20:20], fmt.Sprintf("and %d more", len(k.skipped)-20))
		}
		err = fmt.Errorf("not readable, left out (the rest is kept): %s", strings.Join(list, ", "))
	}
	if err != nil {
		return fmt.Errorf("keep the overlay's changes: %w", err)
	}
	return nil
}

type keeper struct {
	whiteouts []string
	skipped   []string // what could not be read (rel paths)
	limit     int64    // > 0: the most bytes copied in all
	copied    int64
	buf       []byte
	// links holds, for a file with more than one link, an fd of its first
	// copy, which the next names link to (at most maxLinkFDs; beyond, a
	// copy each).
	links map[[2]uint64]int
}

const (
	keepBuf    = 1 << 20
	maxLinkFDs = 256
)

func (k *keeper) closeLinks() {
	for _, fd := range k.links {
		unix.Close(fd)
	}
}

// beneath opens the directory name in dir without following any link.
func beneath(dir int, name string, flags uint64) (int, error) {
	how := &unix.OpenHow{Flags: flags | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	for {
		fd, err := unix.Openat2(dir, name, how)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			continue
		}
		if errors.Is(err, unix.ENOSYS) { // before 5.6: name is one component, O_NOFOLLOW is enough
			fd, err = unix.Openat(dir, name, int(how.Flags), 0)
		}
		return fd, err
	}
}

// walk copies the directory src (an fd it closes) into the directory dst
// at rel.
func (k *keeper) walk(src, dst int, rel string) error {
	d := os.NewFile(uintptr(src), rel)
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("read /%s: %w", rel, err)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := k.entry(src, dst, name, rel+"/"+name); err != nil {
			return err
		}
	}
	return nil
}

// entry copies src's name (at rel, with a leading /) into dst.
func (k *keeper) entry(src, dst int, name, rel string) error {
	p, err := unix.Openat(src, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", rel, err)
	}
	defer unix.Close(p)
	var st unix.Stat_t
	if err := unix.Fstat(p, &st); err != nil {
		return fmt.Errorf("stat %s: %w", rel, err)
	}
	perm := st.Mode & 0o777 // never setuid, setgid or sticky
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFCHR:
		k.whiteouts = append(k.whiteouts, rel) // overlayfs's mark of a deleted file
	case unix.S_IFLNK:
		link, err := readlinkFD(p)
		if err != nil {
			return fmt.Errorf("readlink %s: %w", rel, err)
		}
		if err := unix.Symlinkat(link, dst, name); err != nil {
			return fmt.Errorf("symlink %s: %w", rel, err)
		}
	case unix.S_IFDIR:
		if err := unix.Mkdirat(dst, name, perm|0o700); err != nil {
			return fmt.Errorf("mkdir %s: %w", rel, err)
		}
		out, err := beneath(dst, name, unix.O_RDONLY|unix.O_DIRECTORY)
		if err != nil {
			return fmt.Errorf("open the copy of %s: %w", rel, err)
		}
		defer unix.Close(out)
		in, err := k.openSource(src, name, &st, unix.O_RDONLY|unix.O_DIRECTORY, p)
		if errors.Is(err, unix.EACCES) {
			k.skipped = append(k.skipped, rel+"/")
			return nil
		}
		if err != nil {
			return fmt.Errorf("open %s: %w", rel, err)
		}
		return k.walk(in, out, rel)
	case unix.S_IFREG:
		return k.file(src, dst, name, rel, &st, p)
	}
	return nil
}

// openSource opens src's name (p: its O_PATH fd, st: its fstat), which
// must still be that inode. Rootless, the copy has no capability to read
// what the program left unreadable (a file at mode 000, a directory
// without r or x), but the caller owns those inodes: it adds u+r (u+rx)
// first. What it still cannot open fails with EACCES, for the caller to
// skip.
func (k *keeper) openSource(src int, name string, st *unix.Stat_t, flags int, p int) (int, error) {
	need := uint32(unix.S_IRUSR)
	if flags&unix.O_DIRECTORY != 0 {
		need |= unix.S_IXUSR
	}
	if st.Mode&need != need && int(st.Uid) == os.Geteuid() {
		// Through the magic link: the inode p holds, not a name.
		_ = unix.Fchmodat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", p), st.Mode&0o7777|need, 0)
	}
	fd, err := unix.Openat(src, name, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	var now unix.Stat_t
	if err := unix.Fstat(fd, &now); err != nil || now.Dev != st.Dev || now.Ino != st.Ino {
		unix.Close(fd)
		return -1, fmt.Errorf("replaced while copied")
	}
	return fd, nil
}

// file copies the regular file src's name (st) to dst.
func (k *keeper) file(src, dst int, name, rel string, st *unix.Stat_t, p int) error {
	key := [2]uint64{st.Dev, st.Ino}
	if first, ok := k.links[key]; ok {
		// linkat through the magic link needs no capability (AT_EMPTY_PATH
		// would need CAP_DAC_READ_SEARCH), and names the copy's inode, not
		// a path in dst.
		if err := unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", first), dst, name, unix.AT_SYMLINK_FOLLOW); err != nil {
			return fmt.Errorf("link %s: %w", rel, err)
		}
		return nil
	}
	in, err := k.openSource(src, name, st, unix.O_RDONLY, p)
	if errors.Is(err, unix.EACCES) {
		k.skipped = append(k.skipped, rel)
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", rel, err)
	}
	defer unix.Close(in)
	out, err := createNew(dst, name, st.Mode&0o777)
	if err != nil {
		return fmt.Errorf("create %s: %w", rel, err)
	}
	err = k.copyData(in, out, st.Size, rel)
	if err == nil && st.Nlink > 1 && len(k.links) < maxLinkFDs {
		k.links[key] = out
		return nil
	}
	unix.Close(out)
	return err
}

// copyData copies size bytes of in to out, keeping holes.
func (k *keeper) copyData(in, out int, size int64, rel string) error {
	for off := int64(0); off < size; {
		data, err := unix.Seek(in, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // only a hole is left
		}
		end := size
		if err != nil {
			data = off // no SEEK_DATA here: all of it is data
		} else if e, err := unix.Seek(in, data, unix.SEEK_HOLE); err == nil && e < size {
			end = e
		}
		if err := k.copyRange(in, out, data, end, rel); err != nil {
			return err
		}
		off = end
	}
	if err := unix.Ftruncate(out, size); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	return nil
}

// copyRange copies in's bytes [from, to) to the same place in out.
func (k *keeper) copyRange(in, out int, from, to int64, rel string) error {
	if k.buf == nil {
		k.buf = make([]byte, keepBuf)
	}
	for from < to {
		n := int64(len(k.buf))
		if to-from < n {
			n = to - from
		}
		if k.limit > 0 && k.copied+n > k.limit {
			return fmt.Errorf("%s: stopped at the overlay's size (%d bytes copied in all; --overlay-size): the upper layers cannot hold more", rel, k.copied)
		}
		r, err := unix.Pread(in, k.buf[:n], from)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", rel, err)
		}
		if r == 0 {
			return nil // shorter than it was
		}
		if err := pwriteAll(out, k.buf[:r], from); err != nil {
			return fmt.Errorf("write %s: %w", rel, err)
		}
		k.copied += int64(r)
		from += int64(r)
	}
	return nil
}

func pwriteAll(fd int, b []byte, off int64) error {
	for len(b) > 0 {
		n, err := unix.Pwrite(fd, b, off)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		b, off = b[n:], off+int64(n)
	}
	return nil
}

// createNew creates name in dst, which must not exist (nor be a link).
func createNew(dst int, name string, perm uint32) (int, error) {
	return unix.Openat(dst, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
}

// writeWhiteouts lists what the program deleted in dst's .ward-whiteouts.
func (k *keeper) writeWhiteouts(dst int) error {
	fd, err := createNew(dst, ".ward-whiteouts", 0o644)
	if err != nil {
		return fmt.Errorf("create .ward-whiteouts: %w", err)
	}
	defer unix.Close(fd)
	if err := pwriteAll(fd, []byte(strings.Join(k.whiteouts, "\n")+"\n"), 0); err != nil {
		return fmt.Errorf("write .ward-whiteouts: %w", err)
	}
	return nil
}

// readlinkFD reads the target of the symlink an O_PATH fd holds.
func readlinkFD(fd int) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(fd, "", buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}
