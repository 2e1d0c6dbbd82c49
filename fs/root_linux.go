package fs

import (
	"errors"
	"fmt"
	"io"
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
func KeepUpper(upper, dst int) error {
	k := &keeper{}
	src, err := unix.Openat(upper, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err == nil {
		err = k.walk(src, dst, "")
	}
	if err == nil && len(k.whiteouts) > 0 {
		err = k.writeNew(dst, ".ward-whiteouts", 0o644, strings.NewReader(strings.Join(k.whiteouts, "\n")+"\n"))
	}
	if err != nil {
		return fmt.Errorf("keep the overlay's changes: %w", err)
	}
	return nil
}

type keeper struct {
	whiteouts []string
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
		in, err := k.openSource(src, name, &st, unix.O_RDONLY|unix.O_DIRECTORY)
		if err != nil {
			return fmt.Errorf("open %s: %w", rel, err)
		}
		return k.walk(in, out, rel)
	case unix.S_IFREG:
		in, err := k.openSource(src, name, &st, unix.O_RDONLY)
		if err != nil {
			return fmt.Errorf("open %s: %w", rel, err)
		}
		f := os.NewFile(uintptr(in), rel)
		defer f.Close()
		return k.writeNew(dst, name, perm, f)
	}
	return nil
}

// openSource opens src's name, which must still be the inode st
// describes.
func (k *keeper) openSource(src int, name string, st *unix.Stat_t, flags int) (int, error) {
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

// writeNew creates name in dst, which must not exist (nor be a link), and
// fills it from r.
func (k *keeper) writeNew(dst int, name string, perm uint32, r io.Reader) error {
	fd, err := unix.Openat(dst, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	if _, err := io.Copy(f, r); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
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
